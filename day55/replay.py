"""Replays: a results record from a recorded profile instead of the GPU.

A profile directory holds the nsys CSV exports of a profiled `python -m day55 --json results.json` and that
results.json. The default replay reads the exports (every pass's times and, at the main window, the timeline of
its median repeat, from the NVTX ranges and cuda_gpu_trace, checked for consistency on the way in) and takes from
results.json what nsys cannot know: the device, the configuration, the correctness verdicts, the allocation calls'
probed costs and what the pools held. A results.json alone (named, or a directory without exports) replays the
record as the run wrote it.
"""

from __future__ import annotations

from pathlib import Path

from day55 import DOMAIN, LESSON
from day55.config import COMPONENTS, VARIANTS, PassKey
from labcore import record as rec
from labcore.exports import Exports
from labcore.kit import replay
from labcore.kit.replay import TRACE_REPEAT as TRACE_REPEAT


def load_profile(path: str | Path | None = None) -> rec.Record:
    """Read a profile directory (nsys exports, else results.json) or a results.json into a replay record."""
    return replay.load(
        LESSON, path, from_exports, hint="; the shipped profile is recorded on a GPU by `bash day55/record.sh`"
    )


shipped_profile = replay.shipped(load_profile)


def traced(key: PassKey) -> bool:
    """Passes whose timeline the lesson draws: naive and every way of allocating."""
    return key.name == "naive" or key.name in VARIANTS


def _kinds(name: str) -> set[str]:
    return {name} if name in COMPONENTS else set(COMPONENTS)


def from_exports(directory: Path, companion: Path | None = None) -> rec.Record:
    """Build the results record from a directory's nsys exports (and the run's results.json if given)."""
    exports = Exports(directory, DOMAIN)
    parsed = replay.keys(exports, PassKey.parse, LESSON, "'<pass> w=<window> b=<n>'")
    windows, total = replay.sweep_total(exports, parsed.values(), (*COMPONENTS, "naive"))
    replay.check_window_passes(exports, parsed, _kinds, total)
    passes = replay.window_passes(exports, parsed)
    base = replay.companion_of(companion, LESSON)
    config = dict(base.config) if base else {}
    config.update(total_bytes=total, windows=windows)
    if config.get("window_bytes") not in windows:
        config["window_bytes"] = 64 << 20 if (64 << 20) in windows else windows[-1]
    main = config["window_bytes"]
    drawn, trace = replay.median_repeats(
        exports, [t for t, k in parsed.items() if k.window_bytes == main and traced(k)]
    )
    extra = dict(base.extra) if base else {}
    extra[TRACE_REPEAT] = drawn
    return replay.replay_record(
        LESSON, directory, companion, exports, base, config=config, passes=passes, trace=trace, extra=extra
    )
