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

from pathlib import Path
from typing import Any

import pandas as pd

from day56 import DOMAIN, HOST_DOMAIN, LESSON
from day56.config import PassKey, parse_host_range
from day56.report import HOST, TRACE_REPEAT
from labcore import nsys
from labcore import record as rec
from labcore.exports import Exports
from labcore.kit import replay
from labcore.profiles import shipped_profile as shipped_folder

SERIES = {"enqueue": "enqueue_ms", "launch": "launch_ms"}  # host ranges repeated once per timed repeat
ONE_OFF = {"capture": "capture_ms", "instantiate": "instantiate_ms", "update": "update_ms", "recapture": "recapture_ms"}


def load_profile(path: str | Path | None = None) -> rec.Record:
    """Read a profile folder (nsys exports, else results.json) or a results.json into a replay record."""
    return replay.load(LESSON, path, from_exports, missing=missing_profile_line)


shipped_profile = replay.shipped(load_profile)


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


def _passes(exports: Exports, parsed: dict[str, PassKey]) -> tuple[list[rec.PassTimes], int]:
    """Every pass, checked (n copies in, n kernels and n copies out, the duplex probe no kernels; each copy one
    window), with its chunk count and window; and the total they all cover."""
    totals = set()
    passes = []
    for text, key in parsed.items():
        first = exports.by_key[text][0]
        copies = first[first["kind"] == "h2d"]
        window = round(float(copies["bytes"].median())) if len(copies) else 0
        totals.add(round(key.n_chunks * window / (1 << 20)))
        kinds = {"h2d", "d2h"} if key.name == "duplex" else set(replay.STAGES)
        exports.check(text, replay.ops_validator(kinds, key.n_chunks, window, f"{key.n_chunks} chunks"))
        params = {"n_chunks": key.n_chunks, "window_bytes": window}
        passes.append(exports.pass_times(text, key.name, params, copy_bytes=window))
    if len(totals) != 1:
        raise nsys.NsysFormatError(exports.trace_path, None, f"passes cover different totals ({sorted(totals)} MiB)")
    return passes, next(iter(totals)) << 20


def from_exports(directory: Path, companion: Path | None = None) -> rec.Record:
    """Build the results record from a folder's nsys exports (and the run's results.json if given)."""
    exports = Exports(directory, DOMAIN)
    parsed = replay.keys(exports, PassKey.parse, LESSON, "'streams n=16', 'graph n=16'")
    passes, total = _passes(exports, parsed)
    base = replay.companion_of(companion, LESSON)
    config = dict(base.config) if base else {}
    config["total_bytes"] = total
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
    drawn = [t for t, k in parsed.items() if k.n_chunks == main and k.name in ("streams", "graph")]
    extra[TRACE_REPEAT], trace = replay.median_repeats(exports, drawn)
    return replay.replay_record(
        LESSON, directory, companion, exports, base, config=config, passes=passes, trace=trace, extra=extra
    )


def missing_profile_line() -> str:
    """What a replay test or a run without a GPU says while the shipped profile is not recorded yet."""
    where = shipped_folder(LESSON)
    return f"no recorded day56 profile at {where} yet (it is recorded on the H200: day56/record.sh)"
