"""The lesson's figures, from a record: the passes as bars against the floor, and the unified-memory timeline."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from day57 import report
from day57.config import MANAGED, PASSES
from labcore.plots import figure, save
from labcore.record import Record

if TYPE_CHECKING:
    from matplotlib.figure import Figure

TIMELINE = "timeline"  # record.extra: per managed pass, the migrations and fault bins of one repeat (replay only)
COLOURS = {"h2d": "tab:blue", "d2h": "tab:orange", "gpu_faults": "tab:red", "cpu_faults": "tab:purple"}


def bars(record: Record) -> Figure:
    """Every pass's median GPU time, the duplex floor drawn across."""
    fig = figure(figsize=(7, 3.5))
    ax = fig.subplots()
    names = [n for n in PASSES if report.ms(record, n) is not None]
    ax.bar(names, [report.ms(record, n) for n in names], color="tab:gray")
    if report.ms(record, "duplex"):
        ax.axhline(report.ms(record, "duplex"), color="tab:green", linestyle="--", label="duplex floor")
        ax.legend()
    ax.set_ylabel("ms (median)")
    ax.set_yscale("log")
    ax.set_title(f"{record.device.name}: the job through managed memory")
    return fig


def timeline(record: Record) -> Figure:
    """Per managed pass, one timed repeat: migrations each way (MB started per 100 us) and faults per 100 us."""
    seen = record.extra.get(TIMELINE) or {}
    names = [n for n in MANAGED if n in seen]
    fig = figure(figsize=(9, 2.4 * max(1, len(names))))
    axes = fig.subplots(max(1, len(names)), 1, squeeze=False)[:, 0]
    if not names:
        axes[0].text(0.5, 0.5, "no unified-memory trace in this record (a profile's replay has one)", ha="center")
        axes[0].set_axis_off()
        return fig
    for ax, name in zip(axes, names, strict=True):
        twin = ax.twinx()
        for kind in COLOURS:
            points = seen[name].get(kind, [])
            xs = [t / 1e6 for t, _ in points]
            if kind in ("h2d", "d2h"):
                ax.plot(xs, [b / 1e6 for _, b in points], ".", ms=2, color=COLOURS[kind])
                ax.plot([], [], ".", color=COLOURS[kind], label=f"migrations {kind}, MB / 100 us")
            else:
                twin.plot(xs, [n for _, n in points], "x", ms=2, color=COLOURS[kind])
                ax.plot([], [], "x", color=COLOURS[kind], label=kind.replace("_", " ") + " / 100 us")
        ax.set_ylabel("MB / 100 us")
        ax.set_xlim(0, report.ms(record, name))  # the whole repeat, quiet or not
        if not any(seen[name].get(kind) for kind in COLOURS):
            ax.text(0.5, 0.5, "no migration and no fault", ha="center", transform=ax.transAxes)
        twin.set_ylabel("faults")
        ax.set_title(f"{name}: one timed repeat ({report.ms(record, name):.1f} ms median)", loc="left")
        ax.legend(loc="upper right", fontsize="small")
    axes[-1].set_xlabel("ms from the start of the repeat")
    fig.tight_layout()
    return fig


def write_all(record: Record, directory: str | Path) -> list[Path]:
    folder = Path(directory)
    return [save(bars(record), folder / "day57_bars.png"), save(timeline(record), folder / "day57_timeline.png")]
