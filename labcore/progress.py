"""Progress for long commands that logs cleanly: a live tqdm bar on a terminal, one plain line per step elsewhere.

`python -m day54 > log 2>&1` or a notebook's stderr is no terminal: there, a tqdm bar would become one
long line of carriage returns, so each finished step prints one line instead, e.g.
`day54: 3/17 closed form (12.4 s)`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import TextIO, TypeVar

from tqdm import tqdm

T = TypeVar("T")


class Progress:
    """Counts finished steps; a bar on a terminal, one line per step elsewhere. Use it as a context manager."""

    def __init__(self, total: int, desc: str, *, unit: str = "step", file: TextIO | None = None) -> None:
        self.total, self.desc, self.n = total, desc, 0
        self.file = sys.stderr if file is None else file
        self._status = ""
        self._started = time.perf_counter()
        self._bar = tqdm(total=total, desc=desc, unit=unit, file=self.file, leave=False) if _isatty(self.file) else None

    def update(self, label: str = "") -> None:
        """One step finished; `label` names it (default: the last status)."""
        self.n += 1
        label = label or self._status
        self._status = ""
        if self._bar is not None:
            self._bar.set_postfix_str(label, refresh=False)
            self._bar.update()
            return
        elapsed_s = time.perf_counter() - self._started
        text = f"{self.desc}: {self.n}/{self.total} {label}".rstrip()
        print(f"{text} ({elapsed_s:.1f} s)", file=self.file, flush=True)

    def status(self, text: str) -> None:
        """What the step is doing: on the bar at once; in a log, the label of its line if update() gives none."""
        self._status = text
        if self._bar is not None:
            self._bar.set_postfix_str(text)

    def set_description(self, desc: str) -> None:
        """Rename what is being counted (the bar's prefix, the lines' first word)."""
        self.desc = desc
        if self._bar is not None:
            self._bar.set_description(desc)

    def close(self) -> None:
        """Remove the bar from the terminal; nothing to do for plain lines."""
        if self._bar is not None:
            self._bar.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def progress(total: int, desc: str, *, unit: str = "step", file: TextIO | None = None) -> Progress:
    """A Progress of `total` steps on `file` (default: sys.stderr at call time)."""
    return Progress(total, desc, unit=unit, file=file)


def track(items: Iterable[T], desc: str, *, unit: str = "step", file: TextIO | None = None) -> Iterator[T]:
    """Yield each item; the step counts as finished, labelled with the item, when the loop body is done."""
    items = list(items)
    with progress(len(items), desc, unit=unit, file=file) as bar:
        for item in items:
            yield item
            bar.update(str(item))


def _isatty(file: TextIO) -> bool:
    """True for a terminal; False for files, pipes, StringIO, notebooks and closed streams."""
    try:
        return bool(file.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False
