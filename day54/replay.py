"""Replays: a results record from a recorded profile instead of the GPU.

A profile directory holds the nsys CSV exports of a profiled run and the
results.json that run wrote. The default replay reads the exports (passes and
the per-op trace come from the NVTX ranges and cuda_gpu_trace, checked for
consistency on the way in) and takes from results.json what nsys cannot know:
device facts, the configuration, and the correctness verdicts. A directory
with only results.json, or a results.json named directly, replays the record.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from labcore import nsys
from labcore import record as rec
from labcore.device import DeviceFacts
from labcore.errors import UsageError
from labcore.exports import Exports
from labcore.profiles import default_profile
from labcore.sizes import format_size, parse_size

LESSON = "day54"
KEY = re.compile(r"^(?P<name>.+) w=(?P<window>\d+[KMG]iB|\d+B) b=(?P<buffers>\d+)$")
COPY_SLACK_BYTES = 1000  # exports print sizes in MB with 3 decimals
COMPONENTS = {"h2d": {"h2d"}, "kernel": {"kernel"}, "d2h": {"d2h"}, "duplex": {"h2d", "d2h"}}


def parse_key(key: str) -> tuple[str, int, int] | None:
    """'pipelined w=64MiB b=2' -> ('pipelined', 67108864, 2); None if it is not a pass key."""
    match = KEY.match(key)
    if not match:
        return None
    return match["name"], parse_size(match["window"]), int(match["buffers"])


def load_profile(path: str | Path | None = None) -> rec.Record:
    """Read a profile directory (nsys exports, else results.json) or a results.json into a replay record."""
    path = Path(path) if path is not None else default_profile(LESSON)
    if not path.exists():
        raise UsageError(f"--from-profile {path}: no such file or directory")
    if path.is_file():
        return _from_results(path)
    companion = path / "results.json"
    if _has_exports(path):
        return from_exports(path, companion if companion.is_file() else None)
    if companion.is_file():
        return _from_results(companion)
    raise UsageError(f"--from-profile {path}: neither nsys CSV exports (nvtx_pushpop_trace, cuda_gpu_trace) "
                     f"nor a results.json there")


def _has_exports(directory: Path) -> bool:
    try:
        found = nsys.find_exports(directory)
    except nsys.NsysFormatError:
        raise
    except UsageError:
        return False
    return {"nvtx_pushpop_trace", "cuda_gpu_trace"} <= set(found)


def _from_results(path: Path) -> rec.Record:
    loaded = rec.load(path)
    if loaded.lesson != LESSON:
        raise UsageError(f"{path} is a {loaded.lesson!r} record, not {LESSON!r}")
    loaded.mode, loaded.source = "replay", str(path)
    return loaded


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
                return (f"{counts.get(kind, 0)} {kind} operations, expected {want} "
                        f"({n_chunks} chunks of {format_size(window)})")
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


def from_exports(directory: Path, companion: Path | None = None) -> rec.Record:
    """Build the results record from a directory's nsys exports (and the run's results.json if given)."""
    exports = Exports(directory, LESSON)
    parsed = {}
    for key in exports.by_key:
        found = parse_key(key)
        if found is None:
            raise nsys.NsysFormatError(exports.ranges_path, None, f"range {key!r} is not a day54 pass "
                                       f"(expected '<pass> w=<window> b=<buffers>')")
        parsed[key] = found
    windows = sorted({w for name, w, _ in parsed.values() if name == "h2d"})
    if not windows:
        raise nsys.NsysFormatError(exports.ranges_path, None, "no 'h2d w=... b=1' component ranges")
    totals = {}
    for window in windows:
        for needed in ("h2d", "kernel", "d2h", "naive"):
            if f"{needed} w={format_size(window)} b=1" not in parsed:
                raise nsys.NsysFormatError(exports.ranges_path, None,
                                           f"no {needed!r} range for window {format_size(window)}")
        if not any(n == "pipelined" and w == window for n, w, _ in parsed.values()):
            raise nsys.NsysFormatError(exports.ranges_path, None,
                                       f"no 'pipelined' range for window {format_size(window)}")
        first_h2d = exports.by_key[f"h2d w={format_size(window)} b=1"][0]
        totals[window] = len(first_h2d) * window
    if len(set(totals.values())) != 1:
        sizes = ", ".join(f"{format_size(w)}: {format_size(t)}" for w, t in totals.items())
        raise nsys.NsysFormatError(exports.trace_path, None, f"windows cover different totals ({sizes})")
    total = next(iter(totals.values()))

    passes = []
    for key, (name, window, buffers) in parsed.items():
        exports.check(key, _validator(name, window, total // window))
        passes.append(exports.pass_times(key, name, {"window_bytes": window, "buffers": buffers}, copy_bytes=window))
    base = rec.load(companion) if companion else None
    config = dict(base.config) if base else {}
    config.update(total_bytes=total, windows=windows,
                  buffers=sorted({b for n, _, b in parsed.values() if n == "pipelined"}))
    main = config.get("window_bytes") if config.get("window_bytes") in windows else \
        (64 << 20 if (64 << 20) in windows else windows[len(windows) // 2])
    config["window_bytes"] = main
    trace = [op for key, (name, window, _) in parsed.items()
             if window == main and name in ("naive", "pipelined") for op in exports.ops(key)]
    source = f"nsys exports in {directory}" + (f" with {companion.name}" if companion else "")
    return rec.Record(
        lesson=LESSON, mode="replay", source=source,
        device=base.device if base else DeviceFacts(name=exports.device_name),
        config=config, passes=passes, trace=trace, checks=base.checks if base else [],
        extra=base.extra if base else {}, recorded_at=base.recorded_at if base else "unknown")


def describe(record: rec.Record) -> str:
    """Where a replay's numbers came from, for the mode line."""
    d = record.device
    versions = ", ".join(f"{k} {v}" for k, v in (("driver", d.driver), ("driver CUDA", d.driver_cuda),
                                                       ("CUDA runtime", d.cuda_runtime), ("CuPy", d.cupy)) if v)
    versions = f"; {versions}" if versions else ""
    return f"replay of {record.source} (recorded {record.recorded_at} on {d.summary()}{versions})"
