"""Schedules against the recording fake: op order per stream, buffer reuse, and the pitfalls."""

from __future__ import annotations

import pytest

from day54 import schedules
from day54.tests.wrong_schedules import off_by_one, skipping
from labcore.pipeline.context import LEGACY
from labcore.pipeline.recording import RecordingContext


def run(schedule, n_chunks=16, n_buffers=2, n_streams=None) -> RecordingContext:
    ctx = RecordingContext(n_chunks, n_buffers, n_streams=n_streams)
    schedule(ctx)
    return ctx


def test_naive_is_one_stream_in_chunk_order():
    """Naive: everything on stream 0, pair 0, copy in / kernel / copy out per chunk."""
    ctx = run(schedules.naive, n_chunks=4, n_buffers=1)
    expected = [(op, k, 0) for k in range(4) for op in ("h2d", "kernel", "d2h")]
    assert ctx.per_stream() == {0: expected}
    assert ctx.problems() == []


@pytest.mark.parametrize("depth", [2, 3, 4])
def test_pipelined_puts_chunk_k_on_pair_k_mod_depth(depth):
    """Pipelined: stream s holds exactly chunks s, s+B, ... in order, on pair s."""
    ctx = run(schedules.pipelined, n_chunks=16, n_buffers=depth)
    streams = ctx.per_stream()
    assert sorted(streams) == list(range(depth))
    for s, ops in streams.items():
        assert ops == [(op, k, s) for k in range(s, 16, depth) for op in ("h2d", "kernel", "d2h")]
    assert ctx.problems() == []


@pytest.mark.parametrize("depth", [2, 3])
def test_pipelined_reuses_a_pair_only_after_its_tenant_was_copied_out(depth):
    """Every copy in to a pair is ordered after the copy out of the chunk that held it before."""
    ctx = run(schedules.pipelined, n_chunks=12, n_buffers=depth)
    last_out: dict[int, object] = {}
    reuses = 0
    for rec in ctx.ops:
        if rec.op == "h2d" and rec.pair in last_out:
            assert ctx.ordered(last_out[rec.pair], rec)
            reuses += 1
        if rec.op == "d2h":
            last_out[rec.pair] = rec
    assert reuses == 12 - depth


def test_pipelined_streams_are_not_ordered_with_each_other():
    """Chunk 1's copy in is not held behind chunk 0's copy out: that is the overlap."""
    ctx = run(schedules.pipelined, n_chunks=4, n_buffers=2)
    out0 = next(r for r in ctx.ops if r.op == "d2h" and r.chunk == 0)
    in1 = next(r for r in ctx.ops if r.op == "h2d" and r.chunk == 1)
    assert not ctx.ordered(out0, in1) and not ctx.ordered(in1, out0)


def test_more_streams_than_buffers_races():
    """Three streams on two pairs: chunk 2 reuses pair 0 from another stream, a race at chunk 0."""
    ctx = run(schedules.pitfall_more_streams_than_buffers, n_chunks=6, n_buffers=2, n_streams=3)
    races = ctx.races()
    assert races and races[0].chunk == 0
    assert "pair 0" in races[0].message and "stream 2" in races[0].message
    assert ctx.first_bad_chunk() == 0


def test_sync_in_loop_is_correct_and_serial():
    """A synchronize per chunk is safe: every op is ordered after the previous chunk's copy out."""
    ctx = run(schedules.pitfall_sync_in_loop, n_chunks=6, n_buffers=2)
    assert ctx.problems() == []
    outs = [r for r in ctx.ops if r.op == "d2h"]
    ins = [r for r in ctx.ops if r.op == "h2d"]
    assert all(ctx.ordered(outs[k], ins[k + 1]) for k in range(5))


def test_legacy_launch_is_a_barrier():
    """The mid-loop legacy launch waits for both streams and holds back both."""
    ctx = run(schedules.pitfall_legacy_launch, n_chunks=8, n_buffers=2)
    legacy = next(r for r in ctx.ops if r.stream == LEGACY)
    assert legacy.chunk == 4
    assert all(ctx.ordered(r, legacy) for r in ctx.ops[: legacy.index])
    assert all(ctx.ordered(legacy, r) for r in ctx.ops[legacy.index + 1 :])
    assert ctx.problems() == []


def test_wrong_offset_names_the_first_bad_chunk():
    """Copying chunk k+1 in for chunk k: chunk 0's output holds chunk 1's input."""
    ctx = run(off_by_one, n_chunks=4)
    problems = ctx.dataflow_errors()
    assert [p.chunk for p in problems] == [0, 1, 2, 3]
    assert problems[0].message == "chunk 0's output holds chunk 1's input"


def test_skipped_chunk_is_never_copied_out():
    """A schedule that forgets chunk 3 is told so."""
    ctx = run(skipping(3), n_chunks=5, n_buffers=1)
    assert [p.message for p in ctx.problems()] == ["chunk 3 is never copied out"]


def test_early_reuse_across_streams_without_sync_races():
    """Two pairs used round-robin but all copies on their own stream per chunk parity: chunk 2 on pair 0 from
    stream 1 races chunk 0's kernel."""

    def crossed(ctx):
        for k in range(ctx.n_chunks):
            pair, stream = k % 2, (k // 2) % 2
            ctx.copy_in(k, pair, stream=stream)
            ctx.launch(k, pair, stream=stream)
            ctx.copy_out(k, pair, stream=stream)

    ctx = run(crossed, n_chunks=4, n_buffers=2)
    assert ctx.first_bad_chunk() == 0
    assert any("d_in[0]" in p.message for p in ctx.races())


@pytest.mark.parametrize("call", [lambda c: c.copy_in(16, 0), lambda c: c.launch(0, 2), lambda c: c.copy_out(0, 0, 5)])
def test_out_of_range_indices_raise(call):
    """A chunk, pair or stream outside the context is an IndexError naming it."""
    with pytest.raises(IndexError, match="does not exist"):
        call(RecordingContext(16, 2))


def test_components_touch_one_stage_each():
    """Component passes enqueue N operations of one kind on stream 0."""
    for name, schedule in schedules.COMPONENTS.items():
        ctx = run(schedule, n_chunks=8, n_buffers=1)
        assert [r.op for r in ctx.ops] == [name] * 8
        assert {r.stream for r in ctx.ops} == {0}
