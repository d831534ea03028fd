"""What several test modules do alike: install a project as a wheel elsewhere, run `python -m grader` in-process."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from grader.cli import main
from labcore.errors import run_cli
from labcore.lessons import names
from labcore.pending import PENDING_GPU

ROOT = Path(__file__).resolve().parents[1]


def lazy_bytecode(env: dict[str, str]) -> dict[str, str]:
    """`env` for the shells that install into a fresh venv and then use it: pip compiles nothing it installs
    (PIP_COMPILE=0, which is `--no-compile`; pip reads PIP_NO_COMPILE=1 as `--compile`, the two options sharing one
    setting), and Python writes a module's bytecode when the module is first imported (PYTHONDONTWRITEBYTECODE, which
    CI-like shells set, dropped), as in an environment uv installed. The same files are installed; only the bytecode
    of modules never imported is not made. What is graded there is graded while bytecode appears in the environment
    (the run's own venv has pip's, made at install)."""
    kept = {k: v for k, v in env.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PIP_NO_COMPILE", "PIP_COMPILE")}
    return {**kept, "PIP_COMPILE": "0"}


def wheel_and_replay(project: Path, tmp_path: Path) -> SimpleNamespace:
    """Build `project`'s wheel, install it with --target, run `python -m <lesson>` of every listed lesson from another
    folder.

    Returns the wheel's file names, the install folder and each lesson's first line (its mode line).
    """
    dist, site, elsewhere = tmp_path / "dist", tmp_path / "site", tmp_path / "elsewhere"
    pip = [sys.executable, "-m", "pip"]
    # built with this environment's build backend (the test extra's setuptools), not in an isolated one made afresh
    build = [*pip, "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), str(project)]
    subprocess.run(build, check=True, capture_output=True)
    wheel = next(dist.glob("*.whl"))
    subprocess.run(
        [*pip, "install", "--no-deps", "-q", "--target", str(site), str(wheel)], check=True, capture_output=True
    )
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_PROFILES", "PYTHONPATH")}
    first_lines = {}
    for lesson in names():
        run = subprocess.run(
            [sys.executable, "-m", lesson],
            cwd=elsewhere,
            capture_output=True,
            text=True,
            env={**env, "PYTHONPATH": str(site), "MPLBACKEND": "Agg"},
            timeout=120,
        )
        assert run.returncode == 0, run.stderr
        first_lines[lesson] = run.stdout.splitlines()[0]
    names_in = set(zipfile.ZipFile(wheel).namelist())
    return SimpleNamespace(names=names_in, site=site, first_lines=first_lines)


def autograded_points(assignment: str, root: Path = ROOT) -> float:
    """The points of a release's autograded (code) test cells: what the reference scores."""
    import nbformat  # seconds to import (jsonschema): only the tests that grade wait for it

    cells = nbformat.read(root / "course" / assignment / f"{assignment}.ipynb", as_version=4).cells
    meta = [c.metadata.get("nbgrader", {}) for c in cells if c.cell_type == "code"]
    return float(sum(m.get("points", 0) for m in meta if m.get("grade")))


PLOT_CALLS = ("plots.", "notebook.figure(")  # a lesson cell draws through its plots module or notebook.figure()


def draws_plot(source: str) -> bool:
    """Whether a lesson cell's source draws a figure (the release tests count a picture for each such cell)."""
    return any(call in source for call in PLOT_CALLS)


def pending_cells(autograded: Path) -> list[str]:
    """The cells of an autograded notebook that are pending a GPU (labcore.pending): 0 offline, graded live."""
    import nbformat

    nb = nbformat.read(autograded, as_version=4)
    return [
        c.get("id")
        for c in nb.cells
        if c.cell_type == "code" and any(o.get("ename") == PENDING_GPU for o in c.get("outputs", []))
    ]


def cell_points(assignment: str, cells: list[str], root: Path = ROOT) -> float:
    """The points of some test cells of a release."""
    import nbformat

    found = nbformat.read(root / "course" / assignment / f"{assignment}.ipynb", as_version=4).cells
    return float(sum(c.metadata.get("nbgrader", {}).get("points", 0) for c in found if c.get("id") in cells))


def grader(*argv: str) -> SimpleNamespace:
    """Run `python -m grader ARGV` in this process (nbgrader's children come from one forkserver for all)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = run_cli(main, list(argv))
    return SimpleNamespace(rc=rc, out=out.getvalue(), err=err.getvalue())


def the_bundle(tmp_path_factory: object) -> SimpleNamespace:
    """`grader bundle` of this checkout, written once a run for every test file that reads it (tests/once.py): its
    folder and what the command printed. A reader that installs or builds from it works in a copy of its own."""
    from grader.bundle import DIST_NAME

    from once import made_once

    def make(folder: Path) -> dict:
        out = folder / DIST_NAME
        done = grader("bundle", str(out))
        assert done.rc == 0, done.err
        return {"out": str(out), "lines": done.out.splitlines()}

    made = made_once(tmp_path_factory, "bundle", make)
    return SimpleNamespace(out=Path(made["out"]), lines=made["lines"])


def copy_of(bundle: Path, dest: Path) -> Path:
    """A copy of a shared bundle to build or install from (pip builds in the folder it is given), less what a build
    in the original may have left."""
    import shutil

    return Path(shutil.copytree(bundle, dest, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__")))


def executed_release(tmp_path_factory: Any, name: str, timeout_s: int = 600) -> tuple[Any, float]:
    """course/<name>'s untouched release run whole once a run (tests/once.py), errors kept as outputs, in a copy of
    its folder by this Python's kernel: the executed notebook and its Run All seconds, for every test that reads it."""
    import nbformat
    from nbclient import NotebookClient

    from once import made_once

    def make(folder: Path) -> dict[str, object]:
        release = ROOT / "course" / name / f"{name}.ipynb"
        shutil.copytree(release.parent, folder, dirs_exist_ok=True)
        nb = nbformat.read(folder / release.name, as_version=4)
        client = NotebookClient(
            nb,
            timeout=timeout_s,
            kernel_name="python3",
            allow_errors=True,
            resources={"metadata": {"path": str(folder)}},
        )
        started = time.perf_counter()
        client.execute()
        seconds = time.perf_counter() - started
        nbformat.write(nb, folder / "executed.ipynb")
        return {"executed": str(folder / "executed.ipynb"), "seconds": seconds}

    made = made_once(tmp_path_factory, f"release-{name}", make)
    return nbformat.read(made["executed"], as_version=4), float(made["seconds"])  # type: ignore[index]
