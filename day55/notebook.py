"""What the day-55 notebook calls: one record, live on a GPU or replayed, saying which.

In the student edition (`python -m grader bundle`) exercise 2's answer, the stream-ordered schedule, is withheld,
and every way of allocating built on it with it. The lesson cells still run to the end there: they show the
course's recorded run until the student's own `my_stream_ordered` exists, then measure live with it standing in,
and say which.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from day55 import LESSON, live, plots, report, schedules
from day55.config import Config, PassKey
from day55.live import run_live
from day55.replay import load_profile
from labcore import answers
from labcore.answers import ReferenceWithheld
from labcore.kit.cells import is_written
from labcore.mode import FROM_PROFILE, Mode, live_line
from labcore.pipeline.context import Context
from labcore.pipeline.recording import RecordingContext
from labcore.predictions import LEDGER, Quantity
from labcore.profiles import describe
from labcore.record import Record
from labcore.sizes import format_size, parse_size, parse_sizes

STUDENT_EDITION_VARIANTS = ["once", "malloc", "async", "async-keep", "cupy", "cupy-cold"]  # none needs a reference


def _your_schedule() -> Any | None:
    return answers.yours("my_stream_ordered", lambda fn: fn(Context(RecordingContext(4, 2, allocated=False))))


def measure(
    *,
    total: str = "1GiB",
    window: str = "64MiB",
    windows: str = "4MiB,64MiB",
    buffers: int = 2,
    repeats: int = 5,
    profile: str | Path | None = None,
) -> Record:
    """Measure live when a GPU is here (printing which), else replay the recorded profile (saying so)."""
    mode = Mode.decide(profile)
    edition = answers.withheld(schedules.stream_ordered)
    mine = _your_schedule()
    if not mode.live or (edition and mine is None):
        record = load_profile(mode.profile)
        if mode.live:
            why = (
                "; the live passes need the stream-ordered schedule, exercise 2's answer, which is not in the "
                "student edition: these are the course's recorded numbers until your my_stream_ordered is written "
                "(then run this cell again)"
            )
        else:
            why = "" if mode.reason == FROM_PROFILE else f"; {mode.reason}, so these are recorded numbers"
        print(f"{LESSON}: {describe(record)}{why}")
        return record
    print(live_line(LESSON) + (": the stream-ordered passes run your my_stream_ordered" if edition else ""))
    cfg = Config(
        total_bytes=parse_size(total),
        window_bytes=parse_size(window),
        windows=parse_sizes(windows),
        buffers=buffers,
        repeats=repeats,
    )
    if edition:
        cfg.variants = list(STUDENT_EDITION_VARIANTS)
    with answers.standing_in({schedules.stream_ordered: mine} if edition else {}, ("day55",)):
        return run_live(cfg)


def _or_recorded(show: Any, record: Record) -> Any:
    """show(record); where that needs a withheld reference, show(the course's recorded run), saying so."""
    mine = _your_schedule()
    replacements = (
        {schedules.stream_ordered: mine} if mine is not None and answers.withheld(schedules.stream_ordered) else {}
    )
    try:
        with answers.standing_in(replacements, ("day55",)):
            return show(record)
    except ReferenceWithheld as withheld:
        shipped = load_profile(None)
        print(f"({withheld}.) Shown instead for the course's recorded run ({describe(shipped)}).")
        return show(shipped)


PARTS = ("checks", "stages", "calls", "table", "sweep", "claims")


def show(record: Record, part: str = "all", window: str | None = None) -> None:
    """Print what `python -m day55` prints, or one part of it (one of PARTS)."""
    if part != "all" and part not in PARTS:
        raise ValueError(f"no report part called {part!r}; choose from {', '.join(PARTS)}")

    def text(rec: Record) -> None:
        w = report.main_window(rec, parse_size(window) if window else None)
        shown = {
            "all": lambda: report.render(rec, w),
            "checks": lambda: report.checks_text(rec),
            "stages": lambda: report.stages_text(rec, w),
            "calls": lambda: report.calls_text(rec, w),
            "table": lambda: report.table(rec, w),
            "sweep": lambda: report.sweep_text(rec),
            "claims": lambda: "\n".join(c.line() for c in report.claims(rec, w)),
        }
        print(shown[part]())

    _or_recorded(text, record)


def figure(name: str, record: Record) -> Figure:
    """One of day55.plots' figures of a record: "timeline", "simulated" or "medians"."""
    return _or_recorded(getattr(plots, name), record)


def the_race(record: Record) -> None:
    """What the recording fake says of the free on the other stream, as the record keeps it."""
    found = record.extra.get(live.RACE)
    if not found:
        print("this record keeps no verdicts of the free on the other stream")
        return
    print(f"the recording fake finds {len(found)} problem(s) in 16 chunks x 2 buffers; the first three:")
    for line in found[:3]:
        print("  " + line)


def _over_once(name: str, smallest: bool = False):
    def read(record: Record) -> float | None:
        w = min(report.windows(record)) if smallest else report.main_window(record)
        if not (report.has(record, name, w) and report.has(record, "once", w)):
            return None
        return report.measured(record, name, w) / report.measured(record, "once", w)

    return read


def _held_mib(name: str):
    def read(record: Record) -> float | None:
        key = str(PassKey(name, report.main_window(record), report.buffers(record)))
        held = record.extra.get(live.RESERVED, {}).get(key)
        return None if held is None else held / 2**20

    return read


def _call(field: str):
    def read(record: Record) -> float | None:
        costs = report.calls(record, report.main_window(record))
        return None if costs is None else getattr(costs, field)

    return read


def _threshold_cost(record: Record) -> float | None:
    w = report.main_window(record)
    if not (report.has(record, "async-sync", w) and report.has(record, "async-sync-keep", w)):
        return None
    return report.measured(record, "async-sync", w) - report.measured(record, "async-sync-keep", w)


QUANTITIES: dict[str, Quantity] = {
    "malloc_ms": Quantity("cudaMalloc of a pair's two windows, ms", _call("malloc_ms")),
    "free_ms": Quantity("cudaFree of them, device idle, ms", _call("free_ms")),
    "malloc_x": Quantity("cudaMalloc/cudaFree per chunk / once", _over_once("malloc")),
    "malloc_small_window_x": Quantity("the same at the smallest window", _over_once("malloc", smallest=True)),
    "async_x": Quantity("mallocAsync per chunk, threshold 0 / once", _over_once("async")),
    "async_keep_x": Quantity("mallocAsync per chunk, UINT64_MAX / once", _over_once("async-keep")),
    "pool_after_async_mib": Quantity("pool after a pass, threshold 0, MiB", _held_mib("async")),
    "pool_after_keep_mib": Quantity("pool after a pass, UINT64_MAX, MiB", _held_mib("async-keep")),
    "threshold_cost_ms": Quantity("waiting every round: threshold 0 minus UINT64_MAX, ms", _threshold_cost),
    "cupy_x": Quantity("cupy.empty per chunk, pool warm / once", _over_once("cupy")),
    "cupy_cold_x": Quantity("cupy.empty per chunk, pool emptied / once", _over_once("cupy-cold")),
}


def compare(predictions: dict[str, float | str | None], record: Record) -> None:
    """Each prediction beside the run's number and measured/yours; remembered for closing_table()."""
    print(LEDGER.compare(predictions, QUANTITIES, record))


def closing_table() -> None:
    """Every prediction compared in this session, in one table."""
    print(LEDGER.closing())


def your_schedule_on_the_fake(schedule: Any, n_chunks: int = 16, buffers: int = 2) -> None:
    """Your schedule replayed on the recording fake (pairs unallocated): its problems, or that it has none, and
    the simulator's time for it on this lesson's recorded stage times."""
    fake = RecordingContext(n_chunks, buffers, allocated=False)
    if not is_written(schedule, Context(fake)):
        return
    problems = fake.problems()
    if problems:
        print(f"{len(problems)} problem(s); the first: chunk {problems[0].chunk}: {problems[0].message}")
        return
    kinds = sorted({rec.op for rec in fake.ops})
    print(f"no problems at {n_chunks} chunks x {buffers} buffers; calls used: {', '.join(kinds)}")


def your_prediction_vs_measured(predict_ms: Any, record: Record) -> None:
    """Your predict_malloc_ms on this record's stages and call costs, beside the measured per-chunk-cudaMalloc pass."""
    for w in report.windows(record):
        st, costs = report.stages(record, w), report.calls(record, w)
        if costs is None or not report.has(record, "malloc", w):
            continue
        if not is_written(predict_ms, st.h2d_ms, st.kernel_ms, st.d2h_ms, st.n_chunks, costs.malloc_ms, costs.free_ms):
            return
        mine = predict_ms(st.h2d_ms, st.kernel_ms, st.d2h_ms, st.n_chunks, costs.malloc_ms, costs.free_ms)
        got = report.measured(record, "malloc", w)
        print(f"{format_size(w)}: you predict {mine:.2f} ms, measured {got:.2f} ms (measured/yours {got / mine:.2f})")
