"""The checks autograded notebook cells call. Each raises AssertionError with the measured numbers.

Every check says how it decided: live on the GPU it measures (fresh random
input, repeats and medians, events cross-checked against a host clock);
without a GPU it reads the nsys exports the student's own run left beside the
notebook (`day54_run_*.csv`, checked for consistency) or, failing those,
simulates the schedule on the recorded H200 stage times, and says so.
"""

from __future__ import annotations

import secrets
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from day54 import report, schedules
from day54.config import MiB, PassKey
from day54.context import CupyContext, HostArrays
from day54.model import Stages, predict
from day54.recording import RecordingContext
from day54.replay import from_exports, load_profile
from day54.simulate import Rates, simulated_ms
from day54.verify import check_bit_exact
from labcore.checking import assert_own_function, say
from labcore.device import gpu_available
from labcore.record import Record
from labcore.timing import time_pass

RUN_PREFIX = "day54_run"
HOST_CLOCK_SLACK = 1.25  # host clock after a device sync may exceed the events by launch latency, not more


def assert_own_schedule(schedule: Callable[[Any], None]) -> None:
    """The graded schedule must be written in the notebook, not imported from day54."""
    assert_own_function(
        schedule,
        n_params=1,
        what="schedule",
        references=(schedules.naive, schedules.pipelined),
        forbidden=("schedules", "pipelined"),
        hint="enqueue the copies and launches yourself",
    )


# -- correctness ------------------------------------------------------------------------------------


def check_schedule_correct(schedule: Callable[[Any], None], *, buffers: int = 2, n_chunks: int = 16) -> None:
    """Output bit-exact against naive: on the GPU with fresh random input; offline by CUDA's ordering rules."""
    assert_own_schedule(schedule)
    fake = RecordingContext(n_chunks, buffers)
    schedule(fake)
    problems = fake.problems()
    assert not problems, f"{len(problems)} problem(s); first bad chunk {problems[0].chunk}: {problems[0].message}"
    if not gpu_available():
        say(
            f"offline: {buffers} buffers, {n_chunks} chunks: every chunk's output comes from its own input and no "
            f"buffer access is unordered (recording fake; no GPU to run it on)"
        )
        return
    window = 4 * MiB
    host = HostArrays(window * n_chunks)
    host.fill_random(secrets.randbelow(2**31))
    ctx = CupyContext(host, window, buffers, 512)
    host.poison()
    schedules.naive(ctx.with_buffers(1))
    ctx.synchronize()
    reference = host.h_out.copy()
    host.poison()
    schedule(ctx)
    ctx.synchronize()
    check = check_bit_exact("your schedule", host.h_out, reference, ctx.chunk_elems)
    assert check.ok, check.detail
    say(f"live: {buffers} buffers, {n_chunks} chunks of fresh random input: {check.detail}")


def check_no_early_reuse(schedule: Callable[[Any], None], *, buffers: int = 2, n_chunks: int = 12) -> None:
    """No buffer pair takes a new chunk before the copy out of its previous chunk is ordered before it."""
    ctx = RecordingContext(n_chunks, buffers)
    schedule(ctx)
    last_out: dict[int, Any] = {}
    for rec in ctx.ops:
        if rec.op == "h2d" and rec.pair in last_out:
            assert ctx.ordered(last_out[rec.pair], rec), (
                f"chunk {rec.chunk} enters pair {rec.pair} before chunk {last_out[rec.pair].chunk} left it"
            )
        if rec.op == "d2h":
            last_out[rec.pair] = rec
    say(f"{buffers} buffers: every pair is reused only after its previous chunk was copied out")


# -- timing -----------------------------------------------------------------------------------------


def _live_ratio(schedule: Callable[[Any], None], window: int, buffers: int, rounds: int) -> tuple[float, str]:
    host = HostArrays(1 << 30)
    host.fill_random(secrets.randbelow(2**31))
    ctx = CupyContext(host, window, buffers, 512)
    ratios, detail = [], ""
    for _ in range(rounds):
        naive = time_pass(
            lambda: schedules.naive(ctx.with_buffers(1)),
            key="grader naive",
            name="naive",
            params={},
            domain="grader",
            repeats=3,
        )
        mine = time_pass(
            lambda: schedule(ctx), key="grader student", name="student", params={}, domain="grader", repeats=3
        )
        for p in (naive, mine):
            host_ms = statistics.median(p.host_ms)
            assert host_ms <= p.median_ms * HOST_CLOCK_SLACK + 1.0, (
                f"{p.name}: events say {p.median_ms:.2f} ms but the host clock after a device synchronize says "
                f"{host_ms:.2f} ms: work ran outside the blocking streams the events wait for"
            )
        ratios.append(mine.median_ms / naive.median_ms)
        detail = f"naive {naive.median_ms:.2f} ms, yours {mine.median_ms:.2f} ms"
    return statistics.median(ratios), f"live, median of {rounds} rounds (last: {detail})"


EXPORTS_AGREEMENT = 0.15  # exported and simulated ratios of one schedule differ by less than this on the H200


def _exports_ratio(
    schedule: Callable[[Any], None], directory: Path, window: int, buffers: int
) -> tuple[float, str] | None:
    """The ratio from the student's own recorded run, if its exports are here, checked against the schedule."""
    if not any(directory.glob(f"{RUN_PREFIX}_*.csv")):
        return None
    record = from_exports(directory)
    key = PassKey("student", window, buffers)
    assert record.has_pass(key), f"your run's exports in {directory} have no '{key}' range"
    ratio = record.pass_times(key).median_ms / report.measured(record, "naive", window, 1)
    simulated, _ = _simulated_ratio(schedule, window, buffers, record)
    assert abs(ratio - simulated) < EXPORTS_AGREEMENT, (
        f"your exports say {ratio:.3f} but the schedule in this notebook simulates to {simulated:.3f} on the "
        f"exported stage times: the exports are not from this schedule"
    )
    return ratio, f"from your run's nsys exports ({RUN_PREFIX}_*.csv; simulated {simulated:.3f})"


def _simulated_ratio(schedule: Callable[[Any], None], window: int, buffers: int, record: Record) -> tuple[float, str]:
    stages = report.stages(record, window)
    rates = Rates.from_stages(stages, report.link_floor_ms(record))
    times = [
        simulated_ms(fn, stages.n_chunks, depth, rates) for fn, depth in ((schedules.naive, 1), (schedule, buffers))
    ]
    return times[1] / times[0], (
        f"offline, simulated on the recorded {record.device.name} stage times "
        f"(naive {times[0]:.2f} ms, yours {times[1]:.2f} ms simulated)"
    )


def pipelined_ratio(
    schedule: Callable[[Any], None],
    *,
    window: int = 64 * MiB,
    buffers: int = 2,
    rounds: int = 3,
    directory: str | Path = ".",
) -> tuple[float, str]:
    """Your schedule's time over naive's: live, from your run's exports, or simulated (in that order)."""
    if gpu_available():
        return _live_ratio(schedule, window, buffers, rounds)
    found = _exports_ratio(schedule, Path(directory), window, buffers)
    if found is not None:
        return found
    return _simulated_ratio(schedule, window, buffers, load_profile())


def check_pipelined_ratio(
    schedule: Callable[[Any], None], *, window: int = 64 * MiB, buffers: int = 2, threshold: float = 0.70
) -> None:
    """Pipelined at `window` takes at most `threshold` of naive (returns nothing: a number would be partial credit)."""
    assert_own_schedule(schedule)
    ratio, how = pipelined_ratio(schedule, window=window, buffers=buffers)
    assert ratio <= threshold, (
        f"pipelined/naive = {ratio:.3f} at {window // MiB} MiB with {buffers} buffers, "
        f"above the {threshold:.2f} threshold ({how})"
    )
    say(f"pipelined/naive = {ratio:.3f} <= {threshold:.2f} at {window // MiB} MiB, {buffers} buffers ({how})")


# -- analysis functions the student writes --------------------------------------------------------------


def _scaled(record: Record, factor: dict[str, float]) -> Record:
    """A copy of a record whose pass times are scaled per pass name: fresh numbers no one could hard-code."""
    clone = Record.from_dict(record.to_dict(), source=f"{record.source} (scaled)")
    for p in clone.passes:
        p.times_ms = [t * factor.get(p.name, 1.0) for t in p.times_ms]
    return clone


def check_sweep_ratios(
    sweep_ratios: Callable[[Record, int], dict[int, float]], record: Record, *, buffers: int = 2
) -> dict[int, float]:
    """The student's sweep function returns pipelined/naive per window, on this record and on a rescaled one."""
    for rec, label in (
        (record, "this run's record"),
        (_scaled(record, {"pipelined": 0.9, "naive": 1.1}), "a rescaled record"),
    ):
        got = sweep_ratios(rec, buffers)
        want = {w: report.ratio(rec, w, buffers) for w in report.windows(rec)}
        assert set(got) == set(want), f"on {label}: windows {sorted(got)} but the record has {sorted(want)}"
        for w, value in want.items():
            assert abs(got[w] - value) <= 1e-6 * value, (
                f"on {label}: ratio at {w // MiB} MiB is {got[w]:.4f}, the record says {value:.4f}"
            )
    result = sweep_ratios(record, buffers)
    say("ratios: " + ", ".join(f"{w // MiB} MiB {r:.3f}" for w, r in sorted(result.items())))
    return result


def check_worst_window(result: dict[int, float]) -> None:
    """Of the sweep, the largest window has the worst (highest) ratio, as the edge argument predicts."""
    worst = max(result, key=result.get)
    assert worst == max(result), f"the worst ratio is at {worst // MiB} MiB, not the largest window"
    say(f"the worst ratio is at {worst // MiB} MiB, the largest window")


def check_prediction(
    predict_ms: Callable[..., float],
    *,
    tolerance: float = 0.01,
    cases: list[tuple[float, float, float, int, int, float | None]] | None = None,
) -> None:
    """The student's cost model gives the model's bound on each case, within `tolerance` (relative)."""
    cases = cases or [
        (19.56, 5.40, 19.55, 16, 2, 22.38),
        (87.81, 43.70, 82.44, 16, 2, None),
        (19.40, 5.24, 19.49, 4, 3, 22.0),
    ]
    for h2d, kernel, d2h, n_chunks, n_buffers, link in cases:
        want = predict(Stages(h2d, kernel, d2h, n_chunks), n_buffers, link).bound_ms
        got = predict_ms(h2d, kernel, d2h, n_chunks, n_buffers, link)
        assert abs(got - want) <= tolerance * want, (
            f"h2d {h2d}, kernel {kernel}, d2h {d2h} ms, {n_chunks} chunks, {n_buffers} buffers, link floor {link}: "
            f"you predict {got:.3f} ms, the model {want:.3f} ms"
        )
    say(f"{len(cases)} cases within {tolerance:.0%} of the model")
