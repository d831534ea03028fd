"""Timing GPU passes with CUDA events on the legacy default stream, inside NVTX ranges.

The worker streams are blocking, so an event recorded on the legacy default
stream waits for all work queued before it and holds back all work after it:
start fires before the pass, stop after every worker stream drained. The host
waits on the stop event, then (for the grader's cross-check) also synchronizes
the whole device and reads a host clock, which catches work on non-blocking
streams that the events would miss.

Each timed pass is one turn on the GPU (labcore.gpulock): other processes' passes on the same GPU wait.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import nvtx

from labcore.device import cupy_or_none
from labcore.gpulock import gpu_turn
from labcore.record import Op, PassTimes


def _cupy() -> Any:
    cp = cupy_or_none()
    if cp is None:
        raise RuntimeError("timing needs a GPU")
    return cp


def time_pass(
    fn: Callable[[], Any],
    *,
    key: object,
    name: str,
    params: dict[str, Any],
    domain: str,
    repeats: int,
    warmup: int = 1,
    bytes_moved: int | None = None,
    before: Callable[[], Any] | None = None,
    after: Callable[[], Any] | None = None,
    before_last: Callable[[], Any] | None = None,
    after_last: Callable[[], Any] | None = None,
) -> PassTimes:
    """Warm up, then time `fn` `repeats` times; each timed call is one NVTX range named str(key).

    `before` runs untimed ahead of every call (poisoning outputs, say), `after` untimed once the device is
    idle after every call, warm-ups included (verifying what that very call wrote and poisoning it for the next,
    say). `before_last` and `after_last` do the same around the last timed call only (poison, then verify what
    that call wrote: one pass over the output instead of one per call).
    """
    key = str(key)
    cp = _cupy()
    null = cp.cuda.Stream.null
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    device = cp.cuda.Device()
    times_ms, host_ms = [], []
    with gpu_turn():  # warm-up and repeats are one turn: a neighbour's pass never runs between them
        for _ in range(warmup):
            if before:
                before()
            with nvtx.annotate(f"warmup {key}", domain=domain):
                fn()
                device.synchronize()
            if after:
                after()
        for done in range(1, repeats + 1):
            if before:
                before()
            if before_last and done == repeats:
                before_last()
            device.synchronize()
            with nvtx.annotate(key, domain=domain):
                t0 = time.perf_counter()
                start.record(null)
                fn()
                stop.record(null)
                stop.synchronize()
                device.synchronize()
                t1 = time.perf_counter()
            times_ms.append(cp.cuda.get_elapsed_time(start, stop))
            if after:
                after()
            if after_last and done == repeats:
                after_last()
            host_ms.append((t1 - t0) * 1e3)
    return PassTimes(
        key=key, name=name, params=dict(params), times_ms=times_ms, host_ms=host_ms, bytes_moved=bytes_moved
    )


def grader_pass(fn: Callable[[], Any], name: str, first: bool, **hooks: Any) -> PassTimes:
    """One of a trusted check's timed passes: three repeats in the 'grader' NVTX domain, named 'grader <name>',
    warmed up in its first round only (later rounds follow a run of the same work); `hooks` as time_pass's."""
    return time_pass(
        fn, key=f"grader {name}", name=name, params={}, domain="grader", repeats=3, warmup=1 if first else 0, **hooks
    )


class OpTracer:
    """Brackets each operation with events on its own stream, for a per-op timeline.

    Used for one extra, untimed run of a pass: the events cost a little each, so
    the timed repeats run without them.
    """

    def __init__(self) -> None:
        self._cp = _cupy()
        self._origin = self._cp.cuda.Event()
        self._marks: list[tuple[str, int, int, int, int | None, Any, Any]] = []

    def begin(self) -> None:
        """Record the time origin on the legacy default stream."""
        self._origin.record(self._cp.cuda.Stream.null)

    def around(
        self,
        op: str,
        chunk: int,
        stream: Any,
        stream_index: int,
        nbytes: int,
        buffer: int | None,
        enqueue: Callable[[], Any],
    ) -> None:
        """Enqueue an operation on `stream` between two events on that stream."""
        ev0, ev1 = self._cp.cuda.Event(), self._cp.cuda.Event()
        ev0.record(stream)
        enqueue()
        ev1.record(stream)
        self._marks.append((op, chunk, stream_index, nbytes, buffer, ev0, ev1))

    def ops(self, key: str) -> list[Op]:
        """Wait for the device, then turn the events into Ops relative to the origin."""
        self._cp.cuda.Device().synchronize()
        elapsed = self._cp.cuda.get_elapsed_time
        result = []
        for op, chunk, stream_index, nbytes, buffer, ev0, ev1 in self._marks:
            start_ns = round(elapsed(self._origin, ev0) * 1e6)
            duration_ns = round(elapsed(ev0, ev1) * 1e6)
            result.append(
                Op(
                    key=key,
                    op=op,
                    chunk=chunk,
                    stream=stream_index,
                    start_ns=start_ns,
                    duration_ns=duration_ns,
                    nbytes=nbytes,
                    buffer=buffer,
                )
            )
        return result
