"""The recording fake and the simulator on allocation inside the loop (labcore.pipeline): the race detector against
brute force on random schedules that malloc and free, and the cases the day-55 lesson turns on.

The brute force builds happens-before from CUDA's rules alone, closed transitively: the same stream (the host's
blocking calls count as one), the legacy default stream, a host wait between two operations (a cudaFree's implicit
device synchronize included), and a host call (cudaMalloc, cudaFree) before any later operation, which the host
enqueues only once the call returned."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from labcore.pipeline import trace
from labcore.pipeline.context import HOST, LEGACY, Context
from labcore.pipeline.recording import RecordingContext, _touches
from labcore.pipeline.simulate import Rates, pool_grows, simulate


class Logged(RecordingContext):
    """The recording fake, also keeping the host's waits in issue order for the brute force."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.waits: list[tuple[int, int | None]] = []  # (ops enqueued before it, stream waited for; None: device)

    def synchronize(self) -> None:
        super().synchronize()
        self.waits.append((len(self.ops), None))

    def stream_synchronize(self, stream: int) -> None:
        super().stream_synchronize(stream)
        self.waits.append((len(self.ops), stream))

    def free(self, k: int, pair: int) -> None:
        self.waits.append((len(self.ops), None))  # cudaFree waits for the whole device, then runs
        super().free(k, pair)


def happens_before(ctx: Logged) -> np.ndarray:
    n = len(ctx.ops)
    before = np.zeros((n, n), dtype=bool)
    for j, late in enumerate(ctx.ops):
        for i, early in enumerate(ctx.ops[:j]):
            same = early.stream == late.stream
            streams = (early.stream, late.stream)
            legacy = LEGACY in streams and HOST not in streams  # the legacy rule binds device streams only
            waited = any(i < at <= j and stream in (None, early.stream) for at, stream in ctx.waits)
            host_first = early.stream == HOST  # nothing is enqueued before a host call returns
            before[i, j] = same or legacy or waited or host_first
    for k in range(n):
        before |= before[:, k : k + 1] & before[k : k + 1, :]
    return before


def brute_force_races(ctx: Logged) -> set[tuple[int, int, str, int]]:
    before = happens_before(ctx)
    found = set()
    for j, late in enumerate(ctx.ops):
        for i, early in enumerate(ctx.ops[:j]):
            for place, early_writes in _touches(early):
                for other, late_writes in _touches(late):
                    if place == other and (early_writes or late_writes) and not before[i, j]:
                        found.add((i, j, *place))
    return found


def random_schedule(rng: random.Random) -> Logged:
    """Copies, launches, waits and every kind of allocation, on any chunk, pair and stream."""
    n_buffers = rng.randint(1, 3)
    ctx = Logged(rng.randint(1, 6), n_buffers, n_streams=n_buffers + rng.randint(0, 2), allocated=False)
    legacy = rng.random() < 0.3
    streams = [None, None, *range(ctx.n_streams), *([LEGACY] if legacy else [])]
    for _ in range(rng.randint(0, 40)):
        roll, k, pair = rng.random(), rng.randrange(ctx.n_chunks), rng.randrange(n_buffers)
        if roll < 0.04:
            ctx.synchronize()
        elif roll < 0.08:
            ctx.stream_synchronize(rng.randrange(ctx.n_streams))
        elif roll < 0.13:
            ctx.malloc(k, pair)
        elif roll < 0.17:
            ctx.free(k, pair)
        elif roll < 0.30:
            ctx.malloc_async(k, pair, stream=rng.choice(streams))
        elif roll < 0.40:
            ctx.free_async(k, pair, stream=rng.choice(streams))
        else:
            rng.choice((ctx.copy_in, ctx.launch, ctx.copy_out))(k, pair, stream=rng.choice(streams))
    return ctx


def test_vector_clocks_agree_with_brute_force_on_schedules_that_allocate():
    """On 2,000 random schedules with mallocs and frees of both kinds, the fake's order and races are exactly the
    closure's; the sample has racy and race-free ones, and races on an allocation's own bytes."""
    rng = random.Random(55)
    racy = on_allocations = 0
    for _ in range(2000):
        ctx = random_schedule(rng)
        before = happens_before(ctx)
        clocks = np.array([[ctx.ordered(a, b) for b in ctx.ops] for a in ctx.ops], dtype=bool).reshape(before.shape)
        upper = np.triu(np.ones_like(before), 1)
        assert np.array_equal(clocks & upper, before)
        expected = brute_force_races(ctx)
        assert ctx.race_pairs() == expected
        racy += bool(expected)
        on_allocations += any("@" in place for _, _, place, _ in expected)
    assert 300 < racy < 1900 and on_allocations > 200


def per_chunk(ctx, alloc, free, stream_of=lambda k, pair: None):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        alloc(k, pair) if alloc in (ctx.malloc, ctx.free) else alloc(k, pair, stream=stream_of(k, pair))
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)
        free(k, pair) if free in (ctx.malloc, ctx.free) else free(k, pair, stream=stream_of(k, pair))


def test_stream_ordered_allocation_on_the_chunks_stream_is_race_free():
    ctx = RecordingContext(16, 2, allocated=False)
    per_chunk(ctx, ctx.malloc_async, ctx.free_async)
    assert ctx.problems() == []


def test_cuda_malloc_per_chunk_is_correct_and_waits_for_the_device_at_every_free():
    ctx = RecordingContext(6, 2, allocated=False)
    per_chunk(ctx, ctx.malloc, ctx.free)
    assert ctx.problems() == []
    frees = [rec for rec in ctx.ops if rec.op == "free"]
    assert all(all(ctx.ordered(rec, free) for rec in ctx.ops[: free.index]) for free in frees)
    assert [kind for _, kind in ctx.syncs] == ["free"] * 6


def test_a_free_on_another_stream_races_the_copy_out_still_using_the_buffer():
    ctx = RecordingContext(4, 2, allocated=False)
    per_chunk(ctx, ctx.malloc_async, ctx.free_async, stream_of=lambda k, pair: None)
    assert ctx.problems() == []
    wrong = RecordingContext(4, 2, allocated=False)
    for k in range(4):
        pair = k % 2
        wrong.malloc_async(k, pair)
        wrong.copy_in(k, pair)
        wrong.launch(k, pair)
        wrong.copy_out(k, pair)
        wrong.free_async(k, pair, stream=1 - pair)  # the other pair's stream: nothing orders it after the copy out
    d2h, free = next(r for r in wrong.ops if r.op == "d2h"), next(r for r in wrong.ops if r.op == "free_async")
    assert (d2h.index, free.index, "d_out@1", 0) in wrong.race_pairs()  # the copy out may still be reading it
    assert wrong.races()[0].message == (
        "race on d_in[0] (allocation 1): free_async of chunk 0 on pair 0 (stream 1) is not ordered after "
        "malloc_async of chunk 0 on pair 0 (stream 0)"
    )


def test_an_allocation_on_one_stream_used_on_another_races():
    ctx = RecordingContext(1, 2, allocated=False)
    ctx.malloc_async(0, 0, stream=1)
    ctx.copy_in(0, 0, stream=0)
    ctx.launch(0, 0, stream=0)
    ctx.copy_out(0, 0, stream=0)
    ctx.free_async(0, 0, stream=0)
    assert ctx.races()[0].message == (
        "race on d_in[0] (allocation 1): h2d of chunk 0 on pair 0 (stream 0) is not ordered after malloc_async of "
        "chunk 0 on pair 0 (stream 1)"
    )
    ctx.synchronize()  # a wait after the fact orders nothing that came before it
    assert ctx.races()


def test_use_after_free_double_malloc_double_free_and_leaks_are_problems():
    ctx = RecordingContext(3, 1, allocated=False)
    ctx.copy_in(0, 0)  # never allocated
    ctx.malloc_async(0, 0)
    ctx.malloc_async(0, 0)  # the first allocation leaks
    ctx.free_async(0, 0)
    ctx.free_async(1, 0)  # nothing left to free
    ctx.launch(1, 0)  # freed
    ctx.malloc(2, 0)  # never freed
    got = [p.message for p in ctx.problems()]
    for part in (
        "h2d of chunk 0 uses pair 0, which holds no allocation (allocate it first)",
        "malloc_async of chunk 0: pair 0 is still allocated",
        "free_async of chunk 1: pair 0 holds no allocation to free",
        "kernel of chunk 1 uses pair 0, which holds no allocation (it was freed)",
        "pair 0's buffers from the malloc of chunk 2 are never freed",
    ):
        assert any(part in message for message in got), (part, got)


def test_the_context_own_buffers_are_not_the_schedules_to_free():
    ctx = RecordingContext(1, 1)
    ctx.free_async(0, 0)
    assert any("belong to the context" in p.message for p in ctx.problems())


def test_a_new_allocation_holds_no_chunk_until_copied_in():
    ctx = RecordingContext(1, 1, allocated=False)
    ctx.malloc_async(0, 0)
    ctx.copy_in(0, 0)
    ctx.free_async(0, 0)
    ctx.malloc_async(0, 0)
    ctx.launch(0, 0)
    ctx.copy_out(0, 0)
    ctx.free_async(0, 0)
    assert [p.message for p in ctx.dataflow_errors()] == ["chunk 0's output holds no kernel output"]


def test_the_simulator_charges_cuda_free_as_a_device_wide_wait():
    """cudaMalloc/cudaFree per chunk: every chunk's trip alone plus the calls, whatever the streams; stream-ordered
    allocation on the chunk's stream: the pipeline's overlap."""
    rates = Rates(1.0, 0.5, 1.0, malloc_ms=0.2, free_ms=0.3, async_ms=0.001)
    blocking = RecordingContext(8, 2, allocated=False)
    per_chunk(blocking, blocking.malloc, blocking.free)
    ops = simulate(blocking, rates)
    end = max(o.end_ns for o in ops) / 1e6
    assert end == pytest.approx(8 * (0.2 + 2.5 + 0.3))
    stream_ordered = RecordingContext(8, 2, allocated=False)
    per_chunk(stream_ordered, stream_ordered.malloc_async, stream_ordered.free_async)
    assert max(o.end_ns for o in simulate(stream_ordered, rates)) / 1e6 < 0.5 * end
    assert {o.stream for o in ops if o.op in ("malloc", "free")} == {HOST}


def test_a_pool_at_threshold_zero_grows_again_after_every_synchronize():
    ctx = RecordingContext(8, 2, allocated=False)
    for k in range(8):
        pair = k % 2
        ctx.malloc_async(k, pair)
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)
        ctx.free_async(k, pair)
        if pair == 1:
            ctx.synchronize()  # the host waits for every round
    grows = pool_grows(ctx, keeps_pool=False)
    assert [ctx.ops[i].chunk for i in sorted(grows)] == list(range(8))
    assert pool_grows(ctx, keeps_pool=True) == set()
    loop = RecordingContext(8, 2, allocated=False)
    per_chunk(loop, loop.malloc_async, loop.free_async)
    assert [loop.ops[i].chunk for i in sorted(pool_grows(loop, keeps_pool=False))] == [0, 1]


def test_a_trace_records_allocations_on_both_recordings_and_round_trips():
    def schedule(ctx):
        for k in range(ctx.n_chunks):
            pair = k % ctx.n_buffers
            ctx.malloc_async(k, pair)
            ctx.copy_in(k, pair)
            ctx.launch(k, pair)
            ctx.copy_out(k, pair)
            ctx.free_async(k, pair)
        ctx.malloc(0, 0)
        ctx.free(0, 0)

    recorded = trace.record(schedule, 3, 2)
    kinds = [e.kind for e in recorded.events]
    assert kinds[:5] == ["malloc_async", "h2d", "kernel", "d2h", "free_async"] and kinds[-2:] == ["malloc", "free"]
    again = trace.Trace.from_json(recorded.to_json())
    assert again == recorded
    fake = RecordingContext(3, 2, allocated=False)
    again.replay(fake)
    assert fake.problems() == []
    bad = json.loads(recorded.to_json())
    bad["events"][-1]["stream"] = 0
    with pytest.raises(trace.NotAFixedSchedule, match="a free runs on the host, not on a stream"):
        trace.Trace.from_json(json.dumps(bad))


def test_the_facade_forwards_allocations_and_checks_their_integers():
    fake = RecordingContext(2, 1, allocated=False)
    ctx = Context(fake)
    ctx.malloc_async(np.int64(0), 0)
    ctx.free_async(0, 0, stream=0)
    ctx.malloc(1, 0)
    ctx.free(1, 0)
    assert [rec.op for rec in fake.ops] == ["malloc_async", "free_async", "malloc", "free"]
    with pytest.raises(trace.NotAFixedSchedule, match=r"the pair is 0\.5"):
        ctx.malloc(0, 0.5)
