"""A schedule as data: recorded once at each configuration, replayed on any context, refused when not fixed."""

from __future__ import annotations

import numpy as np
import pytest

from day54 import checks, schedules
from day54.tests.wrong_schedules import lazy_after
from labcore.pipeline import context, trace
from labcore.pipeline.recording import RecordingContext


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
        (reads_the_data, r"your schedule uses ctx\.h_in, which schedules cannot"),
        (differs_each_time, r"calls on one recording and .* on another .* must make the same calls every time"),
        (float_chunks, r"copy_in: the chunk is 0\.0; chunks, pairs and streams are integers"),
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


# -- the facade: a schedule cannot tell a recording from a real run ---------------------------------------------


class FakeCupy:
    """Just enough of CuPy to build a real CupyContext without a GPU: arrays and streams that do nothing."""

    def __init__(self) -> None:
        self.cuda = self
        self.Stream = FakeStream
        self.float32 = np.float32
        self.calls: list[tuple] = []
        self.runtime = self

    def empty(self, n, dtype):
        return FakeDeviceArray()

    def memcpyAsync(self, *args):  # CuPy's name
        self.calls.append(("memcpy", *args))


class FakeDeviceArray:
    def __init__(self):
        self.data = self
        self.ptr = id(self)


class FakeStream:
    null = None

    def __init__(self, non_blocking=False):
        self.ptr = id(self)


class FakeHost:
    def __init__(self, total):
        self.h_in = np.zeros(total // 4, np.float32)
        self.h_out = np.zeros(total // 4, np.float32)


def real_context(monkeypatch, n_chunks=4, buffers=2):
    """A CupyContext built by its own __init__ (CuPy faked), as day54.student hands one to a schedule."""
    fake = FakeCupy()
    monkeypatch.setattr(context, "cupy_or_none", lambda: fake)
    monkeypatch.setattr(context, "launch_fma_chain", lambda *args: fake.calls.append(("kernel", *args)))
    return context.CupyContext(FakeHost(1024 * n_chunks), 1024, buffers, 512)


def what_it_sees(ctx) -> dict:
    """Everything a schedule could ask to tell one context from another, short of reaching behind the facade."""
    seen = {
        "type": (type(ctx).__name__, type(ctx).__module__, type(ctx).__qualname__),
        "class": ctx.__class__.__name__,
        "isinstance": [isinstance(ctx, c) for c in (context.Context, context.CupyContext, RecordingContext)],
        "dir": dir(ctx),
        "repr": repr(ctx),
        "shape": [getattr(ctx, name) for name in context.INTERFACE],
    }
    for name in ("h_in", "d_in", "streams", "tracer", "host", "_cp", "_backend", "__dict__", "__slots__", "events"):
        try:
            seen[name] = repr(getattr(ctx, name, "missing"))
        except AssertionError as exc:
            seen[name] = str(exc)
    return seen


def test_a_schedule_sees_the_same_context_recorded_and_live(monkeypatch):
    """Type, module, isinstance, attributes, repr, dir: all the same on a real CupyContext and on both recordings."""
    seen = []

    def looks(ctx):
        seen.append(what_it_sees(ctx))
        schedules.naive(ctx)

    trace.record(looks, 4, 2, window_bytes=1024)
    looks(context.Context(real_context(monkeypatch)))
    assert len(seen) == 3 and seen[0] == seen[1] == seen[2]
    assert (
        seen[0]["type"] == ("Context", "labcore.pipeline.context", "Context")
        and "which schedules cannot" in seen[0]["h_in"]
    )


def test_the_real_context_behind_the_facade_runs_the_calls(monkeypatch):
    """A live run through the facade still enqueues the copies (CuPy faked): the facade only forwards."""
    real = real_context(monkeypatch, n_chunks=2)
    ctx = context.Context(real)
    ctx.copy_in(np.int64(1), 0)
    ctx.copy_out(1, 1, stream=0)
    ctx.launch(0, 1)
    assert [c[0] for c in real._cp.calls] == ["memcpy", "memcpy", "kernel"]
    with pytest.raises(IndexError, match="stream 2 does not exist"):
        ctx.copy_in(0, 0, stream=2)
    with pytest.raises(IndexError, match="stream -2 does not exist"):  # not the last stream, as a list would have it
        ctx.copy_in(0, 0, stream=-2)


def test_the_recording_cupy_context_has_a_real_ones_attributes(monkeypatch):
    """CupyContext.recorder: the class of a real run, with the same attributes as one its __init__ built."""
    recorder = context.CupyContext.recorder(4, 2, 2, 1024, trace._Tracer())
    assert type(recorder) is context.CupyContext
    assert set(vars(recorder)) == set(vars(real_context(monkeypatch)))


def detects(test):
    """Correct when `test(ctx)` holds, racing (a pair's next chunk on another stream) when it does not."""

    def schedule(ctx):
        good = test(ctx)
        for k in range(ctx.n_chunks):
            pair = k % ctx.n_buffers
            stream = pair if good else (k // ctx.n_buffers) % ctx.n_buffers
            ctx.copy_in(k, pair, stream=stream)
            ctx.launch(k, pair, stream=stream)
            ctx.copy_out(k, pair, stream=stream)

    return schedule


def _behind(ctx):
    return type(object.__getattribute__(ctx, "_backend")).__name__


def _probe(ctx):
    try:
        ctx.h_in  # noqa: B018 (the probe is the point)
    except AssertionError:
        return True
    return False


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        (detects(lambda ctx: type(ctx).__name__ in ("_Recorder", "RecordingContext")), "race on"),
        (detects(lambda ctx: isinstance(ctx, context.CupyContext)), "race on"),
        (detects(lambda ctx: type(ctx).__name__ == "Context"), None),  # what a real run sees too: just correct
        (detects(_probe), None),  # the probe fails the same way live: correct everywhere
        (detects(lambda ctx: _behind(ctx) == "_Recorder"), "calls on one recording and .* on another"),
        (detects(lambda ctx: _behind(ctx) != "CupyContext"), "calls on one recording and .* on another"),
    ],
)
def test_a_schedule_that_detects_the_recording_gains_nothing(schedule, message):
    """By type or isinstance it sees what a real run sees (and races there); reaching behind the facade, it finds
    two different contexts in its two recordings and is refused."""
    if message is None:
        checks.check_schedule_correct(schedule)
    else:
        with pytest.raises(AssertionError, match=message):
            checks.check_schedule_correct(schedule)


def test_calls_on_a_kept_context_are_not_the_trace():
    """A schedule that keeps the first context it was handed and makes its calls on it only the second time: its
    first recording is what it did then (nothing), so the two differ."""
    kept = []

    def later(ctx):
        kept.append(ctx)
        if len(kept) % 2 == 0:
            schedules.naive(kept[-2])
            schedules.naive(ctx)

    with pytest.raises(trace.NotAFixedSchedule, match="made 0 calls on one recording and 48 on another"):
        trace.record(later, 16, 2)
