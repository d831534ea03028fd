"""The day-54 pictures, from a results record (live event traces or nsys exports alike)."""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

from day54 import report
from day54.config import PassKey
from labcore import plots
from labcore.errors import UsageError
from labcore.record import Record
from labcore.sizes import format_size

THRESHOLD = 0.70


def timeline(record: Record, window: int | None = None, *, by: str = "op") -> Figure:
    """Naive above pipelined (every depth) on one time axis, rows per engine, colour per chunk."""
    window = report.main_window(record, window)
    keys = [("naive", PassKey("naive", window, 1))] + [
        (f"pipelined, {b} buffers", PassKey("pipelined", window, b)) for b in report.buffers(record)
    ]
    panels = [(label, record.ops(key)) for label, key in keys if record.ops(key)]
    if not panels:
        raise UsageError(f"the record from {record.source} has no per-op trace at {format_size(window)}")
    return plots.timeline(panels, by=by, title=f"day54 at {format_size(window)} on {record.device.name}")


def sweep(record: Record) -> Figure:
    """Pipelined/naive against window for each depth, with the 0.70 line and the model's ratios."""
    windows = report.windows(record)
    measured = {f"{b} buffers": [report.ratio(record, w, b) for w in windows] for b in report.buffers(record)}
    model = {
        f"{b} buffers": [
            report.model_for(record, w, b).bound_ms / report.measured(record, "naive", w, 1) for w in windows
        ]
        for b in report.buffers(record)
    }
    return plots.ratio_plot(
        [format_size(w) for w in windows],
        measured,
        model,
        threshold=THRESHOLD,
        xlabel="window (chunk size)",
        ylabel="pipelined / naive",
        title=f"window sweep on {record.device.name} (lower is better)",
    )


def stages(record: Record, window: int | None = None) -> Figure:
    """Sum, max and link floor beside the measured naive and pipelined times."""
    window = report.main_window(record, window)
    st = report.stages(record, window)
    values = {"naive bound (sum)": st.sum_ms, "pipeline floor (max)": st.max_ms}
    kinds = dict.fromkeys(values, "model")
    if (link := report.link_floor_ms(record)) is not None:
        values["link floor (duplex)"] = link
        kinds["link floor (duplex)"] = "model"
    values["measured naive"] = report.measured(record, "naive", window, 1)
    for b in report.buffers(record):
        values[f"measured pipelined, {b} buffers"] = report.measured(record, "pipelined", window, b)
    kinds.update({k: "measured" for k in values if k.startswith("measured")})
    return plots.bars(values, kinds=kinds, title=f"stages at {format_size(window)} on {record.device.name}")


def write_all(record: Record, directory: str | Path, window: int | None = None) -> list[Path]:
    """The three PNGs `python -m day54 --plot DIR` writes."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"--plot {directory} is a file; give a directory")
    return [
        plots.save(timeline(record, window), directory / "day54_timeline.png"),
        plots.save(sweep(record), directory / "day54_sweep.png"),
        plots.save(stages(record, window), directory / "day54_stages.png"),
    ]
