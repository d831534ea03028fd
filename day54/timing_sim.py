"""The simulated source: without a GPU, a trace simulated on the recorded stage times (labcore.pipeline.simulate),
the course's schedules the same way, so a ratio compares like with like.

The reference pipeline is withheld from the student's kernel: there its simulated times at the visible checks'
configurations on the shipped profile come from the lesson's public expectations (labcore.public), and at any other
configuration the comparison with it waits for grading (None).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from day54 import report, schedules
from day54.config import MiB
from day54.replay import shipped_profile
from day54.timings import COURSE_BEST, TIMED_TOTAL_BYTES, ChallengeSettings, ChallengeTiming, Timing
from labcore import public
from labcore.pipeline import trace
from labcore.pipeline.recording import RecordingContext
from labcore.pipeline.simulate import Rates, simulate, simulated_ms
from labcore.record import Record

VISIBLE_RATIO = ((64 * MiB, 2),)  # the ratio cell's visible configuration (window, buffers)


def _pipelined_case(settings: ChallengeSettings, rates: Rates) -> dict[str, Any]:
    """A simulated pipeline's configuration and rates, as the public file keys it."""
    return {**dataclasses.asdict(settings), "rates": dataclasses.asdict(rates)}


@functools.cache
def _simulated_pipelined(settings: ChallengeSettings, rates: Rates) -> float:
    return simulated_ms(schedules.pipelined, settings.n_chunks, settings.buffers, rates, n_streams=settings.streams)


def _visible_pipelines() -> list[dict[str, Any]]:
    """The reference pipeline's configurations the student's kernel simulates offline on the shipped profile: the
    ratio cell's, and the course's best for the challenge."""
    record = shipped_profile()
    ratio = [_pipelined_case(ChallengeSettings(w, b, b), ratio_rates(record, w)) for w, b in VISIBLE_RATIO]
    return [*ratio, _pipelined_case(COURSE_BEST, challenge_rates(record, COURSE_BEST.window))]


PIPELINED = public.Expectation(  # the reference pipeline simulated (labcore.public)
    "day54",
    "pipelined simulated ms",
    _visible_pipelines,
    lambda case: _simulated_pipelined(
        ChallengeSettings(case["window"], case["buffers"], case["streams"]), Rates(**case["rates"])
    ),
)


def enqueue_per_op_ms(record: Record) -> float:
    """The host's time to issue one operation, from the record's "timing the enqueue" pass: the pipelined loop's
    host clock without a synchronize over its three calls a chunk (0 where the record has none)."""
    loop_ms = report.enqueue_ms(record)
    if loop_ms is None:
        return 0.0
    n_chunks = record.config.get("total_bytes", TIMED_TOTAL_BYTES) // record.config["window_bytes"]
    return loop_ms / (3 * n_chunks)


def ratio_rates(record: Record, window: int) -> Rates:
    """The record's stage times per chunk at `window`, the copies stretched as its duplex probe says, each operation
    issued after the host's enqueue of the ones before it."""
    stages = report.stages(record, window)
    return Rates.from_stages(stages, report.link_floor_ms(record), enqueue_per_op_ms(record))


@functools.cache
def simulated_naive(n_chunks: int, rates: Rates) -> float:
    """Naive simulated: the same for every submission a warm checker grades."""
    return simulated_ms(schedules.naive, n_chunks, 1, rates)


def simulated_reference(settings: ChallengeSettings, rates: Rates) -> float | None:
    """The reference pipeline simulated at `settings`, or None in the student's kernel where it is not public."""
    return PIPELINED.known(_pipelined_case(settings, rates))


def simulated_timing(recorded: trace.Trace, record: Record) -> Timing:
    """Naive, the reference and the submitted trace simulated on the record's stage times (the pipeline's simulator)."""
    window, buffers = recorded.window_bytes, recorded.n_buffers
    stages = report.stages(record, window)
    assert stages.n_chunks == recorded.n_chunks, f"the record has {stages.n_chunks} chunks at this window"
    rates = ratio_rates(record, window)
    naive = simulated_naive(stages.n_chunks, rates)
    reference = simulated_reference(ChallengeSettings(window, buffers, buffers), rates)
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
    return Rates(*per_chunk, duplex_stretch=stretch, enqueue_ms=enqueue_per_op_ms(record))


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
        None if best is None else mine / best,
        mine / link,
        "simulated",
        f"offline: both simulated on the recorded {record.device.name} stage times with a fixed cost per operation, "
        "the link floor recorded",
    )


def simulated_best(record: Record) -> float | None:
    """The course's best simulated on the record (None in the student's kernel on a record it has no value for)."""
    return simulated_reference(COURSE_BEST, challenge_rates(record, COURSE_BEST.window))


def _replayed(recorded: trace.Trace) -> RecordingContext:
    """The trace replayed on the recording fake (the checks judged it there first, so it replays)."""
    fake = RecordingContext(recorded.n_chunks, recorded.n_buffers, n_streams=recorded.n_streams)
    recorded.replay(fake)
    return fake
