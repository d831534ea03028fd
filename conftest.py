"""Shared fixtures of every test folder (tests/ and each lesson's tests/); GPU tests carry the `gpu` marker and skip
where CuPy sees no device.

Run in parallel (pytest-xdist, the README's `-n auto --dist loadfile`), a test file is one unit of work: its module
fixtures (a graded class, an installed bundle) are made once, on one worker. Files marked `slow` are handed out
first, longest first (the marker's `seconds`: its CPU seconds alone, about), so that the long ones start early
and the short ones fill in after.

SUITE_TIMES=DIR in the environment measures the suite per file: each process that runs tests (each xdist worker)
writes DIR/times-<worker>.json, {file: [wall seconds, CPU seconds]} (its own user+sys and that of the children it
waited for, set-up and tear-down included), and the run's summary prints the files that took the most CPU.
"""

from __future__ import annotations

import compileall
import json
import os
import re
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from labcore.device import gpu_available

# Module and session fixtures that make a test slow wherever it is, with the CPU seconds each takes alone, about:
# the site's build (tests/site_fixture.py: 46 s with its tests), a graded class, a release or bundle run or built;
# and what a test that installs into a fresh virtualenv (the `venv` marker) takes, about, when it says no more
SLOW_FIXTURES = {"graded": 100, "graded_now": 100, "site_build": 46, "built": 50, "ran": 40, "run_all": 40}
# ... of which those that another file's test makes anyway, where the run holds it (tests/once.py): the site, which
# tests/test_readme_commands.py builds with the README's command; a file that reads one starts after every other
LAST_FIXTURES = {"site_build"}
VENV_SECONDS = 200


def slow_seconds(item: pytest.Item) -> float:
    """A slow file's CPU seconds alone, about (its `slow` marker's seconds, measured): 0 for any other file."""
    marker = item.get_closest_marker("slow")
    if marker:
        return float(marker.kwargs.get("seconds", 1))
    return VENV_SECONDS if item.get_closest_marker("venv") else 0.0


def _file(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for name, seconds in SLOW_FIXTURES.items():
            if name in getattr(item, "fixturenames", ()) and not item.get_closest_marker("slow"):
                item.add_marker(pytest.mark.slow(seconds=seconds, last=name in LAST_FIXTURES))
    # stable: the longest files first, each file's tests in order; a file that reads what another file makes once a
    # run (`slow(last=True)`, tests/once.py) after every other, when that is made
    last = {_file(item) for item in items if (m := item.get_closest_marker("slow")) and m.kwargs.get("last")}
    items.sort(key=lambda item: (_file(item) in last, -slow_seconds(item)))
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU and CuPy (none here)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


try:
    from xdist.scheduler import LoadScopeScheduling
except ImportError:  # pytest-xdist (the test extra) not installed: the suite runs in one process
    LoadScopeScheduling = None

if LoadScopeScheduling is not None:

    class FilesInOrder(LoadScopeScheduling):
        """`--dist loadfile` in the collection's order (the slow files first) rather than xdist's default, which
        hands out the files with the most tests first whatever they cost."""

        def __init__(self, config: pytest.Config, log: object = None) -> None:
            super().__init__(config, log)
            self.config.option.loadscopereorder = False

        def _split_scope(self, nodeid: str) -> str:
            return nodeid.split("::", 1)[0]

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
        """`-n auto`: a worker more than the cores. The slow files wait as much as they compute (pip on the package
        index, sandboxes at their limits, a browser on JupyterLab); a worker more keeps the cores busy meanwhile. On 2
        cores, 3 workers took 874 s of pytest and 4 took 916 s (the slow files slowing each other); 5, 1020 s."""
        return len(os.sched_getaffinity(0)) + 1

    @pytest.hookimpl(tryfirst=True, optionalhook=True)  # optional: `-p no:xdist` runs without the plugin
    def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
        return FilesInOrder(config, log) if config.getvalue("dist") == "loadfile" else None


TESTS_AND_DATA = re.compile(r"[/\\](tests|profiles)[/\\]")  # a lesson's tests and data: not compiled


def pytest_sessionstart(session: pytest.Session) -> None:
    """The course's packages compiled to bytecode once, before any worker starts: the suite's processes (graders,
    their children, kernels) read it rather than compiling the same sources each, which they do where
    PYTHONDONTWRITEBYTECODE is set (as on the CI machines). A checkout that cannot be written is left as it is."""
    if hasattr(session.config, "workerinput"):
        return
    from labcore.lessons import names

    root = Path(__file__).resolve().parent
    for package in ("labcore", "grader", *names()):
        compileall.compile_dir(root / package, quiet=2, workers=1, rx=TESTS_AND_DATA)
    if sys.dont_write_bytecode and session.config.getoption("assertmode") == "rewrite":
        folders = [root / "tests", *(root / lesson / "tests" for lesson in names())]
        rewrite_once(session.config, [root / "conftest.py", *(p for f in folders for p in sorted(f.glob("*.py")))])


def rewrite_once(config: pytest.Config, paths: list[Path]) -> None:
    """Each test module's asserts rewritten once, before the workers start. pytest rewrites a test module as it
    imports it and keeps the rewritten code in a `__pycache__` file of its own, checked against the source's hash;
    where PYTHONDONTWRITEBYTECODE is set it keeps none, so every worker rewrote every module afresh (4.6 of the 10.6
    CPU seconds each worker spent collecting). It still reads one that is there: written here, each worker reads it.
    Test helper modules (not rewritten: tests/installed.py, a lesson's corpus) are compiled to plain bytecode here too.
    pytest's own functions do it (private ones: a pytest without them rewrites in each worker as before, and
    tests/test_project.py says so)."""
    try:
        from _pytest.assertion import assertstate_key
        from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc, _rewrite_test, _write_pyc, get_cache_dir
    except ImportError:
        return
    state = config.stash[assertstate_key]
    for path in paths:
        if not (path.name.startswith("test_") or path.name == "conftest.py"):
            compileall.compile_file(path, quiet=2)
            continue
        pyc = get_cache_dir(path) / (path.name[:-3] + PYC_TAIL)
        if _read_pyc(path, pyc) is not None:
            continue  # current: rewritten by an earlier run
        try:
            pyc.parent.mkdir(exist_ok=True)
        except OSError:
            return  # a checkout that cannot be written: each worker rewrites for itself, as before
        source_hash, code = _rewrite_test(path, config)
        _write_pyc(state, code, source_hash, pyc)


TIMES_ENV = "SUITE_TIMES"
_times: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    if not os.environ.get(TIMES_ENV):
        return (yield)
    wall, cpu = time.monotonic(), _cpu()
    outcome = yield
    spent = _times[item.nodeid.split("::", 1)[0]]
    spent[0] += time.monotonic() - wall
    spent[1] += _cpu() - cpu
    return outcome


def pytest_sessionfinish(session: pytest.Session) -> None:
    if (folder := os.environ.get(TIMES_ENV)) and _times:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        Path(folder).mkdir(parents=True, exist_ok=True)
        Path(folder, f"times-{worker}.json").write_text(json.dumps(_times, indent=1, sort_keys=True))


def pytest_terminal_summary(terminalreporter: object, config: pytest.Config) -> None:
    if not (folder := os.environ.get(TIMES_ENV)) or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for path in sorted(Path(folder).glob("times-*.json")):
        for name, (wall, cpu) in json.loads(path.read_text()).items():
            files[name][0] += wall
            files[name][1] += cpu
    write = terminalreporter.write_line  # type: ignore[attr-defined]
    total = sum(cpu for _, cpu in files.values())
    write(f"per file ({TIMES_ENV}={folder}): {len(files)} files, {total:.0f} CPU s in test processes and children")
    for name, (wall, cpu) in sorted(files.items(), key=lambda kv: -kv[1][1])[:25]:
        write(f"  {cpu:7.1f} CPU s  {wall:7.1f} s wall  {name}")


@pytest.fixture
def profiles(tmp_path: Path) -> Path:
    """An empty COURSE_PROFILES folder: no profile recorded there (the multi-GPU section's tests)."""
    folder = tmp_path / "profiles"
    folder.mkdir()
    return folder


@pytest.fixture
def as_graded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Checks judge as the trusted checker does, with the lesson's references (labcore.answers.grading()), while the
    answers are still computed in this process: a test of a check's judgment against a withheld key or reference,
    which the student's own kernel never makes (labcore.public)."""
    from labcore import answers

    monkeypatch.setattr(answers, "grading", lambda: True)


@pytest.fixture
def withhold(monkeypatch: pytest.MonkeyPatch):
    """withhold(module, name): the module's reference `name` raises as the student bundle's withheld copy does."""
    from labcore import answers

    def replace(module: object, name: str) -> None:
        def withheld(*args: object, **kwargs: object) -> None:
            raise answers.ReferenceWithheld(f"{getattr(module, '__name__', module)}.{name}")

        monkeypatch.setattr(module, name, withheld)

    return replace


@pytest.fixture
def no_references(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every reference a lesson's public expectations come from raises, as in the student bundle (labcore.public):
    a check that still called one in the student's kernel would fail. A lesson's tests withhold its keys too."""
    from labcore import answers, public
    from labcore.lessons import names

    def withheld(*args: object, **kwargs: object) -> None:
        raise answers.ReferenceWithheld("a reference")

    for lesson in names():
        public.computed_values(lesson)  # its expectations registered
        for found in public._REGISTRY.get(lesson, {}).values():
            monkeypatch.setattr(found, "reference", withheld)
