"""A schedule as data: the fixed sequence of context operations it enqueues, recorded once, replayed anywhere.

Graded schedules are judged on their trace, not by calling the student's function again: the trace is
recorded against a bare context that offers only the context interface, then replayed on the recording
fake (ordering rules), the simulator, or the GPU (correctness and timing). What is timed is exactly what
was checked, and a schedule cannot tell a check from a timed run. A schedule that reads anything beyond
the interface, or enqueues something else when recorded twice, is not a fixed sequence of operations and
is refused with a message saying so.
"""

from __future__ import annotations

import dataclasses
import json
import operator
from collections.abc import Callable
from typing import Any

OPS = ("h2d", "kernel", "d2h")
SYNCS = ("sync", "stream_sync")
INTERFACE = ("n_chunks", "n_buffers", "n_streams", "window_bytes")
CALLS = {"copy_in": "h2d", "launch": "kernel", "copy_out": "d2h"}


class NotAFixedSchedule(AssertionError):
    """The schedule is not a fixed sequence of context operations (an AssertionError: a check fails on it)."""


@dataclasses.dataclass(frozen=True)
class Event:
    """One call a schedule made: an operation on chunk k and pair (on a stream, None: the pair's), or a wait."""

    kind: str  # h2d, kernel, d2h, sync (device-wide) or stream_sync
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
    if event.kind not in OPS + SYNCS:
        return f"unknown kind {event.kind!r}"
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
    """The context interface and nothing else: every call becomes an Event."""

    def __init__(self, n_chunks: int, n_buffers: int, n_streams: int, window_bytes: int) -> None:
        object.__setattr__(self, "_shape", (n_chunks, n_buffers, n_streams, window_bytes))
        object.__setattr__(self, "events", [])

    def __getattr__(self, name: str) -> Any:
        if name in INTERFACE:
            return self._shape[INTERFACE.index(name)]
        if name in CALLS:
            return lambda k, pair, stream=None: self._op(CALLS[name], k, pair, stream)
        raise NotAFixedSchedule(
            f"your schedule uses ctx.{name}, which graded schedules cannot: a graded schedule is the fixed "
            f"sequence of ctx.copy_in / ctx.launch / ctx.copy_out / ctx.synchronize / ctx.stream_synchronize "
            f"calls it makes, given only ctx.{', ctx.'.join(INTERFACE)}"
        )

    def __setattr__(self, name: str, value: Any) -> None:
        raise NotAFixedSchedule(f"your schedule sets ctx.{name}; a schedule only enqueues operations")

    def _op(self, kind: str, k: Any, pair: Any, stream: Any) -> None:
        values = [_integer(kind, "chunk", k), _integer(kind, "pair", pair)]
        self.events.append(Event(kind, *values, None if stream is None else _integer(kind, "stream", stream)))

    def synchronize(self) -> None:
        self.events.append(Event("sync"))

    def stream_synchronize(self, stream: int) -> None:
        self.events.append(Event("stream_sync", stream=_integer("stream_synchronize", "stream", stream)))


def _integer(call: str, label: str, value: Any) -> int:
    """An integer argument (NumPy's included), else the message a student can act on."""
    if isinstance(value, bool):
        raise NotAFixedSchedule(f"{call}: the {label} is {value!r}; chunks, pairs and streams are integers")
    try:
        return operator.index(value)
    except TypeError:
        raise NotAFixedSchedule(f"{call}: the {label} is {value!r}; chunks, pairs and streams are integers") from None


def record(
    schedule: Callable[[Any], None],
    n_chunks: int,
    n_buffers: int,
    *,
    n_streams: int | None = None,
    window_bytes: int = 64 << 20,
) -> Trace:
    """The schedule's calls at one configuration, recorded twice: both must be the same fixed sequence."""
    shape = (n_chunks, n_buffers, n_streams or n_buffers, window_bytes)
    traces = []
    for _ in range(2):
        recorder = _Recorder(*shape)
        schedule(recorder)
        traces.append(Trace(*shape, events=tuple(recorder.events)))
    if traces[0] != traces[1]:
        raise NotAFixedSchedule(
            f"{n_chunks} chunks, {n_buffers} buffers: your schedule enqueued {len(traces[0].events)} calls the "
            f"first time and a different sequence of {len(traces[1].events)} the second; a graded schedule must "
            f"make the same calls every time"
        )
    return traces[0]
