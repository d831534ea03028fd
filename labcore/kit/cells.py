"""What a lesson's notebook cells share: a lesson's notebook module imports these and calls them from its own.

if not is_written(schedule, Context(RecordingContext(16, 2))):   # the exercise is still its stub: stop here
    return
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from labcore.errors import UsageError
from labcore.record import Record


def is_written(fn: Any, *args: Any) -> bool:
    """False, with a line saying so, while an exercise still raises NotImplementedError (its stub)."""
    try:
        fn(*args)
    except NotImplementedError:
        print(f"{getattr(fn, '__name__', 'the exercise')} is not written yet: write it above, then run this cell again")
        return False
    return True


def show_part(
    parts: Mapping[str, Callable[[Record], str]], render: Callable[[Record], str], record: Record, part: str
) -> None:
    """Print the report (`part` 'all') or one part of it by name; UsageError naming the parts for another name."""
    if part == "all":
        print(render(record))
        return
    if part not in parts:
        raise UsageError(f"no part {part!r}; the parts are {', '.join(parts)} and all")
    print(parts[part](record))


def drawn(figures: Mapping[str, Callable[[Record], Any]], name: str, record: Record) -> Any:
    """One figure by name (a matplotlib Figure, which a notebook shows); UsageError naming the figures for another."""
    if name not in figures:
        raise UsageError(f"no figure {name!r}; the figures are {', '.join(figures)}")
    return figures[name](record)
