"""The day-54 pictures, from a results record (live event traces or nsys exports alike)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from day54 import multi_gpu, report
from day54.config import PassKey
from day54.pitfalls import DEPTH, ENQUEUE, GPU_VISIBLE, NAMES, PAGEABLE, pass_key, pitfall_key
from labcore import plots
from labcore.answers import ReferenceWithheld
from labcore.errors import UsageError
from labcore.pipeline.context import LEGACY
from labcore.record import Record
from labcore.sizes import format_size

if TYPE_CHECKING:
    from matplotlib.figure import Figure

THRESHOLD = 0.70
STREAM_NAMES = {LEGACY: "legacy default"}  # a live trace gives it this index; a replay numbers it in order of use
CORRECT = "correct pipeline, 2 buffers"
# What each pitfall panel is; the two that are not overlap failures say so.
PITFALL_TITLES = {
    "legacy-launch": "legacy-launch: one kernel launched on the legacy default stream",
    "sync-in-loop": "sync-in-loop: a device-wide synchronize after every chunk",
    "more-streams-than-buffers": (
        "more-streams-than-buffers: 3 streams share 2 buffer pairs\n"
        "A RACE, not an overlap failure: the timeline looks fine, the output is not guaranteed"
    ),
    PAGEABLE: "pageable: copies from pageable (not pinned) host memory",
    ENQUEUE: (
        "timing the enqueue: the host clock read after the loop, without a synchronize\n"
        "A MEASUREMENT ERROR, not an overlap failure: the clock stops long before the GPU"
    ),
}


def median_title(record: Record, key: PassKey) -> str:
    """One number per pass: the table's median, and the drawn run's own span when the drawn run is not it."""
    times = record.pass_times(key)
    head = f"median of {len(times.times_ms)}: {times.median_ms:.2f} ms"
    repeat = record.extra.get(report.TRACE_REPEAT, {}).get(str(key))
    if repeat is not None and times.times_ms[repeat] == times.median_ms:
        return f"{head} (drawn: repeat {repeat + 1})"
    span_ms = max(o.end_ns for o in record.ops(key)) / 1e6
    drawn = "one extra traced run" if repeat is None else f"repeat {repeat + 1}"
    return f"{head}; drawn: {drawn}, {span_ms:.2f} ms"


def timeline(record: Record, window: int | None = None, *, by: str = "op") -> Figure:
    """Naive above pipelined (every depth) on one time axis, rows per engine, colour per chunk."""
    window = report.main_window(record, window)
    keys = [("naive", PassKey("naive", window, 1))] + [
        (f"pipelined, {b} buffers", PassKey("pipelined", window, b)) for b in report.buffers(record)
    ]
    panels = [
        plots.Panel(f"{label}: {median_title(record, key)}", record.ops(key)) for label, key in keys if record.ops(key)
    ]
    if not panels:
        raise UsageError(f"the record from {record.source} has no per-op trace at {format_size(window)}")
    return plots.timeline(panels, by=by, title=f"day54 at {format_size(window)} on {record.device.name}")


def has_pitfall_timelines(record: Record, window: int | None = None) -> bool:
    """Whether the record holds what the pitfall timelines need: a trace of each pitfall and the enqueue times."""
    return not _missing_pitfalls(record, report.main_window(record, window))


def _missing_pitfalls(record: Record, window: int) -> list[str]:
    missing = [name for name in GPU_VISIBLE if not record.ops(pass_key(name, window))]
    missing += [] if record.ops(PassKey("pipelined", window, DEPTH)) else [CORRECT]
    missing += [] if report.enqueue_ms(record) is not None else ["enqueue times"]
    return missing


def _pitfall_panels(record: Record, window: int | None, *, labelled: bool = True) -> tuple[plots.Panel, dict]:
    """The correct pipeline's panel and each pitfall's by name, titled with what it is and its median."""
    window = report.main_window(record, window)
    missing = _missing_pitfalls(record, window)
    if missing:
        raise UsageError(
            f"the record from {record.source} has no per-op trace at {format_size(window)} of "
            f"{', '.join(missing)}: replay a profile's nsys exports, or measure live with the pitfalls"
        )
    correct_key = PassKey("pipelined", window, DEPTH)
    correct_median = median_title(record, correct_key)
    correct = plots.Panel(f"{CORRECT}: {correct_median}", record.ops(correct_key), stream_names=STREAM_NAMES)
    found = {}
    for name in GPU_VISIBLE:
        key = pass_key(name, window)
        title = f"{PITFALL_TITLES[name]}\n{median_title(record, key)}"
        found[name] = plots.Panel(title, record.ops(key), stream_names=STREAM_NAMES)
    enqueue_ms = report.enqueue_ms(record)
    stopped = f"host clock stopped: {enqueue_ms:.2f} ms"
    if labelled:
        stopped += f" (median of {len(record.extra['enqueue_ms'])}, no synchronize)"
    title = f"{PITFALL_TITLES[ENQUEUE]}\nthe correct pipeline, {correct_median}"
    found[ENQUEUE] = dataclasses.replace(correct, title=title, marks=[(enqueue_ms, stopped)])
    return correct, found


def _title(what: str, record: Record, window: int | None, by: str) -> str:
    w = report.main_window(record, window)
    rows = "rows: streams, kernels hatched" if by == "stream" else "rows: engines"
    return f"{what} at {format_size(w)}, {DEPTH} buffers on {record.device.name} ({rows}; one time axis per row)"


def pitfalls(record: Record, window: int | None = None, *, by: str = "stream") -> Figure:
    """Each pitfall's timeline beside the correct pipeline's (2 buffers, the main window), a row each."""
    correct, found = _pitfall_panels(record, window)
    rows = [[correct, found[name]] for name in NAMES]
    return plots.timeline_grid(
        rows, by=by, title=_title("the five pitfalls beside the correct pipeline", record, window, by)
    )


def unlabelled_pitfalls(record: Record, window: int | None = None, *, by: str = "stream") -> Figure:
    """The "name the pitfall" exercise: the five pitfall timelines labelled only A-E, each beside the correct one."""
    try:
        key = pitfall_key()
    except ReferenceWithheld:
        return plots.message(
            "while grading, the order of the timelines A-E is withheld: they are drawn in your own run"
        )
    correct, found = _pitfall_panels(record, window, labelled=False)
    rows = [[correct, dataclasses.replace(found[key[letter]], title=letter)] for letter in sorted(key)]
    return plots.timeline_grid(rows, by=by, title=_title("which pitfall is each of A-E?", record, window, by))


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
    kinds = dict.fromkeys(values, "model (of the measured stages)")
    if (link := report.link_floor_ms(record)) is not None:  # the duplex probe's median: measured, not modelled
        values["link floor (duplex)"] = link
        kinds["link floor (duplex)"] = "measured"
    values["measured naive"] = report.measured(record, "naive", window, 1)
    for b in report.buffers(record):
        values[f"measured pipelined, {b} buffers"] = report.measured(record, "pipelined", window, b)
    kinds.update({k: "measured" for k in values if k.startswith("measured")})
    return plots.bars(values, kinds=kinds, title=f"stages at {format_size(window)} on {record.device.name}")


def multi_gpus(record: Record) -> Figure:
    """Several GPUs (notebook section 7): each GPU's pipelined/naive alone and together, and GB/s of the peer copy
    beside staging through the host. A record of one GPU draws its 'alone' bars and says what it lacks."""
    fig = plots.figure(figsize=(11, 3.8), layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=[3, 2])
    n_gpus, depths = multi_gpu.gpus_in(record), multi_gpu.depths(record)
    groups = [(gpu, b) for gpu in range(n_gpus) for b in depths]
    for offset, together, label in ((-0.2, False, "alone"), (0.2, True, "all GPUs at once")):
        values = [multi_gpu.ratio(record, gpu, together, b) for gpu, b in groups]
        xs = [i + offset for i, v in enumerate(values) if v is not None]
        shown = [v for v in values if v is not None]
        if shown:
            bars = left.bar(xs, shown, width=0.4, label=label)
            left.bar_label(bars, fmt="%.3f", fontsize=8)
    left.set_xticks(range(len(groups)), [f"GPU {gpu}, {b} buffers" for gpu, b in groups])
    left.set_ylabel("pipelined / naive (lower is better)")
    left.set_title("does each GPU keep its ratio beside the others?" if n_gpus > 1 else "one GPU: none ran beside it")
    left.legend(fontsize=8)
    left.grid(axis="y", alpha=0.3)
    peer, staged = multi_gpu.copy_times(record, "peer"), multi_gpu.copy_times(record, "staged")
    if peer is None or staged is None:
        right.set_axis_off()
        right.text(0.5, 0.5, multi_gpu.NEEDS_TWO.format(n=n_gpus), ha="center", va="center", wrap=True)
    else:
        bars = right.barh(["peer copy", "staged through\nthe host"], [peer.gbps(), staged.gbps()], color=["C2", "C3"])
        right.bar_label(bars, fmt="%.1f GB/s", fontsize=8)
        right.invert_yaxis()
        right.set_xlabel("GB/s (higher is better)")
        right.set_xlim(0, max(peer.gbps(), staged.gbps()) * 1.25)
        right.set_title(
            f"{format_size(peer.bytes_moved)} from GPU {peer.params['source']} to GPU {peer.params['dest']}"
        )
    fig.suptitle(f"{n_gpus} GPU{'s' if n_gpus > 1 else ''}: {record.device.name}")
    return fig


def write_all(record: Record, directory: str | Path, window: int | None = None) -> list[Path]:
    """The PNGs `python -m day54 --plot DIR` writes: timeline, sweep, stages, and the pitfalls when traced.

    Stages are drawn at `window`; the timelines at `traced_window(record, window)`.
    """
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"--plot {directory} is a file; give a directory")
    traced = traced_window(record, window)
    written = [
        plots.save(timeline(record, traced), directory / "day54_timeline.png"),
        plots.save(sweep(record), directory / "day54_sweep.png"),
        plots.save(stages(record, window), directory / "day54_stages.png"),
    ]
    if has_pitfall_timelines(record, traced):
        written.append(plots.save(pitfalls(record, traced), directory / "day54_pitfalls.png"))
    return written


def traced_window(record: Record, window: int | None = None) -> int:
    """The window the timelines show: the asked one when the record traced it, else the run's own."""
    window = report.main_window(record, window)
    if record.ops(PassKey("naive", window, 1)):
        return window
    return report.main_window(record)
