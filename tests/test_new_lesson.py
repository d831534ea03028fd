"""A new lesson comes in through the front door: a folder in the lesson shape and one line in lessons.txt.

In a temporary project (this checkout's labcore, grader, packaging and nbgrader configuration, and lessons.txt
with its lessons' lines replaced by the new one's), a throwaway lesson is made from the shape: a package with the
shape's files, one exercise graded through labcore.answers and a reference answer the lesson keeps for itself, a
solutions notebook, a recorded profile and a test. Then the project's own `python -m grader`, run there as an
instructor runs it, generates its release, bundles it (its reference withheld, no solutions or tests), withholds
it in the grading sandbox's library, grades a class of two with nbgrader (the reference answer at full marks, a
wrong one at zero) and reports and exports the grades; the line removed, the release left behind is named. Each
of these steps finds the lesson only through the list: a reader that ignored it would miss the lesson.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from labcore.device import gpu_available
from labcore.lessons import LIST_NAME, SHAPE_FILES, parse
from labcore.record import DeviceFacts, Record

pytest.importorskip("nbgrader", reason="the course extra (nbgrader) is not installed")
pytestmark = [
    pytest.mark.skipif(gpu_available(), reason="the lesson replays its profile; the scores are offline ones"),
    pytest.mark.slow(seconds=80),  # generates, bundles and grades a project of its own
]

ROOT = Path(__file__).resolve().parents[1]
NAME = "tiny_lesson"
SHARED = ("labcore", "grader", "jupyter-config")  # the project's folders the new lesson is added beside
SHARED_FILES = ("setup.py", "pyproject.toml", "nbgrader_config.py", "README.md", "LICENSE", "LICENSE-content")
REFERENCE_LINE = "return 2 * x + 0  # the lesson's own answer"
TIMEOUT_S = 600

MODULES = {
    "__init__.py": f'''
        """A throwaway lesson made from the shape by tests/test_new_lesson.py."""

        LESSON = "{NAME}"
        DOMAIN = "{NAME}"
        ''',
    "page.md": """
        # Tiny: a lesson made by a test

        Doubles a number, graded through labcore.answers.

        One exercise, `double(x)`, and a recorded number replayed.
        """,
    "__main__.py": f'''
        """python -m {NAME}: the recorded number, replayed."""

        import argparse
        import sys

        from labcore.errors import run_cli
        from {NAME} import LESSON, plots, replay, report


        def main(argv=None):
            parser = argparse.ArgumentParser(prog="python -m {NAME}")
            parser.add_argument("--window", help="the window size (unused here)")
            parser.add_argument("--plot", metavar="DIR", help="write the plot here")
            parser.add_argument("--json", metavar="PATH", help="write the results record here")
            parser.add_argument("--from-profile", metavar="DIR", help="replay this recorded profile")
            parser.add_argument("--device", metavar="N", help="the GPU (unused here)")
            args = parser.parse_args(sys.argv[1:] if argv is None else argv)
            record = replay.load_profile(args.from_profile)
            print(f"{{LESSON}}: replay of {{record.source}}")
            print(report.report(record))
            if args.json:
                record.save(args.json)
            if args.plot:
                plots.write_all(record, args.plot)
            return 0


        if __name__ == "__main__":
            raise SystemExit(run_cli(main))
        ''',
    "config.py": '''
        """The lesson's options."""

        import dataclasses


        @dataclasses.dataclass(frozen=True)
        class Config:
            x: int = 21
        ''',
    "model.py": f'''
        """The arithmetic, and the lesson's own answer to its exercise (withheld from students)."""

        from labcore.answers import reference


        @reference
        def double(x):
            """Twice x."""
            {REFERENCE_LINE}
        ''',
    "live.py": '''
        """No live part: this lesson only replays."""

        from labcore.errors import UsageError


        def run_live(cfg):
            raise UsageError("this lesson has no live run")
        ''',
    "replay.py": f'''
        """The shipped record."""

        from labcore.profiles import load_results, results_path
        from {NAME} import LESSON


        def load_profile(path=None):
            return load_results(results_path(LESSON, path), LESSON)
        ''',
    "report.py": '''
        """What the command prints."""


        def report(record):
            return f"recorded x = {record.extra['x']}, twice it {record.extra['twice']}"
        ''',
    "plots.py": '''
        """The lesson's one figure."""

        from pathlib import Path

        from matplotlib.figure import Figure

        from labcore.plots import save


        def write_all(record, directory):
            fig = Figure()
            fig.subplots().bar(["x", "twice"], [record.extra["x"], record.extra["twice"]])
            return [save(fig, Path(directory) / "tiny.png")]
        ''',
    "notebook.py": f'''
        """What the lesson cells call."""

        from {NAME} import replay, report


        def measure():
            return replay.load_profile()


        def show(record):
            return report.report(record)
        ''',
    "checks.py": '''
        """What the graded cell calls: the student's function asked through labcore.answers, judged here."""

        from labcore.answers import call, collecting


        def check_double(fn):
            got = {x: call("double", fn, x) for x in (0, 3, -7)}  # every question first
            if collecting():  # the planner: the questions are all it needs
                return
            for x, value in got.items():
                assert value == 2 * x, f"double({x}) gave {value!r}, expected {2 * x}"
            print("double: checked at 0, 3 and -7")
        ''',
    "tests/test_tiny.py": f"""
        from {NAME} import checks


        def test_the_check_takes_the_right_answer():
            checks.check_double(lambda x: x + x)
        """,
}


def _cell(kind: str, source: str, grade_id: str, **nbgrader: object) -> dict:
    meta = {"grade": False, "grade_id": grade_id, "locked": True, "schema_version": 3, "solution": False}
    meta.update(nbgrader)
    cell: dict = {"cell_type": kind, "id": grade_id, "metadata": {"nbgrader": meta}, "source": source}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def solutions_notebook() -> dict:
    cells = [
        _cell("markdown", "# Tiny: a lesson made by a test\n\nWrite `double(x)`.", "intro"),
        _cell("code", f"from {NAME} import checks, notebook", "setup"),
        _cell("code", "record = notebook.measure()\nprint(notebook.show(record))", "lesson"),
        _cell(
            "code",
            "def double(x):\n    ### BEGIN SOLUTION\n    return x + x\n    ### END SOLUTION",
            "double",
            locked=False,
            solution=True,
        ),
        _cell("code", "checks.check_double(double)", "test_double", grade=True, points=2),
    ]
    kernel = {"display_name": "Python 3", "language": "python", "name": "python3"}
    return {"cells": cells, "metadata": {"kernelspec": kernel}, "nbformat": 4, "nbformat_minor": 5}


def make_lesson(project: Path) -> Path:
    """The throwaway lesson's folder in the project, in the shape, with its line added to the list."""
    folder = project / NAME
    for name, text in MODULES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(textwrap.dedent(text).lstrip())
    assert set(SHAPE_FILES) <= {p.name for p in folder.glob("*.py")}
    (folder / "solutions").mkdir()
    (folder / "solutions" / f"{NAME}.ipynb").write_text(json.dumps(solutions_notebook(), indent=1))
    record = Record(NAME, "live", "made by a test", DeviceFacts(name="no GPU"), {}, extra={"x": 21, "twice": 42})
    record.save(folder / "profiles" / "h200" / "results.json")
    with open(project / LIST_NAME, "a") as listed:
        listed.write(f"{NAME}\n")
    return folder


def run(project: Path, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`python -m ARGV` (`grader ...`, a lesson) on the project's own packages, as an instructor runs it there."""
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_PROFILES", "LABCORE_ANSWERS")}
    env.update(PYTHONPATH=str(project), CUDA_VISIBLE_DEVICES="", MPLBACKEND="Agg")
    command = [sys.executable, *argv] if argv[0] == "-c" else [sys.executable, "-m", *argv]
    return subprocess.run(command, cwd=cwd or project, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> SimpleNamespace:
    """The temporary project with the new lesson, generated, bundled and graded once for the module."""
    base = tmp_path_factory.mktemp("new-lesson")
    root = base / "project"
    for name in SHARED:
        shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in SHARED_FILES:
        shutil.copy2(ROOT / name, root / name)
    listed = (ROOT / LIST_NAME).read_text().splitlines()
    (root / LIST_NAME).write_text("".join(f"{line}\n" for line in listed if not parse(line)))  # comments only
    folder = make_lesson(root)
    done = SimpleNamespace(root=root, folder=folder, base=base)
    done.generate = run(root, "grader", "generate")
    done.bundle = run(root, "grader", "bundle", str(base / "bundle"))
    grading, subs = base / "grading", base / "submissions"
    release = json.loads((root / "course" / NAME / f"{NAME}.ipynb").read_text())
    for student, body in {"right": "    return x * 2", "wrong": "    return x + 1"}.items():
        nb = json.loads(json.dumps(release))
        answer = next(c for c in nb["cells"] if c["metadata"]["nbgrader"].get("solution"))
        answer["source"] = f"def double(x):\n{body}\n"
        (subs / student).mkdir(parents=True)
        (subs / student / f"{NAME}.ipynb").write_text(json.dumps(nb))
    done.setup = run(root, "grader", "setup", str(grading))
    done.collect = run(root, "grader", "collect", str(grading), str(subs))
    done.autograde = run(root, "grader", "autograde", str(grading), "--jobs", "1", "--timeout", "60")
    done.export = run(root, "grader", "export", str(grading), "--to", str(base / "grades.csv"))
    done.report = run(root, "grader", "report", str(grading), "--out", str(base / "report" / "index.html"))
    done.grading, done.csv, done.html = grading, base / "grades.csv", base / "report" / "index.html"
    return done


def _ok(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    return done.stdout


def test_it_is_generated(project):
    """course/<lesson>/<lesson>.ipynb from <lesson>/solutions/: the stub, no solution; the README's table of lessons
    gains its row, the title and summary of its page.md (Lesson rules 5, 12 and 16 on the architecture page)."""
    assert NAME in _ok(project.generate)
    text = (project.root / "course" / NAME / f"{NAME}.ipynb").read_text()
    assert "YOUR CODE HERE" in text and "return x + x" not in text and "BEGIN SOLUTION" not in text
    row = f"| Tiny: a lesson made by a test | `python -m {NAME}` | Doubles a number, graded through labcore.answers. |"
    assert row in (project.root / "README.md").read_text().splitlines()  # the README's table, from its page.md


def test_it_is_bundled_with_its_profile_and_without_its_reference_solutions_or_tests(project):
    """The bundle holds its release, its package and profile, not its reference, solutions or tests, and replays it
    (Lesson rules 13, 14 and 16 on the architecture page)."""
    _ok(project.bundle)
    out = project.base / "bundle"
    assert (out / "notebooks" / NAME / f"{NAME}.ipynb").is_file()
    assert (out / NAME / "profiles" / "h200" / "results.json").is_file()
    assert REFERENCE_LINE not in (out / NAME / "model.py").read_text()
    assert not (out / NAME / "solutions").exists() and not (out / NAME / "tests").exists()
    assert (out / "labcore" / LIST_NAME).read_text().splitlines()[-1] == NAME
    assert f"python -m {NAME}" in (out / "README.md").read_text() or f"`{NAME}`" in (out / "README.md").read_text()
    replay = run(out, NAME, cwd=project.base)  # the bundle's own lesson, on the bundle alone
    assert _ok(replay).startswith(f"{NAME}: replay of {out / NAME / 'profiles' / 'h200'}")


def test_it_is_withheld_in_the_sandbox_library(project):
    """The grading sandbox's library holds the lesson, its reference withheld: the student's code cannot call it
    (Lesson rules 13 and 16 on the architecture page)."""
    library = project.base / "library"
    script = (
        "import sys; from pathlib import Path; from grader.bundle import sandbox_library; "
        "print(sandbox_library(Path(sys.argv[1]), Path(sys.argv[2])))"
    )
    withheld = _ok(run(project.root, "-c", script, str(project.root), str(library)))
    assert f"{NAME}.model.double" in withheld
    assert REFERENCE_LINE not in (library / NAME / "model.py").read_text()
    assert not (library / NAME / "solutions").exists() and not (library / NAME / "tests").exists()


def test_it_is_graded_reported_and_exported(project):
    """nbgrader grades the class: the reference's answer at full marks, the wrong one at zero; export and report
    show the lesson (Lesson rule 16 on the architecture page)."""
    _ok(project.setup)
    _ok(project.collect)
    _ok(project.autograde)
    _ok(project.export)
    rows = {r["student_id"]: r for r in csv.DictReader(project.csv.open()) if r["assignment"] == NAME}
    assert sorted(rows) == ["right", "wrong"], rows
    assert float(rows["right"]["score"]) == 2.0 == float(rows["right"]["max_score"]), rows
    assert float(rows["wrong"]["score"]) == 0.0, rows
    _ok(project.report)
    assert NAME in project.html.read_text()


def test_removed_its_release_is_named(project):
    """Its line gone (another lesson listed instead), the list no longer holds the lesson: its release left in
    course/ is named, to be removed, and the listed one's missing release too (Lesson rules 2 and 16 on the
    architecture page)."""
    listed, other = project.root / LIST_NAME, f"{NAME}_other"
    text = listed.read_text()
    shutil.copytree(project.folder, project.root / other)
    (project.root / other / "solutions" / f"{NAME}.ipynb").rename(project.root / other / "solutions" / f"{other}.ipynb")
    listed.write_text(text.replace(f"{NAME}\n", f"{other}\n"))
    try:
        check = run(project.root, "grader", "generate", "--check")
        said = check.stdout + check.stderr
        assert check.returncode == 1, said
        assert f"course/{NAME}: not a lesson of {LIST_NAME} (remove it)" in said
        assert f"course/{other}: missing (not generated)" in said
    finally:
        listed.write_text(text)
        shutil.rmtree(project.root / other)
