"""What several test files read, made once a run: the first process that asks makes it, under a lock, in a folder
every xdist worker of the run shares; the others wait for it and read the same. With one process (`-p no:xdist`)
the folder is that process's own temporary one.

A maker writes what it makes under the folder it is given and returns a JSON value (paths as strings); that value is
kept beside the folder, and only once the maker has returned: a maker that failed leaves nothing kept, and the next
to ask tries again in an emptied folder (and fails as the first did, with its own message).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

DONE = ".made.json"


def shared_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's temporary folder all its workers share (each worker's own is a folder in it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


class Making:
    """A name's turn to be made: what is kept already (None: nothing yet), and keep() to keep a value."""

    def __init__(self, kept: Path) -> None:
        self._kept = kept
        self.value = json.loads(kept.read_text()) if kept.is_file() else None

    def keep(self, value: object) -> object:
        """Keep value for every later reader of the run; the value as they read it."""
        self._kept.write_text(json.dumps(value))
        self.value = json.loads(self._kept.read_text())
        return self.value


@contextmanager
def making(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[Making]:
    """Hold name's lock for the run (other workers that ask wait) while the body makes it or reads what is kept. A
    test that makes the thing anyway as part of what it tests (the README's site build) offers it this way."""
    base = shared_base(tmp_path_factory)
    with open(base / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or when the process ends
        yield Making(base / f"{name}{DONE}")


def made_once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], object]) -> object:
    """make(folder)'s JSON value, made by the first worker of the run that asks and read by the rest."""
    with making(tmp_path_factory, name) as turn:
        if turn.value is not None:
            return turn.value
        folder = shared_base(tmp_path_factory) / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        return turn.keep(make(folder))
