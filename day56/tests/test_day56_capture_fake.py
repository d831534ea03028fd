"""The recording context's stream capture (labcore.pipeline.recording): what CUDA refuses inside a capture is an
error saying so; outside a capture the context behaves exactly as day 54 knows it."""

from __future__ import annotations

import pytest

from day56 import schedules
from labcore.pipeline.recording import CaptureError, RecordingContext


def _pipeline(ctx: RecordingContext) -> None:
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)


def test_a_synchronize_inside_a_capture_is_an_error_naming_what_cuda_does():
    ctx = RecordingContext(8, 2)
    ctx.begin_capture()
    with pytest.raises(CaptureError, match=r"ctx\.synchronize\(\) inside a stream capture.*StreamCaptureUnsupported"):
        schedules.waits_at_the_end(ctx)


def test_a_stream_synchronize_inside_a_capture_is_an_error():
    ctx = RecordingContext(8, 2)
    ctx.begin_capture()
    with pytest.raises(CaptureError, match=r"stream_synchronize\(0\) inside a stream capture.*Invalidated"):
        schedules.pitfall_sync_in_capture(ctx)


def test_a_host_read_inside_a_capture_is_an_error_and_after_a_wait_it_is_ordered():
    ctx = RecordingContext(4, 2)
    ctx.begin_capture()
    _pipeline(ctx)
    with pytest.raises(CaptureError, match="nothing captured has run yet"):
        ctx.read_host(1)
    ctx.end_capture()
    assert ctx.read_host(1) is False  # the launch is not waited for yet: the read races the copy out
    ctx.synchronize()
    assert ctx.read_host(1) is True
    assert ctx.captures == [(0, 12)]
    assert [(k, ordered) for _, k, ordered in ctx.host_reads] == [(1, False), (1, True)]


def test_outside_a_capture_nothing_changes():
    """The day-54 behaviour: synchronizing anywhere is allowed, and a pipeline is race-free."""
    ctx = RecordingContext(6, 3)
    _pipeline(ctx)
    ctx.synchronize()
    ctx.stream_synchronize(1)
    assert ctx.problems() == [] and ctx.syncs == [(18, "device"), (18, "stream 1")] and not ctx.capturing


def test_capture_calls_must_pair():
    ctx = RecordingContext(2, 2)
    with pytest.raises(CaptureError, match="without a capture"):
        ctx.end_capture()
    ctx.begin_capture()
    with pytest.raises(CaptureError, match="already recording"):
        ctx.begin_capture()


def test_a_captured_pipeline_with_a_race_still_shows_the_race():
    """Capture changes what may be called, not the ordering rules: three streams on two pairs still race."""
    ctx = RecordingContext(6, 2, n_streams=3)
    ctx.begin_capture()
    for k in range(6):
        ctx.copy_in(k, k % 2, stream=k % 3)
        ctx.launch(k, k % 2, stream=k % 3)
        ctx.copy_out(k, k % 2, stream=k % 3)
    ctx.end_capture()
    assert ctx.races()
