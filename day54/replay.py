"""Replays: a results record from a recorded profile instead of the GPU.

A profile directory holds the nsys CSV exports of a profiled run and the
results.json that run wrote. The default replay reads the exports (passes and
the per-op trace come from the NVTX ranges and cuda_gpu_trace, checked for
consistency on the way in) and takes from results.json what nsys cannot know:
device facts, the configuration, and the correctness verdicts. A directory
with only results.json, or a results.json named directly, replays the record.

The trace a replay from exports keeps is, for each pass the lesson draws at the main window (naive,
pipelined, the pitfalls), the timed repeat whose time is the median, timed from its range's start: its
timeline ends at the table's median. `record.extra[TRACE_REPEAT]` says which repeat that was.
"""

from __future__ import annotations

import functools
import pickle
from pathlib import Path

import pandas as pd

from day54 import DOMAIN, LESSON
from day54.config import PassKey
from day54.report import TRACE_REPEAT
from labcore import nsys
from labcore import record as rec
from labcore.device import DeviceFacts
from labcore.errors import UsageError
from labcore.exports import Exports, median_instance
from labcore.profiles import RESULTS, load_companion, load_results, profile_path, require_exports
from labcore.sizes import format_size

COPY_SLACK_BYTES = 1000  # exports print sizes in MB with 3 decimals
COMPONENTS = {"h2d": {"h2d"}, "kernel": {"kernel"}, "d2h": {"d2h"}, "duplex": {"h2d", "d2h"}}
REPLAYED_EXPORTS = ("nvtx_pushpop_trace", "cuda_gpu_trace")  # what a replay from exports reads


def load_profile(path: str | Path | None = None) -> rec.Record:
    """Read a profile directory (nsys exports, else results.json) or a results.json into a replay record."""
    path = profile_path(LESSON, path)
    if path.is_file():
        return load_results(path, LESSON)
    require_exports(path, REPLAYED_EXPORTS)
    companion = path / RESULTS
    if _has_exports(path):
        return from_exports(path, companion if companion.exists() else None)
    if companion.exists():
        return load_results(companion, LESSON)
    raise UsageError(
        f"--from-profile {path}: neither nsys CSV exports (nvtx_pushpop_trace, cuda_gpu_trace) nor a results.json there"
    )


@functools.cache
def _shipped() -> rec.Record:
    return load_profile()


@functools.cache
def _shipped_bytes() -> bytes:
    return pickle.dumps(_shipped())


def shipped_profile() -> rec.Record:
    """The shipped profile's record, parsed once per process (its exports take a second or more to read): a copy
    that the caller may change. Checks read it while grading, for every submission a warm worker grades: the copy
    is unpickled from the parsed record's bytes (1 ms; a deepcopy took 10)."""
    return pickle.loads(_shipped_bytes())


def _has_exports(directory: Path) -> bool:
    try:
        found = nsys.find_exports(directory)
    except nsys.NsysFormatError:
        raise
    except UsageError:
        return False
    return set(REPLAYED_EXPORTS) <= set(found)


def traced(key: PassKey) -> bool:
    """Passes whose timeline the lesson draws: naive, pipelined and the pitfalls."""
    return key.name in ("naive", "pipelined") or key.name.startswith("pitfall ")


def _expected_kinds(name: str) -> set[str]:
    return COMPONENTS.get(name, {"h2d", "kernel", "d2h"})


def _validator(name: str, window: int, n_chunks: int):
    """Consistency of one instance: op counts, copy sizes, and durations that add up."""
    kinds = _expected_kinds(name)

    def validate(ops: pd.DataFrame) -> str | None:
        counts = ops["kind"].value_counts().to_dict()
        for kind in ("h2d", "kernel", "d2h"):
            want = n_chunks if kind in kinds else 0
            if counts.get(kind, 0) != want:
                return (
                    f"{counts.get(kind, 0)} {kind} operations, expected {want} "
                    f"({n_chunks} chunks of {format_size(window)})"
                )
        sizes = ops.loc[ops["kind"] != "kernel", "bytes"]
        off = sizes[(sizes - window).abs() > COPY_SLACK_BYTES]
        if len(off):
            return f"a copy of {int(off.iloc[0])} bytes, expected {window} (the window)"
        if ops["stream"].nunique() == 1:  # one stream runs its operations one after another
            busy = int(ops["duration_ns"].sum())
            span = int(ops["end_ns"].max() - ops["start_ns"].min())
            if busy > span * 1.001:
                return f"one stream's operations add up to {busy / 1e6:.3f} ms, more than its span {span / 1e6:.3f} ms"
        return None

    return validate


def from_exports(directory: Path, companion: Path | None = None, exports: Exports | None = None) -> rec.Record:
    """Build the results record from a directory's nsys exports (and the run's results.json if given)."""
    exports = exports or Exports(directory, DOMAIN)  # already read by a caller that needs its raw ranges too
    parsed: dict[str, PassKey] = {}
    for text in exports.by_key:
        key = PassKey.parse(text)
        if key is None:
            raise nsys.NsysFormatError(
                exports.ranges_path,
                None,
                f"range {text!r} is not a day54 pass (expected '<pass> w=<window> b=<buffers>')",
            )
        parsed[text] = key
    keys = set(parsed.values())
    windows = sorted({k.window_bytes for k in keys if k.name == "h2d"})
    if not windows:
        raise nsys.NsysFormatError(exports.ranges_path, None, "no 'h2d w=... b=1' component ranges")
    totals = {}
    for window in windows:
        for needed in ("h2d", "kernel", "d2h", "naive"):
            if PassKey(needed, window, 1) not in keys:
                raise nsys.NsysFormatError(
                    exports.ranges_path, None, f"no {needed!r} range for window {format_size(window)}"
                )
        if not any(k.name == "pipelined" and k.window_bytes == window for k in keys):
            raise nsys.NsysFormatError(
                exports.ranges_path, None, f"no 'pipelined' range for window {format_size(window)}"
            )
        first_h2d = exports.by_key[str(PassKey("h2d", window, 1))][0]
        totals[window] = len(first_h2d) * window
    if len(set(totals.values())) != 1:
        sizes = ", ".join(f"{format_size(w)}: {format_size(t)}" for w, t in totals.items())
        raise nsys.NsysFormatError(exports.trace_path, None, f"windows cover different totals ({sizes})")
    total = next(iter(totals.values()))

    passes = []
    for text, key in parsed.items():
        exports.check(text, _validator(key.name, key.window_bytes, total // key.window_bytes))
        passes.append(
            exports.pass_times(
                text, key.name, {"window_bytes": key.window_bytes, "buffers": key.buffers}, copy_bytes=key.window_bytes
            )
        )
    base = load_companion(companion, LESSON) if companion else None
    config = dict(base.config) if base else {}
    depths = sorted({k.buffers for k in keys if k.name == "pipelined"})
    config.update(total_bytes=total, windows=windows, buffers=depths)
    main = (
        config.get("window_bytes")
        if config.get("window_bytes") in windows
        else (64 << 20 if (64 << 20) in windows else windows[len(windows) // 2])
    )
    config["window_bytes"] = main
    drawn = {
        text: median_instance(exports.elapsed_ms[text])
        for text, key in parsed.items()
        if key.window_bytes == main and traced(key)
    }
    trace = [op for text, instance in drawn.items() for op in exports.ops(text, instance)]
    extra = dict(base.extra) if base else {}
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
