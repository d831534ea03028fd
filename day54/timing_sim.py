"""The simulated source: without a GPU, a trace simulated on the recorded stage times (labcore.pipeline.simulate),
the course's schedules the same way, so a ratio compares like with like.
"""

from __future__ import annotations

import functools

from day54 import report, schedules
from day54.timings import COURSE_BEST, TIMED_TOTAL_BYTES, ChallengeTiming, Timing
from labcore.pipeline import trace
from labcore.pipeline.recording import RecordingContext
from labcore.pipeline.simulate import Rates, simulate, simulated_ms
from labcore.record import Record


@functools.cache
def simulated_course(window: int, buffers: int, n_chunks: int, rates: Rates) -> tuple[float, float]:
    """Naive and the reference pipeline simulated: the same for every submission a warm checker grades."""
    return (
        simulated_ms(schedules.naive, n_chunks, 1, rates),
        simulated_ms(schedules.pipelined, n_chunks, buffers, rates),
    )


def simulated_timing(recorded: trace.Trace, record: Record) -> Timing:
    """Naive, the reference and the submitted trace simulated on the record's stage times (the pipeline's simulator)."""
    window, buffers = recorded.window_bytes, recorded.n_buffers
    stages = report.stages(record, window)
    assert stages.n_chunks == recorded.n_chunks, f"the record has {stages.n_chunks} chunks at this window"
    rates = Rates.from_stages(stages, report.link_floor_ms(record))
    naive, reference = simulated_course(window, buffers, stages.n_chunks, rates)
    mine = max((o.end_ns for o in simulate(_replayed(recorded), rates)), default=0) / 1e6
    return Timing(
        naive,
        reference,
        mine,
        f"offline, simulated on the recorded {record.device.name} stage times "
        f"(naive {naive:.2f} ms, yours {mine:.2f} ms simulated)",
        "simulated",
    )


def challenge_rates(record: Record, window: int) -> Rates:
    """Per-chunk stage times at any window from a record: per-byte rates plus a fixed cost per operation.

    The record's smallest and largest windows give both: a pass of N chunks costs N x (bytes/rate + fixed).
    """
    windows = report.windows(record)
    small, large = min(windows), max(windows)
    total = TIMED_TOTAL_BYTES
    per_chunk = []
    for name in ("h2d", "kernel", "d2h"):
        t_small, t_large = (report.measured(record, name, w, 1) for w in (small, large))
        n_small, n_large = total // small, total // large
        fixed = max(0.0, (t_small - t_large) / (n_small - n_large)) if n_small != n_large else 0.0
        streaming = t_large - n_large * fixed
        per_chunk.append(streaming * window / total + fixed)
    link = report.link_floor_ms(record)
    main = report.stages(record, report.main_window(record, None))
    stretch = 1.0 if link is None else max(1.0, link / max(main.h2d_ms, main.d2h_ms))
    return Rates(*per_chunk, duplex_stretch=stretch)


def challenge_simulated(recorded: trace.Trace, record: Record) -> ChallengeTiming:
    """Yours and the course's best simulated on the record's stage times, over its recorded link floor."""
    link = report.link_floor_ms(record)
    assert link is not None, f"the record from {record.source} has no duplex probe, so no link floor"
    mine = simulated_ms(
        recorded.replay,
        recorded.n_chunks,
        recorded.n_buffers,
        challenge_rates(record, recorded.window_bytes),
        n_streams=recorded.n_streams,
    )
    best = simulated_best(record)
    return ChallengeTiming(
        mine,
        best,
        link,
        mine / best,
        mine / link,
        "simulated",
        f"offline: both simulated on the recorded {record.device.name} stage times with a fixed cost per operation, "
        "the link floor recorded",
    )


def simulated_best(record: Record) -> float:
    best = COURSE_BEST
    rates = challenge_rates(record, best.window)
    return simulated_ms(schedules.pipelined, best.n_chunks, best.buffers, rates, n_streams=best.streams)


def _replayed(recorded: trace.Trace) -> RecordingContext:
    """The trace replayed on the recording fake (the checks judged it there first, so it replays)."""
    fake = RecordingContext(recorded.n_chunks, recorded.n_buffers, n_streams=recorded.n_streams)
    recorded.replay(fake)
    return fake
