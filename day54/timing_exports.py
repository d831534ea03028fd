"""The student's own exports: what the nsys exports of their run (day54_run_*.csv) say about the trace being
timed. Shown, never graded: exports that contradict the trace fail the check; what they measured is recorded as
a result from the 'exports' source.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from day54 import DOMAIN, report
from day54.config import PassKey
from day54.replay import COPY_SLACK_BYTES, from_exports
from day54.timings import format_window
from labcore import checking
from labcore.checking import Result
from labcore.errors import UsageError
from labcore.exports import Exports
from labcore.pipeline import trace
from labcore.pipeline.recording import RecordingContext

RUN_PREFIX = "day54_run"
KiB = 1 << 10


def recorded_sequences(recorded: trace.Trace) -> list:
    """What a trace enqueues on each stream, (kind, bytes) in order; streams in order of first use."""
    window = recorded.window_bytes
    ctx = RecordingContext(recorded.n_chunks, recorded.n_buffers, n_streams=recorded.n_streams, window_bytes=window)
    recorded.replay(ctx)
    by_stream: dict[int, list[tuple[str, int]]] = {}
    for rec in ctx.ops:
        by_stream.setdefault(rec.stream, []).append((rec.op, 0 if rec.op == "kernel" else window))
    return list(by_stream.values())


def exported_sequences(ops: Any, window: int) -> list:
    """The same from one exported range instance (issue order is the CUDA correlation id)."""
    by_stream: dict[int, list[tuple[str, int]]] = {}
    for row in ops.sort_values("corr_id").itertuples(index=False):
        size = 0 if row.kind == "kernel" else window if abs(int(row.bytes) - window) <= COPY_SLACK_BYTES else row.bytes
        by_stream.setdefault(int(row.stream), []).append((row.kind, int(size)))
    return list(by_stream.values())


def student_exports(recorded: trace.Trace, directory: Path) -> str | None:
    """What your own run's nsys exports say about the trace being timed: a line of feedback, never a time that
    counts. Exports that contradict the trace (per stream another sequence of operations than it enqueues) or
    that are not one consistent run fail the check, saying so; exports of another configuration are only named."""
    if not any(directory.glob(f"{RUN_PREFIX}_*.csv")):
        return None
    window, buffers, n_chunks = recorded.window_bytes, recorded.n_buffers, recorded.n_chunks
    try:
        exports = Exports(directory, DOMAIN)
        record = from_exports(directory, exports=exports)
    except UsageError as exc:  # NsysFormatError too: exports of two runs, or edited ones
        raise AssertionError(
            f"your run's exports ({RUN_PREFIX}_*.csv) are not one consistent run: {exc}; record your run again "
            f"with the notebook's cell, or hand in none"
        ) from None
    key = PassKey("student", window, buffers)
    if not record.has_pass(key) or record.config["total_bytes"] != window * n_chunks:
        return f"your run's exports hold no '{key}' pass of {n_chunks} chunks: nothing of them compared here"
    exported = exported_sequences(exports.by_key[str(key)][0], window)
    expected = recorded_sequences(recorded)
    if exported != expected:
        counts = [len(s) for s in exported], [len(s) for s in expected]
        raise AssertionError(
            f"your exports are not a run of the schedule in this notebook: per stream they hold "
            f"{counts[0]} operations in another order than the {counts[1]} your schedule enqueues "
            f"({n_chunks} chunks, {buffers} buffers); record your run again with this schedule, or hand in none"
        )
    naive, reference = (
        report.measured(record, name, window, depth) for name, depth in (("naive", 1), ("pipelined", buffers))
    )
    mine = record.pass_times(key).median_ms
    shown = checking.record(
        Result(
            "day54 pipelined/naive in your own run",
            f"{format_window(window)}, {buffers} buffers",
            "pipelined / naive",
            mine / naive,
            "x",
            "exports",
            reference=reference / naive,
            detail=f"yours {mine:.2f} ms ({RUN_PREFIX}_*.csv; unverified: shown, not graded)",
        )
    )
    return (
        f"your run measured {mine:.2f} ms, pipelined/naive = {shown.value:.3f}, {mine / reference:.3f}x the "
        f"reference pipeline ({RUN_PREFIX}_*.csv; unverified: shown, not graded)"
    )
