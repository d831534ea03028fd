"""Large buffers a warm grading process keeps from one submission to the next.

A live check allocates what it measures with (the zero-copy gather check's 1 GiB mapped table, say); pinning that much
takes most of a second, longer than the measurement. In a student's notebook a check frees what it made when it
is done, so a shared lab machine gets the memory back. A warm trusted checker (grader.checker) calls `keep()`:
then the first check makes the buffer and later checks borrow it. Whoever borrows a buffer overwrites what it
reads; nothing in it is trusted from one check to the next.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable, Iterator
from typing import Any

MAX_KEPT = 4  # buffers kept at most; the least recently used is freed first

_keeping = False
_kept: dict[Hashable, Any] = {}  # key -> a buffer with close(), least recently used first


def keep() -> None:
    """From now on, in this process, buffers made through `borrowed` outlive the check that made them."""
    global _keeping
    _keeping = True


def kept() -> list[Hashable]:
    """The keys of the buffers kept now."""
    return list(_kept)


@contextlib.contextmanager
def borrowed(key: Hashable, make: Callable[[], Any]) -> Iterator[Any]:
    """A buffer made by `make()` (it has close()): fresh and freed on exit, or, once `keep()` was called, the kept
    one of the same key. A borrower that raises frees it (it may have left work running on it)."""
    if not _keeping:
        buffer = make()
        try:
            yield buffer
        finally:
            buffer.close()
        return
    buffer = _kept.pop(key, None)
    if buffer is None:
        while len(_kept) >= MAX_KEPT:
            _kept.pop(next(iter(_kept))).close()
        buffer = make()
    try:
        yield buffer
    except BaseException:
        buffer.close()
        raise
    settle = getattr(buffer, "settle", None)
    if settle is not None:
        settle()
    _kept[key] = buffer
