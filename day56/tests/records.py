"""A record of made-up numbers for the CPU tests of the report, the plots and the replay of a results.json.

These numbers are test data, shaped like a live run's record (day56.live) and nowhere near a profile: nothing
here is ever written under profiles/, and no test that needs a real measurement reads it.
"""

from __future__ import annotations

from day56.config import PassKey
from day56.report import HOST, PITFALLS
from labcore.device import DeviceFacts
from labcore.record import Check, Op, PassTimes, Record

TOTAL = 1 << 30


def made_up(*, graph_gpu: float = 1.001, launch_ms: float = 0.02, update_ms: float = 0.1) -> Record:
    """16, 64 and 256 chunks; the graph's GPU time graph_gpu x the streams'; every launch launch_ms."""
    passes, host = [], {}
    for n, enqueue in ((16, 0.25), (64, 0.9), (256, 3.6)):
        params = {"n_chunks": n, "window_bytes": TOTAL // n, "buffers": 3}
        streams = [23.0 + 0.1 * i for i in range(5)]
        passes.append(PassTimes(str(PassKey("streams", n)), "streams", params, streams, bytes_moved=2 * TOTAL))
        graphed = [t * graph_gpu for t in streams]
        passes.append(PassTimes(str(PassKey("graph", n)), "graph", params, graphed, bytes_moved=2 * TOTAL))
        host[str(n)] = {
            "enqueue_ms": [enqueue] * 5,
            "launch_ms": [launch_ms] * 5,
            "capture_ms": enqueue * 1.5,
            "instantiate_ms": 0.01 * n,
            "first_launch_ms": 0.5,
            "nodes": 3 * n + 4,
            "recapture_ms": enqueue * 1.4,
            "update_ms": update_ms,
            "reinstantiate_ms": 0.01 * n,
        }
    passes.append(
        PassTimes("duplex n=16", "duplex", {"n_chunks": 16, "window_bytes": TOTAL // 16, "buffers": 2}, [21.8] * 5)
    )
    trace = [
        Op(
            "streams n=16",
            kind,
            k,
            k % 3,
            1_000_000 * k + 300_000 * i,
            1_200_000,
            TOTAL // 16 if kind != "kernel" else 0,
        )
        for k in range(16)
        for i, kind in enumerate(("h2d", "kernel", "d2h"))
    ]
    pitfalls = {
        "sync-in-capture": {
            "refused": True,
            "error": "cudaErrorStreamCaptureUnsupported",
            "ended": "cudaErrorStreamCaptureInvalidated",
        },
        "wait-at-the-end": {
            "refused": True,
            "error": "cudaErrorStreamCaptureUnsupported",
            "ended": "cudaErrorStreamCaptureInvalidated",
        },
        "host-read-in-capture": {"inside": "nan", "after_launch": "0.61", "expected": "0.61"},
        "stale-pointers": {"unwritten_chunks": 16, "n_chunks": 16},
    }
    return Record(
        lesson="day56",
        mode="live",
        source="made-up test numbers",
        device=DeviceFacts(name="Test GPU"),
        config={"total_bytes": TOTAL, "chunks": [16, 64, 256], "buffers": 3, "fmas": 512},
        passes=passes,
        trace=trace,
        checks=[Check("streams n=16 vs naive", True, "all 16 chunks bit-identical to naive")],
        extra={HOST: host, PITFALLS: pitfalls},
    )
