"""day56.graph's order of calls, on a stand-in for CuPy's streams and runtime that writes down what it is asked:
the capture begins on an origin, forks every worker from it, joins them back, and ends on the origin with every
event it recorded still alive; a refused call inside it ends the capture and becomes one CaptureFailed naming what
CUDA said. (What CUDA does with those calls is tested on the GPU: test_day56_gpu.py.)"""

from __future__ import annotations

import types
import weakref

import pytest

from day56 import graph


class _Runtime:
    def __init__(self, log, fail_end=None):
        self.log, self.fail_end, self.alive = log, fail_end, []

    def streamBeginCapture(self, ptr, mode):
        self.log.append(("begin", ptr, mode))

    def streamEndCapture(self, ptr):
        self.log.append(("end", ptr, sum(ref() is not None for ref in self.alive)))
        if self.fail_end:
            raise RuntimeError(self.fail_end)
        return 42

    def graphDestroy(self, handle):
        self.log.append(("destroy", handle))


class _Event:
    pass


class _Stream:
    count = 0

    def __init__(self, log, runtime, non_blocking=False):
        _Stream.count += 1
        self.ptr, self.log, self.runtime = 100 + _Stream.count, log, runtime

    def record(self):
        event = _Event()
        self.runtime.alive.append(weakref.ref(event))
        self.log.append(("record", self.ptr))
        return event

    def wait_event(self, event):
        self.log.append(("wait", self.ptr))


def _fake_cupy(monkeypatch, fail_end=None):
    log = []
    runtime = _Runtime(log, fail_end)
    cuda = types.SimpleNamespace(runtime=runtime, Stream=lambda non_blocking=False: _Stream(log, runtime, non_blocking))
    monkeypatch.setattr(graph, "cupy_or_none", lambda: types.SimpleNamespace(cuda=cuda))
    monkeypatch.setattr(graph, "node_count", lambda handle: None)
    return log, cuda


def test_a_capture_forks_and_joins_every_worker_and_ends_with_its_events_alive(monkeypatch):
    log, cuda = _fake_cupy(monkeypatch)
    ctx = types.SimpleNamespace(streams=[cuda.Stream(), cuda.Stream()])
    workers = [s.ptr for s in ctx.streams]
    captured = graph.capture(ctx, lambda c: log.append(("schedule",)))
    origin = log[0][1]
    assert log == [
        ("begin", origin, graph.THREAD_LOCAL),
        ("record", origin),
        ("wait", workers[0]),
        ("wait", workers[1]),
        ("schedule",),
        ("record", workers[0]),
        ("wait", origin),
        ("record", workers[1]),
        ("wait", origin),
        ("end", origin, 3),  # the fork's event and both joins' still alive when the capture ends
    ]
    assert captured.graph == 42 and captured.capture_ms >= 0


def test_a_refused_call_ends_the_capture_and_names_both_errors(monkeypatch):
    log, cuda = _fake_cupy(monkeypatch, fail_end="cudaErrorStreamCaptureInvalidated: operation failed")
    ctx = types.SimpleNamespace(streams=[cuda.Stream()])

    def refused(c):
        raise RuntimeError("cudaErrorStreamCaptureUnsupported: operation not permitted when stream is capturing")

    with pytest.raises(graph.CaptureFailed) as failed:
        graph.capture(ctx, refused)
    assert (failed.value.error, failed.value.ended) == (
        "cudaErrorStreamCaptureUnsupported",
        "cudaErrorStreamCaptureInvalidated",
    )
    assert log[-1][0] == "end"


def test_a_schedule_that_raises_without_invalidating_throws_its_graph_away(monkeypatch):
    log, cuda = _fake_cupy(monkeypatch)
    ctx = types.SimpleNamespace(streams=[cuda.Stream()])

    def broken(c):
        raise IndexError("stream 5 does not exist")

    with pytest.raises(
        graph.CaptureFailed, match="IndexError: stream 5 does not exist; ending the capture: the capture"
    ):
        graph.capture(ctx, broken)
    assert log[-2][0] == "end" and log[-1] == ("destroy", 42)
