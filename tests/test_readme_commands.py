"""The README's commands, copied from it and run as written in a shell, in a fresh copy of the checkout.

The test command is what `.ci/run` runs verbatim (tests/test_project.py checks that), so it is not run again here.
The others run one after the other in one fresh .venv, as a newcomer pastes them: the main job (a new .venv, the
editable install, `python -m <first lesson>`), every lesson of the lessons table in a shell where the venv is
active, the instructors' first command (the course extra, activation, `grader setup`), then, in that venv of the
course extra and nothing more, the references graded to full marks (tests/test_course_extra.py's
grade_references), and last the site's build (which installs the test extra into the same .venv, and must leave
nothing in the checkout but its output folder): each extra installed once in a run. pip must reach the package
index (as in CI). The steps' seconds are printed.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from test_course_extra import copy_checkout, grade_references
from test_project import readme_command_lines, table_commands

from labcore.device import gpu_available
from labcore.lessons import names

from once import Making, making
from site_fixture import SITE

# three installs into one fresh venv and a build of the site (1167 s on a busy machine): among the first started
pytestmark = [pytest.mark.venv, pytest.mark.slow(seconds=420)]

# What the shell's own steps may leave in the copy besides a command's output: the venv, the editable install's
# metadata, Python's bytecode caches
MADE_BY_INSTALLS = (".venv", "datamove_course.egg-info", "build", "__pycache__")


def _shell(command: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "COURSE_PROFILES")}
    env["HOME"] = str(home)  # `~/grading` of the instructors' command lands in the test's folder
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=1500)


def files_of(tree: Path) -> set[str]:
    """Every file under tree, relative, less what installs and Python's caches make."""
    return {
        p.relative_to(tree).as_posix()
        for p in tree.rglob("*")
        if p.is_file() and not set(p.relative_to(tree).parts) & set(MADE_BY_INSTALLS)
    }


@pytest.mark.skipif(gpu_available(), reason="with a GPU, the lessons run live instead of replaying")
def test_the_readme_commands_run_as_written(tmp_path, tmp_path_factory, capsys) -> None:
    """Pasted into bash in a fresh copy: the main job replays the shipped profile and says so on its first line; so
    does every lesson of the table with the venv activated; the instructors' command makes a grading directory, and
    the venv it leaves grades the references with full marks; the site's build writes its front page and nothing
    outside its folder."""
    with making(tmp_path_factory, SITE) as site_made:  # the site tests of the run wait for this build and read it
        _run_the_readme(tmp_path, capsys, site_made)


def _run_the_readme(tmp_path: Path, capsys: pytest.CaptureFixture, site_made: Making) -> None:
    copy, home = copy_checkout(tmp_path / "checkout"), tmp_path / "home"
    home.mkdir()
    lines = readme_command_lines()
    main = next(c for c in lines if c.endswith(f".venv/bin/python -m {names()[0]}"))
    site = next(c for c in lines if "site/build.py" in c)
    setup = next(c for c in lines if "grader setup" in c)
    seconds = {}

    def step(name: str, command: str) -> subprocess.CompletedProcess:
        started = time.perf_counter()
        done = _shell(command, copy, home)
        seconds[name] = time.perf_counter() - started
        assert done.returncode == 0, f"{command}:\n{done.stderr[-3000:]}"
        return done

    first = step("main job", main).stdout.splitlines()[0]
    assert first.startswith(f"{names()[0]}: replay of") and "no GPU here" in first, first

    for command in table_commands():
        lesson = command.split()[-1]
        first = step(lesson, f". .venv/bin/activate && {command}").stdout.splitlines()[0]
        assert first.startswith(f"{lesson}: replay of") and "no GPU here" in first, first

    done = step("instructors", setup)
    grading = home / setup.rsplit("~/", 1)[1]
    assert (grading / "nbgrader_config.py").is_file() and (grading / "gradebook.db").is_file(), done.stdout
    assert sorted(p.name for p in (grading / "release").iterdir()) == sorted(names())
    # the venv is now the main job's install and the course extra, nothing else (the site's test extra comes after):
    # the instructors' environment exactly, which grades the references with full marks
    started = time.perf_counter()
    seconds.update(grade_references(copy / ".venv" / "bin" / "python", copy, tmp_path / "course-extra"))
    seconds["course extra's grading"] = time.perf_counter() - started

    out = site.rsplit(" ", 1)[1]
    before = files_of(copy)
    install, build = site.split(" && ", 1)  # as written, one after the other: the build's own log kept apart
    step("site's install", install)
    built = step("site", build)
    assert (copy / out / "index.html").is_file()
    left = sorted(f for f in files_of(copy) - before if not f.startswith(f"{out}/"))
    assert left == [], f"the site's build left files outside {out}/: {left[:10]}"
    if site_made.value is None:
        site_made.keep({"out": str(copy / out), "log": built.stdout + built.stderr, "root": str(copy)})
    with capsys.disabled():
        print("\nREADME commands, seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in seconds.items()))
