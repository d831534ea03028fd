"""Replays: a results record from a recorded profile instead of the GPU.

A profile directory holds the nsys CSV exports of a profiled `python -m day55 --json results.json` and that
results.json. The default replay reads the exports (every pass's times and, at the main window, the timeline of
its median repeat, from the NVTX ranges and cuda_gpu_trace, checked for consistency on the way in) and takes from
results.json what nsys cannot know: the device, the configuration, the correctness verdicts, the allocation calls'
probed costs and what the pools held. A results.json alone (named, or a directory without exports) replays the
record as the run wrote it.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path

import pandas as pd

from day55 import DOMAIN, LESSON
from day55.config import COMPONENTS, VARIANTS, PassKey
from labcore import nsys
from labcore import record as rec
from labcore.device import DeviceFacts
from labcore.errors import UsageError
from labcore.exports import Exports, median_instance
from labcore.profiles import RESULTS, default_profile, load_companion, load_results, profile_path, require_exports
from labcore.sizes import format_size

COPY_SLACK_BYTES = 1000  # exports print sizes in MB with 3 decimals
TRACE_REPEAT = "trace_repeat"  # record.extra: pass key -> the timed repeat whose timeline the trace holds
EXPORTS = ("nvtx_pushpop_trace", "cuda_gpu_trace")


def shipped_profile_dir() -> Path:
    """Where the lesson's shipped profile lives (UsageError naming it when it is missing)."""
    return default_profile(LESSON)


def load_profile(path: str | Path | None = None) -> rec.Record:
    """Read a profile directory (nsys exports, else results.json) or a results.json into a replay record."""
    path = profile_path(LESSON, path)
    if path.is_file():
        return load_results(path, LESSON)
    require_exports(path, EXPORTS)
    companion = path / RESULTS
    if _has_exports(path):
        return from_exports(path, companion if companion.exists() else None)
    if companion.exists():
        return load_results(companion, LESSON)
    raise UsageError(
        f"--from-profile {path}: neither nsys CSV exports (nvtx_pushpop_trace, cuda_gpu_trace) nor a results.json "
        "there; the shipped profile is recorded on a GPU by `bash day55/record.sh`"
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
    return set(EXPORTS) <= set(found)


def traced(key: PassKey) -> bool:
    """Passes whose timeline the lesson draws: naive and every way of allocating."""
    return key.name == "naive" or key.name in VARIANTS


def _validator(name: str, window: int, n_chunks: int):
    """Consistency of one instance: op counts and copy sizes."""
    kinds = {name} if name in COMPONENTS else set(COMPONENTS)

    def validate(ops: pd.DataFrame) -> str | None:
        counts = ops["kind"].value_counts().to_dict()
        for kind in COMPONENTS:
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
        return None

    return validate


def _keys(exports: Exports) -> dict[str, PassKey]:
    parsed = {}
    for text in exports.by_key:
        key = PassKey.parse(text)
        if key is None:
            raise nsys.NsysFormatError(
                exports.ranges_path, None, f"range {text!r} is not a day55 pass (expected '<pass> w=<window> b=<n>')"
            )
        parsed[text] = key
    return parsed


def from_exports(directory: Path, companion: Path | None = None) -> rec.Record:
    """Build the results record from a directory's nsys exports (and the run's results.json if given)."""
    exports = Exports(directory, DOMAIN)
    parsed = _keys(exports)
    keys = set(parsed.values())
    windows = sorted({k.window_bytes for k in keys if k.name == "h2d"})
    if not windows:
        raise nsys.NsysFormatError(exports.ranges_path, None, "no 'h2d w=... b=1' component ranges")
    for window in windows:
        for needed in (*COMPONENTS, "naive"):
            if PassKey(needed, window, 1) not in keys:
                raise nsys.NsysFormatError(
                    exports.ranges_path, None, f"no {needed!r} range for window {format_size(window)}"
                )
    totals = {w: len(exports.by_key[str(PassKey("h2d", w, 1))][0]) * w for w in windows}
    if len(set(totals.values())) != 1:
        sizes = ", ".join(f"{format_size(w)}: {format_size(t)}" for w, t in totals.items())
        raise nsys.NsysFormatError(exports.trace_path, None, f"windows cover different totals ({sizes})")
    total = next(iter(totals.values()))
    passes = []
    for text, key in parsed.items():
        exports.check(text, _validator(key.name, key.window_bytes, total // key.window_bytes))
        params = {"window_bytes": key.window_bytes, "buffers": key.buffers}
        passes.append(exports.pass_times(text, key.name, params, copy_bytes=key.window_bytes))
    base = load_companion(companion, LESSON) if companion else None
    config = dict(base.config) if base else {}
    config.update(total_bytes=total, windows=windows)
    if config.get("window_bytes") not in windows:
        config["window_bytes"] = 64 << 20 if (64 << 20) in windows else windows[-1]
    main = config["window_bytes"]
    drawn = {
        text: median_instance(exports.elapsed_ms[text])
        for text, key in parsed.items()
        if key.window_bytes == main and traced(key)
    }
    extra = dict(base.extra) if base else {}
    extra[TRACE_REPEAT] = drawn
    return rec.Record(
        lesson=LESSON,
        mode="replay",
        source=f"nsys exports in {directory}" + (f" with {companion.name}" if companion else ""),
        device=base.device if base else DeviceFacts(name=exports.device_name),
        config=config,
        passes=passes,
        trace=[op for text, instance in drawn.items() for op in exports.ops(text, instance)],
        checks=base.checks if base else [],
        extra=extra,
        recorded_at=base.recorded_at if base else "unknown",
    )
