"""The Markdown blocks the course's website shows from the shipped profile (site/_ext/course_figures.py): every pass
against the pinned pipeline and the duplex floor, then the lesson's claims judged on them, computed by this lesson's
report (every number is also printed by `python -m day57`)."""

from __future__ import annotations

from collections.abc import Callable

from day57 import LESSON, report
from day57.config import PASSES
from day57.replay import load_profile
from labcore.markdown import bullets, origin, row
from labcore.record import Record

load = load_profile  # the record the blocks are computed from


def passes(record: Record) -> list[str]:
    """A table of the passes (median ms, against the pipeline and the floor), and a bullet per claim."""
    lines = [origin(LESSON, record), "", row("pass", "median ms", "/ pipeline", "/ duplex floor"), row(*["---"] * 4)]
    for name in (n for n in PASSES if report.ms(record, n) is not None):
        ratios = (report.ratio(record, name, to) for to in ("pipeline", "duplex"))
        lines.append(row(name, f"{report.ms(record, name):.2f}", *(f"{r:.2f}x" for r in ratios)))
    return [*lines, "", *bullets(report.predictions(record))]


BLOCKS: dict[str, Callable[[Record], list[str]]] = {"passes": passes}
