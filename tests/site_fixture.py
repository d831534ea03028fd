"""The course's website, built once per test session into a temporary folder by the README's build command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
KERNEL_NOISE = "[IPKernelApp] WARNING"  # ipykernel's line about its local TCP transport, not Sphinx's


def readme_build_command() -> str:
    """The README's line that builds the site (the one a reader copies)."""
    lines = [line.strip() for line in (ROOT / "README.md").read_text().splitlines() if "site/build.py" in line]
    commands = [line for line in lines if line.startswith(".venv/bin/")]
    assert len(commands) == 1, f"the README should show one command that builds the site, found {commands}"
    return commands[0]


@pytest.fixture(scope="session")
def site_build(tmp_path_factory) -> SimpleNamespace:
    """`python site/build.py OUT` as the README runs it, with this interpreter and a temporary OUT: out, log."""
    pytest.importorskip("sphinx", reason="the test extra (sphinx) is not installed")
    pytest.importorskip("myst_nb", reason="the test extra (myst-nb) is not installed")
    command = readme_build_command()
    script = command.rsplit("python ", 1)[1].split()[0]
    out = tmp_path_factory.mktemp("site") / "html"
    done = subprocess.run([sys.executable, script, str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    log = done.stdout + done.stderr
    assert done.returncode == 0, f"{command} failed ({done.returncode}):\n{log[-6000:]}"
    warnings = [line for line in log.splitlines() if "WARNING" in line and KERNEL_NOISE not in line]
    return SimpleNamespace(out=out, log=log, warnings=warnings, command=command)
