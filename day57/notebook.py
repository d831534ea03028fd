"""What the day-57 notebook calls: one record, live on a GPU or replayed from the shipped profile, saying which."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from day57 import LESSON, plots, report
from day57.config import Config
from day57.live import run_live
from day57.replay import load_profile
from labcore.kit import cells, cli
from labcore.predictions import LEDGER, Quantity
from labcore.record import Record


def measure(*, profile: str | Path | None = None, repeats: int = 5) -> Record:
    """Measure live when a GPU is here (printing which), else replay the recorded profile (saying so)."""
    live = lambda: run_live(Config(repeats=repeats))  # noqa: E731
    return cli.measured(None if profile is None else str(profile), None, LESSON, live, load_profile)[0]


PARTS = {
    "checks": report.checks_text,
    "gpu": report.gpu_table,
    "traffic": report.traffic_table,
    "predictions": lambda record: "\n".join(v.line() for v in report.predictions(record)),
}
FIGURES = {"timeline": plots.timeline, "bars": plots.bars}


def show(record: Record, part: str = "all") -> None:
    """Print one part of the report ('checks', 'gpu', 'traffic', 'predictions') or all."""
    cells.show_part(PARTS, report.render, record, part)


def figure(name: str, record: Record) -> Any:
    """'timeline' (migrations and faults of one repeat per managed pass) or 'bars' (every pass)."""
    return cells.drawn(FIGURES, name, record)


QUANTITIES = {
    "faults_over_pipeline": Quantity("faults / pinned pipeline", lambda r: report.ratio(r, "faults", "pipeline")),
    "prefetch_over_pipeline": Quantity("prefetch / pinned pipeline", lambda r: report.ratio(r, "prefetch", "pipeline")),
    "advised_over_floor": Quantity("advised / duplex floor", lambda r: report.ratio(r, "advised", "duplex")),
}


def compare(predictions: dict[str, float | str | None], record: Record) -> None:
    """Your predictions beside this run's numbers (never graded)."""
    print(LEDGER.compare(predictions, QUANTITIES, record))


def closing_table() -> None:
    print(LEDGER.closing())
