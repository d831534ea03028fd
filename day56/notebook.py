"""What the day-56 notebook calls: one record, live on a GPU or replayed from the shipped profile, saying which.

In the student edition the exercises' reference answers are withheld (the break-even arithmetic, the pitfall
key): the lesson's tables then show the break-even only where the student's own `break_even_launches` exists in
the notebook, and say so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from day56 import LESSON, plots, report, schedules
from day56.config import Config
from day56.live import run_live
from day56.replay import load_profile
from labcore import answers
from labcore.kit.cells import drawn, show_part
from labcore.kit.cli import replay_line
from labcore.mode import Mode, live_line
from labcore.pipeline import trace
from labcore.predictions import LEDGER, Quantity
from labcore.record import Record


def _your_schedule() -> Any | None:
    """The student's my_capturable from the notebook, once it is written and records as a fixed schedule."""
    return answers.yours("my_capturable", lambda fn: trace.record(fn, 5, 2))


def measure(*, profile: str | Path | None = None, repeats: int = 5, pitfalls: bool = True) -> Record:
    """Measure live when a GPU is here (printing which), else replay the recorded profile (saying so).

    In the student edition, where the pipeline is withheld, the live run captures the student's `my_capturable`
    once it is written (the pitfalls, variants of the reference, are then left out); until then it replays."""
    mode = Mode.decide(profile)
    if mode.live and not answers.withheld(schedules.pipelined):
        print(live_line(LESSON))
        return run_live(Config(repeats=repeats, pitfalls=pitfalls))
    if mode.live:
        mine = _your_schedule()
        if mine is not None:
            print(live_line(LESSON) + "; the pipeline is your my_capturable")
            with answers.standing_in({schedules.pipelined: mine}, (LESSON,)):
                return run_live(Config(repeats=repeats, pitfalls=False))
        print(f"{LESSON}: the live run captures your my_capturable (exercise 2), not written yet: replaying")
    record = load_profile(None if mode.live else mode.profile)
    print(replay_line(LESSON, record, mode))
    return record


PARTS = {
    "checks": report.checks_text,
    "gpu": report.gpu_table,
    "host": report.host_table,
    "update": report.update_table,
    "pitfalls": lambda record: report.pitfalls_text(record) or "no pitfall runs in this record",
    "predictions": lambda record: "\n".join(v.line() for v in report.predictions(record)),
}


def show(record: Record, part: str = "all") -> None:
    """Print one part of the report ('checks', 'gpu', 'host', 'update', 'pitfalls', 'predictions') or all."""
    show_part(PARTS, report.render, record, part)


def figure(name: str, record: Record) -> Figure:
    """'timeline', 'host' or 'gpu'."""
    return drawn({"timeline": plots.timeline, "host": plots.host_bars, "gpu": plots.gpu_bars}, name, record)


def _largest(read: Any) -> Any:
    def value(record: Record) -> float | None:
        return read(record, max(report.chunk_counts(record)))

    return value


def _main(read: Any) -> Any:
    def value(record: Record) -> float | None:
        return read(record, report.main_chunks(record))

    return value


def _over(top: Any, bottom: Any) -> Any:
    def value(record: Record, n: int) -> float | None:
        a, b = top(record, n), bottom(record, n)
        return None if a is None or not b else a / b

    return value


QUANTITIES = {
    "enqueue_ms_fewest": Quantity("enqueue loop, stream by stream, at 16 chunks (host ms)", _main(report.enqueue_ms)),
    "enqueue_ms_most": Quantity("enqueue loop at 256 chunks (host ms)", _largest(report.enqueue_ms)),
    "launch_ms_most": Quantity("one graph launch at 256 chunks (host ms)", _largest(report.launch_ms)),
    "graph_over_streams": Quantity(
        "graph / streams, GPU time at 16 chunks",
        _main(_over(lambda r, n: report.gpu_ms(r, "graph", n), lambda r, n: report.gpu_ms(r, "streams", n))),
    ),
    "graph_over_floor": Quantity(
        "graph / duplex floor, GPU time at 16 chunks",
        _main(lambda r, n: report.gpu_ms(r, "graph", n) / report.floor_ms(r) if report.floor_ms(r) else None),
    ),
    "instantiate_ms_most": Quantity(
        "instantiate at 256 chunks (host ms)", _largest(lambda r, n: report.host(r, n).get("instantiate_ms"))
    ),
    "update_over_instantiate": Quantity(
        "update / instantiate again, at 256 chunks",
        _largest(
            _over(
                lambda r, n: report.host(r, n).get("update_ms"),
                lambda r, n: report.host(r, n).get("reinstantiate_ms"),
            )
        ),
    ),
}


def compare(predictions: dict[str, float | str | None], record: Record) -> None:
    """Your predictions beside this run's numbers (never graded)."""
    print(LEDGER.compare(predictions, QUANTITIES, record))


def closing_table() -> None:
    print(LEDGER.closing())


def your_break_even(fn: Any, record: Record) -> None:
    """Your break_even_launches on this run's numbers at every chunk count, beside the model's where it is here."""
    if not answers.grading() and getattr(fn, "__code__", None) is None:
        print("write break_even_launches above first")
        return
    lines = [f"{'Chunks':>7}{'One-off ms':>12}{'Saving ms':>11}{'Yours':>8}{'Model':>8}"]
    for n in report.chunk_counts(record):
        one, enq, lau = report.one_off_ms(record, n), report.enqueue_ms(record, n), report.launch_ms(record, n)
        if None in (one, enq, lau):
            lines.append(f"{n:>7}  no host times in this record")
            continue
        try:
            mine = fn(one, enq, lau)
        except NotImplementedError:
            print("write break_even_launches above first")
            return
        model = report.break_even(record, n)
        lines.append(f"{n:>7}{one:>12.3f}{enq - lau:>11.3f}{report._fmt(mine, '.0f'):>8}{report._fmt(model, '.0f'):>8}")
    print("\n".join(lines))
