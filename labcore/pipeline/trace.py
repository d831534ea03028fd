"""A schedule as data: the fixed sequence of context operations it enqueues, recorded once, replayed anywhere.

Graded schedules are judged on their trace, not by calling the student's function again: the trace is
recorded behind labcore.pipeline.context.Context (the interface and nothing else, as in a real run), then
replayed on the recording fake (ordering rules), the simulator, or the GPU (correctness and timing). What is
timed is exactly what was checked, and a schedule cannot tell a check from a timed run. A schedule that reads
anything beyond the interface, or enqueues something else on its two recordings, is not a fixed sequence of
operations and is refused with a message saying so.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

from labcore.pipeline.context import ALLOCATIONS, HOST, INTERFACE, Context, CupyContext, NotAFixedSchedule

__all__ = ["Event", "NotAFixedSchedule", "Trace", "record"]

OPS = ("h2d", "kernel", "d2h")
SYNCS = ("sync", "stream_sync")
BLOCKING = ("malloc", "free")  # host calls: no stream
STREAM_ORDERED = ("malloc_async", "free_async")  # on a stream, like an operation


@dataclasses.dataclass(frozen=True)
class Event:
    """One call a schedule made: an operation on chunk k and pair (on a stream, None: the pair's), or a wait."""

    kind: str  # h2d, kernel, d2h, sync (device-wide), stream_sync, or an allocation (malloc ... free_async)
    chunk: int | None = None
    pair: int | None = None
    stream: int | None = None


@dataclasses.dataclass(frozen=True)
class Trace:
    """A schedule's calls at one configuration: chunks, buffer pairs, streams, window, and the events in order."""

    n_chunks: int
    n_buffers: int
    n_streams: int
    window_bytes: int
    events: tuple[Event, ...]

    def replay(self, ctx: Any) -> None:
        """Make the same calls on another context (the fake, the simulator's, the GPU's)."""
        for event in self.events:
            if event.kind == "sync":
                ctx.synchronize()
            elif event.kind == "stream_sync":
                ctx.stream_synchronize(event.stream)
            elif event.kind in BLOCKING:
                getattr(ctx, event.kind)(event.chunk, event.pair)
            elif event.kind in STREAM_ORDERED:
                getattr(ctx, event.kind)(event.chunk, event.pair, stream=event.stream)
            else:
                method = {"h2d": ctx.copy_in, "kernel": ctx.launch, "d2h": ctx.copy_out}[event.kind]
                method(event.chunk, event.pair, stream=event.stream)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Trace:
        """Parse a trace, refusing anything that is not one (with what is wrong)."""
        try:
            data = json.loads(text)
            events = tuple(Event(**e) for e in data["events"])
            trace = cls(*(int(data[name]) for name in INTERFACE), events=events)
        except (ValueError, KeyError, TypeError) as exc:
            raise NotAFixedSchedule(f"not a schedule trace: {exc}") from None
        for i, event in enumerate(trace.events):
            problem = _event_problem(event, trace)
            if problem:
                raise NotAFixedSchedule(f"event {i} of the trace: {problem}")
        return trace


def _event_problem(event: Event, trace: Trace) -> str | None:
    if event.kind not in OPS + SYNCS + ALLOCATIONS:
        return f"unknown kind {event.kind!r}"
    if event.kind in BLOCKING and event.stream is not None:
        return f"a {event.kind} runs on the host, not on a stream"
    if event.kind == "sync":
        return None
    if event.kind == "stream_sync":
        return None if isinstance(event.stream, int) else "a stream wait without a stream"
    if not isinstance(event.chunk, int) or not isinstance(event.pair, int):
        return "an operation needs an integer chunk and pair"
    if event.stream is not None and not isinstance(event.stream, int):
        return "the stream is not an integer"
    return None


class _Recorder:
    """The bare recorder: the interface's values, and every call an Event (checked for integers by Context)."""

    def __init__(self, n_chunks: int, n_buffers: int, n_streams: int, window_bytes: int) -> None:
        self.n_chunks, self.n_buffers, self.n_streams, self.window_bytes = n_chunks, n_buffers, n_streams, window_bytes
        self.events: list[Event] = []

    def copy_in(self, k: int, pair: int, stream: int | None = None) -> None:
        self.events.append(Event("h2d", k, pair, stream))

    def launch(self, k: int, pair: int, stream: int | None = None) -> None:
        self.events.append(Event("kernel", k, pair, stream))

    def copy_out(self, k: int, pair: int, stream: int | None = None) -> None:
        self.events.append(Event("d2h", k, pair, stream))

    def synchronize(self) -> None:
        self.events.append(Event("sync"))

    def stream_synchronize(self, stream: int) -> None:
        self.events.append(Event("stream_sync", stream=stream))

    def malloc(self, k: int, pair: int) -> None:
        self.events.append(Event("malloc", k, pair))

    def free(self, k: int, pair: int) -> None:
        self.events.append(Event("free", k, pair))

    def malloc_async(self, k: int, pair: int, stream: int | None = None) -> None:
        self.events.append(Event("malloc_async", k, pair, stream))

    def free_async(self, k: int, pair: int, stream: int | None = None) -> None:
        self.events.append(Event("free_async", k, pair, stream))


class _Tracer:
    """What a recording CupyContext (CupyContext.recorder) reports its calls to: the same Events, each operation's
    stream as the index it resolved to."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def around(self, op: str, chunk: int, _stream: Any, index: int, _nbytes: int, pair: int, _enqueue: Any) -> None:
        self.events.append(Event(op, chunk, pair, index))

    def sync(self) -> None:
        self.events.append(Event("sync"))

    def stream_sync(self, index: int) -> None:
        self.events.append(Event("stream_sync", stream=index))

    def allocation(self, kind: str, chunk: int, pair: int, index: int) -> None:
        self.events.append(Event(kind, chunk, pair, None if index == HOST else index))


def _resolved(events: list[Event]) -> list[Event]:
    """Events with an operation's default stream written out (stream=None is its pair's): what a context runs."""
    on_streams = OPS + STREAM_ORDERED
    return [dataclasses.replace(e, stream=e.pair) if e.kind in on_streams and e.stream is None else e for e in events]


def record(
    schedule: Callable[[Any], None],
    n_chunks: int,
    n_buffers: int,
    *,
    n_streams: int | None = None,
    window_bytes: int = 64 << 20,
) -> Trace:
    """The schedule's calls at one configuration, recorded on two differently built contexts, each handed to it
    behind the same Context facade: the bare recorder, then a CupyContext with stand-in device state. Both must be
    the same fixed sequence of calls: a schedule whose calls depend on how often it ran, or on what is behind the
    facade, is refused."""
    shape = (n_chunks, n_buffers, n_streams or n_buffers, window_bytes)
    bare = _Recorder(*shape)
    schedule(Context(bare))
    recorded = tuple(bare.events)  # now: calls a schedule makes later on a context it kept are not its trace
    tracer = _Tracer()
    complete = True
    try:
        schedule(Context(CupyContext.recorder(*shape, tracer)))
    except IndexError:  # a stream the context lacks: the bare recording holds that call, and the fake names it
        complete = False
    first, second = _resolved(list(recorded)), list(tracer.events)
    if (first if complete else first[: len(second)]) != second:
        at = next(
            (i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b), min(len(first), len(second))
        )
        raise NotAFixedSchedule(
            f"{n_chunks} chunks, {n_buffers} buffers: your schedule made {len(first)} calls on one recording and "
            f"{len(second)} on another of the same configuration, different from call {at} on; a graded schedule "
            f"must make the same calls every time, whatever context it is handed and however often it runs"
        )
    return Trace(*shape, events=recorded)
