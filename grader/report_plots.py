"""The class report's figures: students per score for each assignment, and a histogram of each measured number
(one per check and setting) with its threshold and the reference's value. Drawn with matplotlib's Agg.
"""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

from grader.report_data import ClassData
from labcore.checking import Result


def title(result: Result) -> str:
    """A measured number's name on the page and in its figure: the check, at its setting."""
    return f"{result.check} ({result.setting})"


def _pyplot() -> Any:
    import matplotlib  # a second to import: only the report draws

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _whole_counts(ax: Any) -> None:
    from matplotlib.ticker import MaxNLocator  # with pyplot, above

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))


def score_figure(data: ClassData, assignment: str, out: Path) -> Path | None:
    """Bars per autograded cell (students per score) and the total's histogram; None without a graded submission."""
    plt = _pyplot()
    cells = data.cells[(data.cells.assignment == assignment) & ~data.cells.written].sort_values(["notebook", "order"])
    grades = data.grades[data.grades.assignment == assignment]
    if grades.empty:
        return None
    panels = len(cells) + 1
    columns = min(4, panels)
    rows = -(-panels // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(3.4 * columns, 2.6 * rows), squeeze=False)
    flat = list(axes.flat)
    for ax, cell in zip(flat, cells.itertuples(), strict=False):
        mine = grades[(grades.notebook == cell.notebook) & (grades.cell == cell.cell)]
        if cell.points:
            counts = mine.score.fillna(0).value_counts()
            xs = sorted(set(counts.index) | {0.0, cell.points})
            labels = [f"{x:g}" for x in xs]
            heights = [int(counts.get(x, 0)) for x in xs]
            colors = ["#c0392b" if x == 0 else "#27ae60" if x == cell.points else "#f39c12" for x in xs]
            ax.set_xlabel(f"score (of {cell.points:g})")
        else:  # worth no points: passed or failed
            labels, heights = ["passed", "failed"], [int((~mine.failed).sum()), int(mine.failed.sum())]
            colors = ["#27ae60", "#c0392b"]
            ax.set_xlabel("optional, no points")
        ax.bar(labels, heights, color=colors)
        for i, h in enumerate(heights):
            ax.annotate(str(h), (i, h), ha="center", va="bottom", fontsize=8)
        ax.set_title(cell.cell, fontsize=9)
        ax.set_ylim(0, max(*heights, 1) * 1.2)
        _whole_counts(ax)
    ax = flat[len(cells)]
    autograded = grades.merge(cells[["notebook", "cell"]], on=["notebook", "cell"])
    totals = autograded.groupby("student").score.sum()
    top = float(cells.points.sum())
    ax.hist(totals, bins=[x - 0.5 for x in range(int(top) + 2)], color="#2c7fb8", edgecolor="white")
    ax.set_title("autograded total", fontsize=9, fontweight="bold")
    ax.set_xlabel(f"points (of {top:g})")
    _whole_counts(ax)
    for ax in flat[len(cells) + 1 :]:
        ax.axis("off")
    for ax in flat[: len(cells) + 1]:
        ax.set_ylabel("students", fontsize=8)
        ax.tick_params(labelsize=8)
    fig.suptitle(f"{assignment}: students per score ({totals.size} graded)", fontsize=11)
    fig.tight_layout()
    path = out / f"scores-{assignment}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def ratio_figure(figure: str, found: list[Result], out: Path) -> Path:
    """A histogram of one check's numbers at one setting, with the threshold and the reference's value."""
    import numpy as np  # comes with pandas; like it, imported only when the report draws

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.6, 4.0))
    first = found[0]
    values = np.array([r.value for r in found])
    thresholds = [r.threshold for r in found if r.threshold is not None]
    threshold = collections.Counter(thresholds).most_common(1)[0][0] if thresholds else None
    references = [r.reference for r in found if r.reference is not None]
    reference = float(np.median(references)) if references else None
    marks = [*values, *[x for x in (threshold, reference) if x is not None]]
    low, high = min(marks), max(marks)
    pad = max((high - low) * 0.08, 0.01)
    edges = np.linspace(low - pad, high + pad, 21)
    if threshold is None:
        ax.hist(values, bins=edges, color="#2c7fb8", edgecolor="white", label=f"shown, not judged ({values.size})")
    else:
        ok = values <= threshold if first.passes_below else values >= threshold
        labels = [f"passed ({ok.sum()})", f"missed ({(~ok).sum()})"]
        colors = ["#27ae60", "#c0392b"]
        ax.hist([values[ok], values[~ok]], bins=edges, stacked=True, color=colors, label=labels, edgecolor="white")
        side = "<=" if first.passes_below else ">="
        ax.axvline(
            threshold, color="#c0392b", linestyle="--", linewidth=1.5, label=f"threshold: pass {side} {threshold:g}"
        )
    if reference is not None:
        ax.axvline(reference, color="#2c3e50", linewidth=1.5, label=f"the reference (median {reference:.3f})")
    sources = ", ".join(f"{n} {s}" for s, n in sorted(collections.Counter(r.source for r in found).items()))
    ax.set_title(f"{title(first)}\n{_plural(len(found), 'student')}, {sources}", fontsize=9)
    ax.set_xlabel(first.quantity)
    ax.set_ylabel("students")
    _whole_counts(ax)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    fig.tight_layout()
    path = out / f"{figure}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
