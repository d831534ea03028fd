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

from pathlib import Path

from day54 import DOMAIN, LESSON
from day54.config import PassKey
from day54.report import TRACE_REPEAT
from labcore import nsys
from labcore import record as rec
from labcore.exports import Exports
from labcore.kit import replay
from labcore.kit.replay import COPY_SLACK_BYTES as COPY_SLACK_BYTES
from labcore.kit.replay import REPLAYED_EXPORTS as REPLAYED_EXPORTS
from labcore.sizes import format_size

COMPONENTS = {"h2d": {"h2d"}, "kernel": {"kernel"}, "d2h": {"d2h"}, "duplex": {"h2d", "d2h"}}


def load_profile(path: str | Path | None = None) -> rec.Record:
    """Read a profile directory (nsys exports, else results.json) or a results.json into a replay record."""
    return replay.load(LESSON, path, from_exports)


shipped_profile = replay.shipped(load_profile)


def traced(key: PassKey) -> bool:
    """Passes whose timeline the lesson draws: naive, pipelined and the pitfalls."""
    return key.name in ("naive", "pipelined") or key.name.startswith("pitfall ")


def _expected_kinds(name: str) -> set[str]:
    return COMPONENTS.get(name, {"h2d", "kernel", "d2h"})


def from_exports(directory: Path, companion: Path | None = None, exports: Exports | None = None) -> rec.Record:
    """Build the results record from a directory's nsys exports (and the run's results.json if given)."""
    exports = exports or Exports(directory, DOMAIN)  # already read by a caller that needs its raw ranges too
    parsed = replay.keys(exports, PassKey.parse, LESSON, "'<pass> w=<window> b=<buffers>'")
    windows, total = replay.sweep_total(exports, parsed.values(), ("h2d", "kernel", "d2h", "naive"))
    for window in windows:
        if not any(k.name == "pipelined" and k.window_bytes == window for k in parsed.values()):
            raise nsys.NsysFormatError(
                exports.ranges_path, None, f"no 'pipelined' range for window {format_size(window)}"
            )
    replay.check_window_passes(exports, parsed, _expected_kinds, total, serial_span=True)
    base = replay.companion_of(companion, LESSON)
    config = dict(base.config) if base else {}
    depths = sorted({k.buffers for k in parsed.values() if k.name == "pipelined"})
    config.update(total_bytes=total, windows=windows, buffers=depths)
    main = (
        config.get("window_bytes")
        if config.get("window_bytes") in windows
        else (64 << 20 if (64 << 20) in windows else windows[len(windows) // 2])
    )
    config["window_bytes"] = main
    drawn, trace = replay.median_repeats(
        exports, [t for t, k in parsed.items() if k.window_bytes == main and traced(k)]
    )
    extra = dict(base.extra) if base else {}
    extra[TRACE_REPEAT] = drawn
    passes = replay.window_passes(exports, parsed)
    return replay.replay_record(
        LESSON, directory, companion, exports, base, config=config, passes=passes, trace=trace, extra=extra
    )
