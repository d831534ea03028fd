"""Replays: a results record from a recorded profile instead of the GPU.

A profile folder holds the nsys CSV exports of a profiled run (`python -m day56 --json results.json` under
`nsys profile --cuda-graph-trace=node`, so that a graph's copies and kernels appear one by one) and the
results.json that run wrote. A replay reads the GPU time of every pass from the exports (each timed NVTX range of
the day56 domain, from its start to the end of its last GPU operation, as labcore.exports does for day 54) and the
host's times from the ranges of the host domain (the enqueue loop, the graph launch, the capture, the instantiate,
the update), and takes from results.json what nsys cannot know: the device facts, the configuration, the
correctness verdicts, the pitfalls, and the one-off steps it did not range (the instantiate of the comparison).
A folder with only results.json, or a results.json named directly, replays the record.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import pandas as pd

from day56 import DOMAIN, HOST_DOMAIN, LESSON
from day56.config import PassKey, parse_host_range
from day56.report import HOST, TRACE_REPEAT
from labcore import nsys
from labcore import record as rec
from labcore.device import DeviceFacts
from labcore.errors import UsageError
from labcore.exports import Exports, median_instance
from labcore.profiles import RESULTS, load_companion, load_results, profile_path, require_exports
from labcore.profiles import shipped_profile as shipped_folder

COPY_SLACK_BYTES = 1000  # exports print sizes in MB with 3 decimals
REPLAYED_EXPORTS = ("nvtx_pushpop_trace", "cuda_gpu_trace")
SERIES = {"enqueue": "enqueue_ms", "launch": "launch_ms"}  # host ranges repeated once per timed repeat
ONE_OFF = {"capture": "capture_ms", "instantiate": "instantiate_ms", "update": "update_ms", "recapture": "recapture_ms"}


def load_profile(path: str | Path | None = None) -> rec.Record:
    """Read a profile folder (nsys exports, else results.json) or a results.json into a replay record."""
    shipped = path is None
    path = profile_path(LESSON, path)
    if path.is_file():
        return load_results(path, LESSON)
    require_exports(path, REPLAYED_EXPORTS)
    companion = path / RESULTS
    if _has_exports(path):
        return from_exports(path, companion if companion.exists() else None)
    if companion.exists():
        return load_results(companion, LESSON)
    if shipped:
        raise UsageError(missing_profile_line())
    raise UsageError(
        f"--from-profile {path}: neither nsys CSV exports (nvtx_pushpop_trace, cuda_gpu_trace) nor a results.json there"
    )


@functools.cache
def _shipped() -> rec.Record:
    return load_profile()


def shipped_profile() -> rec.Record:
    """The shipped profile's record, parsed once per process: a copy the caller may change."""
    return copy.deepcopy(_shipped())


def _has_exports(directory: Path) -> bool:
    try:
        found = nsys.find_exports(directory)
    except nsys.NsysFormatError:
        raise
    except UsageError:
        return False
    return set(REPLAYED_EXPORTS) <= set(found)


def _validator(key: PassKey, window: int):
    """One instance's operations: n copies in, n kernels and n copies out (the duplex probe: no kernels), each copy
    one window."""
    kinds = {"h2d", "d2h"} if key.name == "duplex" else {"h2d", "kernel", "d2h"}

    def validate(ops: pd.DataFrame) -> str | None:
        counts = ops["kind"].value_counts().to_dict()
        for kind in ("h2d", "kernel", "d2h"):
            want = key.n_chunks if kind in kinds else 0
            if counts.get(kind, 0) != want:
                return f"{counts.get(kind, 0)} {kind} operations, expected {want} ({key.n_chunks} chunks)"
        sizes = ops.loc[ops["kind"] != "kernel", "bytes"]
        off = sizes[(sizes - window).abs() > COPY_SLACK_BYTES]
        if len(off):
            return f"a copy of {int(off.iloc[0])} bytes, expected {window} (the window)"
        return None

    return validate


def host_times(pushpop: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """{str(n): {"enqueue_ms": [...], "launch_ms": [...], "capture_ms": ..., ...}} from the host-domain ranges
    (warm-ups dropped), in the run's order."""
    rows = pushpop[pushpop["domain"] == HOST_DOMAIN].sort_values("start_ns")
    found: dict[str, dict[str, Any]] = {}
    for name, duration in zip(rows["range"], rows["duration_ns"], strict=True):
        parsed = parse_host_range(str(name))
        if parsed is None:
            continue
        what, key = parsed
        facts = found.setdefault(str(key.n_chunks), {})
        if what in SERIES:
            facts.setdefault(SERIES[what], []).append(duration / 1e6)
        else:
            facts.setdefault(ONE_OFF[what], duration / 1e6)  # the first: the update's recapture comes after
    return found


def from_exports(directory: Path, companion: Path | None = None) -> rec.Record:
    """Build the results record from a folder's nsys exports (and the run's results.json if given)."""
    exports = Exports(directory, DOMAIN)
    parsed: dict[str, PassKey] = {}
    for text in exports.by_key:
        key = PassKey.parse(text)
        if key is None:
            raise nsys.NsysFormatError(
                exports.ranges_path, None, f"range {text!r} is not a day56 pass (expected 'streams n=16', 'graph n=16')"
            )
        parsed[text] = key
    totals = set()
    passes = []
    for text, key in parsed.items():
        first = exports.by_key[text][0]
        copies = first[first["kind"] == "h2d"]
        window = round(float(copies["bytes"].median())) if len(copies) else 0
        total = key.n_chunks * window
        totals.add(round(total / (1 << 20)))
        exports.check(text, _validator(key, window))
        passes.append(
            exports.pass_times(text, key.name, {"n_chunks": key.n_chunks, "window_bytes": window}, copy_bytes=window)
        )
    if len(totals) != 1:
        raise nsys.NsysFormatError(exports.trace_path, None, f"passes cover different totals ({sorted(totals)} MiB)")
    base = load_companion(companion, LESSON) if companion else None
    config = dict(base.config) if base else {}
    config["total_bytes"] = next(iter(totals)) << 20
    config["chunks"] = sorted({k.n_chunks for k in parsed.values() if k.name == "graph"})
    for p in passes:  # the exact window, now that the total is known
        p.params["window_bytes"] = config["total_bytes"] // p.params["n_chunks"]
        if base:
            p.params["buffers"] = base.config.get("buffers")
    extra = dict(base.extra) if base else {}
    measured = host_times(nsys.read_exports(directory, reports=("nvtx_pushpop_trace",))["nvtx_pushpop_trace"])
    merged = {n: {**extra.get(HOST, {}).get(n, {}), **facts} for n, facts in measured.items()}
    extra[HOST] = {**extra.get(HOST, {}), **merged}
    main = min((k.n_chunks for k in parsed.values() if k.name == "duplex"), default=min(config["chunks"]))
    drawn = {
        text: median_instance(exports.elapsed_ms[text])
        for text, key in parsed.items()
        if key.n_chunks == main and key.name in ("streams", "graph")
    }
    trace = [op for text, instance in drawn.items() for op in exports.ops(text, instance)]
    extra[TRACE_REPEAT] = drawn
    source = f"nsys exports in {directory}" + (f" with {companion.name}" if companion else "")
    return rec.Record(
        lesson=LESSON,
        mode="replay",
        source=source,
        device=base.device if base else DeviceFacts(name=exports.device_name),
        config=config,
        passes=passes,
        trace=trace,
        checks=base.checks if base else [],
        extra=extra,
        recorded_at=base.recorded_at if base else "unknown",
    )


def missing_profile_line() -> str:
    """What a replay test or a run without a GPU says while the shipped profile is not recorded yet."""
    where = shipped_folder(LESSON)
    return f"no recorded day56 profile at {where} yet (it is recorded on the H200: day56/record.sh)"
