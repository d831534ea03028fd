"""A schedule as data: recorded once at each configuration, replayed on any context, refused when not fixed."""

from __future__ import annotations

import numpy as np
import pytest

from day54 import checks, schedules, trace
from day54.recording import RecordingContext

from wrong_schedules import lazy_after


def test_a_replayed_trace_enqueues_what_the_schedule_enqueues():
    """Replaying the recorded trace on the fake gives the very operations the schedule gives directly."""
    for schedule in (schedules.naive, schedules.pipelined, schedules.pitfall_sync_in_loop):
        direct, replayed = RecordingContext(16, 3), RecordingContext(16, 3)
        schedule(direct)
        trace.record(schedule, 16, 3).replay(replayed)
        assert replayed.per_stream() == direct.per_stream() and replayed.syncs == direct.syncs


def test_a_trace_round_trips_through_json_and_bad_json_is_refused():
    """Traces are data: JSON out and back is the same trace; what is not a trace is named."""
    recorded = trace.record(schedules.pitfall_legacy_launch, 7, 2)
    assert trace.Trace.from_json(recorded.to_json()) == recorded
    with pytest.raises(trace.NotAFixedSchedule, match="event 0 of the trace: unknown kind 'memset'"):
        trace.Trace.from_json(recorded.to_json().replace('"h2d"', '"memset"', 1))
    with pytest.raises(trace.NotAFixedSchedule, match="not a schedule trace"):
        trace.Trace.from_json('{"n_chunks": 1}')


def test_numpy_integers_are_integers():
    """Chunks computed with NumPy are recorded as plain ints."""

    def with_numpy(ctx):
        for k in np.arange(ctx.n_chunks):
            ctx.copy_in(k, k % ctx.n_buffers)
            ctx.launch(k, k % ctx.n_buffers)
            ctx.copy_out(k, k % ctx.n_buffers)

    assert trace.record(with_numpy, 4, 2) == trace.record(schedules.pipelined, 4, 2)


def reads_the_data(ctx):
    """Decides from the host array: not a fixed sequence of operations."""
    for k in range(ctx.n_chunks):
        if ctx.h_in[0] > 0.5:
            ctx.copy_in(k, 0)


calls = []


def differs_each_time(ctx):
    """Enqueues one operation fewer every other call."""
    calls.append(1)
    for k in range(ctx.n_chunks - len(calls) % 2):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)


def float_chunks(ctx):
    for k in range(ctx.n_chunks):
        ctx.copy_in(k / 1, 0)


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        (reads_the_data, r"your schedule uses ctx\.h_in, which graded schedules cannot"),
        (differs_each_time, r"a different sequence .* must make the same calls every time"),
        (float_chunks, r"h2d: the chunk is 0\.0; chunks, pairs and streams are integers"),
    ],
)
def test_what_is_not_a_fixed_sequence_fails_every_check(schedule, message):
    """Such schedules fail with a message, in the correctness, practice and timing checks alike."""
    for check in (checks.check_schedule_correct, checks.check_good_practice, checks.check_pipelined_ratio):
        with pytest.raises(AssertionError, match=message):
            check(schedule)


def test_doing_less_after_the_first_calls_is_caught():
    """A schedule right for its first two calls only: the other configurations' recordings are wrong."""
    with pytest.raises(AssertionError, match="is never copied out"):
        checks.check_schedule_correct(lazy_after(2))
