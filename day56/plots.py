"""The day-56 pictures, from a results record: the two timelines and the host's bars."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from day56 import report
from day56.config import PassKey
from labcore import plots
from labcore.errors import UsageError
from labcore.record import Record

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NO_GRAPH_OPS = "live, the graph's nodes carry no events to draw: its operations come from a profile (--from-profile)"


def median_title(record: Record, key: PassKey) -> str:
    times = record.pass_times(key)
    head = f"median of {len(times.times_ms)}: {times.median_ms:.2f} ms"
    repeat = record.extra.get(report.TRACE_REPEAT, {}).get(str(key))
    return head + (f" (drawn: repeat {repeat + 1})" if repeat is not None else "; drawn: one extra traced run")


def timeline(record: Record, by: str = "op") -> Figure:
    """The pipeline stream by stream above the same pipeline as one graph, at the main chunk count, one time axis."""
    n = report.main_chunks(record)
    panels = []
    for label, name in (("stream by stream", "streams"), ("one graph launch", "graph")):
        key = PassKey(name, n)
        ops = record.ops(key)
        if ops:
            panels.append(plots.Panel(f"{label}: {median_title(record, key)}", ops))
    if not panels:
        raise UsageError(f"the record from {record.source} has no per-op trace at {n} chunks")
    title = f"day56 at {n} chunks on {record.device.name}"
    if not record.ops(PassKey("graph", n)):
        title += f"\n{NO_GRAPH_OPS}"
    return plots.timeline(panels, by=by, title=title)


def host_bars(record: Record) -> Figure:
    """Per chunk count: the host's enqueue loop stream by stream beside one graph launch (ms per pass)."""
    fig = plots.figure(figsize=(9, 3.8), layout="constrained")
    ax = fig.subplots()
    counts = report.chunk_counts(record)
    enq = [report.enqueue_ms(record, n) for n in counts]
    lau = [report.launch_ms(record, n) for n in counts]
    if None in enq or None in lau:
        ax.set_axis_off()
        ax.text(0.5, 0.5, f"the record from {record.source} has no host times", ha="center", va="center")
        return fig
    xs = range(len(counts))
    for offset, values, label in ((-0.2, enq, "enqueue loop, stream by stream"), (0.2, lau, "one graph launch")):
        bars = ax.bar([x + offset for x in xs], values, width=0.4, label=label)
        ax.bar_label(bars, fmt="%.3f ms", fontsize=8)
    ax.set_yscale("log")
    ax.set_xticks(list(xs), [f"{n} chunks ({3 * n} operations)" for n in counts])
    ax.set_ylabel("host time per pass, ms (log scale)")
    ax.set_title(f"what the host pays to start one pass on {record.device.name} (lower is better)")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return fig


def gpu_bars(record: Record) -> Figure:
    """GPU time stream by stream and as a graph at each chunk count, beside the duplex floor."""
    values = {}
    kinds = {}
    if (floor := report.floor_ms(record)) is not None:
        values["duplex floor"] = floor
        kinds["duplex floor"] = "link floor"
    for n in report.chunk_counts(record):
        for name, label in (("streams", "stream by stream"), ("graph", "one graph")):
            values[f"{n} chunks, {label}"] = report.gpu_ms(record, name, n)
            kinds[f"{n} chunks, {label}"] = label
    fig = plots.bars(values, kinds=kinds, title=f"GPU time on {record.device.name}: what does not move")
    ax = fig.axes[0]
    # below the axes: in its corner, the legend would sit on the longest bars' values (the last are the longest)
    ax.legend(
        handles=ax.get_legend().legend_handles,
        fontsize=8,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.14),
        ncols=len(set(kinds.values())),
        frameon=False,
    )
    return fig


def write_all(record: Record, directory: str | Path) -> list[Path]:
    """The PNGs `python -m day56 --plot DIR` writes."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"--plot {directory} is a file; give a directory")
    return [
        plots.save(timeline(record), directory / "day56_timeline.png"),
        plots.save(host_bars(record), directory / "day56_host.png"),
        plots.save(gpu_bars(record), directory / "day56_gpu.png"),
    ]
