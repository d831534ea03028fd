"""Running nbgrader in a child process: the checkout on PYTHONPATH, a wall-clock limit, one clear error line.

Every nbgrader start imports jupyter_server and friends, about 3 s of CPU. Children are forked from one
forkserver that imported nbgrader once (multiprocessing's "forkserver": a clean single-threaded process, so
forking it is safe), and each runs one `nbgrader ARGS` command as `python -m nbgrader ARGS` would, with its
own working directory, environment and log file. Killing a child (its wall-clock limit) kills its kernels too.
A local cluster's Dask workers are forked from the same server (grader.cluster), Dask imported there once.

With GRADER_NBGRADER_PROFILE=DIR in the environment (benchmarks/class_grade.py --record-profile), each child runs
under cProfile and writes DIR/nbgrader-PID.prof: where nbgrader's own time goes (the recording, the one writer).
"""

from __future__ import annotations

import functools
import multiprocessing
import multiprocessing.forkserver
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from multiprocessing.context import ForkServerContext
from pathlib import Path
from typing import Any

from labcore.errors import UsageError

REPO = Path(__file__).resolve().parents[1]
KILLED = -9  # the return code of a command stopped at its limit
PROFILE_ENV = "GRADER_NBGRADER_PROFILE"
CONFIG_FAILED = "Exception while loading config file"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # colour codes in kernels' tracebacks and nbgrader's log


def _prepend(variable: str, first: str) -> str:
    parts = [p for p in os.environ.get(variable, "").split(os.pathsep) if p and p != first]
    return os.pathsep.join([first, *parts])


def course_env() -> dict[str, str]:
    """The environment for nbgrader and its kernels: the checkout first on PYTHONPATH, this Python's scripts on PATH."""
    # nbgrader runs the `alembic` script when it creates a gradebook, also from a venv that is not activated
    return {
        **os.environ,
        "PYTHONPATH": _prepend("PYTHONPATH", str(REPO)),
        "PATH": _prepend("PATH", str(Path(sys.executable).parent)),
    }


def kill_tree(pid: int) -> None:
    """Kill a process and everything it started (kernels run in sessions of their own)."""
    import psutil  # comes with the course extra, like nbgrader; needed only when a command overruns

    try:
        parent = psutil.Process(pid)
        family = [*parent.children(recursive=True), parent]
    except psutil.NoSuchProcess:
        return
    for proc in family:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(family, timeout=10)


# What the forkserver imports once: the course's modules first (what labcore/__init__.py keeps out of every process
# stays out of nbgrader's), nbgrader's app for its commands, Dask and grader.warm for a local cluster's workers
PRELOAD = ["grader.runner", "nbgrader.apps.nbgraderapp", "distributed", "grader.warm"]


@functools.cache
def _children() -> ForkServerContext:
    """The forkserver that nbgrader commands (and a local cluster's workers) are forked from, imports made once."""
    # Dask reads its logging level when the server imports it: workers' start and stop lines are not news
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "error")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


def start_forkserver() -> None:
    """Start the forkserver now, with PRELOAD (a server already running is kept: it has it)."""
    _children().set_forkserver_preload(PRELOAD)  # again: Dask sets a list of its own when it first forks a worker
    multiprocessing.forkserver.ensure_running()


def _no_sync(connection: Any, record: Any) -> None:
    if isinstance(connection, sqlite3.Connection):
        connection.execute("PRAGMA synchronous=OFF")


def _alembic_head() -> str:
    """The gradebook schema's revision, which nbgrader writes into each gradebook it creates, read in this process.
    nbgrader asks the `alembic` script for it: a process of its own that imports nbgrader again, 4.8 s of CPU a new
    gradebook here (every `grader setup`, every class graded); read here, 0.15 s. The same revision: alembic's own
    reading of nbgrader's migrations, whose single head is the one `alembic heads` prints first."""
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    return ScriptDirectory(ALEMBIC_DIR).get_current_head()


def _nbgrader_main(args: list[str], cwd: str, env: dict[str, str], log: str) -> None:
    """In the child: `nbgrader ARGS` in cwd with env, stdout and stderr to log."""
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    # whatever a notebook holds may reach a log line (a lone surrogate): it is escaped there, never an error
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):  # a TextIOWrapper (None where the forkserver had no such stream)
            stream.reconfigure(errors="backslashreplace")
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    sys.argv = ["nbgrader", *args]
    import nbgrader.api  # preloaded with the app
    import sqlalchemy
    from nbgrader.apps.nbgraderapp import NbGraderApp  # preloaded by the forkserver; the parent never imports it

    # One engine per gradebook URL in this process: nbgrader opens and closes a Gradebook (and so an engine) about
    # nine times a submission, and each new engine compiled every query afresh (a quarter of the recording's CPU).
    nbgrader.api.create_engine = functools.cache(sqlalchemy.create_engine)
    # Each of those Gradebooks also runs create_all on its engine (a PRAGMA per table, a twentieth of the recording):
    # once an engine is known to have every table, in this process, it keeps them (nothing here drops a table).
    metadata = nbgrader.api.Base.metadata
    metadata.create_all = functools.cache(metadata.create_all)
    nbgrader.api.get_alembic_version = _alembic_head
    # nbgrader commits each grade and comment on its own, and SQLite syncs each commit to the disk: 4 to 19 ms a
    # commit here, some 25 a notebook, most of the recording's wall time. Its commands write without waiting for the
    # disk (a crash of the process still rolls back; a machine that loses power while recording may leave the
    # gradebook damaged: grader.classgrade keeps a copy of it as it was before recording, beside the stored results).
    sqlalchemy.event.listen(sqlalchemy.engine.Engine, "connect", _no_sync)
    profiles = env.get(PROFILE_ENV)
    if not profiles:
        NbGraderApp.launch_instance(argv=args)
        return
    import cProfile

    profile = cProfile.Profile()
    try:
        profile.runcall(NbGraderApp.launch_instance, argv=args)
    finally:  # nbgrader ends with sys.exit
        profile.dump_stats(Path(profiles) / f"nbgrader-{os.getpid()}.prof")


def nbgrader(args: Sequence[str], *, cwd: Path, limit_s: float | None = None) -> subprocess.CompletedProcess:
    """Run `nbgrader ARGS` in cwd; on passing limit_s, kill it with its kernels and return code KILLED."""
    with tempfile.TemporaryDirectory(prefix="grader-nbgrader-") as tmp:
        log = Path(tmp) / "nbgrader.log"
        child = _children().Process(target=_nbgrader_main, args=(list(args), str(cwd), course_env(), str(log)))
        child.start()
        child.join(limit_s)
        killed = child.exitcode is None
        if killed:
            kill_tree(child.pid)
            child.join()
        code = KILLED if killed else child.exitcode
        out = log.read_text(errors="replace") if log.exists() else ""
    if CONFIG_FAILED in out:  # nbgrader only warns, then runs without the configuration: never acceptable here
        raise UsageError(f"{cwd / 'nbgrader_config.py'} does not load: {last_error(out)}")
    return subprocess.CompletedProcess(["nbgrader", *args], code, out, "")


def last_error(log: str) -> str:
    """The most telling line of an nbgrader log: the last exception line, else the last ERROR line."""
    lines = [line.strip() for line in ANSI.sub("", log).splitlines() if line.strip()]
    exceptions = [line for line in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt): ", line)]
    if exceptions:
        return exceptions[-1]
    errors = [re.sub(r"^\[\w+ \| ERROR\] ", "", line) for line in lines if "| ERROR]" in line]
    return errors[-1] if errors else (lines[-1] if lines else "no output")


def nbgrader_or_fail(args: Sequence[str], *, cwd: Path) -> str:
    """Run nbgrader; UsageError naming the command and its error when it fails; its log otherwise."""
    done = nbgrader(args, cwd=cwd)
    if done.returncode != 0:
        raise UsageError(f"nbgrader {' '.join(args[:2])} failed in {cwd}: {last_error(done.stdout)}")
    return done.stdout
