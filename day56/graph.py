"""A schedule captured into a CUDA graph: stream capture, instantiate, launch, and update for new input.

CuPy 14 has stream capture (`Stream.begin_capture` / `end_capture`, which returns a `cupy.cuda.Graph` already
instantiated), but it keeps no handle of the captured graph and has no update. The lesson needs the steps apart,
to time each one, so it calls the runtime functions CuPy wraps (`cupy.cuda.runtime.streamBeginCapture`,
`streamEndCapture`, `graphInstantiate`, `graphLaunch`), and for the update, which CuPy lacks, the driver's
`cuGraphExecUpdate` through cuda-bindings (`cuda.bindings.driver`: a call on the two handles alone, so it needs no
runtime state of its own beside CuPy's; `cudaGraphExecUpdate` of `cuda.bindings.runtime` is the same function).

How a schedule is captured (the approach of day54/benchmarks/graph_replay.py, measured on the H200): the context's
streams are made non-blocking (a blocking stream would pull the legacy default stream into the capture), an origin
stream begins the capture, every worker stream waits on an event recorded on the origin (so they join the same
capture), the schedule enqueues as it would stream by stream, and the origin waits on an event of every worker
stream before the capture ends (an unjoined stream is an error). The graph then launches on the legacy default
stream, so the timing's events on that stream bracket it exactly as they bracket the streams of day 54.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator
from typing import Any

from labcore.device import cupy_or_none

THREAD_LOCAL = 1  # cudaStreamCaptureModeThreadLocal: an unsafe call from the capturing thread fails the capture
LEGACY_STREAM = 0  # the legacy default stream's handle: where the graph launches


def _cp() -> Any:
    cp = cupy_or_none()
    if cp is None:
        raise RuntimeError("capturing a graph needs a GPU")
    return cp


def capturable(ctx: Any) -> Any:
    """A view of a CupyContext (same buffers) whose streams are fresh non-blocking ones, which a capture can hold."""
    cp = _cp()
    view = ctx.with_buffers(ctx.n_buffers, ctx.n_streams)
    view.streams = [cp.cuda.Stream(non_blocking=True) for _ in range(view.n_streams)]
    return view


class CaptureFailed(RuntimeError):
    """CUDA refused the capture: `error` is the name of what the call inside it raised, `ended` what ending it did."""

    def __init__(self, error: str, ended: str) -> None:
        super().__init__(f"{error}; ending the capture: {ended}")
        self.error, self.ended = error, ended


def _error_name(exc: BaseException) -> str:
    """cudaErrorStreamCaptureUnsupported, from CuPy's 'cudaErrorStreamCaptureUnsupported: operation not ...'."""
    text = str(exc)
    return text.split(":", 1)[0].strip() if text.startswith("cuda") else f"{type(exc).__name__}: {text}"


@dataclasses.dataclass
class Captured:
    """A captured graph (a cudaGraph_t handle, not yet instantiated) and the host time its capture took."""

    graph: int
    capture_ms: float
    nodes: int | None

    def destroy(self) -> None:
        if self.graph:
            _cp().cuda.runtime.graphDestroy(self.graph)
            self.graph = 0


@dataclasses.dataclass
class _Capture:
    """What a capture in progress holds: its origin stream and, once it has ended, the graph."""

    origin: Any
    graph: int = 0


@contextlib.contextmanager
def _capturing(ctx: Any) -> Iterator[_Capture]:
    """Begin a capture on an origin stream and fork every worker stream of ctx from it; the caller's body
    enqueues; on leaving, the workers join the origin and the capture ends, its graph in the yielded _Capture.
    Every event of the capture lives until the capture has ended: none is destroyed while it is recorded."""
    cp = _cp()
    origin = cp.cuda.Stream(non_blocking=True)
    cp.cuda.runtime.streamBeginCapture(origin.ptr, THREAD_LOCAL)
    events = []
    held = _Capture(origin)
    try:
        events.append(origin.record())
        for stream in ctx.streams:
            stream.wait_event(events[0])
        yield held
        for stream in ctx.streams:
            events.append(stream.record())
            origin.wait_event(events[-1])
    except BaseException as exc:
        try:
            graph = cp.cuda.runtime.streamEndCapture(origin.ptr)
        except Exception as ended:  # an invalidated capture ends with an error and no graph
            raise CaptureFailed(_error_name(exc), _error_name(ended)) from exc
        if graph:
            cp.cuda.runtime.graphDestroy(graph)
        raise CaptureFailed(_error_name(exc), "the capture ended, its graph thrown away") from exc
    try:
        held.graph = cp.cuda.runtime.streamEndCapture(origin.ptr)
    except Exception as ended:  # invalidated by a call that raised nothing here (another thread's, say)
        raise CaptureFailed("no call inside the capture raised", _error_name(ended)) from ended
    finally:
        del events


def capture(ctx: Any, schedule: Callable[[Any], None]) -> Captured:
    """`schedule` on ctx (non-blocking streams: `capturable`) recorded into a graph; nothing runs yet.

    CaptureFailed when a call inside the capture was refused (a synchronize, a stream synchronize): the capture
    is then invalidated and ended, and no graph comes of it."""
    t0 = time.perf_counter()
    with _capturing(ctx) as held:
        schedule(ctx)
    capture_ms = (time.perf_counter() - t0) * 1e3
    return Captured(held.graph, capture_ms, node_count(held.graph))


def read_inside_capture(ctx: Any, schedule: Callable[[Any], None], chunk: int = 0) -> tuple[float, Captured]:
    """The pitfall of a host read inside a capture: the schedule is captured, and right after it the host reads the
    first element of output chunk `chunk` (a plain read of pinned memory: CUDA sees no call). Returns the value read
    and the graph; nothing had run when it was read, so it is whatever the output held before (the poison)."""
    t0 = time.perf_counter()
    with _capturing(ctx) as held:
        schedule(ctx)
        seen = float(ctx.h_out[chunk * ctx.chunk_elems])
    return seen, Captured(held.graph, (time.perf_counter() - t0) * 1e3, node_count(held.graph))


def node_count(graph: int) -> int | None:
    """How many nodes a captured graph holds (None where cuda-bindings cannot say)."""
    try:
        from cuda.bindings import driver

        err, _, count = driver.cuGraphGetNodes(driver.CUgraph(graph))
    except Exception:  # no cuda-bindings, or another shape of answer: the count is a fact the lesson can do without
        return None
    return int(count) if err == driver.CUresult.CUDA_SUCCESS else None


def instantiate(captured: Captured) -> tuple[int, float]:
    """cudaGraphInstantiate: the executable graph's handle and the host time it took (ms)."""
    cp = _cp()
    t0 = time.perf_counter()
    exec_ = cp.cuda.runtime.graphInstantiate(captured.graph)
    return exec_, (time.perf_counter() - t0) * 1e3


def launch(exec_: int) -> None:
    """cudaGraphLaunch on the legacy default stream: the whole schedule in one call."""
    _cp().cuda.runtime.graphLaunch(exec_, LEGACY_STREAM)


def destroy_exec(exec_: int) -> None:
    if exec_:
        _cp().cuda.runtime.graphExecDestroy(exec_)


class UpdateRefused(RuntimeError):
    """cuGraphExecUpdate refused the new graph (its topology or a node's kind changed): re-instantiate instead."""


def update(exec_: int, captured: Captured) -> float:
    """cuGraphExecUpdate: the executable graph takes the node parameters (pointers, sizes) of a topologically
    identical graph, in place, without instantiating again. The host time it took (ms); UpdateRefused, with the
    driver's reason, when the graphs differ in shape."""
    from cuda.bindings import driver

    t0 = time.perf_counter()
    err, info = driver.cuGraphExecUpdate(driver.CUgraphExec(exec_), driver.CUgraph(captured.graph))
    took = (time.perf_counter() - t0) * 1e3
    if err != driver.CUresult.CUDA_SUCCESS:
        why = getattr(getattr(info, "result", None), "name", "no result info")  # cuda-bindings 13 gives None
        raise UpdateRefused(f"cuGraphExecUpdate: {err.name}, {why}")
    return took
