"""Passes and per-op traces from nsys exports: the replay half of the results record.

Each timed pass of a live run is one NVTX push/pop range named by its pass key
(warm-ups are named 'warmup <key>'). A replay finds every instance of a key in
nvtx_pushpop_trace, gives it the GPU operations of cuda_gpu_trace that started
inside the range, and times it from the range's start (where the live run
recorded its start event) to the end of its last GPU operation (which its stop
event waited for). On the shipped H200 profile that agrees with the live
run's event times within 0.2% for every pass; the span from the first
operation's start alone reads up to 1.1% low, missing the first launch's latency.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from labcore import nsys
from labcore.record import Op, PassTimes

WARMUP = "warmup "
OP_KINDS = ("h2d", "kernel", "d2h")
# Summaries nsys writes beside the traces; when present, they must describe the same run.
SUMMARIES = ("nvtx_sum", "nvtx_pushpop_sum", "cuda_gpu_kern_sum", "cuda_gpu_mem_time_sum", "cuda_api_sum")


def timed_instances(pushpop: pd.DataFrame, domain: str) -> pd.DataFrame:
    """The timed ranges of one domain (warm-ups dropped), in start order."""
    rows = pushpop[(pushpop["domain"] == domain) & ~pushpop["range"].str.startswith(WARMUP)]
    return rows.sort_values("start_ns").reset_index(drop=True)


def ops_by_instance(trace: pd.DataFrame, instances: pd.DataFrame) -> list[pd.DataFrame]:
    """For each range instance, the day's GPU operations that started inside it, in start order."""
    trace = trace[trace["kind"].isin(OP_KINDS)].sort_values("start_ns")
    starts = trace["start_ns"].to_numpy()
    result = []
    for begin, end in zip(instances["start_ns"].to_numpy(), instances["end_ns"].to_numpy(), strict=True):
        lo, hi = np.searchsorted(starts, begin, "left"), np.searchsorted(starts, end, "right")
        result.append(trace.iloc[lo:hi])
    return result


def summary_disagreement(report: str, summary: pd.DataFrame, pushpop: pd.DataFrame, trace: pd.DataFrame) -> str | None:
    """What a summary export says that the traces contradict (counts and total times are exact), or None."""
    if report in ("nvtx_sum", "nvtx_pushpop_sum"):
        grouped = pushpop.groupby([pushpop["domain"].fillna(""), "range"])["duration_ns"]
        counted, totals = grouped.size(), grouped.sum()
        for row in summary.itertuples(index=False):
            key = (row.domain or "", row.range)
            have = int(counted.get(key, 0))
            if have != row.instances:
                return f"range {row.range!r}: {row.instances} instances, the push/pop trace has {have}"
            if have and int(totals[key]) != row.total_ns:  # nsys sums the same integer durations: exact
                return (
                    f"range {row.range!r}: {row.total_ns} ns in all, the push/pop trace's durations add up to "
                    f"{int(totals[key])}"
                )
        return None
    if report == "cuda_gpu_kern_sum":
        kernels = trace[trace["kind"] == "kernel"]
        if (int(summary["instances"].sum()), int(summary["total_ns"].sum())) != (
            len(kernels),
            int(kernels["duration_ns"].sum()),
        ):
            return (
                f"{int(summary['instances'].sum())} kernels in {int(summary['total_ns'].sum())} ns, the trace has "
                f"{len(kernels)} in {int(kernels['duration_ns'].sum())} ns"
            )
        return None
    if report == "cuda_gpu_mem_time_sum":
        for row in summary.itertuples(index=False):
            ops = trace[trace["kind"] == row.operation]
            if (row.count, row.total_ns) != (len(ops), int(ops["duration_ns"].sum())):
                return (
                    f"{row.count} {row.label} in {row.total_ns} ns, the trace has {len(ops)} "
                    f"in {int(ops['duration_ns'].sum())} ns"
                )
        return None
    calls = {
        prefix: int(summary.loc[summary["name"].str.startswith(prefix), "calls"].sum())
        for prefix in ("cudaMemcpy", "cuMemcpy", "cudaLaunchKernel", "cuLaunchKernel")
    }
    copy_calls = calls["cudaMemcpy"] + calls["cuMemcpy"]
    launch_calls = calls["cudaLaunchKernel"] + calls["cuLaunchKernel"]
    copies = int(trace["kind"].isin(("h2d", "d2h")).sum())
    kernels = int((trace["kind"] == "kernel").sum())
    if copy_calls < copies or launch_calls < kernels:
        return f"{copy_calls} copy and {launch_calls} launch calls cannot enqueue {copies} copies and {kernels} kernels"
    return None


def stream_overlap(trace: pd.DataFrame) -> str | None:
    """Where an operation of the trace runs into the next one of its stream (a stream runs its copies and kernels one
    after another, so a real trace never does: a duration was edited), or None."""
    ops = trace[trace["kind"].isin(OP_KINDS)].sort_values(["device", "context", "stream", "start_ns"], kind="stable")
    lane = ops[["device", "context", "stream"]].to_numpy()
    starts, ends = ops["start_ns"].to_numpy(), ops["end_ns"].to_numpy()
    same = (lane[1:] == lane[:-1]).all(axis=1)
    late = np.flatnonzero(same & (ends[:-1] > starts[1:]))
    if not len(late):
        return None
    first = ops.iloc[late[0]]
    return (
        f"a {first['kind']} on stream {first['stream']} starting at {first['start_ns']} ns lasts "
        f"{first['duration_ns']} ns, past the start of the stream's next operation at {starts[late[0] + 1]} ns; a "
        "stream runs its operations one after another"
    )


def span_ms(ops: pd.DataFrame) -> float:
    """First start to last end, in ms."""
    return float(ops["end_ns"].max() - ops["start_ns"].min()) / 1e6


def median_instance(times_ms: list[float]) -> int:
    """The repeat whose time is the median (of an even count, the one nearest it; the first of ties)."""
    middle = statistics.median(times_ms)
    return min(range(len(times_ms)), key=lambda i: abs(times_ms[i] - middle))


def to_ops(ops: pd.DataFrame, key: str, origin_ns: int) -> list[Op]:
    """Ops timed from origin_ns (their range's start); chunk = issue order within each kind, streams numbered 0.."""
    ops = ops.sort_values("corr_id")
    stream_index: dict[int, int] = {}
    seen = dict.fromkeys(OP_KINDS, 0)
    result = []
    for row in ops.itertuples(index=False):
        stream = stream_index.setdefault(int(row.stream), len(stream_index))
        result.append(
            Op(
                key=key,
                op=row.kind,
                chunk=seen[row.kind],
                stream=stream,
                start_ns=int(row.start_ns) - origin_ns,
                duration_ns=int(row.duration_ns),
                nbytes=int(row.bytes),
            )
        )
        seen[row.kind] += 1
    return sorted(result, key=lambda o: o.start_ns)


class Exports:
    """A directory's nsys exports, grouped into timed passes of one domain."""

    def __init__(self, directory: str | Path, domain: str) -> None:
        self.directory = Path(directory)
        files = nsys.find_exports(self.directory)
        frames = nsys.read_exports(self.directory, reports=("nvtx_pushpop_trace", "cuda_gpu_trace"))
        self.trace_path = files["cuda_gpu_trace"]
        self.ranges_path = files["nvtx_pushpop_trace"]
        self.instances = timed_instances(frames["nvtx_pushpop_trace"], domain)
        if self.instances.empty:
            raise nsys.NsysFormatError(self.ranges_path, None, f"no timed NVTX ranges in domain {domain!r}")
        self.trace = frames["cuda_gpu_trace"]
        overlap = stream_overlap(self.trace)
        if overlap:
            raise nsys.NsysFormatError(self.trace_path, None, f"{overlap}: was a duration edited?")
        for report in SUMMARIES:
            if report in files:
                problem = summary_disagreement(
                    report, nsys.read_report(files[report], report), frames["nvtx_pushpop_trace"], self.trace
                )
                if problem:
                    raise nsys.NsysFormatError(files[report], None, f"{problem}: the exports are not of one run")
        grouped = ops_by_instance(self.trace, self.instances)
        self.by_key: dict[str, list[pd.DataFrame]] = {}
        self.nvtx_ms: dict[str, list[float]] = {}
        self.elapsed_ms: dict[str, list[float]] = {}
        self.starts_ns: dict[str, list[int]] = {}
        columns = self.instances[["range", "start_ns", "duration_ns"]].itertuples(index=False)
        for (key, start, duration), ops in zip(columns, grouped, strict=True):
            if ops.empty:
                raise nsys.NsysFormatError(
                    self.trace_path, None, f"range {key!r} holds no GPU operations; is this the same run's trace?"
                )
            self.by_key.setdefault(key, []).append(ops)
            self.nvtx_ms.setdefault(key, []).append(duration / 1e6)
            self.elapsed_ms.setdefault(key, []).append((int(ops["end_ns"].max()) - int(start)) / 1e6)
            self.starts_ns.setdefault(key, []).append(int(start))

    @property
    def device_name(self) -> str:
        return str(self.trace["device_name"].iloc[0]) if len(self.trace) else "unknown GPU"

    def check(self, key: str, validate: Callable[[pd.DataFrame], str | None]) -> None:
        """Run a consistency check on every instance of a key; the first problem is an error naming it."""
        for i, ops in enumerate(self.by_key[key]):
            problem = validate(ops)
            if problem:
                raise nsys.NsysFormatError(self.trace_path, None, f"{key!r} instance {i + 1}: {problem}")
            if span_ms(ops) > self.nvtx_ms[key][i] * 1.001:
                raise nsys.NsysFormatError(
                    self.trace_path,
                    None,
                    f"{key!r} instance {i + 1}: GPU span {span_ms(ops):.3f} ms exceeds "
                    f"its NVTX range {self.nvtx_ms[key][i]:.3f} ms",
                )

    def pass_times(self, key: str, name: str, params: dict[str, Any], copy_bytes: int | None = None) -> PassTimes:
        """Range start to last GPU end for every instance (NVTX durations as the host-side times).

        Bytes moved count the copies of the first instance, each of copy_bytes
        when given (the export only knows sizes to +-500 B), else as exported.
        """
        first = self.by_key[key][0]
        copies = first[first["kind"] != "kernel"]
        moved = len(copies) * copy_bytes if copy_bytes else int(copies["bytes"].sum())
        return PassTimes(
            key=key,
            name=name,
            params=params,
            times_ms=list(self.elapsed_ms[key]),
            host_ms=list(self.nvtx_ms[key]),
            bytes_moved=moved or None,
        )

    def ops(self, key: str, instance: int = 0) -> list[Op]:
        """One instance's operations, timed from its range's start: the last one ends at that repeat's time."""
        return to_ops(self.by_key[key][instance], key, self.starts_ns[key][instance])
