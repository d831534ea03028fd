"""A recording fake context: the CPU test seam for schedules.

It records every operation a schedule enqueues, with its chunk, buffer pair
and stream, and works out which operations CUDA guarantees to be ordered
(same stream, a device or stream synchronize, or the legacy default stream,
which blocking streams wait on). From that it finds the two ways a schedule
can be wrong: a data race (two accesses to the same bytes, a device buffer or
a host chunk, from different streams, at least one of them a write, with
nothing ordering them), and a chunk whose output came from another chunk's
input (or never arrived).

The bytes an operation touches: a copy in reads host chunk k of the input and
writes d_in[pair]; a launch reads d_in[pair] and writes d_out[pair]; a copy out
reads d_out[pair] and writes host chunk k of the output.

Allocation inside the loop (a context made with allocated=False starts with no
buffers): each malloc of a pair makes a new allocation of its two buffers, and
the places above are then that allocation's. An allocation and its free both
write all of its bytes, so a use that nothing orders after the allocation, or
before the free, races it: a free_async on one stream of a buffer another stream
still uses, with no order between them, is a race. `malloc` and `free` are host
calls (stream HOST) that every later operation waits for, and `free` waits for
the whole device first (cudaFree's implicit synchronize); `malloc_async` and
`free_async` are ordered on their stream like any operation. A use of a pair
that holds no allocation (never allocated, or freed), a second malloc of a pair
still allocated, a second free, and an allocation never freed are problems too.

It also knows stream capture (a schedule recorded into a CUDA graph): between
`begin_capture()` and `end_capture()` nothing runs, the operations are only
recorded, so a synchronize or a stream synchronize (the host would wait for work
that cannot start), a cudaMalloc or cudaFree (calls a capture cannot record), any
work on the legacy default stream (which cannot take part in a capture) and a host
read of the output (it would see what was there before) are errors, each with a
message naming the error CUDA gives instead. Outside a capture nothing changes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np

from labcore.pipeline.context import HOST, LEGACY

CAPTURE_SYNC = (
    "ctx.{call} inside a stream capture: a capture only records the work, nothing runs until the graph is "
    "launched, so the host would wait for work that cannot start. CUDA refuses the call "
    "(cudaErrorStreamCaptureUnsupported) and invalidates the whole capture (its end fails with "
    "cudaErrorStreamCaptureInvalidated). Leave the wait out of the captured schedule: wait after the graph's launch"
)
CAPTURE_LEGACY = (
    "{op} of chunk {chunk} on the legacy default stream inside a stream capture: the legacy stream cannot take part "
    "in a capture, and work on it would depend implicitly on the streams being captured. CUDA refuses the call "
    "(cudaErrorStreamCaptureImplicit) and invalidates the whole capture (its end fails with "
    "cudaErrorStreamCaptureInvalidated). Enqueue it on one of the context's streams"
)
CAPTURE_MALLOC = (
    "ctx.malloc({chunk}, {pair}) inside a stream capture: cudaMalloc is a call a capture cannot record (it may "
    "synchronize the device). CUDA refuses it (cudaErrorStreamCaptureUnsupported) and invalidates the whole capture "
    "(its end fails with cudaErrorStreamCaptureInvalidated). Allocate before the capture, or with malloc_async on a "
    "captured stream (the graph holds it as a memory node)"
)
CAPTURE_HOST_READ = (
    "the host reads chunk {chunk} of the output inside a stream capture: nothing captured has run yet, so the read "
    "sees whatever the host array held before (in this lab the NaN poison), not chunk {chunk}'s result; CUDA raises "
    "no error. Read the output after the graph's launch has finished"
)
RACE_ROWS = 256  # accesses whose earlier accesses are compared at once (a 4,000-call trace: 256 x 4,000 at a time)


@dataclasses.dataclass
class Recorded:
    """One enqueued operation, with the vector clock of what must finish before it."""

    index: int
    op: str
    chunk: int
    pair: int
    stream: int
    after: dict[int, int]
    allocation: int = 0  # which allocation of the pair it touches (0: the context's own buffers; -1: none)

    def describe(self) -> str:
        where = {LEGACY: "the legacy default stream", HOST: "the host"}.get(self.stream, f"stream {self.stream}")
        return f"{self.op} of chunk {self.chunk} on pair {self.pair} ({where})"


class CaptureError(AssertionError):
    """A call a stream capture cannot hold (an AssertionError: a check fails on it, with the message)."""


class RecordingContext:
    """Same interface as CupyContext; does no work, remembers everything."""

    def __init__(
        self,
        n_chunks: int,
        n_buffers: int,
        *,
        n_streams: int | None = None,
        window_bytes: int = 64 << 20,
        allocated: bool = True,
    ) -> None:
        self.n_chunks = n_chunks
        self.n_buffers = n_buffers
        self.n_streams = n_streams or n_buffers
        self.window_bytes = window_bytes
        self.ops: list[Recorded] = []
        self.syncs: list[tuple[int, str]] = []
        self._clock: dict[int, dict[int, int]] = {}  # per stream: latest index of each stream it waits for
        self._host: dict[int, int] = {}  # what the host has waited for
        self.allocated = allocated
        self._live: dict[int, int] = dict.fromkeys(range(n_buffers), 0) if allocated else {}  # pair -> allocation
        self._allocations = 0
        self.misuse: list[Problem] = []  # uses of no allocation, double mallocs and frees
        self.capturing = False
        self.captures: list[tuple[int, int]] = []  # (first op, op after the last) of each finished capture
        self.host_reads: list[tuple[int, int, bool]] = []  # (ops before it, chunk, ordered after its copy out?)
        self._capture_start = 0

    # -- the context interface ------------------------------------------------
    def copy_in(self, k: int, pair: int, stream: int | None = None) -> None:
        self._capturable("copy_in", k, stream)
        self._enqueue("h2d", k, pair, stream)

    def launch(self, k: int, pair: int, stream: int | None = None) -> None:
        self._capturable("launch", k, stream)
        self._enqueue("kernel", k, pair, stream)

    def copy_out(self, k: int, pair: int, stream: int | None = None) -> None:
        self._capturable("copy_out", k, stream)
        self._enqueue("d2h", k, pair, stream)

    def _capturable(self, op: str, k: int, stream: int | None) -> None:
        """Inside a capture, work on the legacy default stream is refused as CUDA refuses it (a pair's own stream,
        stream=None, is never the legacy one)."""
        if self.capturing and stream == LEGACY:
            raise CaptureError(CAPTURE_LEGACY.format(op=f"ctx.{op}", chunk=k))

    def synchronize(self) -> None:
        if self.capturing:
            raise CaptureError(CAPTURE_SYNC.format(call="synchronize()"))
        self._device_wait()
        self.syncs.append((len(self.ops), "device"))

    def _device_wait(self) -> None:
        for clock in self._clock.values():
            _join(self._host, clock)

    def stream_synchronize(self, stream: int) -> None:
        if self.capturing:
            raise CaptureError(CAPTURE_SYNC.format(call=f"stream_synchronize({stream})"))
        if stream != LEGACY and not 0 <= stream < self.n_streams:
            raise IndexError(
                f"stream_synchronize: stream {stream} does not exist; this context has streams "
                f"0..{self.n_streams - 1} (ctx.n_streams)"
            )
        _join(self._host, self._clock.get(stream, {}))
        self.syncs.append((len(self.ops), f"stream {stream}"))

    def malloc(self, k: int, pair: int) -> None:
        """cudaMalloc: a host call; every later operation is enqueued after it returns; inside a capture it is
        refused (a call a capture cannot record)."""
        if self.capturing:
            raise CaptureError(CAPTURE_MALLOC.format(chunk=k, pair=pair))
        self._check_args("malloc", k, pair, HOST)
        self._host_call("malloc", k, pair, self._allocate("malloc", k, pair))

    def free(self, k: int, pair: int) -> None:
        """cudaFree: the whole device first (an implicit synchronize), then the host call; inside a capture it is
        refused as a synchronize is."""
        if self.capturing:
            raise CaptureError(CAPTURE_SYNC.format(call=f"free({k}, {pair})"))
        self._check_args("free", k, pair, HOST)
        self._device_wait()
        self.syncs.append((len(self.ops), "free"))
        self._host_call("free", k, pair, self._release("free", k, pair))

    def malloc_async(self, k: int, pair: int, stream: int | None = None) -> None:
        self._capturable("malloc_async", k, stream)
        self._check_args("malloc_async", k, pair, stream)
        self._enqueue("malloc_async", k, pair, stream, self._allocate("malloc_async", k, pair))

    def free_async(self, k: int, pair: int, stream: int | None = None) -> None:
        self._capturable("free_async", k, stream)
        self._check_args("free_async", k, pair, stream)
        self._enqueue("free_async", k, pair, stream, self._release("free_async", k, pair))

    # -- allocations -------------------------------------------------------------
    def _allocate(self, op: str, k: int, pair: int) -> int:
        if pair in self._live:
            self.misuse.append(
                Problem(k, f"{op} of chunk {k}: pair {pair} is still allocated; its buffers would leak (free it first)")
            )
        self._allocations += 1
        self._live[pair] = self._allocations
        return self._allocations

    def _release(self, op: str, k: int, pair: int) -> int:
        if pair not in self._live:
            self.misuse.append(Problem(k, f"{op} of chunk {k}: pair {pair} holds no allocation to free"))
            return -1
        if self._live[pair] == 0:
            self.misuse.append(
                Problem(k, f"{op} of chunk {k}: pair {pair}'s buffers belong to the context, not the schedule")
            )
        return self._live.pop(pair)

    def _host_call(self, op: str, k: int, pair: int, allocation: int) -> None:
        n = len(self.ops)
        self.ops.append(Recorded(n, op, k, pair, HOST, dict(self._host), allocation))
        self._host[HOST] = n  # the host returns from the call before it enqueues anything else
        self._clock[HOST] = dict(self._host)

    def leaks(self) -> list[Problem]:
        """Allocations the schedule never freed (its own; the context's buffers are not its to free)."""
        last = {rec.allocation: rec for rec in self.ops if rec.op in ("malloc", "malloc_async")}
        return [
            Problem(made.chunk, f"pair {pair}'s buffers from the {made.op} of chunk {made.chunk} are never freed")
            for pair, a in sorted(self._live.items())
            if a > 0 and (made := last[a])
        ]

    # -- stream capture ----------------------------------------------------------
    def begin_capture(self) -> None:
        """From here on the operations are recorded into a graph, not run (until end_capture)."""
        if self.capturing:
            raise CaptureError("begin_capture inside a capture: a capture is already recording")
        self.capturing, self._capture_start = True, len(self.ops)

    def end_capture(self) -> None:
        """The capture ends: what it recorded runs when the graph is launched."""
        if not self.capturing:
            raise CaptureError("end_capture without a capture to end")
        self.capturing = False
        self.captures.append((self._capture_start, len(self.ops)))

    def read_host(self, k: int) -> bool:
        """The host reads chunk k of the output: an error inside a capture; outside one, whether the read is
        ordered after the chunk's last copy out (the host waited for its stream since), which it records."""
        if self.capturing:
            raise CaptureError(CAPTURE_HOST_READ.format(chunk=k))
        if not 0 <= k < self.n_chunks:
            raise IndexError(f"read_host: chunk {k} does not exist; the chunks are 0..{self.n_chunks - 1}")
        last = next((rec for rec in reversed(self.ops) if rec.op == "d2h" and rec.chunk == k), None)
        ordered = last is not None and self._host.get(last.stream, -1) >= last.index
        self.host_reads.append((len(self.ops), k, ordered))
        return ordered

    # -- ordering --------------------------------------------------------------
    def _enqueue(self, op: str, k: int, pair: int, stream: int | None, allocation: int | None = None) -> None:
        if allocation is None:
            self._check_args(op, k, pair, stream)
            allocation = self._live.get(pair, -1)
            if allocation < 0:
                freed = any(rec.pair == pair and rec.op.startswith("free") for rec in self.ops)
                self.misuse.append(
                    Problem(
                        k,
                        f"{op} of chunk {k} uses pair {pair}, which holds no allocation"
                        + (" (it was freed)" if freed else " (allocate it first)"),
                    )
                )
        index = pair if stream is None else stream
        clock = dict(self._clock.get(index, {}))
        _join(clock, self._host)
        if index == LEGACY:  # waits for every blocking stream's earlier work
            for other in self._clock.values():
                _join(clock, other)
        else:  # blocking streams wait for the legacy stream's last operation (streams first used later too)
            _join(clock, self._clock.get(LEGACY, {}))
        n = len(self.ops)
        self.ops.append(Recorded(n, op, k, pair, index, dict(clock), allocation))
        clock[index] = n
        self._clock[index] = clock

    def _check_args(self, op: str, k: int, pair: int, stream: int | None) -> None:
        """IndexError for a chunk, pair or stream the context lacks (stream HOST: a host call, which has none)."""
        if not 0 <= k < self.n_chunks:
            raise IndexError(f"{op}: chunk {k} does not exist; the chunks are 0..{self.n_chunks - 1} (ctx.n_chunks)")
        if not 0 <= pair < self.n_buffers:
            raise IndexError(
                f"{op} of chunk {k}: buffer pair {pair} does not exist; the pairs are 0..{self.n_buffers - 1} "
                f"(ctx.n_buffers)"
            )
        if stream == HOST:
            return
        if stream is not None and stream != LEGACY and not 0 <= stream < self.n_streams:
            raise IndexError(
                f"{op} of chunk {k}: stream {stream} does not exist; this context has streams 0..{self.n_streams - 1} "
                f"(ctx.n_streams), and an operation given no stream= goes to its pair's own stream"
            )
        if stream is None and pair >= self.n_streams:
            raise IndexError(
                f"{op} of chunk {k}: pair {pair} has no stream of its own with {self.n_streams} streams; pass stream="
            )

    def ordered(self, first: Recorded, second: Recorded) -> bool:
        """True when CUDA guarantees `first` finishes before `second` starts."""
        return second.after.get(first.stream, -1) >= first.index

    # -- verdicts --------------------------------------------------------------
    def _unordered(self) -> Iterator[tuple[tuple[str, int], list[Recorded], np.ndarray, np.ndarray]]:
        """For each place accessed (a buffer or host chunk) with a write among its accesses: its accesses in issue
        order, and for RACE_ROWS of them at a time (rows) the matrix racing[row, early]: early comes first, either
        writes, and nothing orders early before the row's access."""
        accesses: dict[tuple[str, int], list[tuple[Recorded, bool]]] = {}
        for rec in self.ops:
            for place, writes in _touches(rec):
                accesses.setdefault(place, []).append((rec, writes))
        column = {stream: n for n, stream in enumerate(sorted({rec.stream for rec in self.ops}))}
        waited = np.full((len(self.ops), len(column)), -1)  # waited[op, stream]: the op's vector clock
        for rec in self.ops:
            for stream, last in rec.after.items():
                if stream in column:
                    waited[rec.index, column[stream]] = last
        for place, touches in accesses.items():
            if len(touches) < 2 or not any(w for _, w in touches):  # one access, or reads only: nothing can race
                continue
            recs = [rec for rec, _ in touches]
            index = np.array([rec.index for rec in recs])
            where = np.array([column[rec.stream] for rec in recs])
            writes = np.array([w for _, w in touches])
            # RACE_ROWS lates at a time keep a long trace's matrix small
            for top in range(0, len(touches), RACE_ROWS):
                rows = np.arange(top, min(top + RACE_ROWS, len(touches)))
                unordered = waited[index[rows]][:, where] < index[None, :]
                earlier = np.arange(len(touches))[None, :] < rows[:, None]
                yield place, recs, rows, unordered & earlier & (writes[rows][:, None] | writes[None, :])

    def race_pairs(self) -> set[tuple[int, int, str, int]]:
        """Every race: (early op index, late op index, place, its pair or chunk) for each two accesses to the same
        bytes, at least one a write, that nothing orders."""
        found = set()
        for (place, slot), recs, rows, racing in self._unordered():
            for row, early in zip(*np.nonzero(racing), strict=True):
                found.add((recs[int(early)].index, recs[int(rows[row])].index, place, slot))
        return found

    def races(self) -> list[Problem]:
        """Conflicting accesses to the same bytes that nothing orders: for each access, the first earlier one (in
        issue order) that conflicts with it (either writes) and is not ordered before it."""
        found = []
        for place, recs, rows, racing in self._unordered():
            for row in np.flatnonzero(racing.any(axis=1)):
                early, late = recs[int(np.argmax(racing[row]))], recs[int(rows[row])]
                found.append(
                    Problem(
                        min(early.chunk, late.chunk),
                        f"race on {_place(place)}: {late.describe()} is not ordered after {early.describe()}",
                    )
                )
        return found

    def dataflow_errors(self) -> list[Problem]:
        """Chunks whose output is missing or computed from another chunk's input."""
        d_in: dict[int, int | None] = {}
        d_out: dict[int, int | None] = {}
        written: dict[int, int | None] = {}
        for rec in self.ops:
            held = rec.allocation >= 0  # a use of no allocation reads and writes nothing of the chunk's
            if rec.op in ALLOCATION_OPS:  # a new allocation holds nothing yet; a freed one nothing any more
                d_in.pop(rec.pair, None)
                d_out.pop(rec.pair, None)
            elif rec.op == "h2d":
                d_in[rec.pair] = rec.chunk if held else None
            elif rec.op == "kernel":
                d_out[rec.pair] = d_in.get(rec.pair) if held else None
            else:
                written[rec.chunk] = d_out.get(rec.pair) if held else None
        errors = []
        for k in range(self.n_chunks):
            if k not in written:
                errors.append(Problem(k, f"chunk {k} is never copied out"))
            elif written[k] != k:
                got = "no kernel output" if written[k] is None else f"chunk {written[k]}'s input"
                errors.append(Problem(k, f"chunk {k}'s output holds {got}"))
        return errors

    def problems(self) -> list[Problem]:
        """Every dataflow error and race (and, allocating in the loop, every misuse and leak), lowest chunk first."""
        return sorted(self.dataflow_errors() + self.races() + self.misuse + self.leaks(), key=lambda p: p.chunk)

    def first_bad_chunk(self) -> int | None:
        """The lowest chunk a problem names, as the GPU check reports it."""
        problems = self.problems()
        return problems[0].chunk if problems else None

    def per_stream(self) -> dict[int, list[tuple[str, int, int]]]:
        """Op order within each stream as (op, chunk, pair)."""
        result: dict[int, list[tuple[str, int, int]]] = {}
        for rec in self.ops:
            result.setdefault(rec.stream, []).append((rec.op, rec.chunk, rec.pair))
        return result


@dataclasses.dataclass(frozen=True)
class Problem:
    """Something wrong with a schedule, and the first chunk it affects."""

    chunk: int
    message: str


def _join(into: dict[int, int], other: dict[int, int]) -> None:
    for stream, index in other.items():
        if into.get(stream, -1) < index:
            into[stream] = index


ALLOCATION_OPS = ("malloc", "free", "malloc_async", "free_async")


def _buffer(name: str, allocation: int) -> str:
    """A device buffer's place name: 'd_in' for the context's own, 'd_in@3' for the schedule's third allocation."""
    return name if allocation == 0 else f"{name}@{allocation}"


def _touches(rec: Recorded) -> list[tuple[tuple[str, int], bool]]:
    """((place, pair or chunk), writes?) for every place an operation touches: device buffers and host chunks.

    An allocation and its free write both of the pair's buffers of that allocation; a use of no allocation
    touches only its host chunk."""
    held = rec.allocation >= 0
    d_in, d_out = (_buffer("d_in", rec.allocation), rec.pair), (_buffer("d_out", rec.allocation), rec.pair)
    if rec.op in ALLOCATION_OPS:
        return [(d_in, True), (d_out, True)] if held else []
    if rec.op == "h2d":
        return [(("h_in", rec.chunk), False)] + [(d_in, True)] * held
    if rec.op == "kernel":
        return [(d_in, False), (d_out, True)] if held else []
    return [(d_out, False)] * held + [(("h_out", rec.chunk), True)]


def _place(place: tuple[str, int]) -> str:
    """A place as messages name it: d_in[1], or host chunk 3 of h_out."""
    name, slot = place
    if name.startswith("h_"):
        return f"host chunk {slot} of {name}"
    base, _, allocation = name.partition("@")
    return f"{base}[{slot}]" + (f" (allocation {allocation})" if allocation else "")
