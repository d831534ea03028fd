"""Same work, same grade: within one grading run a timed verdict is measured once for each distinct piece of work.

A trusted checker times what a student handed in (a schedule's trace replayed, a kernel's launch) against the
course's yardsticks in the same rounds. Two submissions whose work is the same (the same calls on the same streams
in the same order at the same shape, verified first) must get the same grade, so the second reads the first one's
measurement instead of timing again: `once(what, identity, measure)`. The measurements live, for the grading run
(its seed, the role's), in a folder of the grader's own under the system's temporary folder: mode 0700, owned by
the grader, its name derived from the secret seed; a folder that is not so is not used (then every submission is
measured). Checkers of the same run on one machine (a class's workers) share it; a measurement in progress is
waited for (an flock per identity). Outside grading (a student's own kernel) nothing is shared: every call measures.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from labcore import answers

T = TypeVar("T")
PREFIX = "labcore-measured-"


def digest(*parts: Any) -> str:
    """A short stable digest of JSON-able parts (a check's name, a trace's JSON, a shape)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def _run_folder() -> Path | None:
    """This grading run's folder of measurements, made private; None outside grading or where it is not ours."""
    seed = answers.run_seed()
    if seed is None:
        return None
    folder = Path(tempfile.gettempdir()) / f"{PREFIX}{os.geteuid()}-{digest('run', seed)[:20]}"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = os.lstat(folder)
    if not os.path.isdir(folder) or os.path.islink(folder) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        return None  # someone else's, or open to others: measure every submission instead
    return folder


def once(
    what: str, identity: str, measure: Callable[[], T], encode: Callable[[T], Any], decode: Callable[[Any], T]
) -> tuple[T, bool]:
    """(the measurement of `identity` for `what`, whether it was another submission's): measured here the first
    time in this grading run, read back every later time. `encode`/`decode` turn it into JSON and back."""
    folder = _run_folder()
    if folder is None:
        return measure(), False
    name = digest(what, identity)
    lock_fd = os.open(folder / f"{name}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX)  # a second checker on the same work waits for the first measurement
        found = folder / f"{name}.json"
        if found.is_file():
            return decode(json.loads(found.read_text())), True
        value = measure()
        partial = folder / f"{name}.json.part"
        partial.write_text(json.dumps(encode(value)))
        partial.replace(found)
        return value, False
    finally:
        os.close(lock_fd)


SHARED = "the measurement of identical work handed in by another student in this grading run: same work, same grade"
