"""The day-55 figures, from a record alone: the measured timelines of each way of allocating (where the device
serializes), the same schedules simulated with the host's allocation calls on their own row, and the medians."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from day55 import model, report, schedules
from day55.config import VARIANTS, PassKey
from labcore import plots
from labcore.answers import ReferenceWithheld
from labcore.errors import UsageError
from labcore.pipeline.context import HOST
from labcore.pipeline.recording import RecordingContext
from labcore.pipeline.simulate import simulate
from labcore.record import Record
from labcore.sizes import format_size

if TYPE_CHECKING:
    from matplotlib.figure import Figure

STREAM_NAMES = {HOST: "host: cudaMalloc / cudaFree"}


def _key(record: Record, name: str, window: int) -> PassKey:
    return PassKey(name, window, report.buffers(record))


def traced_window(record: Record, window: int | None = None) -> int:
    """The window the timelines show: the asked one when the record traced it, else the run's own."""
    window = report.main_window(record, window)
    return window if record.ops(_key(record, "once", window)) else report.main_window(record)


def timeline(record: Record, window: int | None = None) -> Figure:
    """The measured GPU timelines, rows per stream, one time axis, a panel for every way of allocating the record
    traced (cupy-cold's too): cudaFree's waits leave the device idle between chunks where the stream-ordered calls
    let the streams overlap."""
    window = traced_window(record, window)
    panels = []
    for name in VARIANTS:
        key = _key(record, name, window)
        ops = record.ops(key)
        if ops:
            panels.append(
                plots.Panel(f"{name}: {record.pass_times(key).median_ms:.2f} ms (median); {VARIANTS[name]}", ops)
            )
    if not panels:
        raise UsageError(f"the record from {record.source} has no per-op trace at {format_size(window)}")
    return plots.timeline(panels, by="stream", title=f"day55 at {format_size(window)} on {record.device.name}")


def simulated(
    record: Record, window: int | None = None, names: tuple[str, ...] = ("once", "malloc", "async")
) -> Figure:
    """The model's timelines of the same schedules (simulated on the record's stages and call costs), the host's
    blocking calls on a row of their own: every cudaFree starts only when the device is idle."""
    window = report.main_window(record, window)
    costs = report.calls(record, window)
    if costs is None:
        return plots.message(f"the record from {record.source} holds no allocation call costs to simulate with")
    st = report.stages(record, window)
    panels = []
    for name in names:
        ctx = RecordingContext(st.n_chunks, report.buffers(record), allocated=False)
        try:
            schedules.for_variant(name)(ctx)
        except ReferenceWithheld:  # the student edition, before the student's own schedule stands in
            continue
        keeps = name not in ("async", "async-sync")
        ops = simulate(ctx, model.rates(st, costs, keeps_pool=keeps), key=f"simulated {name}")
        end = max(o.end_ns for o in ops) / 1e6
        panels.append(plots.Panel(f"{name}, simulated: {end:.2f} ms", ops, stream_names=STREAM_NAMES))
    if not panels:
        return plots.message("the simulated timelines need the stream-ordered schedule: write my_stream_ordered")
    return plots.timeline(panels, by="stream", title=f"day55 model at {format_size(window)} (simulated)")


def medians(record: Record, window: int | None = None) -> Figure:
    """Each way of allocating, median ms at one window."""
    window = report.main_window(record, window)
    values = {name: report.measured(record, name, window) for name in VARIANTS if report.has(record, name, window)}
    kinds = {name: "per chunk" if name not in ("once",) else "once" for name in values}
    return plots.bars(values, kinds=kinds, title=f"day55 at {format_size(window)}: median pass time")


def write_all(record: Record, directory: str | Path, window: int | None = None) -> list[Path]:
    """The PNGs `python -m day55 --plot DIR` writes."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"--plot {directory} is a file; give a directory")
    return [
        plots.save(timeline(record, window), directory / "day55_timeline.png"),
        plots.save(simulated(record, window), directory / "day55_simulated.png"),
        plots.save(medians(record, window), directory / "day55_medians.png"),
    ]
