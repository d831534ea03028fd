"""The instructors' install, exactly as the README gives it: an environment of nothing but the checkout and its
`.[course]` extra (no test extra) grades the reference solutions offline with full marks, and the untouched release
with none (grade_references, run by tests/test_readme_commands.py in the venv the README's main job and instructors'
command made, before the site's command adds the test extra to it: one install of each extra a run).

The other grading tests run in the test extra's environment, which brings NVRTC for its own tests; a course extra
without it failed the mailbox exercise's right answer offline ("NVRTC through cuda-bindings is not available"), so
the course extra must name it (checked here without installing anything). The environments are made from a copy of
the checkout's files (copy_checkout: what git tracks and what it does not ignore), so an editable install writes
nothing into the checkout.
"""

from __future__ import annotations

import csv
import ensurepip
import os
import shutil
import subprocess
import sys
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

from grader.bundle import package_options, student_pyproject
from grader.course import Course, solved_release
from labcore.lessons import names

from installed import autograded_points, cell_points, lazy_bytecode, pending_cells

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = names()
NVRTC = ("cuda-bindings", "cuda-toolkit[nvrtc]")
SKIP = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.egg-info", "build", ".*_cache", ".ipynb_checkpoints")


def copy_checkout(dest: Path) -> Path:
    """The checkout's own files (tracked, or untracked and not ignored) copied to dest; a plain copy outside git."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=False
    )
    if listed.returncode != 0:
        return Path(shutil.copytree(ROOT, dest, ignore=SKIP))
    for name in filter(None, listed.stdout.decode().split("\0")):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


def run(argv: list[str], cwd: Path, timeout: int = 900) -> subprocess.CompletedProcess:
    """A command of the fresh environment: no PYTHONPATH, no shared virtualenv on PATH; bytecode written as modules
    are first imported (its installs compiled none)."""
    env = lazy_bytecode(
        {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "COURSE_PROFILES")}
    )
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, (argv, done.stdout[-3000:], done.stderr[-3000:])
    return done


def test_the_course_extra_brings_nvrtc_to_instructors_and_students():
    """Both the checkout's course extra and the bundle's (derived from it) name NVRTC through cuda-bindings."""
    main = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for extras in (
        main["project"]["optional-dependencies"],
        student_pyproject(main, package_options(ROOT))["project"]["optional-dependencies"],
    ):
        assert all(any(r.startswith(name) for r in extras["course"]) for name in NVRTC), extras["course"]


def test_the_fresh_venvs_install_without_compiling(tmp_path):
    """lazy_bytecode's environment (the fresh venvs of the README test and the student bundle) makes pip install a
    wheel with no bytecode: a module is compiled when first imported, not every module at install (as pip does by
    default, and for PIP_NO_COMPILE=1)."""
    wheel = next((Path(ensurepip.__file__).parent / "_bundled").glob("pip-*.whl"))  # any wheel with modules
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target"]
    compiled = {}
    for name, env in (("default", dict(os.environ)), ("lazy", lazy_bytecode({**os.environ, "PIP_NO_COMPILE": "1"}))):
        subprocess.run([*pip, str(tmp_path / name), str(wheel)], env=env, check=True, capture_output=True)
        compiled[name] = len(list((tmp_path / name).rglob("*.pyc")))
    assert compiled["default"] > 100 and compiled["lazy"] == 0, compiled


def grade_references(python: Path, checkout: Path, tmp_path: Path) -> dict[str, float]:
    """setup, collect, autograde and export with `python`, an environment of exactly the checkout's `.[course]`
    (tests/test_readme_commands.py's, once the README's main job and instructors' command have made it): full marks
    for the references, 0 for the untouched release (its test cells are tagged raises-exception; nbgrader still
    scores them 0); in the environment's own kernel, as a student runs it, no cell of the references raises (the
    mailbox check compiles). Returns the steps' seconds."""
    seconds = {}
    tmp_path.mkdir(parents=True, exist_ok=True)
    assert (
        "site-packages"
        in run([str(python), "-c", "import cuda.bindings, sys; print(cuda.bindings.__file__)"], tmp_path).stdout
    )
    subs, grading, own = tmp_path / "submissions", tmp_path / "grading", tmp_path / "own-kernel"
    course = Course.at(checkout)
    for assignment in ASSIGNMENTS:
        for student in ("reference", "untouched"):
            (subs / student).mkdir(parents=True, exist_ok=True)
        nbformat.write(solved_release(course, assignment), subs / "reference" / f"{assignment}.ipynb")
        shutil.copy(course.release / assignment / f"{assignment}.ipynb", subs / "untouched")
    shutil.copytree(subs / "reference", own)  # what a run in the student's kernel writes stays out of the submission
    # the student's own kernel, one reference after another, beside the grading (each its own processes): every check
    # of the reference passes there too
    with ThreadPoolExecutor(max_workers=1) as beside:
        kernels = beside.submit(_own_kernels, python, own)
        started = time.perf_counter()
        for step in (
            ["setup", str(grading)],
            ["collect", str(grading), str(subs)],
            ["autograde", str(grading), "--jobs", "1", "--timeout", "60"],  # ten notebooks, one sandbox
            ["export", str(grading), "--to", str(tmp_path / "grades.csv")],
        ):
            done = run([str(python), "-m", "grader", *step], cwd=tmp_path)
        seconds["grade"] = time.perf_counter() - started
        seconds["own kernel"] = kernels.result()
    with open(tmp_path / "grades.csv") as rows:
        scores = {(r["student_id"], r["assignment"]): float(r["raw_score"] or 0) for r in csv.DictReader(rows)}
    # offline, a cell only a GPU can decide is pending: 0 until graded live (the lessons' timed cells)
    pending = {a: pending_cells(grading / "autograded" / "reference" / a / f"{a}.ipynb") for a in ASSIGNMENTS}
    assert all("time" in cell for cells in pending.values() for cell in cells), pending
    assert scores == {
        **{("reference", a): autograded_points(a) - cell_points(a, pending[a]) for a in ASSIGNMENTS},
        **{("untouched", a): 0.0 for a in ASSIGNMENTS},
    }, done.stdout
    return seconds


def _own_kernels(python: Path, folder: Path) -> float:
    """Each reference in folder run in `python`'s own kernel, as a student runs it: no cell raises. Its seconds."""
    started = time.perf_counter()
    for assignment in ASSIGNMENTS:
        done = run([str(python), "-c", OWN_KERNEL, str(folder / f"{assignment}.ipynb")], cwd=folder)
        assert done.stdout.split() == ["errors:", "0"], (assignment, done.stdout[-3000:])
    return time.perf_counter() - started


# Run a notebook in the fresh environment's own kernel, as a student does; print how many cells raised.
OWN_KERNEL = """
import sys
sys.modules["rfc3987_syntax"] = None  # as in the course's processes (labcore/__init__.py)
import nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True).execute()
raised = [(c.get("id"), o.ename, o.evalue) for c in nb.cells for o in c.get("outputs", [])
          if o.output_type == "error" and o.ename != "PendingGPU"]  # a timed check offline says it is pending
print(raised or "", file=sys.stderr)
print("errors:", len(raised))
"""
