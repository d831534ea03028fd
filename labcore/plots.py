"""Timeline and ratio plots (matplotlib), drawn from results-record data alone.

Functions return a matplotlib Figure (notebooks display it; commands save it).
No pyplot state is used, so they work headless and inside notebooks alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from labcore.record import Op

ROW_LABELS = {"h2d": "copy in (H2D)", "kernel": "kernel (SMs)", "d2h": "copy out (D2H)"}
ROW_ORDER = ("h2d", "kernel", "d2h")


def _chunk_colour(chunk: int) -> tuple[float, float, float, float]:
    return colormaps["tab20"](chunk % 20)


def timeline(panels: Sequence[tuple[str, Sequence[Op]]], *, by: str = "op", title: str | None = None) -> Figure:
    """Rows in the manner of Nsight Systems: one per engine (by='op') or per stream (by='stream').

    Each panel is (title, ops); all panels share one time axis in ms, so a
    faster schedule is visibly shorter. Bars are coloured by chunk.
    """
    fig = Figure(figsize=(11, 1.1 + 1.25 * len(panels) * (3 if by == "op" else 2) / 2.2), layout="constrained")
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    for ax, (label, ops) in zip(axes, panels, strict=True):
        rows = list(ROW_ORDER) if by == "op" else sorted({o.stream for o in ops})
        for op in ops:
            row = rows.index(op.op if by == "op" else op.stream)
            ax.broken_barh(
                [(op.start_ns / 1e6, op.duration_ns / 1e6)],
                (row - 0.4, 0.8),
                facecolors=_chunk_colour(op.chunk),
                edgecolors="white",
                linewidth=0.3,
            )
        ax.set_yticks(range(len(rows)), [ROW_LABELS[r] if by == "op" else f"stream {r}" for r in rows])
        ax.set_ylim(len(rows) - 0.5, -0.5)
        end = max((o.end_ns for o in ops), default=0) / 1e6
        ax.set_title(f"{label}: {end:.2f} ms", loc="left", fontsize=10)
        ax.grid(axis="x", alpha=0.3)
    axes[-1].set_xlabel("time since the pass started (ms)")
    if title:
        fig.suptitle(title)
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
    fig = Figure(figsize=(7, 4.2), layout="constrained")
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
    fig = Figure(figsize=(8, 0.5 + 0.45 * len(values)), layout="constrained")
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
