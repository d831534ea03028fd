"""The Markdown blocks the course's website shows from the shipped profile (site/_ext/course_figures.py): the
lesson's five predictions judged on the recorded run, computed by this lesson's report (every number is also
printed by `python -m day56`)."""

from __future__ import annotations

from collections.abc import Callable

from day56 import LESSON, report
from day56.replay import load_profile
from labcore.markdown import bullets, origin
from labcore.record import Record

load = load_profile  # the record the blocks are computed from


def predictions(record: Record) -> list[str]:
    """The five predictions, one bullet each: the claim, whether it held, the numbers it was judged on."""
    return [origin(LESSON, record), "", *bullets(report.predictions(record))]


BLOCKS: dict[str, Callable[[Record], list[str]]] = {"predictions": predictions}
