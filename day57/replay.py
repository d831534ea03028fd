"""Replays: a results record from a recorded profile instead of the GPU.

A profile folder (day57/record.sh) holds the nsys stats CSV exports of a profiled run, `--cuda-um-gpu-page-faults`
and `--cuda-um-cpu-page-faults` on: the NVTX ranges (nvtx_pushpop_trace), whose day57-domain ranges give each
timed repeat's duration; the trace's unified-memory migrations and faults binned per 100 us (day57_um_migrations.csv
from the cuda_gpu_trace export by `bin_migrations`, day57_um_gpu_faults.csv and day57_um_cpu_faults.csv by
record.sh's queries of nsys's SQLite export), in the ranges' clock; and the run's results.json, for what nsys cannot
know (the device, the configuration, the correctness verdicts). The loader, the shipped profile parsed once and the
replay record are the kit's (labcore.kit.replay). A folder with only results.json, or a results.json named, replays
that.
"""

from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path
from typing import Any

from day57 import DOMAIN, LESSON
from day57.config import MANAGED, PassKey
from day57.plots import TIMELINE
from day57.report import MIGRATIONS
from labcore import nsys
from labcore import record as rec
from labcore.errors import UsageError
from labcore.exports import timed_instances
from labcore.kit import replay
from labcore.profiles import RESULTS

EXPORTS = ("nvtx_pushpop_trace",)  # the nsys export a replay reads, beside the binned files
BIN_NS = 100_000
BINNED = {"migrations": ("HtoD (B)", "DtoH (B)"), "gpu_faults": ("Faults",), "cpu_faults": ("Faults",)}
FILES = {what: f"day57_um_{what}.csv" for what in BINNED}


def load_profile(path: str | Path | None = None) -> rec.Record:
    """Read a profile folder (nsys exports and results.json) or a results.json into a replay record."""
    return replay.load(
        LESSON, path, from_exports, hint="; the shipped one is recorded by day57/record.sh", exports=EXPORTS
    )


shipped_profile = replay.shipped(load_profile)


def from_exports(directory: Path, companion: Path | None) -> rec.Record:
    """The passes from the NVTX ranges (each timed repeat's duration), one repeat's unified-memory traffic per
    managed pass from the binned files; the rest from the run's results.json, which a replay needs."""
    if companion is None:
        raise UsageError(f"--from-profile {directory}: no {RESULTS} there (the run's record, which a replay needs)")
    base = replay.companion_of(companion, LESSON)
    ranges = timed_instances(nsys.read_exports(directory, reports=EXPORTS)["nvtx_pushpop_trace"], DOMAIN)
    bins = {what: read_bins(directory / FILES[what], columns) for what, columns in BINNED.items()}
    passes, timeline, moved = [], {}, {}
    for text, rows in ranges.groupby("range", sort=False):
        key = PassKey.parse(str(text))
        if key is None:
            raise nsys.NsysFormatError(directory, None, f"range {text!r} is not a day57 pass ('prefetch n=16')")
        durations = [d / 1e6 for d in rows["duration_ns"]]
        params = next((p.params for p in base.passes if p.key == text), {"n_chunks": key.n_chunks})
        moved_bytes = 2 * base.config["total_bytes"]
        passes.append(rec.PassTimes(str(text), key.name, params, durations, bytes_moved=moved_bytes))
        if key.name in MANAGED:
            middle = rows.iloc[durations.index(statistics.median_low(durations))]
            timeline[key.name], moved[key.name] = _one_repeat(bins, int(middle["start_ns"]), int(middle["end_ns"]))
    extra = {**base.extra, TIMELINE: timeline, MIGRATIONS: moved}
    return replay.replay_record(
        LESSON, directory, companion, None, base, config=base.config, passes=passes, trace=[], extra=extra
    )


def read_bins(path: Path, columns: tuple[str, ...]) -> list[tuple[int, ...]]:
    """A binned CSV's rows, (bin start ns, value, ...); UsageError naming the file and line of a bad one."""
    if not path.is_file():
        raise UsageError(f"{path}: missing (record.sh writes it beside the nsys exports)")
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows or rows[0] != ["Bin Start (ns)", *columns]:
        raise UsageError(f"{path}:1: expected the header 'Bin Start (ns),{','.join(columns)}'")
    for number, row in enumerate(rows[1:], 2):
        if not all(cell.lstrip("-").isdigit() for cell in row):
            raise UsageError(f"{path}:{number}: not whole numbers: {','.join(row)}")
    return [tuple(int(cell) for cell in row) for row in rows[1:]]


def _one_repeat(bins: dict[str, list[tuple[int, ...]]], start: int, end: int) -> tuple[dict[str, Any], dict[str, int]]:
    """The bins inside one repeat, times from its start, and its totals."""
    inside = {what: [row for row in rows if start - BIN_NS < row[0] <= end] for what, rows in bins.items()}
    shown: dict[str, Any] = {
        "h2d": [(t - start, b) for t, b, _ in inside["migrations"] if b],
        "d2h": [(t - start, b) for t, _, b in inside["migrations"] if b],
        "gpu_faults": [(t - start, n) for t, n in inside["gpu_faults"]],
        "cpu_faults": [(t - start, n) for t, n in inside["cpu_faults"]],
    }
    totals = {f"{kind}_bytes": sum(b for _, b in shown[kind]) for kind in ("h2d", "d2h")}
    totals.update({kind: sum(n for _, n in shown[kind]) for kind in ("gpu_faults", "cpu_faults")})
    return shown, totals


def bin_migrations(trace_csv: str | Path, out_csv: str | Path) -> int:
    """The unified-memory migrations of a cuda_gpu_trace export, bytes each way per 100 us bin (of each migration's
    start): what a replay reads in place of the whole trace. Returns the migrations binned."""
    sums: dict[int, list[int]] = {}
    count = 0
    with open(trace_csv, newline="") as f:  # labcore.nsys refuses these rows: a migration has no context or stream
        rows = csv.DictReader(f)
        if not {"Start (ns)", "Bytes (MB)", "Name"} <= set(rows.fieldnames or ()):
            raise UsageError(f"{trace_csv}:1: not a cuda_gpu_trace export (Start (ns), Bytes (MB), Name)")
        for row in rows:
            if "Unified" in row["Name"]:
                count += 1
                bins = sums.setdefault(int(row["Start (ns)"]) // BIN_NS * BIN_NS, [0, 0])
                bins["Device-to-Host" in row["Name"]] += round(float(row["Bytes (MB)"]) * 1e6)
    with open(out_csv, "w", newline="") as f:
        rows = [[t, *v] for t, v in sorted(sums.items())]
        csv.writer(f).writerows([("Bin Start (ns)", *BINNED["migrations"]), *rows])
    return count


if __name__ == "__main__":  # record.sh: python3 -m day57.replay TRACE_CSV OUT_CSV
    print(f"binned {bin_migrations(*sys.argv[1:3])} unified-memory migrations")
