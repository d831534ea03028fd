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
from types import SimpleNamespace

import pytest
from test_course_extra import copy_checkout, grade_references
from test_project import readme_command_lines, table_commands

from labcore.device import gpu_available
from labcore.lessons import names

from installed import lazy_bytecode
from once import Making, making
from site_fixture import SITE

# three installs into one fresh venv and a build of the site (1167 s on a busy machine): among the first started
pytestmark = [
    pytest.mark.venv,
    pytest.mark.slow(seconds=420),
    pytest.mark.skipif(gpu_available(), reason="with a GPU, the lessons run live instead of replaying"),
]

# What the shell's own steps may leave in the copy besides a command's output: the venv, the editable install's
# metadata, Python's bytecode caches
MADE_BY_INSTALLS = (".venv", "datamove_course.egg-info", "build", "__pycache__")


def _shell(command: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "COURSE_PROFILES")}
    env["HOME"] = str(home)  # `~/grading` of the instructors' command lands in the test's folder
    env = lazy_bytecode(env)  # pip's installs compile nothing; each module's bytecode is written on first import
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=1500)


def files_of(tree: Path) -> set[str]:
    """Every file under tree, relative, less what installs and Python's caches make."""
    return {
        p.relative_to(tree).as_posix()
        for p in tree.rglob("*")
        if p.is_file() and not set(p.relative_to(tree).parts) & set(MADE_BY_INSTALLS)
    }


@pytest.fixture(scope="module")
def pasted(tmp_path_factory) -> SimpleNamespace:
    """The README's commands pasted into bash in a fresh copy, one after the other (each must exit 0 for the next to
    make sense): each step's output and seconds, the copy, the grading directory, what the site's build left."""
    tmp_path = tmp_path_factory.mktemp("readme")
    with making(tmp_path_factory, SITE) as site_made:  # the site tests of the run wait for this build and read it
        return _paste(tmp_path, site_made)


def _paste(tmp_path: Path, site_made: Making) -> SimpleNamespace:
    copy, home = copy_checkout(tmp_path / "checkout"), tmp_path / "home"
    home.mkdir()
    lines = readme_command_lines()
    main = next(c for c in lines if c.endswith(f".venv/bin/python -m {names()[0]}"))
    site = next(c for c in lines if "site/build.py" in c)
    setup = next(c for c in lines if "grader setup" in c)
    ran = SimpleNamespace(copy=copy, seconds={}, done={})

    def step(name: str, command: str) -> subprocess.CompletedProcess:
        started = time.perf_counter()
        done = _shell(command, copy, home)
        ran.seconds[name] = time.perf_counter() - started
        assert done.returncode == 0, f"{command}:\n{done.stderr[-3000:]}"
        ran.done[name] = done
        return done

    step("main job", main)
    ran.lessons = [command.split()[-1] for command in table_commands()]
    for command, lesson in zip(table_commands(), ran.lessons, strict=True):
        step(lesson, f". .venv/bin/activate && {command}")
    step("instructors", setup)
    ran.grading = home / setup.rsplit("~/", 1)[1]
    # the venv is now the main job's install and the course extra, nothing else (the site's test extra comes after):
    # the instructors' environment exactly, which grades the references with full marks (grade_references asserts)
    started = time.perf_counter()
    ran.seconds.update(grade_references(copy / ".venv" / "bin" / "python", copy, tmp_path / "course-extra"))
    ran.seconds["course extra's grading"] = time.perf_counter() - started
    ran.out = site.rsplit(" ", 1)[1]
    before = files_of(copy)
    install, build = site.split(" && ", 1)  # as written, one after the other: the build's own log kept apart
    step("site's install", install)
    built = step("site", build)
    ran.left = sorted(f for f in files_of(copy) - before if not f.startswith(f"{ran.out}/"))
    if site_made.value is None and (copy / ran.out / "index.html").is_file():
        site_made.keep({"out": str(copy / ran.out), "log": built.stdout + built.stderr, "root": str(copy)})
    return ran


def _says_it_replays(done: subprocess.CompletedProcess, lesson: str) -> None:
    first = done.stdout.splitlines()[0]
    assert first.startswith(f"{lesson}: replay of") and "no GPU here" in first, first


def test_the_main_job_replays_the_shipped_profile(pasted) -> None:
    """A new .venv, the editable install, the first lesson: it replays the shipped profile and says so first."""
    _says_it_replays(pasted.done["main job"], names()[0])


def test_every_lesson_of_the_table_replays_with_the_venv_active(pasted) -> None:
    """Each command of the lessons table, in a shell where the venv is active, says it replays on its first line."""
    assert pasted.lessons == list(names())
    for lesson in pasted.lessons:
        _says_it_replays(pasted.done[lesson], lesson)


def test_the_instructors_command_makes_a_grading_directory(pasted) -> None:
    """The course extra, activation, `grader setup ~/grading`: its config, gradebook and every lesson's release."""
    grading = pasted.grading
    assert (grading / "nbgrader_config.py").is_file() and (grading / "gradebook.db").is_file()
    assert sorted(p.name for p in (grading / "release").iterdir()) == sorted(names())
    assert "course extra's grading" in pasted.seconds  # and that venv graded the references to full marks


def test_the_site_builds_its_front_page_and_nothing_else(pasted) -> None:
    """The site's command (the test extra added to the same venv, then the build) writes its front page and leaves
    nothing in the checkout outside its output folder."""
    assert (pasted.copy / pasted.out / "index.html").is_file()
    assert pasted.left == [], f"the site's build left files outside {pasted.out}/: {pasted.left[:10]}"


def test_the_installs_say_nothing_of_the_build(pasted) -> None:
    """pip's quiet installs (the editable install's build included) print no traceback and no warning of the build
    backend: setup.py's steps hold for an editable install too."""
    for name in ("main job", "instructors", "site's install"):
        said = pasted.done[name].stderr
        assert "Traceback" not in said and "BuildBackendWarning" not in said, f"{name}:\n{said[-3000:]}"


def test_the_steps_seconds_are_shown(pasted, capsys) -> None:
    """What each command took (printed, as the test's last word)."""
    with capsys.disabled():
        print("\nREADME commands, seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in pasted.seconds.items()))
    assert set(pasted.seconds) >= {"main job", "instructors", "site", *names()}
