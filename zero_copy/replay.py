"""Replays: a results record from a recorded profile instead of the GPU.

A zero-copy profile directory holds the nsys CSV exports of a profiled run and
the results.json that run wrote; a replay reads results.json, the record the
live run produced (the exports show the same run in Nsight's terms).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from labcore.errors import UsageError
from labcore.profiles import load_results, results_path
from labcore.record import Record
from zero_copy import LESSON
from zero_copy.report import picked_experiments, predates


def load_profile(path: str | Path | None = None) -> Record:
    """The recorded run at `path` (a profile directory or its results.json; by default the shipped one);
    UsageError when it is missing, unreadable or records another lesson."""
    return load_results(results_path(LESSON, path), LESSON)


def require_experiments(record: Record, picked: Sequence[str]) -> None:
    """UsageError naming the picked experiments a replayed record does not hold, those it was recorded too early to
    hold aside (the report says those were not recorded)."""
    held = picked_experiments(record)
    missing = [name for name in picked if name not in held and not predates(record, name)]
    if missing:
        raise UsageError(f"the record has no {', '.join(missing)} experiment (it has: {', '.join(held) or 'none'})")
