"""Recorded profiles: where they live, which one a lesson replays, and loading one (errors are UsageError)."""

from __future__ import annotations

import importlib.resources
import os
from pathlib import Path

from labcore.errors import UsageError
from labcore.record import Record, load


def _shipped() -> Path:
    """The profiles this install carries: the package `course_profiles` (the checkout's profiles/ folder)."""
    try:
        return Path(str(importlib.resources.files("course_profiles")))
    except ModuleNotFoundError:  # a checkout on sys.path that was never installed: the folder beside the packages
        return Path(__file__).resolve().parents[1] / "profiles"


PROFILES_DIR = Path(os.environ["COURSE_PROFILES"]) if os.environ.get("COURSE_PROFILES") else _shipped()
DEFAULT_GPU = "h200"
RESULTS = "results.json"


def default_profile(lesson: str, gpu: str = DEFAULT_GPU) -> Path:
    """The shipped profile directory for a lesson; UsageError when it is missing."""
    path = PROFILES_DIR / gpu / lesson
    if not path.is_dir():
        raise UsageError(
            f"no GPU found and no recorded profile at {path}; install CuPy on a GPU machine or pass --from-profile DIR"
        )
    return path


def profile_path(lesson: str, path: str | Path | None = None) -> Path:
    """The profile asked for (a directory or a results.json), else the lesson's shipped one."""
    path = Path(path) if path is not None else default_profile(lesson)
    if not path.exists():
        raise UsageError(f"--from-profile {path}: no such file or directory")
    return path


def results_path(lesson: str, path: str | Path | None = None) -> Path:
    """The results.json of profile_path(lesson, path)."""
    path = profile_path(lesson, path)
    return path / RESULTS if path.is_dir() else path


def load_results(path: str | Path, lesson: str) -> Record:
    """A recorded run's results.json as a replay record; UsageError when it records another lesson."""
    path = Path(path)
    record = load(path)
    if record.lesson != lesson:
        raise UsageError(f"{path} records the {record.lesson!r} lesson, not {lesson!r}")
    record.mode, record.source = "replay", str(path)
    return record
