"""The README's commands, copied from it and run as written in a shell, in a fresh copy of the checkout.

The test command is what `.ci/run` runs verbatim (tests/test_project.py checks that), so it is not run again here.
The main job (a new .venv, the editable install, `python -m <first lesson>`) and the site's build then run one
after the other, as a newcomer pastes them: the site's command installs the test extra into the same .venv. pip
must reach the package index (as in CI); a few minutes on 2 cores with a warm pip cache.
"""

from __future__ import annotations

import os
import subprocess

import pytest
from test_course_extra import copy_checkout
from test_project import readme_command_lines

from labcore.device import gpu_available
from labcore.lessons import names

pytestmark = pytest.mark.venv


def _shell(command: str, cwd) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "COURSE_PROFILES")}
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=1500)


@pytest.mark.skipif(gpu_available(), reason="with a GPU, the first lesson runs live instead of replaying")
def test_the_readme_main_job_and_site_build_run_as_written(tmp_path):
    """Pasted into bash in a fresh copy: the main job replays the shipped profile and says so on its first line;
    the site's build then writes its front page."""
    copy = copy_checkout(tmp_path / "checkout")
    lines = readme_command_lines()
    main = next(c for c in lines if c.endswith(f".venv/bin/python -m {names()[0]}"))
    site = next(c for c in lines if "site/build.py" in c)
    done = _shell(main, copy)
    assert done.returncode == 0, done.stderr[-3000:]
    first = done.stdout.splitlines()[0]
    assert first.startswith(f"{names()[0]}: replay of") and "no GPU here" in first, first
    out = site.rsplit(" ", 1)[1]
    done = _shell(site, copy)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (copy / out / "index.html").is_file()
