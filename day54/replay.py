"""Replays: a results record from a recorded profile instead of the GPU."""

from __future__ import annotations

from pathlib import Path

from labcore import record as rec
from labcore.errors import UsageError
from labcore.profiles import default_profile

LESSON = "day54"


def load_profile(path: str | Path | None = None) -> rec.Record:
    """Read a profile directory (or a results.json) into a replay record."""
    path = Path(path) if path is not None else default_profile(LESSON)
    if not path.exists():
        raise UsageError(f"--from-profile {path}: no such file or directory")
    source = path / "results.json" if path.is_dir() else path
    if not source.is_file():
        raise UsageError(f"--from-profile {path}: no results.json there")
    loaded = rec.load(source)
    if loaded.lesson != LESSON:
        raise UsageError(f"{source} is a {loaded.lesson!r} record, not {LESSON!r}")
    loaded.mode, loaded.source = "replay", str(source)
    return loaded


def describe(record: rec.Record) -> str:
    """Where a replay's numbers came from, for the mode line."""
    d = record.device
    versions = ", ".join(f"{k} {v}" for k, v in (("driver", d.driver), ("driver CUDA", d.driver_cuda),
                                                       ("CUDA runtime", d.cuda_runtime), ("CuPy", d.cupy)) if v)
    return f"replay of {record.source} (recorded {record.recorded_at} on {d.summary()}; {versions})"
