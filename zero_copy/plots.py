"""The lesson's figures (matplotlib), drawn from a results record alone, live or replayed."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from labcore.plots import bars, figure, save
from labcore.record import Record
from labcore.sizes import format_size
from zero_copy import LESSON, model
from zero_copy.config import planned_rows
from zero_copy.report import breakeven_verdict, not_recorded_line, rates

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def breakeven(record: Record) -> Figure:
    """Time against reads per byte: measured points and the model's lines, both crossovers marked."""
    plan, verdict, link = record.extra["breakeven"], breakeven_verdict(record), rates(record)
    nbytes = plan["nbytes"]
    fig = figure(figsize=(7, 4.2), layout="constrained")
    ax = fig.subplots()
    per = verdict["per_reads"]
    reads = [p["reads"] for p in per]
    r_axis = np.linspace(0, max(reads), 200)
    ax.plot(
        r_axis,
        [model.zero_copy_ms(nbytes, r, link.h2d_gbps) for r in r_axis],
        "--",
        color="C0",
        label="zero-copy model r·B/L",
    )
    ax.plot(
        r_axis, [model.copy_path_ms(nbytes, r, link) for r in r_axis], "--", color="C1", label="copy model B/L + r·B/H"
    )
    ax.plot(reads, [p["zero_copy_ms"] for p in per], "o", color="C0", label="zero-copy measured")
    ax.plot(reads, [p["copy_ms"] for p in per], "s", color="C1", label="copy then kernel measured")
    for value, style, label in (
        (verdict["crossover_model"], "--", "model r*"),
        (verdict["crossover_measured"], ":", "measured r*"),
    ):
        if value is not None:
            ax.axvline(value, color="grey", linestyle=style, label=f"{label} = {value:.2f}")
    ax.set_xlabel("reads per byte r")
    ax.set_ylabel(f"ms for {nbytes >> 20} MiB")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"break-even on {record.device.name}: L {link.h2d_gbps:.1f} GB/s, H {link.hbm_gbps:.0f} GB/s")
    return fig


def gather(record: Record) -> Figure:
    """GB/s of each way of getting the batch to the GPU, from the record's gather experiment."""
    plan = record.extra["gather"]
    rows = planned_rows(plan)
    values = {row.label: record.pass_times(row.key).gbps() for row in rows}
    kinds = {
        row.label: "GPU reads mapped memory"
        if row.key.path in ("sorted", "unsorted")
        else "copy engine"
        if row.key.path == "copy"
        else "CPU"
        for row in rows
    }
    return bars(
        values,
        kinds=kinds,
        unit="GB/s",
        title=f"{plan['n_rows']:,} rows of {plan['row_bytes']} B on {record.device.name}",
    )


def both_ways(record: Record) -> Figure:
    """Mapped both ways at each grid against day 54's pipeline and the duplex link floor (medians, min..max bars);
    for a record made before the experiment existed, a figure saying so."""
    fig = figure(figsize=(7, 4.2), layout="constrained")
    ax = fig.subplots()
    if "both_ways" not in record.extra:
        ax.set_axis_off()
        ax.text(0.5, 0.5, not_recorded_line(record, "both_ways").replace("; ", ";\n"), ha="center", va="center")
        return fig
    plan = record.extra["both_ways"]
    rows = planned_rows(plan)
    mapped = [(row.params["blocks"], record.pass_times(row.key)) for row in rows if row.key.path == "mapped"]
    blocks = [b for b, _ in mapped]
    medians = np.array([found.median_ms for _, found in mapped])
    spread = np.array([found.spread_ms for _, found in mapped]).T
    ax.errorbar(
        blocks,
        medians,
        yerr=[medians - spread[0], spread[1] - medians],
        fmt="o-",
        color="C0",
        capsize=3,
        label="mapped both ways (the SMs' loads and stores)",
    )
    for path, colour, label in (
        ("pipeline", "C1", f"day 54's pipeline, {plan['chunk_bytes'] >> 20} MiB x {plan['n_buffers']}"),
        ("duplex", "grey", "link floor: both copies at once"),
    ):
        found = record.pass_times(next(row.key for row in rows if row.key.path == path))
        low, high = found.spread_ms
        ax.axhline(found.median_ms, color=colour, linestyle="--", label=f"{label}: {found.median_ms:.2f} ms")
        ax.axhspan(low, high, color=colour, alpha=0.15)
    ax.set_xscale("log", base=2)
    ax.set_xlabel(f"blocks of {plan['threads']} threads ({plan['sm_count']} SMs)")
    ax.set_ylabel("ms, median (bars and bands: min..max)")  # not from 0: the paths differ by percents
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    size = format_size(plan["nbytes"])
    ax.set_title(f"{size} in and {size} out through the link on {record.device.name}", fontsize=10)
    return fig


# What `--plot DIR` draws: the experiment (a key of record.extra) -> its figure, and the words --help says
FIGURES = {
    "breakeven": (breakeven, "the break-even"),
    "gather": (gather, "the gather"),
    "both_ways": (both_ways, "both ways"),
}


def plot_help() -> str:
    """--plot's help, naming every figure write_all draws."""
    names = ", ".join(words for _, words in FIGURES.values())
    return f"also write {len(FIGURES)} plots here ({LESSON}_<name>.png, for the experiments run): {names}"


def write_all(record: Record, directory: str | Path) -> list[Path]:
    """The PNGs `python -m zero_copy --plot DIR` writes: one per experiment of FIGURES the record holds."""
    directory = Path(directory)
    return [
        save(draw(record), directory / f"{LESSON}_{name}.png")
        for name, (draw, _) in FIGURES.items()
        if name in record.extra
    ]
