"""Recorded profiles: where they live, which one a lesson replays, and loading one (errors are UsageError)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from labcore import lessons, nsys
from labcore.errors import UsageError
from labcore.record import Record, load

# A folder laid out <gpu>/<lesson>/ that replaces every lesson's own profiles (tests point it at an empty one)
OVERRIDE_ENV = "COURSE_PROFILES"
# The rule: a lesson ships at least one GPU's recorded profile (<gpu>/ holding the run's results.json); a replay
# uses DEFAULT_GPU's where the lesson has it, else the one it has (the first by name where it has several).
DEFAULT_GPU = "h200"
RESULTS = "results.json"


def _folder(lesson: str, gpu: str) -> Path:
    override = os.environ.get(OVERRIDE_ENV)
    if override:
        return Path(override) / gpu / lesson
    return lessons.folder(lesson) / lessons.PROFILES_DIR / gpu


def recorded_gpus(lesson: str) -> list[str]:
    """The GPUs a lesson ships a recorded profile of (a folder holding results.json), DEFAULT_GPU first, then by
    name; in $COURSE_PROFILES when that is set."""
    override = os.environ.get(OVERRIDE_ENV)
    root = Path(override) if override else lessons.folder(lesson) / lessons.PROFILES_DIR
    found = sorted(p.name for p in root.glob("*") if (_folder(lesson, p.name) / RESULTS).is_file())
    return sorted(found, key=lambda gpu: gpu != DEFAULT_GPU)


def shipped_profile(lesson: str, gpu: str | None = None) -> Path:
    """Where a lesson's recorded profile for a GPU lies: <lesson>/profiles/<gpu>/ of its package (the checkout's,
    a wheel's or the bundle's), or <gpu>/<lesson>/ of $COURSE_PROFILES when that is set. It may not exist. Without
    a GPU named, the one a replay uses: DEFAULT_GPU's where the lesson has it, else the one it has."""
    if gpu is None:
        gpu = next(iter(recorded_gpus(lesson)), DEFAULT_GPU)
    return _folder(lesson, gpu)


def default_profile(lesson: str, gpu: str | None = None) -> Path:
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
    record = load_companion(path, lesson)
    record.mode, record.source = "replay", str(path)
    return record


def load_companion(path: str | Path, lesson: str) -> Record:
    """The results.json beside a lesson's nsys exports, as the run wrote it; UsageError when it records another
    lesson (its checks and device would be shown as this lesson's)."""
    record = load(path)
    if record.lesson != lesson:
        raise UsageError(f"{path} records the {record.lesson!r} lesson, not {lesson!r}")
    return record


def require_exports(path: str | Path | None, reports: Sequence[str]) -> None:
    """A profile folder that holds nsys exports holds every one of `reports` (what a replay from exports reads):
    else UsageError naming the missing files, never a quiet fall-back to its results.json alone."""
    if path is None or not Path(path).is_dir():
        return
    found = nsys.find_exports(path)
    missing = [report for report in reports if report not in found]
    if found and missing:
        some = next(iter(found.values()))
        ends = [f"_{alias}.csv" for alias in nsys.REPORT_ALIASES]
        prefix = next((some.name[: -len(end)] for end in ends if some.name.endswith(end)), "<prefix>")
        files = " and ".join(f"{prefix}_{report}.csv" for report in missing)
        raise UsageError(
            f"--from-profile {path}: has nsys exports ({some.name}, ...) but no {files}; export "
            f"{' and '.join(missing)} too (nsys stats --format csv), or name the run's results.json to replay it alone"
        )


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
