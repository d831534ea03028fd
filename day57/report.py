"""What a record shows: the passes against the pinned pipeline and the duplex floor, the unified-memory traffic a
profile saw, and the lesson's claims judged on the numbers."""

from __future__ import annotations

from day57 import model
from day57.config import MANAGED, PASSES, PassKey
from labcore.kit.verdicts import Verdict, checks_text, held
from labcore.record import PassTimes, Record

MIGRATIONS = "migrations"  # record.extra: per pass, what nsys saw cross the link as unified memory (replay only)
FAULTS_OVER_PIPELINE_BAR = 2.0  # claim 1: faulting in and out costs at least this many pipelines
PREFETCH_OVER_PIPELINE_BAR = 1.2  # claim 2: prefetch in the copies' place costs at least this many pipelines


def found(record: Record, name: str) -> PassTimes | None:
    """The pass of that name in the record, if any."""
    return next((p for p in record.passes if (key := PassKey.parse(p.key)) and key.name == name), None)


def ms(record: Record, name: str) -> float | None:
    """The median GPU time (ms) of a pass, None when the record has none."""
    times = found(record, name)
    return times.median_ms if times else None


def ratio(record: Record, name: str, to: str) -> float | None:
    top, bottom = ms(record, name), ms(record, to)
    return None if top is None or not bottom else top / bottom


def model_mib(record: Record, name: str) -> float:
    """What the lesson's model (exercise 1) says one timed repeat of a pass moves across the link, MiB: what one
    more run adds, with the advice for the advised pass (its output) and without for the others (in and out)."""
    total, advised = record.config["total_bytes"], name == "advised"
    return (model.bytes_moved(total, 2, advised) - model.bytes_moved(total, 1, advised)) / 2**20


def gpu_table(record: Record) -> str:
    """Every pass: median and spread, GB/s of the job's 2 GiB, against the pipeline and the duplex floor, and the
    MiB the lesson's model says cross the link in it."""
    head = f"{'pass':<10}{'median ms':>11}{'spread ms':>17}{'GB/s':>7}{'/ pipeline':>12}{'/ floor':>9}"
    lines = [head + f"{'model MiB':>11}"]
    for name in PASSES:
        p = found(record, name)
        if p is None:
            continue
        low, high = p.spread_ms
        lines.append(
            f"{name:<10}{p.median_ms:>11.2f}{f'{low:.2f}-{high:.2f}':>17}{p.gbps() or 0:>7.1f}"
            f"{_x(ratio(record, name, 'pipeline')):>12}{_x(ratio(record, name, 'duplex')):>9}"
            f"{model_mib(record, name):>11.0f}"
        )
    return "\n".join(lines)


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def traffic_table(record: Record) -> str:
    """What nsys saw move as unified memory in one timed repeat of each managed pass (a profile's replay only)."""
    seen = record.extra.get(MIGRATIONS)
    if not seen:
        return "no unified-memory trace in this record (a live run has none: nsys records the faults; see the profile)"
    lines = ["nsys's unified-memory records of the median timed repeat (under load it may drop some):"]
    lines += [f"{'pass':<10}{'to GPU MiB':>12}{'to host MiB':>13}{'GPU faults':>12}{'CPU faults':>12}"]
    for name in MANAGED:
        got = seen.get(name)
        if got:
            lines.append(
                f"{name:<10}{got['h2d_bytes'] / 2**20:>12.0f}{got['d2h_bytes'] / 2**20:>13.0f}"
                f"{got['gpu_faults']:>12}{got['cpu_faults']:>12}"
            )
    return "\n".join(lines)


def predictions(record: Record) -> list[Verdict]:
    """The lesson's three claims, each judged on this record's numbers."""
    said = []
    faults, prefetch, advised = (ratio(record, n, "pipeline") for n in MANAGED)
    floor = ratio(record, "advised", "duplex")
    if faults is not None:
        claim = f"page faults on first touch cost at least {FAULTS_OVER_PIPELINE_BAR:.0f}x the pinned pipeline"
        said.append(Verdict(1, claim, held(faults >= FAULTS_OVER_PIPELINE_BAR), f"faults/pipeline {faults:.2f}x"))
    if prefetch is not None:
        claim = (
            "prefetches in the copies' place do not reach the pinned pipeline (a migration is the driver's page "
            f"work, not one copy): at least {PREFETCH_OVER_PIPELINE_BAR}x"
        )
        said.append(
            Verdict(2, claim, held(prefetch >= PREFETCH_OVER_PIPELINE_BAR), f"prefetch/pipeline {prefetch:.2f}x")
        )
    if advised is not None and floor is not None:
        claim = "with the advice, a re-run beats the duplex floor: its input no longer crosses the link"
        moved = f"the model: {model_mib(record, 'advised'):.0f} of {model_mib(record, 'pipeline'):.0f} MiB a run"
        numbers = f"advised/floor {floor:.2f}x, advised/pipeline {advised:.2f}x; {moved}"
        said.append(Verdict(3, claim, held(floor < 1), numbers))
    return said


def render(record: Record) -> str:
    parts = [checks_text(record), "", gpu_table(record), "", traffic_table(record), ""]
    return "\n".join(parts + [v.line() for v in predictions(record)])
