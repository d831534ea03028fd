"""The graded checks in the student's own kernel (no grading role): right answers pass, wrong ones fail with a
message that says what was found, and the timed check is pending without a GPU (never passed)."""

from __future__ import annotations

import math

import pytest

from day56 import checks, model, schedules
from labcore.device import gpu_available
from labcore.pending import PendingGPU
from labcore.pipeline.context import LEGACY


def mine(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)


def reversed_order(ctx):
    for k in reversed(range(ctx.n_chunks)):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)


def waits_at_end(ctx):
    mine(ctx)
    ctx.synchronize()


def waits_mid(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)
        if k == 0:
            ctx.stream_synchronize(pair)


def kernel_on_the_next_stream(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair, stream=(pair + 1) % ctx.n_streams)
        ctx.copy_out(k, pair)


def nothing(ctx):
    pass


def kernels_on_the_legacy_stream(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair, stream=LEGACY)
        ctx.copy_out(k, pair)


def allocates_in_the_loop(ctx):
    for k in range(ctx.n_chunks):
        ctx.malloc(k, 0)
        ctx.copy_in(k, 0)
        ctx.launch(k, 0)
        ctx.copy_out(k, 0)
        ctx.free(k, 0)


def test_a_capturable_pipeline_passes_offline(capsys):
    checks.check_capture_safe(mine)
    checks.check_capture_safe(reversed_order)
    assert "nothing a capture refuses" in capsys.readouterr().out or gpu_available()


@pytest.mark.parametrize(
    ("schedule", "found"),
    [
        (waits_at_end, r"ctx\.synchronize\(\) inside a stream capture"),
        (waits_mid, r"ctx\.stream_synchronize\(\d\) inside a stream capture"),
        (kernel_on_the_next_stream, "race on"),
        (nothing, "never copied out"),
        # live, CUDA refuses both inside the capture; offline they passed
        (kernels_on_the_legacy_stream, r"ctx\.launch of chunk \d+ on the legacy default stream.*StreamCaptureImplicit"),
        (allocates_in_the_loop, r"ctx\.malloc\(0, 0\) inside a stream capture.*StreamCaptureUnsupported"),
    ],
)
def test_schedules_a_capture_cannot_hold_fail(schedule, found):
    with pytest.raises(AssertionError, match=found):
        checks.check_capture_safe(schedule)


def test_the_lessons_own_schedule_is_refused_in_the_students_kernel():
    with pytest.raises(AssertionError, match="day56's own schedule"):
        checks.check_capture_safe(schedules.pipelined)


@pytest.mark.skipif(gpu_available(), reason="with a GPU the timed check measures")
def test_the_timed_check_is_pending_offline_for_a_good_schedule_and_fails_a_bad_one():
    with pytest.raises(PendingGPU, match="pending a GPU"):
        checks.check_capture_timed(mine)
    with pytest.raises(AssertionError, match="inside a stream capture"):
        checks.check_capture_timed(waits_at_end)


def ceil_division(one_off, enqueue, launch):
    return -(-one_off // (enqueue - launch)) if enqueue > launch else math.inf


def test_break_even_right_answers_pass_whole_numbers_in_any_type():
    checks.check_break_even(_copy, cases=[(3.0, 1.0, 0.25), (1.0, 0.1, 0.1)])
    checks.check_break_even(ceil_division)


def _copy(one_off, enqueue, launch):
    saving = enqueue - launch
    return math.inf if saving <= 0 else math.ceil(one_off / saving)  # an int: a whole number is a whole number


@pytest.mark.parametrize(
    ("fn", "found"),
    [
        (lambda o, e, la: o / (e - la) if e > la else math.inf, "round up"),
        (lambda o, e, la: math.ceil(o / (e - la)) if e > la else 0, "never pays back"),
        (lambda o, e, la: math.ceil(o / (e - la)) if e != la else math.inf, "never pays back"),
        (lambda o, e, la: "many", "not a number"),
        (lambda o, e, la: math.ceil(o / e), "the model"),
    ],
)
def test_break_even_wrong_answers_fail(fn, found, as_graded):
    with pytest.raises(AssertionError, match=found):
        checks.check_break_even(fn, cases=[(3.0, 1.0, 0.25), (1.0, 0.1, 0.2)])


def test_the_break_even_cases_cover_a_launch_that_saves_nothing():
    cases = checks.break_even_cases()
    assert len(cases) == 4 and sum(math.isinf(model.break_even_launches(*c)) for c in cases) == 1


def test_pitfall_answers(as_graded):
    checks.check_pitfalls({"sync": "Error", "host_read": " old ", "new_input": "old", "gpu_time": "same"})
    with pytest.raises(AssertionError, match="3 of 4 right; look again at host_read"):
        checks.check_pitfalls({"sync": "error", "host_read": "result", "new_input": "old", "gpu_time": "same"})
    with pytest.raises(AssertionError, match="is not one of"):
        checks.check_pitfalls({"sync": "crash", "host_read": "old", "new_input": "old", "gpu_time": "same"})
    with pytest.raises(AssertionError, match="not one of"):
        checks.check_pitfalls({"sync": "error"})
    with pytest.raises(AssertionError, match="a list"):
        checks.check_pitfalls(["error", "old", "old", "same"])


def _runs(enqueue: float, launch: float, floor: float, streams: float, graphed: float) -> dict[str, list[float]]:
    return {
        "enqueue": [enqueue] * 4,
        "launch": [launch] * 4,
        "floor": [floor] * 5,
        "streams": [streams] * 5,
        "graph": [graphed] * 5,
    }


def test_the_timed_numbers_are_data_judged_against_their_bars():
    """The reference on the H200 (2026-12-03): 2.25 ms of enqueue against a 0.46 ms launch, the graph at the
    streams' time and 1.06x the floor: all three pass; each bar missed alone fails alone."""
    host, own, floor = checks.timed_results(_runs(2.25, 0.46, 20.0, 21.2, 21.2), 1)
    assert (host.value, own.value, floor.value) == pytest.approx((2.25 / 0.46, 1.0, 1.06))
    assert host.passed and own.passed and floor.passed and not host.passes_below
    assert floor.detail.startswith("live, medians of 1 round of 5 runs")
    missed = [
        checks.timed_results(_runs(*numbers), 2)
        for numbers in (
            (1.2, 0.46, 20.0, 21.2, 21.2),  # a launch only 2.6x cheaper
            (2.25, 0.46, 20.0, 21.2, 22.6),  # the graph 1.066x the streams
            (2.25, 0.46, 20.0, 24.0, 24.0),  # 1.2x the floor
        )
    ]
    assert [[r.passed for r in results] for results in missed] == [
        [False, True, True],
        [True, False, True],
        [True, True, False],
    ]


def test_only_a_near_miss_is_measured_again():
    near, far = (
        checks.timed_results(_runs(2.25, 0.46, 20.0, 21.2, 22.6), 1),
        checks.timed_results(_runs(2.25, 0.46, 20.0, 40.0, 40.0), 1),
    )
    assert not any(checks._far_off(r) for r in near)  # 1.066x against 1.05x: more runs may turn it
    assert checks._far_off(far[2]) and not checks._far_off(far[1])  # 2x the floor: a serialized schedule
