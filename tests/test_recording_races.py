"""RecordingContext's race detection against brute force: happens-before built from CUDA's rules and closed
transitively, every pair of accesses to the same bytes (device buffers and host chunks) compared, on thousands of
random schedules. The vector clocks must agree with it exactly, pair by pair."""

from __future__ import annotations

import random

import numpy as np
import pytest

import labcore.pipeline.recording
from labcore.pipeline.context import LEGACY
from labcore.pipeline.recording import Problem, RecordingContext, _place, _touches


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


def happens_before(ctx: Logged) -> np.ndarray:
    """before[i, j]: CUDA guarantees op i finishes before op j starts, from the rules alone, closed transitively.

    Direct edges i -> j (i issued first): the same stream; j on the legacy default stream (it waits for all earlier
    work of the blocking streams); i on the legacy stream (later work of the blocking streams waits for it); a
    device-wide synchronize after i and before j; a synchronize of i's stream after i and before j.
    """
    n = len(ctx.ops)
    before = np.zeros((n, n), dtype=bool)
    for j, late in enumerate(ctx.ops):
        for i, early in enumerate(ctx.ops[:j]):
            same = early.stream == late.stream
            legacy = LEGACY in (early.stream, late.stream)
            waited = any(i < at <= j and stream in (None, early.stream) for at, stream in ctx.waits)
            before[i, j] = same or legacy or waited
    for k in range(n):  # Floyd-Warshall on booleans
        before |= before[:, k : k + 1] & before[k : k + 1, :]
    return before


def brute_force_races(ctx: Logged) -> set[tuple[int, int, str, int]]:
    """Every two accesses to the same place, either a write, with no happens-before between them."""
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
    """Any mix of copies, launches and synchronizes on any chunk, pair and stream, the legacy stream included."""
    n_buffers = rng.randint(1, 4)
    ctx = Logged(rng.randint(1, 8), n_buffers, n_streams=n_buffers + rng.randint(0, 2))
    legacy = rng.random() < 0.5  # half the schedules never touch the legacy stream
    for _ in range(rng.randint(0, 40)):
        roll = rng.random()
        if roll < 0.05:
            ctx.synchronize()
            continue
        if roll < 0.12:
            ctx.stream_synchronize(rng.choice([*range(ctx.n_streams), *([LEGACY] if legacy else [])]))
            continue
        op = rng.choice((ctx.copy_in, ctx.launch, ctx.copy_out))
        stream = rng.choice([None, None, rng.randrange(ctx.n_streams), *([LEGACY] if legacy else [])])
        op(rng.randrange(ctx.n_chunks), rng.randrange(n_buffers), stream=stream)
    return ctx


def test_vector_clocks_agree_with_brute_force_happens_before():
    """On 3,000 random schedules the fake's ordering and its races are exactly those of the closure."""
    rng = random.Random(54)
    racy = host_only = legacy_later = 0
    for _ in range(3000):
        ctx = random_schedule(rng)
        before = happens_before(ctx)
        clocks = np.array([[ctx.ordered(a, b) for b in ctx.ops] for a in ctx.ops], dtype=bool).reshape(before.shape)
        upper = np.triu(np.ones_like(before), 1)
        assert np.array_equal(clocks & upper, before)
        expected = brute_force_races(ctx)
        assert ctx.race_pairs() == expected
        racy += bool(expected)
        host_only += bool(expected) and all(place.startswith("h_") for _, _, place, _ in expected)
        legacy_later += _first_use_after_legacy(ctx)
    # the sample holds racy and race-free schedules, schedules whose only races are on host chunks, and streams first
    # used after a legacy-stream operation (which they wait for)
    assert 600 < racy < 2900 and host_only > 20 and legacy_later > 100


def _first_use_after_legacy(ctx: RecordingContext) -> bool:
    """Whether a blocking stream is first used after an operation on the legacy stream."""
    legacy = [rec.index for rec in ctx.ops if rec.stream == LEGACY]
    first = {}
    for rec in ctx.ops:
        first.setdefault(rec.stream, rec.index)
    return bool(legacy) and any(stream != LEGACY and at > legacy[0] for stream, at in first.items())


def races_by_definition(ctx: RecordingContext) -> list[Problem]:
    """The first unordered conflicting earlier access of each access, as races() words it."""
    accesses: dict = {}
    for rec in ctx.ops:
        for place, writes in _touches(rec):
            accesses.setdefault(place, []).append((rec, writes))
    found = []
    for place, touches in accesses.items():
        for i, (late, late_writes) in enumerate(touches):
            for early, early_writes in touches[:i]:
                if (early_writes or late_writes) and not ctx.ordered(early, late):
                    found.append(
                        Problem(
                            min(early.chunk, late.chunk),
                            f"race on {_place(place)}: {late.describe()} is not ordered after {early.describe()}",
                        )
                    )
                    break
    return found


def test_races_name_the_first_unordered_access_of_each():
    """races() reports, for each racing access, the first earlier access it races (the vectorized form)."""
    rng = random.Random(7)
    for _ in range(300):
        ctx = random_schedule(rng)
        assert ctx.races() == races_by_definition(ctx)


def test_a_long_trace_is_compared_in_blocks_with_the_same_races(monkeypatch):
    """More accesses to one buffer than RACE_ROWS: the blocks find what one pass finds."""
    rng = random.Random(7)
    ctx = RecordingContext(40, 1, n_streams=3)
    for _ in range(600):
        op = rng.choice((ctx.copy_in, ctx.launch, ctx.copy_out))
        op(rng.randrange(40), 0, stream=rng.choice((None, 1, 2)))
    expected = races_by_definition(ctx)
    pairs = ctx.race_pairs()
    assert expected and ctx.races() == expected
    monkeypatch.setattr(labcore.pipeline.recording, "RACE_ROWS", 7)
    assert ctx.races() == expected and ctx.race_pairs() == pairs


def test_two_copies_out_of_one_chunk_on_two_streams_race_on_the_host():
    """Two unordered writes of the same host chunk from different streams: a race, though each is right."""
    ctx = RecordingContext(2, 2)
    for pair in (0, 1):
        ctx.copy_in(0, pair)
        ctx.launch(0, pair)
    ctx.copy_out(0, 0)
    ctx.copy_out(0, 1)
    ctx.copy_in(1, 0)
    ctx.launch(1, 0)
    ctx.copy_out(1, 0)
    assert not ctx.dataflow_errors()
    assert [p.message for p in ctx.races()] == [
        "race on host chunk 0 of h_out: d2h of chunk 0 on pair 1 (stream 1) is not ordered after d2h of chunk 0 on "
        "pair 0 (stream 0)"
    ]
    ordered = RecordingContext(1, 2)
    for pair in (0, 1):
        ordered.copy_in(0, pair)
        ordered.launch(0, pair)
        ordered.copy_out(0, pair)
        ordered.stream_synchronize(pair)  # the host waits for the first write before it enqueues the second
    assert ordered.races() == []


def test_a_stream_first_used_after_a_legacy_operation_waits_for_it():
    """A blocking stream's first operation after a legacy-stream one is ordered after it (no false race)."""
    ctx = RecordingContext(1, 2)
    ctx.copy_in(0, 0, stream=LEGACY)
    ctx.launch(0, 0, stream=1)
    ctx.copy_out(0, 0, stream=1)
    assert ctx.ordered(ctx.ops[0], ctx.ops[1]) and ctx.races() == []


def test_waiting_for_a_stream_that_does_not_exist_is_refused():
    with pytest.raises(IndexError, match=r"stream_synchronize: stream 2 does not exist; .* streams 0\.\.1"):
        RecordingContext(4, 2).stream_synchronize(2)


# -- stream capture refuses what CUDA refuses ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda ctx: ctx.launch(0, 0, stream=LEGACY), "cudaErrorStreamCaptureImplicit"),
        (lambda ctx: ctx.copy_in(0, 0, stream=LEGACY), "cudaErrorStreamCaptureImplicit"),
        (lambda ctx: ctx.copy_out(0, 0, stream=LEGACY), "cudaErrorStreamCaptureImplicit"),
        (lambda ctx: ctx.free_async(0, 0, stream=LEGACY), "cudaErrorStreamCaptureImplicit"),
        (lambda ctx: ctx.malloc(0, 1), "cudaErrorStreamCaptureUnsupported"),
        (lambda ctx: ctx.free(0, 0), "cudaErrorStreamCaptureUnsupported"),
        (lambda ctx: ctx.synchronize(), "cudaErrorStreamCaptureUnsupported"),
        (lambda ctx: ctx.stream_synchronize(LEGACY), "cudaErrorStreamCaptureUnsupported"),
    ],
)
def test_inside_a_capture_the_fake_refuses_what_cuda_refuses_naming_the_error(call, error):
    """Legacy-stream work and synchronizing calls passed the fake's capture (live they fail): each is a CaptureError
    naming CUDA's error, and nothing of it is recorded."""
    ctx = RecordingContext(2, 2)
    ctx.begin_capture()
    with pytest.raises(labcore.pipeline.recording.CaptureError, match=error):
        call(ctx)
    assert ctx.ops == []


def test_outside_a_capture_the_legacy_stream_and_malloc_are_ordinary():
    ctx = RecordingContext(2, 2, allocated=False)
    ctx.malloc(0, 0)
    ctx.copy_in(0, 0, stream=LEGACY)
    ctx.launch(0, 0, stream=LEGACY)
    ctx.copy_out(0, 0)
    ctx.free(0, 0)
    assert [rec.op for rec in ctx.ops] == ["malloc", "h2d", "kernel", "d2h", "free"]
