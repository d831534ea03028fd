"""RecordingContext.races, vectorized, against the plain definition: for each access to a device buffer, the first
earlier access (in issue order) that conflicts with it and that nothing orders before it."""

from __future__ import annotations

import random

import day54.recording
from day54.context import LEGACY
from day54.recording import Problem, RecordingContext, _touches


def races_by_definition(ctx: RecordingContext) -> list[Problem]:
    accesses: dict = {}
    for rec in ctx.ops:
        for buf, writes in _touches(rec):
            accesses.setdefault((buf, rec.pair), []).append((rec, writes))
    found = []
    for (buf, pair), touches in accesses.items():
        for i, (late, late_writes) in enumerate(touches):
            for early, early_writes in touches[:i]:
                if (early_writes or late_writes) and not ctx.ordered(early, late):
                    found.append(
                        Problem(
                            min(early.chunk, late.chunk),
                            f"race on {buf}[{pair}]: {late.describe()} is not ordered after {early.describe()}",
                        )
                    )
                    break
    return found


def random_schedule(rng: random.Random) -> RecordingContext:
    """Any mix of copies, launches and synchronizes on any pair and stream, the legacy stream included."""
    n_buffers = rng.randint(1, 4)
    ctx = RecordingContext(rng.randint(1, 24), n_buffers, n_streams=n_buffers + rng.randint(0, 2))
    for _ in range(rng.randint(0, 90)):
        roll = rng.random()
        if roll < 0.04:
            ctx.synchronize()
            continue
        if roll < 0.08:
            ctx.stream_synchronize(rng.randrange(ctx.n_streams))
            continue
        op = rng.choice((ctx.copy_in, ctx.launch, ctx.copy_out))
        pair = rng.randrange(n_buffers)
        stream = rng.choice((None, None, LEGACY, rng.randrange(ctx.n_streams)))
        op(rng.randrange(ctx.n_chunks), pair, stream=stream)
    return ctx


def test_races_are_those_of_the_definition_on_random_schedules():
    rng = random.Random(54)
    seen_races = 0
    for _ in range(400):
        ctx = random_schedule(rng)
        expected = races_by_definition(ctx)
        assert ctx.races() == expected
        seen_races += bool(expected)
    assert 50 < seen_races < 400  # the sample holds racy and race-free schedules alike


def test_a_long_trace_is_compared_in_blocks_with_the_same_races(monkeypatch):
    """More accesses to one buffer than RACE_ROWS: the blocks find what one pass finds."""
    rng = random.Random(7)
    ctx = RecordingContext(40, 1, n_streams=3)
    for _ in range(600):
        op = rng.choice((ctx.copy_in, ctx.launch, ctx.copy_out))
        op(rng.randrange(40), 0, stream=rng.choice((None, 1, 2)))
    expected = races_by_definition(ctx)
    assert expected and ctx.races() == expected
    monkeypatch.setattr(day54.recording, "RACE_ROWS", 7)
    assert ctx.races() == expected
