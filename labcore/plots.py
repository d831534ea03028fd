"""Timeline and ratio plots (matplotlib), drawn from results-record data alone.

Functions return a matplotlib Figure (notebooks display it; commands save it).
No pyplot state is used, so they work headless and inside notebooks alike. matplotlib is imported when the first
figure is made (`figure`): a command that draws nothing never imports it (0.6 s of CPU).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labcore.record import Op

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

ROW_LABELS = {"h2d": "copy in (H2D)", "kernel": "kernel (SMs)", "d2h": "copy out (D2H)"}
ROW_ORDER = ("h2d", "kernel", "d2h")


def figure(**options: Any) -> Figure:
    """A new matplotlib Figure (options as Figure takes them), matplotlib imported on the first."""
    from matplotlib.figure import Figure

    return Figure(**options)


def _chunk_colour(chunk: int) -> tuple[float, float, float, float]:
    from matplotlib import colormaps

    return colormaps["tab20"](chunk % 20)


@dataclasses.dataclass(frozen=True)
class Panel:
    """One timeline panel: its title, its ops, and vertical marks (ms, label) such as where a host clock stopped."""

    title: str
    ops: Sequence[Op]
    marks: Sequence[tuple[float, str]] = ()
    stream_names: Mapping[int, str] = dataclasses.field(default_factory=dict)  # rows by stream: "stream N" else


def _panel(panel: Panel | tuple[str, Sequence[Op]]) -> Panel:
    """A (label, ops) pair is titled with its label and the drawn run's end."""
    if isinstance(panel, Panel):
        return panel
    label, ops = panel
    return Panel(f"{label}: {max((o.end_ns for o in ops), default=0) / 1e6:.2f} ms", ops)


def _end_ms(panel: Panel) -> float:
    """Where a panel's picture ends: its last op or its last mark."""
    return max([o.end_ns / 1e6 for o in panel.ops] + [at_ms for at_ms, _ in panel.marks], default=0.0)


def _draw(ax: Axes, panel: Panel, by: str) -> None:
    rows = list(ROW_ORDER) if by == "op" else sorted({o.stream for o in panel.ops})
    # one collection of bars per row (and, by stream, per kind: kernels hatched, a stream's row holds all three),
    # each bar coloured by its chunk: a call per bar cost matplotlib a view update each, seconds for a lesson's grid
    bars: dict[tuple[int, bool], list[Op]] = {}
    for op in panel.ops:
        row = rows.index(op.op if by == "op" else op.stream)
        bars.setdefault((row, by == "stream" and op.op == "kernel"), []).append(op)
    for (row, hatched), ops in bars.items():
        ax.broken_barh(
            [(op.start_ns / 1e6, op.duration_ns / 1e6) for op in ops],
            (row - 0.4, 0.8),
            facecolors=[_chunk_colour(op.chunk) for op in ops],
            edgecolors="white",
            linewidth=0.3,
            hatch="////" if hatched else None,
        )
    for at_ms, label in panel.marks:
        ax.axvline(at_ms, color="crimson", linewidth=1.5, linestyle="--")
        ax.annotate(
            label,
            (at_ms, 0.5),
            xycoords=("data", "axes fraction"),
            xytext=(6, 0),
            textcoords="offset points",
            va="center",
            color="crimson",
            fontsize=8,
            bbox={"facecolor": "white", "edgecolor": "crimson", "boxstyle": "round", "alpha": 0.9},
        )
    labels = [ROW_LABELS[r] if by == "op" else panel.stream_names.get(r, f"stream {r}") for r in rows]
    ax.set_yticks(range(len(rows)), labels)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_title(panel.title, loc="left", fontsize=9)
    ax.grid(axis="x", alpha=0.3)


def timeline(panels: Sequence[Panel | tuple[str, Sequence[Op]]], *, by: str = "op", title: str | None = None) -> Figure:
    """Rows in the manner of Nsight Systems: one per engine (by='op') or per stream (by='stream').

    Panels (or (label, ops) pairs) stack on one time axis in ms, so a faster schedule is visibly
    shorter. Bars are coloured by chunk.
    """
    fig = figure(figsize=(11, 1.1 + 1.25 * len(panels) * (3 if by == "op" else 2) / 2.2), layout="constrained")
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    for ax, panel in zip(axes, panels, strict=True):
        _draw(ax, _panel(panel), by)
    axes[-1].set_xlabel("time since the pass started (ms)")
    if title:
        fig.suptitle(title)
    return fig


def timeline_grid(rows: Sequence[Sequence[Panel]], *, by: str = "op", title: str | None = None) -> Figure:
    """Rows of equally many panels side by side, one time axis per row: a row compares its panels at one scale.

    Rows per engine (by='op') or per stream (by='stream', kernels hatched); bars are coloured by chunk.
    """
    n_cols = len(rows[0])
    fig = figure(figsize=(7.5 * n_cols, 1.0 + 2.1 * len(rows)), layout="constrained")
    grid = fig.subplots(len(rows), n_cols, squeeze=False)
    for axes, row in zip(grid, rows, strict=True):
        end_ms = max(_end_ms(panel) for panel in row)
        for ax, panel in zip(axes, row, strict=True):
            _draw(ax, panel, by)
            ax.set_xlim(-0.01 * end_ms, 1.02 * end_ms)
            ax.set_xlabel("ms since the pass started", fontsize=8)
    if title:
        fig.suptitle(title)
    return fig


def message(text: str) -> Figure:
    """A figure that only says something: why the picture asked for cannot be drawn here."""
    fig = figure(figsize=(9, 1.2))
    fig.text(0.5, 0.5, text, ha="center", va="center", wrap=True)
    return fig


def ratio_plot(
    x_labels: Sequence[str],
    measured: Mapping[str, Sequence[float]],
    model: Mapping[str, Sequence[float]] | None = None,
    *,
    threshold: float | None = None,
    xlabel: str = "",
    ylabel: str = "ratio",
    title: str | None = None,
) -> Figure:
    """Measured ratios (solid, markers) against the model's (dashed), with an optional threshold line."""
    fig = figure(figsize=(7, 4.2), layout="constrained")
    ax = fig.subplots()
    xs = range(len(x_labels))
    for i, (label, values) in enumerate(measured.items()):
        colour = f"C{i}"
        ax.plot(xs, values, marker="o", color=colour, label=f"{label} measured")
        for x, v in zip(xs, values, strict=True):
            ax.annotate(f"{v:.3f}", (x, v), textcoords="offset points", xytext=(6, 4), fontsize=8, color=colour)
        if model and label in model:
            ax.plot(xs, model[label], linestyle="--", color=colour, alpha=0.7, label=f"{label} model")
    if threshold is not None:
        ax.axhline(threshold, color="crimson", linewidth=1, label=f"threshold {threshold:g}")
    ax.set_xticks(list(xs), list(x_labels))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title)
    return fig


def bars(
    values: Mapping[str, float], *, kinds: Mapping[str, str] | None = None, unit: str = "ms", title: str | None = None
) -> Figure:
    """Horizontal bars with their values written on them; `kinds` groups bars into legend colours."""
    fig = figure(figsize=(8, 0.5 + 0.45 * len(values)), layout="constrained")
    ax = fig.subplots()
    kinds = kinds or {}
    legend = list(dict.fromkeys(kinds.values()))
    labels = list(values)
    for i, label in enumerate(labels):
        colour = f"C{legend.index(kinds[label])}" if label in kinds else "C0"
        ax.barh(i, values[label], color=colour)
        ax.annotate(
            f"{values[label]:.2f} {unit}", (values[label], i), xytext=(4, -3), textcoords="offset points", fontsize=8
        )
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlabel(unit)
    ax.set_xlim(0, max(values.values()) * 1.18)
    ax.grid(axis="x", alpha=0.3)
    if legend:
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(color=f"C{i}", label=k) for i, k in enumerate(legend)], fontsize=8, loc="lower right")
    if title:
        ax.set_title(title)
    return fig


def save(fig: Figure, path: str | Path) -> Path:
    """Write a figure as PNG, creating the folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    return path
