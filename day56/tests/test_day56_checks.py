"""The graded checks in the student's own kernel (no grading role): right answers pass, wrong ones fail with a
message that says what was found, and the timed check is pending without a GPU (never passed)."""

from __future__ import annotations

import math

import pytest

from day56 import checks, model, schedules
from labcore.device import gpu_available
from labcore.pending import PendingGPU


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
def test_break_even_wrong_answers_fail(fn, found):
    with pytest.raises(AssertionError, match=found):
        checks.check_break_even(fn, cases=[(3.0, 1.0, 0.25), (1.0, 0.1, 0.2)])


def test_the_break_even_cases_cover_a_launch_that_saves_nothing():
    cases = checks.break_even_cases()
    assert len(cases) == 4 and sum(math.isinf(model.break_even_launches(*c)) for c in cases) == 1


def test_pitfall_answers():
    checks.check_pitfalls({"sync": "Error", "host_read": " old ", "new_input": "old", "gpu_time": "same"})
    with pytest.raises(AssertionError, match="3 of 4 right; look again at host_read"):
        checks.check_pitfalls({"sync": "error", "host_read": "result", "new_input": "old", "gpu_time": "same"})
    with pytest.raises(AssertionError, match="is not one of"):
        checks.check_pitfalls({"sync": "crash", "host_read": "old", "new_input": "old", "gpu_time": "same"})
    with pytest.raises(AssertionError, match="not one of"):
        checks.check_pitfalls({"sync": "error"})
    with pytest.raises(AssertionError, match="a list"):
        checks.check_pitfalls(["error", "old", "old", "same"])
