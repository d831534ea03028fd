"""What several test modules do alike: install a project as a wheel elsewhere, run `python -m grader` in-process."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace

from grader.cli import main
from labcore.errors import run_cli


def wheel_and_replay(project: Path, tmp_path: Path) -> SimpleNamespace:
    """Build `project`'s wheel, install it with --target, run `python -m day54 --no-pitfalls` from another folder.

    Returns the wheel's file names, the install folder and the command's first line (its mode line).
    """
    dist, site, elsewhere = tmp_path / "dist", tmp_path / "site", tmp_path / "elsewhere"
    pip = [sys.executable, "-m", "pip"]
    subprocess.run([*pip, "wheel", "--no-deps", "-q", "-w", str(dist), str(project)], check=True, capture_output=True)
    wheel = next(dist.glob("*.whl"))
    subprocess.run(
        [*pip, "install", "--no-deps", "-q", "--target", str(site), str(wheel)], check=True, capture_output=True
    )
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_PROFILES", "PYTHONPATH")}
    run = subprocess.run(
        [sys.executable, "-m", "day54", "--no-pitfalls"],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(site)},
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    names = set(zipfile.ZipFile(wheel).namelist())
    return SimpleNamespace(names=names, site=site, first_line=run.stdout.splitlines()[0])


def grader(*argv: str) -> SimpleNamespace:
    """Run `python -m grader ARGV` in this process (nbgrader's children come from one forkserver for all)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = run_cli(main, list(argv))
    return SimpleNamespace(rc=rc, out=out.getvalue(), err=err.getvalue())
