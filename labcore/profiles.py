"""Recorded profiles: where they live, which one a lesson replays, and loading one (errors are UsageError)."""

from __future__ import annotations

import os
from pathlib import Path

from labcore import lessons
from labcore.errors import UsageError
from labcore.record import Record, load

# A folder laid out <gpu>/<lesson>/ that replaces every lesson's own profiles (tests point it at an empty one)
OVERRIDE_ENV = "COURSE_PROFILES"
DEFAULT_GPU = "h200"
RESULTS = "results.json"


def shipped_profile(lesson: str, gpu: str = DEFAULT_GPU) -> Path:
    """Where a lesson's recorded profile for a GPU lies: <lesson>/profiles/<gpu>/ of its package (the checkout's,
    a wheel's or the bundle's), or <gpu>/<lesson>/ of $COURSE_PROFILES when that is set. It may not exist."""
    override = os.environ.get(OVERRIDE_ENV)
    if override:
        return Path(override) / gpu / lesson
    return lessons.folder(lesson) / lessons.PROFILES_DIR / gpu


def default_profile(lesson: str, gpu: str = DEFAULT_GPU) -> Path:
    """The shipped profile directory for a lesson; UsageError when it is missing."""
    path = shipped_profile(lesson, gpu)
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


def describe(record: Record) -> str:
    """Where a replay's numbers came from, for the mode line."""
    d = record.device
    versions = ", ".join(
        f"{k} {v}"
        for k, v in (
            ("driver", d.driver),
            ("driver CUDA", d.driver_cuda),
            ("CUDA runtime", d.cuda_runtime),
            ("CuPy", d.cupy),
        )
        if v
    )
    versions = f"; {versions}" if versions else ""
    return f"replay of {record.source} (recorded {record.recorded_at} on {d.summary()}{versions})"
