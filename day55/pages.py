"""The Markdown blocks the course's website shows from the shipped profile (site/_ext/course_figures.py): the
lesson's claims, each with the model's prediction and the measurement, computed by this lesson's report (every
number is also printed by `python -m day55`)."""

from __future__ import annotations

from collections.abc import Callable

from day55 import LESSON, report
from day55.replay import load_profile
from labcore.markdown import bullets, origin
from labcore.record import Record

load = load_profile  # the record the blocks are computed from


def claims(record: Record) -> list[str]:
    """The lesson's claims at its main window, one bullet each."""
    return [origin(LESSON, record), "", *bullets(report.claims(record, report.main_window(record)))]


BLOCKS: dict[str, Callable[[Record], list[str]]] = {"claims": claims}
