"""Build the course's website: `python site/build.py OUT` writes static HTML to OUT, with no network.

The pages are site/*.md; the lessons are the release notebooks (course/<lesson>/<lesson>.ipynb, never solutions/),
executed on the way in by MyST-NB with no GPU visible (even on a GPU machine): every measurement replays the
shipped H200 profile, so the pages show the recorded tables and plots. The sources are laid out in a temporary
folder (site/ and course/ side by side, so the pages' relative links to the notebooks work on GitHub and on the
site alike); exercise cells are shown with their stubs and without outputs (the stubs only raise).
OUT/index.html opens the front page.

Sphinx writes into the temporary folder too, and OUT receives the finished pages: MyST-NB keeps its executed
notebooks beside its output folder (`jupyter_execute/`), which would be the checkout for `site-html`, so the build
leaves nothing behind but OUT. It measures itself (wall and CPU seconds, the pages' bytes and files) and writes
those figures into the offline readers' page (`{course-build}`, site/_ext/course_lessons.py).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RELEASE = ROOT / "course"
FRONT = "site/index.html"


LESSONS_TOC = ":hidden:\n\nlessons\n"  # the front page's Lessons toctree, where the listed lessons' pages go


def lessons() -> list[str]:
    """The course's lessons, in course order (lessons.txt, through labcore.lessons)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # run as a script: the checkout's labcore
    from labcore.lessons import names

    return list(names())


def with_lessons_toc(index: str, names: list[str]) -> str:
    """The front page's source with its Lessons toctree holding every listed lesson's page, in course order."""
    if index.count(LESSONS_TOC) != 1:
        raise SystemExit(f"site/index.md: no single Lessons toctree starting {LESSONS_TOC!r} to put the lessons in")
    entries = [f"/course/{n}/{n}\n" for n in names]
    kept = "".join(line for line in index.splitlines(keepends=True) if line not in entries)
    return kept.replace(LESSONS_TOC, LESSONS_TOC + "".join(entries))


def is_exercise(cell: dict) -> bool:
    """An nbgrader answer cell or test cell: what the student writes in, and what checks it."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return bool(meta.get("solution") or meta.get("grade"))


def quiet_exercises(notebook: Path) -> None:
    """Exercise cells keep their source (the question, the stub) and lose their outputs (a stub's error)."""
    nb = json.loads(notebook.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and is_exercise(cell):
            tags = cell["metadata"].setdefault("tags", [])
            tags += [t for t in ("raises-exception", "remove-output") if t not in tags]
    notebook.write_text(json.dumps(nb, indent=1))


def lay_out(src: Path) -> None:
    """site/ pages and the release notebooks, side by side as in the repository."""
    shutil.copytree(HERE, src / "site", ignore=shutil.ignore_patterns("conf.py", "build.py", "_ext", "__pycache__"))
    index = src / "site" / "index.md"
    index.write_text(with_lessons_toc(index.read_text(), lessons()))
    for lesson in lessons():
        target = src / "course" / lesson
        shutil.copytree(RELEASE / lesson, target)
        quiet_exercises(target / f"{lesson}.ipynb")


def front_door(out: Path) -> None:
    """OUT/index.html: a link (and a redirect) to the front page, which lives at site/index.html."""
    (out / "index.html").write_text(
        f'<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0; url={FRONT}">'
        f'<title>CUDA data movement, measured</title><a href="{FRONT}">CUDA data movement, measured</a>\n'
    )


def no_machine_paths(out: Path, places: list[Path]) -> None:
    """Outputs name profiles by their path in the repository, never by this machine's folders."""
    for page in out.rglob("*.html"):
        text = page.read_text()
        for place in places:
            text = text.replace(f"{place}/", "")
        page.write_text(text)


def cpu_seconds() -> float:
    """CPU seconds of this process and of its children that have ended (the notebooks' kernels among them)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def build_figures(html: Path, wall_s: float, cpu_s: float) -> str:
    """What this build measured, as the offline page says it: the pages' size and files, its wall and CPU time."""
    files = [p for p in html.rglob("*") if p.is_file()]
    megabytes = sum(p.stat().st_size for p in files) / 1e6
    return (
        f"{megabytes:.1f} MB in {len(files)} files, built in {wall_s:.0f} s of wall time and {cpu_s:.0f} s of CPU "
        f"on a machine of {os.cpu_count()} cores"
    )


def fill_build_figures(html: Path, figures: str) -> None:
    """The `{course-build}` placeholder of the built pages replaced by this build's figures."""
    from course_lessons import BUILD_FIGURES

    for page in html.rglob("*.html"):
        text = page.read_text()
        if BUILD_FIGURES in text:
            page.write_text(text.replace(BUILD_FIGURES, figures))


def build(out: Path) -> int:
    """Sphinx's html builder on the laid-out sources, into a temporary folder, then the pages to OUT; its exit
    status."""
    from sphinx.cmd.build import build_main  # here, so that --help works without Sphinx installed

    started, spent = time.monotonic(), cpu_seconds()
    # No display, no GPU: the notebooks' plots go to Agg, and their measurements replay the shipped profile even on
    # a GPU machine (CuPy sees no device), so the site shows the recorded run wherever it is built.
    os.environ.setdefault("MPLBACKEND", "Agg")
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    if str(HERE / "_ext") not in sys.path:
        sys.path.insert(0, str(HERE / "_ext"))
    with tempfile.TemporaryDirectory(prefix="datamove-site-") as tmp:
        src, html = Path(tmp) / "src", Path(tmp) / "html"
        lay_out(src)
        rc = build_main(["-b", "html", "-q", "-c", str(HERE), "-d", str(Path(tmp) / "doctrees"), str(src), str(html)])
        if rc == 0:
            no_machine_paths(html, [src / "course" / lesson for lesson in lessons()] + [src, ROOT])
            front_door(html)
            fill_build_figures(html, build_figures(html, time.monotonic() - started, cpu_seconds() - spent))
            shutil.copytree(html, out, dirs_exist_ok=True)
    return rc


def usage_error(args: argparse.Namespace) -> str | None:
    """What is wrong with the command line, in one line, or None."""
    out = args.out.resolve()
    if out == HERE or HERE in out.parents:
        return f"{args.out} is inside site/, the sources; pick another folder"
    if out == ROOT:
        return f"{args.out} is the checkout itself; pick another folder"
    if out.exists() and not out.is_dir():
        return f"{args.out} is a file, not a folder"
    missing = [name for name in ("sphinx", "myst_nb") if importlib.util.find_spec(name) is None]
    if missing:
        return f"{' and '.join(missing)} not installed: pip install -e '.[test]' brings them"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python site/build.py", description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder to write the HTML into (created; its old pages replaced)")
    args = parser.parse_args(argv)
    if (problem := usage_error(args)) is not None:
        print(f"python site/build.py: {problem}", file=sys.stderr)
        return 2
    return build(args.out)


if __name__ == "__main__":
    sys.exit(main())
