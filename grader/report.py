"""python -m grader report: one HTML page that shows an instructor what the class did not get.

For a grading directory DIR (setup, collect, autograde), it writes DIR/report/index.html (or --out) and PNGs
beside it:

1. Scores: per assignment, how many students got each score on every autograded cell, and the autograded
   total; written answers say how many have been graded by hand so far (they are never shown as zeros).
   Scores come from the gradebook (nbgrader's Gradebook API).
2. Why cells failed: each failing test cell's error in the autograded notebooks (DIR/autograded/...), as its
   name and the first line of its message with numbers, paths and the student's id replaced, so that one
   reason is counted once however the numbers fell; one real message is shown beside each. Submissions that
   were not handed in, or could not be graded, are counted with their reason.
3. Measured ratios: the numbers the timing checks print or fail with (day54.checks.check_pipelined_ratio and
   check_challenge, zero_copy.checks.check_gather_bandwidth), one histogram per check and setting, with the
   threshold and the reference's value. Test cells' outputs come from the trusted checker, not from the
   student's code, so these lines are the checker's own.

The page names no absolute path: messages are shown with paths replaced, and the grading directory by name.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import html
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.grading import GradingDir
from grader.layout import COURSE_ID, GRADEBOOK, NOT_GRADED, PENDING_GPU, TIMED_OUT
from grader.runner import REPO
from labcore.errors import UsageError

if TYPE_CHECKING:
    import pandas as pd
    from nbformat.notebooknode import NotebookNode

REPORT_DIR = "report"
PAGE = "index.html"
EXAMPLE_CHARS = 400  # one real message per reason, cut here
LISTED_STUDENTS = 8  # a reason's students named on the page; more are counted

# -- reasons -------------------------------------------------------------------------------------------------

PATH = re.compile(r"(?<![\w.~/])~?/(?:[\w.@+-]+/)*[\w.@+-]+/?|(?<![\w.])~(?=\s|$)")
HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
TIMESTAMP = re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?")
NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?")  # not the digits of a name (H200, day54)


def scrub(text: str, student: str = "") -> str:
    """A message as the page may show it: absolute paths, and the student's id where quoted, replaced.

    Only a quoted id ('ann', as nbgrader's messages name a student): a short id may also be a word of the message.
    """
    text = PATH.sub("<path>", text)
    return re.sub(rf"(['\"]){re.escape(student)}\1", r"\1<student>\1", text) if student else text


def first_line(text: str, student: str = "") -> str:
    """A message's first line for counting: scrubbed, and its numbers (times, addresses) as '#'."""
    lines = str(text).strip().splitlines()
    return NUMBER.sub("#", HEX.sub("#", TIMESTAMP.sub("#", scrub(lines[0], student)))) if lines else ""


def reason(ename: str, evalue: str, student: str = "") -> str:
    """The reason a cell failed, for counting: the error's name and its message's first line, numbers as '#'."""
    first = first_line(evalue, student)
    return f"{ename}: {first}" if first else ename


def cell_error(cell: NotebookNode) -> tuple[str, str] | None:
    """(ename, evalue) of the error that failed a cell: the timeout, not the interrupt that came with it."""
    errors = [
        (o.get("ename", ""), str(o.get("evalue", ""))) for o in cell.get("outputs", []) if o.output_type == "error"
    ]
    for ename, evalue in errors:
        if ename == TIMED_OUT:
            return ename, evalue
    errors = [e for e in errors if e[0] != "KeyboardInterrupt"] or errors
    return errors[0] if errors else None


# -- the numbers the timing checks print ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Panel:
    """One histogram: what is measured at which setting, and on which side of the threshold a check passes."""

    figure: str  # the PNG's name, without .png: one figure per check and setting
    title: str
    quantity: str
    passes_below: bool  # the check passes at or below the threshold (else at or above)
    reference: str  # what the reference's value is, with a {:...} field for it


@dataclasses.dataclass(frozen=True)
class Measured:
    """One number a check printed (or failed with) for one student."""

    panel: Panel
    value: float
    threshold: float
    reference: float | None  # the reference's value in the same run, where the line carries it
    how: str  # live, offline or exports: how the check measured


RATIO_PASS = re.compile(
    r"pipelined/naive = (?P<ratio>\d+\.\d+) <= (?P<limit>\d+\.\d+), (?P<over>\d+\.\d+)x the reference pipeline "
    r"<= (?P<factor>\d+\.\d+)x at (?P<window>\d+) MiB with (?P<buffers>\d+) buffers"
)
RATIO_FAIL = re.compile(
    r"pipelined/naive = (?P<ratio>\d+\.\d+) at (?P<window>\d+) MiB with (?P<buffers>\d+) buffers .*, above the "
    r"(?P<limit>\d+\.\d+) threshold"
)
OVER_FAIL = re.compile(
    r"takes (?P<over>\d+\.\d+)x the reference pipeline's time at (?P<window>\d+) MiB with (?P<buffers>\d+) "
    r"buffers .*: more than (?P<factor>\d+\.\d+)x"
)
CHALLENGE = re.compile(
    r"(?P<ms>\d+\.\d+) ms, (?P<over>\d+\.\d+)x the link floor \((?P<floor>\d+\.\d+) ms\)"
    r"(?: <= (?P<limit>\d+\.\d+)x| at .* at most (?P<asked>\d+\.\d+)x)"
)
GATHER_LIVE = re.compile(
    r"the pinned copy of the same (?P<mb>\d+\.\d+) MB \d+\.\d+ ms = \d+\.\d+ GB/s: (?P<fraction>\d+\.\d+) of it"
    r"(?: >= |, below )(?P<limit>\d+\.\d+)"
)
GATHER_RECORDED = re.compile(
    r"its gather with (?P<order>sorted|unsorted) ids moved \d+\.\d+ GB/s = (?P<fraction>\d+\.\d+) of the pinned "
    r"copy of the same batch \(\d+\.\d+ GB/s\)(?: >= |, below )(?P<limit>\d+\.\d+)"
)
GATHER_BATCH = re.compile(r"(?P<rows>\d[\d,]*) (?:random|descending|repeated) ids, rows of (?P<row_bytes>\d+) B")


def _how(line: str) -> str:
    if "nsys exports" in line:
        return "exports"
    return "live" if re.search(r"\blive\b", line) else "offline"


def _ratio_panels(window: str, buffers: str) -> tuple[Panel, Panel]:
    figure, where = f"day54-ratio-{window}MiB-{buffers}buffers", f"at {window} MiB with {buffers} buffers"
    return (
        Panel(
            figure,
            f"day54 pipelined/naive {where}",
            "pipelined / naive",
            True,
            "the reference pipeline in the same runs (median {:.3f})",
        ),
        Panel(
            figure,
            f"day54 your time / the reference pipeline's {where}",
            "x the reference pipeline",
            True,
            "the reference pipeline ({:g})",
        ),
    )


def measured_in(line: str, batch_mb: str | None) -> list[Measured]:
    """The numbers one output line of a timing check carries ([] for any other line)."""
    how = _how(line)
    if m := RATIO_PASS.search(line):
        ratio, over = float(m["ratio"]), float(m["over"])
        ratio_panel, over_panel = _ratio_panels(m["window"], m["buffers"])
        return [
            Measured(ratio_panel, ratio, float(m["limit"]), ratio / over if over else None, how),
            Measured(over_panel, over, float(m["factor"]), 1.0, how),
        ]
    if m := RATIO_FAIL.search(line):
        return [Measured(_ratio_panels(m["window"], m["buffers"])[0], float(m["ratio"]), float(m["limit"]), None, how)]
    if m := OVER_FAIL.search(line):
        return [Measured(_ratio_panels(m["window"], m["buffers"])[1], float(m["over"]), float(m["factor"]), 1.0, how)]
    if m := CHALLENGE.search(line):
        panel = Panel(
            "day54-challenge",
            "day54 challenge: your time / the link floor",
            "x the link floor",
            True,
            "the link floor ({:g})",
        )
        return [Measured(panel, float(m["over"]), float(m["limit"] or m["asked"]), 1.0, how)]
    m = GATHER_LIVE.search(line) or GATHER_RECORDED.search(line)
    if m:
        mb = m["mb"] if "mb" in m.re.groupindex else batch_mb
        where = f"{mb} MB batch" if mb else "every batch"
        panel = Panel(
            f"zero_copy-gather-{mb or 'all'}MB",
            f"zero_copy gather / the pinned copy of the same {where}",
            "fraction of the copy's GB/s",
            False,
            "the recorded lesson run, sorted ids ({:.2f})",
        )
        recorded_reference = "order" in m.re.groupindex and m["order"] == "sorted"  # the recorded lesson run's
        fraction = float(m["fraction"])
        return [Measured(panel, fraction, float(m["limit"]), fraction if recorded_reference else None, how)]
    return []


def measured_in_cell(cell: NotebookNode) -> list[Measured]:
    """Every number a test cell's checks printed or failed with, in output order."""
    found, batch_mb = [], None
    for output in cell.get("outputs", []):
        text = output.get("text", "") if output.output_type == "stream" else str(output.get("evalue", ""))
        for line in str(text).splitlines():
            if batch := GATHER_BATCH.search(line):  # an offline gather says its batch on the line before its number
                batch_mb = f"{int(batch['rows'].replace(',', '')) * int(batch['row_bytes']) / 1e6:.1f}"
            found += measured_in(line, batch_mb)
    return found


# -- reading a grading directory -----------------------------------------------------------------------------


def _ordered_grade_ids(grading: GradingDir, assignment: str, notebook: str) -> list[str]:
    """Grade ids in the order of the source notebook."""
    import nbformat  # seconds to import (jsonschema's format checks): --help and bad options do not wait for it

    path = grading.root / "source" / assignment / f"{notebook}.ipynb"
    if not path.is_file():
        return []
    nb = nbformat.read(path, as_version=4)
    return [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]


@dataclasses.dataclass
class ClassData:
    """What the report shows, read from the gradebook and the autograded notebooks."""

    cells: pd.DataFrame  # the Specs: assignment, notebook, cell, points, written, order
    grades: pd.DataFrame  # assignment, notebook, cell, student, score, by_hand, unanswered, failed, gpu (pending)
    states: pd.DataFrame  # assignment, student, state ('graded', 'not submitted', 'not graded (...)')
    failures: pd.DataFrame  # assignment, cell, student, reason, example
    measured: list[tuple[str, Measured]]  # (student, number), in the order of the cells that print them


def submission_state(
    grading: GradingDir, assignment: str, notebooks: list[str], student: str, in_gradebook: bool
) -> str:
    """'graded', 'not submitted' or 'not graded (why)' for one student and assignment."""
    import nbformat  # seconds to import: see above

    submitted = (grading.root / "submitted" / student / assignment).is_dir()
    if not submitted and not in_gradebook:
        return "not submitted"
    paths = [grading.root / "autograded" / student / assignment / f"{n}.ipynb" for n in notebooks]
    if not in_gradebook or not all(p.is_file() for p in paths):
        return "not graded (autograde has not recorded it)"
    for path in paths:
        for cell in nbformat.read(path, as_version=4).cells:
            error = cell_error(cell) if cell.cell_type == "code" else None
            if error and error[0] == NOT_GRADED:
                return f"not graded ({first_line(error[1], student)})"
    return "graded"


def pending_gpu(grading: GradingDir, assignment: str, notebooks: list[str], student: str) -> dict[str, float]:
    """{grade_id: points} of the test cells a check left pending a GPU (labcore.pending: PendingGPU in the
    autograded notebook's error output): 0 until graded on a GPU."""
    import nbformat  # seconds to import: see above

    found = {}
    for name in notebooks:
        path = grading.root / "autograded" / student / assignment / f"{name}.ipynb"
        if not path.is_file():
            continue
        for cell in nbformat.read(path, as_version=4).cells:
            meta = cell.metadata.get("nbgrader", {})
            error = cell_error(cell) if cell.cell_type == "code" and meta.get("grade") else None
            if error and error[0] == PENDING_GPU:
                found[meta["grade_id"]] = float(meta.get("points") or 0)
    return found


def pending_gpu_words(cells: dict[str, float]) -> str:
    """'pending a GPU: test_publish (3 points)': how every surface names such cells ('' when none)."""
    if not cells:
        return ""
    return f"pending a GPU: {', '.join(cells)} ({sum(cells.values()):g} points)"


@dataclasses.dataclass(frozen=True)
class Spec:
    """A graded cell of an assignment as the gradebook knows it."""

    assignment: str
    notebook: str
    cell: str
    points: float
    written: bool  # an answer graded by hand (a grade cell that is also a solution cell)
    order: int  # its place in the source notebook


def _specs(grading: GradingDir, assignment: Any) -> list[Spec]:
    """The grade cells of a gradebook assignment, in notebook order."""
    specs = []
    for nb in assignment.notebooks:
        written = {c.name for c in nb.solution_cells}
        order = _ordered_grade_ids(grading, assignment.name, nb.name)
        for c in nb.grade_cells:
            rank = order.index(c.name) if c.name in order else len(order)
            specs.append(Spec(assignment.name, nb.name, c.name, float(c.max_score or 0), c.name in written, rank))
    return sorted(specs, key=lambda s: (s.notebook, s.order))


def _graded(gb: Any, grading: GradingDir, student: str, specs: list[Spec]) -> tuple[list, list, list]:
    """One graded submission: its grade rows, failure rows and measured numbers ((order, index, student, number))."""
    import nbformat  # seconds to import: see above

    grades, failures, measured = [], [], []
    for notebook in dict.fromkeys(s.notebook for s in specs):
        assignment = specs[0].assignment
        nb = nbformat.read(grading.root / "autograded" / student / assignment / f"{notebook}.ipynb", as_version=4)
        shown = {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")}
        scored = {g.name: g for g in gb.find_submission_notebook(notebook, assignment, student).grades}
        for spec in (s for s in specs if s.notebook == notebook and s.cell in scored):
            grade, cell = scored[spec.cell], shown.get(spec.cell)
            by_hand = grade.manual_score is not None
            unanswered = spec.written and not by_hand and not grade.needs_manual_grade  # nbgrader's 0 for no answer
            error = cell_error(cell) if cell is not None and not spec.written else None
            waiting = error is not None and error[0] == PENDING_GPU  # neither passed nor failed: not decided
            failed = not spec.written and not waiting and (error is not None or (grade.score or 0) < spec.points)
            row = (assignment, notebook, spec.cell, student, grade.score, by_hand, unanswered, failed, waiting)
            grades.append(row)
            if failed:
                ename, evalue = error or ("no error shown", f"scored {grade.score or 0:g} of {spec.points:g}")
                example = scrub(f"{ename}: {evalue.strip()}" if evalue.strip() else ename)
                failures.append((assignment, spec.cell, student, reason(ename, evalue, student), example))
            if cell is not None and not spec.written:
                place = (notebook, spec.order)
                measured += [(place, i, student, m) for i, m in enumerate(measured_in_cell(cell))]
    return grades, failures, measured


def read_class(grading: GradingDir) -> ClassData:
    """Cells, grades, submission states, failure reasons and measured numbers of every assignment set up."""
    import pandas as pd  # a second to import: --help and the other commands do not wait for it
    from nbgrader.api import Gradebook, MissingEntry  # seconds to import: only once there is a gradebook to read

    if not (grading.root / GRADEBOOK).is_file():
        raise UsageError(f"{grading.root} has no {GRADEBOOK}: make it with python -m grader setup {grading.root}")
    specs, grades, states, failures, measured = [], [], [], [], []
    with Gradebook(grading.db_url, COURSE_ID) as gb:
        known = {a.name: a for a in gb.assignments}
        students = sorted({s.id for s in gb.students} | {p.name for p in (grading.root / "submitted").glob("*/")})
        for assignment in (a for a in grading.assignments() if a in known):
            mine = _specs(grading, known[assignment])
            specs += mine
            notebooks = list(dict.fromkeys(s.notebook for s in mine))
            for student in students:
                try:
                    in_gradebook = bool(gb.find_submission(assignment, student))
                except MissingEntry:
                    in_gradebook = False
                state = submission_state(grading, assignment, notebooks, student, in_gradebook)
                states.append((assignment, student, state))
                if state == "graded":
                    found = _graded(gb, grading, student, mine)
                    grades += found[0]
                    failures += found[1]
                    measured += [((assignment, *place), *rest) for place, *rest in found[2]]
    return ClassData(
        pd.DataFrame([dataclasses.astuple(s) for s in specs], columns=[f.name for f in dataclasses.fields(Spec)]),
        pd.DataFrame(
            grades,
            columns=["assignment", "notebook", "cell", "student", "score", "by_hand", "unanswered", "failed", "gpu"],
        ),
        pd.DataFrame(states, columns=["assignment", "student", "state"]),
        pd.DataFrame(failures, columns=["assignment", "cell", "student", "reason", "example"]),
        [(student, m) for _, _, student, m in sorted(measured, key=lambda x: x[:2])],
    )


# -- figures --------------------------------------------------------------------------------------------------


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


def ratio_figure(figure: str, found: list[Measured], out: Path) -> Path:
    """One histogram per panel of a figure, with the threshold and the reference's value."""
    import numpy as np  # comes with pandas; like it, imported only when the report draws

    plt = _pyplot()
    panels = list(dict.fromkeys(m.panel for m in found))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.6 * len(panels), 4.0), squeeze=False)
    for ax, panel in zip(axes.flat, panels, strict=True):
        mine = [m for m in found if m.panel == panel]
        values = np.array([m.value for m in mine])
        threshold = collections.Counter(m.threshold for m in mine).most_common(1)[0][0]
        references = [m.reference for m in mine if m.reference is not None]
        reference = float(np.median(references)) if references else None
        marks = [*values, threshold, *([reference] if reference is not None else [])]
        low, high = min(marks), max(marks)
        pad = max((high - low) * 0.08, 0.01)
        edges = np.linspace(low - pad, high + pad, 21)
        ok = values <= threshold if panel.passes_below else values >= threshold
        labels = [f"passed ({ok.sum()})", f"missed ({(~ok).sum()})"]
        colors = ["#27ae60", "#c0392b"]
        ax.hist([values[ok], values[~ok]], bins=edges, stacked=True, color=colors, label=labels, edgecolor="white")
        side = "<=" if panel.passes_below else ">="
        ax.axvline(
            threshold, color="#c0392b", linestyle="--", linewidth=1.5, label=f"threshold: pass {side} {threshold:g}"
        )
        if reference is not None:
            ax.axvline(reference, color="#2c3e50", linewidth=1.5, label=panel.reference.format(reference))
        hows = ", ".join(f"{n} {h}" for h, n in sorted(collections.Counter(m.how for m in mine).items()))
        ax.set_title(f"{panel.title}\n{_plural(len(mine), 'student')}, measured {hows}", fontsize=9)
        ax.set_xlabel(panel.quantity)
        ax.set_ylabel("students")
        _whole_counts(ax)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    fig.tight_layout()
    path = out / f"{figure}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# -- the page -------------------------------------------------------------------------------------------------

CSS = """
body { font-family: system-ui, sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: 0.5rem 0 1.5rem; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
code, .example { font-family: ui-monospace, monospace; font-size: 0.82rem; } .example { color: #555; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5rem 0; }
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _table(table_id: str, header: list[str], rows: list[list[str]]) -> str:
    """An HTML table; cells are already escaped HTML, a cell starting with '#' is a number (right-aligned)."""
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f'<td class="n">{c[1:]}</td>' if c.startswith("#") else f"<td>{c}</td>" for c in row) + "</tr>"
        for row in rows
    )
    return f'<table id="{_e(table_id)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _score_rows(data: ClassData, assignment: str) -> list[list[str]]:
    cells = data.cells[data.cells.assignment == assignment].sort_values(["notebook", "order"])
    grades = data.grades[data.grades.assignment == assignment]
    graded_n = int((data.states[data.states.assignment == assignment].state == "graded").sum())
    rows = []
    for cell in cells.itertuples():
        mine = grades[(grades.notebook == cell.notebook) & (grades.cell == cell.cell)]
        if cell.written:
            done, blank = mine[mine.by_hand], int(mine.unanswered.sum())
            scores = ", ".join(f"{s:g}: {n}" for s, n in sorted(done.score.fillna(0).value_counts().items()))
            note = f"graded by hand: {len(done)} of {graded_n - blank} graded so far" + (
                f" (scores {scores})" if scores else ""
            )
            if blank:
                note += f"; {blank} left unanswered (0 from nbgrader)"
            label = f"<code>{_e(cell.cell)}</code>"
            rows.append([label, f"#{cell.points:g}", f"#{graded_n}", _e(note), "", "", "", ""])
            continue
        waiting = int(mine.gpu.sum())
        decided = mine[~mine.gpu]
        score = decided.score.fillna(0)
        if cell.points:
            full, zero = int((score >= cell.points).sum()), int((score == 0).sum())
        else:
            full, zero = int((~decided.failed).sum()), int(decided.failed.sum())
        partial = len(decided) - full - zero
        label = f"<code>{_e(cell.cell)}</code>" + ("" if cell.points else " (optional: passed / failed)")
        mean = f"#{mine.score.fillna(0).mean():.2f}" if len(mine) else ""
        cells_row = [label, f"#{cell.points:g}", f"#{len(mine)}", f"#{full}", f"#{zero}", f"#{partial}", f"#{waiting}"]
        rows.append([*cells_row, mean])
    auto = cells[~cells.written]
    totals = grades.merge(auto[["notebook", "cell"]], on=["notebook", "cell"]).groupby("student").score.sum()
    top = float(auto.points.sum())
    rows.append(
        [
            "<b>autograded total</b>",
            f"#{top:g}",
            f"#{totals.size}",
            f"#{int((totals >= top).sum())}",
            f"#{int((totals == 0).sum())}",
            f"#{int(((totals > 0) & (totals < top)).sum())}",
            f"#{int(grades[grades.gpu].student.nunique())}",
            f"#{totals.mean():.2f}" if totals.size else "",
        ]
    )
    return rows


def _students(names: list[str]) -> str:
    shown = ", ".join(_e(n) for n in sorted(names)[:LISTED_STUDENTS])
    return shown + (f" and {len(names) - LISTED_STUDENTS} more" if len(names) > LISTED_STUDENTS else "")


def failure_table(data: ClassData, assignment: str) -> pd.DataFrame:
    """(cell, reason) -> count, example and students, most common first; submissions not graded come in too."""
    import pandas as pd  # see read_class

    fails = data.failures[data.failures.assignment == assignment]
    states = data.states[(data.states.assignment == assignment) & (data.states.state != "graded")]
    rows = [fails] if not fails.empty else []
    if not states.empty:
        rows.append(states.assign(cell="(whole submission)", reason=states.state, example=""))
    if not rows:
        return pd.DataFrame(columns=["cell", "reason", "n", "example", "students"])
    both = pd.concat(rows, ignore_index=True)
    table = both.groupby(["cell", "reason"], sort=False).agg(
        n=("student", "size"), example=("example", "first"), students=("student", list)
    )
    cells = data.cells[data.cells.assignment == assignment]
    order = dict(zip(cells.cell, zip(cells.notebook, cells.order, strict=True), strict=True))
    table = table.reset_index()
    table["place"] = [order.get(c, ("", -1)) for c in table.cell]  # ties: whole submissions, then notebook order
    return table.sort_values(["n", "place"], ascending=[False, True], kind="stable").drop(columns="place")


def _failure_rows(table: pd.DataFrame) -> list[list[str]]:
    rows = []
    for row in table.itertuples():
        example = row.example if len(row.example) <= EXAMPLE_CHARS else row.example[: EXAMPLE_CHARS - 3] + "..."
        rows.append(
            [
                f"#{row.n}",
                f"<code>{_e(row.cell)}</code>",
                _e(row.reason),
                f'<span class="example">{_e(example)}</span>' if example else "",
                _students(row.students),
            ]
        )
    return rows


def _measured_rows(figure: str, found: list[tuple[str, Measured]]) -> list[list[str]]:
    rows = []
    for panel in dict.fromkeys(m.panel for _, m in found):
        mine = [m for _, m in found if m.panel == panel]
        values = sorted(m.value for m in mine)
        threshold = collections.Counter(m.threshold for m in mine).most_common(1)[0][0]
        passed = sum((v <= threshold) if panel.passes_below else (v >= threshold) for v in values)
        references = sorted(m.reference for m in mine if m.reference is not None)
        reference = f"{references[len(references) // 2]:.3f}" if references else "not printed by the check"
        rows.append(
            [
                _e(panel.title),
                f"#{len(values)}",
                f"#{passed}",
                f"#{values[len(values) // 2]:.3f}",
                f"#{values[0]:.3f}",
                f"#{values[-1]:.3f}",
                _e(("<= " if panel.passes_below else ">= ") + f"{threshold:g}"),
                _e(reference),
                f'<a href="{_e(figure)}.png">{_e(figure)}.png</a>',
            ]
        )
    return rows


def render(grading_name: str, data: ClassData, figures: dict[str, str]) -> str:
    """The page: scores, failure reasons and measured numbers per assignment, every text escaped."""
    parts = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Class report: {_e(grading_name)}</title>"
        f"<style>{CSS}</style></head><body>",
        f"<h1>Class report: {_e(grading_name)}</h1>",
        f"<p>Made {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')} by <code>python -m grader report</code> "
        "from the gradebook and the autograded notebooks. Students per assignment: "
        + "; ".join(
            f"{_e(a)}: {int((s.state == 'graded').sum())} graded of {len(s)}"
            for a, s in data.states.groupby("assignment", sort=False)
        )
        + ".</p>",
    ]
    for assignment in data.states.assignment.unique():
        parts.append(f"<h2>{_e(assignment)}</h2><h3>Scores</h3>")
        parts.append(
            "<p>Graded submissions only; full marks, 0 and in between count students. Written answers are graded "
            "by hand in the formgrader and are not in the autograded total. Pending a GPU: cells a check could not "
            "verify without a GPU; they count 0 (in the mean and the total) until graded on a GPU, and are neither "
            "full marks, 0 nor in between here (the total row: students with any such cell).</p>"
        )
        parts.append(
            _table(
                f"scores-{assignment}",
                ["cell", "points", "graded", "full marks", "0", "in between", "pending a GPU", "mean"],
                _score_rows(data, assignment),
            )
        )
        if f"scores-{assignment}" in figures:
            parts.append(f'<img src="{_e(figures[f"scores-{assignment}"])}" alt="scores of {_e(assignment)}">')
        waiting = data.grades[(data.grades.assignment == assignment) & data.grades.gpu]
        if not waiting.empty:
            parts.append("<h3>Pending a GPU</h3>")
            parts.append(
                "<p>Cells a check could not verify without a GPU (neither passed nor failed): 0 until the class is "
                "graded again on a GPU machine.</p>"
            )
            by_cell = waiting.groupby("cell", sort=False).student.agg(list)
            rows = [[f"<code>{_e(c)}</code>", f"#{len(names)}", _students(names)] for c, names in by_cell.items()]
            parts.append(_table(f"pending-gpu-{assignment}", ["cell", "students", "who"], rows))
        parts.append("<h3>Why cells failed</h3>")
        parts.append(
            "<p>Each failing test cell's error, its first line with numbers as # and paths as &lt;path&gt;, counted "
            "per cell, most common first; one real message beside each. Submissions that were not handed in or "
            "could not be graded are counted as whole submissions.</p>"
        )
        rows = _failure_rows(failure_table(data, assignment))
        parts.append(
            _table(f"failures-{assignment}", ["count", "cell", "reason", "example", "students"], rows)
            if rows
            else "<p>No cell failed.</p>"
        )
        mine = [(s, m) for s, m in data.measured if m.panel.figure.startswith(f"{assignment}-")]
        if mine:
            parts.append("<h3>Measured against the reference</h3>")
            parts.append(
                "<p>The numbers the timing checks printed or failed with, one histogram per check and setting: the "
                "dashed line is the threshold, the solid one the reference's value where the check reports it.</p>"
            )
            rows = []
            for figure in dict.fromkeys(m.panel.figure for _, m in mine):
                rows += _measured_rows(figure, [(s, m) for s, m in mine if m.panel.figure == figure])
            header = ["check", "students", "passed", "median", "min", "max", "threshold", "reference", "figure"]
            parts.append(_table(f"measured-{assignment}", header, rows))
            for figure in dict.fromkeys(m.panel.figure for _, m in mine):
                parts.append(f'<img src="{_e(figures[figure])}" alt="{_e(figure)}">')
    parts.append("</body></html>")
    return "\n".join(parts)


# -- the command ----------------------------------------------------------------------------------------------


def report_path(grading: GradingDir, out: str | None, repo: str | None) -> Path:
    """Where the page goes: DIR/report/index.html, or --out (a folder gets index.html); never inside the checkout."""
    path = Path(out).expanduser().resolve() if out else grading.root / REPORT_DIR / PAGE
    if path.is_dir():
        path = path / PAGE
    checkout = Path(repo).resolve() if repo else REPO
    if path == checkout or checkout in path.parents:
        raise UsageError(
            f"--out {path} is inside the course checkout {checkout}; the report names students: keep it outside"
        )
    return path


def write_report(grading: GradingDir, page: Path) -> tuple[ClassData, list[Path]]:
    """Read the class, draw the PNGs beside the page and write it; UsageError when nothing is graded yet."""
    data = read_class(grading)
    if data.grades.empty:
        raise UsageError(
            f"nothing in {grading.root} is graded yet: run python -m grader autograde {grading.root} first"
        )
    page.parent.mkdir(parents=True, exist_ok=True)
    figures: dict[str, str] = {}
    for assignment in data.states.assignment.unique():
        path = score_figure(data, assignment, page.parent)
        if path:
            figures[f"scores-{assignment}"] = path.name
    by_figure: dict[str, list[Measured]] = collections.defaultdict(list)
    for _, m in data.measured:
        by_figure[m.panel.figure].append(m)
    for figure, found in by_figure.items():
        figures[figure] = ratio_figure(figure, found, page.parent).name
    text = render(grading.root.name, data, figures)
    for place in sorted({grading.root, REPO, Path.home()}, key=lambda p: -len(str(p))):
        if len(place.parts) > 1:  # a path with a space in it escapes PATH; these ones never reach the page
            text = text.replace(html.escape(str(place)), "&lt;path&gt;")
    page.write_text(text)
    return data, [page.parent / name for name in figures.values()]


def cmd_report(args: argparse.Namespace) -> int:
    """python -m grader report DIR [--out PATH]: the class report, and its headline on stdout."""
    grading = GradingDir(args.dir)
    page = report_path(grading, args.out, args.repo)
    print(f"grader report: {grading.root} -> {page}", flush=True)
    data, pngs = write_report(grading, page)
    for assignment, states in data.states.groupby("assignment", sort=False):
        counts = states.state.value_counts()
        line = f"{assignment}: {int(counts.get('graded', 0))} of {len(states)} students graded"
        others = ", ".join(f"{n} {s}" for s, n in counts.items() if s != "graded")
        table = failure_table(data, assignment)
        cells = table[table.cell != "(whole submission)"]
        top = (
            ""
            if cells.empty
            else f"; most common failure: {cells.iloc[0].cell}, {cells.iloc[0].n} x {cells.iloc[0].reason}"
        )
        print(line + (f" ({others})" if others else "") + top)
    print(f"wrote {page.name} and {len(pngs)} PNG(s) in {page.parent}: {', '.join(p.name for p in pngs)}")
    return 0
