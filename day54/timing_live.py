"""The live source: on the GPU, on fresh random input, every timed pass's last run verified against naive.

Correctness live (a trace replayed, bit for bit), the ratio check's rounds (naive, the reference and yours), and
the challenge's rounds (the course's best, yours and the link's probe; `challenge_rounds` takes any timer, the
seam its tests use).
"""

from __future__ import annotations

import secrets
import statistics
from collections.abc import Callable
from typing import Any

from day54 import schedules
from day54.timings import (
    CHALLENGE_ROUNDS,
    COURSE_BEST,
    LINK_WINDOW,
    TIMED_TOTAL_BYTES,
    ChallengeRun,
    ChallengeTiming,
    Timing,
    challenge_decided,
    format_window,
)
from labcore import answers
from labcore.checking import expected_output
from labcore.gpulock import gpu_turn
from labcore.pipeline import trace
from labcore.pipeline.context import CupyContext, HostArrays
from labcore.pipeline.verify import bit_exact_check, check_bit_exact
from labcore.timing import grader_pass, time_pass

HOST_CLOCK_SLACK = 1.25  # host clock after a device sync may exceed the events by launch latency, not more


def live_correct(recorded: trace.Trace) -> str:
    """Replay a trace on the GPU on fresh random input, output poisoned first, against naive bit for bit."""
    n_chunks, buffers, window = recorded.n_chunks, recorded.n_buffers, recorded.window_bytes
    host = HostArrays(window * n_chunks)
    host.fill_random(secrets.randbelow(2**31))
    ctx = CupyContext(host, window, buffers, 512)
    reference = expected_output(host, ctx)
    with gpu_turn():
        recorded.replay(ctx)
        ctx.synchronize()
    check = check_bit_exact("your schedule", host.device_view(host.h_out), reference, ctx.chunk_elems)
    assert check.ok, f"live, {n_chunks} chunks, {buffers} buffers, {format_window(window)}: {check.detail}"
    return check.detail


def timed_against(host: HostArrays, expected: Any, chunk_elems: int) -> Callable[[str], dict[str, Any]]:
    """time_pass hooks that verify the last timed run of a pass: its output poisoned just before it, and checked
    against `expected` on the GPU (and poisoned again) once it is done. Yours must be bit-exact; the course's own
    runs must be too, or the grading machine is at fault. What is timed is a replay of a recorded trace, the same
    operations on the same streams every run, judged race-free on the fake first, so one verified run stands for
    every run of the pass; the verify costs a pass over the link, about a run's time, so verifying every run
    would double the GPU time of a check."""

    def hooks(name: str) -> dict[str, Any]:
        def after() -> None:
            check = bit_exact_check(name, host.verify_and_poison(expected, chunk_elems), host.h_out.size // chunk_elems)
            if name == "yours":
                assert check.ok, f"the output of a timed run of your schedule is wrong: {check.detail}"
            elif not check.ok:
                raise RuntimeError(f"the course's {name} schedule gave a wrong output on this GPU: {check.detail}")

        return dict(before_last=host.poison, after_last=after)

    return hooks


def live_timing(recorded: trace.Trace, rounds: int, decided: Callable[[Timing, int], bool] | None = None) -> Timing:
    """Naive, reference and yours on one GPU in the same run; each one's last run of every round verified.

    Yours is the trace, replayed: what is timed is what the checks judged. With `decided`, the rounds stop (before
    `rounds`) once it calls the medians of the rounds done so far a verdict (a class's GPU time goes to the
    schedules near a threshold)."""
    window, buffers = recorded.window_bytes, recorded.n_buffers
    host = HostArrays(TIMED_TOTAL_BYTES)
    host.fill_random(secrets.randbelow(2**31))
    ctx = CupyContext(host, window, buffers, 512)
    hooks = timed_against(host, expected_output(host, ctx), ctx.chunk_elems)
    runs = {
        "naive": lambda: schedules.naive(ctx.with_buffers(1)),
        "reference": lambda: schedules.pipelined(ctx),
        "yours": lambda: recorded.replay(ctx),
    }
    if not answers.grading():  # the student's kernel holds no reference pipeline: naive is its yardstick
        del runs["reference"]
    medians: dict[str, list[float]] = {name: [] for name in runs}
    for done in range(1, rounds + 1):
        for name, fn in runs.items():
            found = grader_pass(fn, name, done == 1, **hooks(name))
            host_ms = statistics.median(found.host_ms)
            assert host_ms <= found.median_ms * HOST_CLOCK_SLACK + 1.0, (
                f"{name}: events say {found.median_ms:.2f} ms but the host clock after a device synchronize says "
                f"{host_ms:.2f} ms: work ran outside the blocking streams the events wait for"
            )
            medians[name].append(found.median_ms)
        naive, mine = (statistics.median(medians[n]) for n in ("naive", "yours"))
        reference = statistics.median(medians["reference"]) if "reference" in medians else None
        rounds_text = f"{done} round{'s' if done > 1 else ''}"
        each = tuple(
            (medians["naive"][i], medians["reference"][i] if "reference" in medians else None, medians["yours"][i])
            for i in range(done)
        )
        timing = Timing(naive, reference, mine, f"live, medians of {rounds_text}, verified every round", rounds=each)
        if decided is not None and decided(timing, done):
            break
    return timing


def challenge_rounds(run: ChallengeRun, rounds: int = CHALLENGE_ROUNDS, with_best: bool = True) -> ChallengeTiming:
    """The challenge's rounds on any timer (the live GPU's, or a test's): the course's best, yours and the probe
    once each a round, back to back; the first round and the last verified; early stop by `challenge_decided`.

    Each round's ratios compare runs taken within a few tens of milliseconds, so the link's drift over seconds
    cancels; the verdict is the median over rounds of yours / the course's best. Without the best (the student's
    kernel, which holds no reference schedule) the rounds time yours and the probe only."""
    over_best, over_floor, mine_all, best_all, floor_all = [], [], [], [], []
    for done in range(1, rounds + 1):
        last = done == rounds or challenge_decided(over_best or over_floor)
        first, verified = done == 1, done == 1 or last
        best = run("best", first, verified) if with_best else None
        mine = run("yours", first, verified)
        floor = run("floor", first, verified)
        if best is not None:
            over_best.append(mine / best)
            best_all.append(best)
        over_floor.append(mine / floor)
        mine_all.append(mine)
        floor_all.append(floor)
        if last:
            break
    best_text = "the course's best, " if with_best else ""
    return ChallengeTiming(
        statistics.median(mine_all),
        statistics.median(best_all) if best_all else None,
        statistics.median(floor_all),
        statistics.median(over_best) if over_best else None,
        statistics.median(over_floor),
        "live",
        f"live, medians of {len(over_floor)} rounds of {best_text}yours and the link's probe, one run each "
        f"back to back, {'yours and the course' + chr(39) + 's best' if with_best else 'yours'} verified",
    )


def challenge_live(recorded: trace.Trace, rounds: int) -> ChallengeTiming:
    """The course's best, yours and the duplex probe on one GPU on fresh random input (challenge_rounds)."""
    host = HostArrays(TIMED_TOTAL_BYTES)
    host.fill_random(secrets.randbelow(2**31))
    base = CupyContext(host, LINK_WINDOW, 2, 512)
    hooks = timed_against(host, expected_output(host, base), base.chunk_elems)
    best = COURSE_BEST
    best_ctx = CupyContext(host, best.window, best.buffers, 512, n_streams=best.streams)
    mine_ctx = CupyContext(host, recorded.window_bytes, recorded.n_buffers, 512, n_streams=recorded.n_streams)
    passes = {
        "best": (lambda: schedules.pipelined(best_ctx), "grader challenge best"),
        "yours": (lambda: recorded.replay(mine_ctx), "grader challenge"),
        "floor": (lambda: schedules.duplex(base), "grader duplex"),
    }

    def run(name: str, first: bool, verified: bool) -> float:
        fn, key = passes[name]
        if name == "floor":  # copies only: after the poison pass the other two end with, so all three start alike
            checked: dict[str, Any] = {"before_last": host.poison} if verified else {}
        else:
            checked = hooks(name) if verified else {}
        warmup = 1 if first and name != "floor" else 0  # the probe follows two runs over the same link
        timed = time_pass(fn, key=key, name=name, params={}, domain="grader", repeats=1, warmup=warmup, **checked)
        return timed.median_ms

    return challenge_rounds(run, rounds, with_best=answers.grading())
