"""The class report's page: one HTML document of scores, failure reasons, measured numbers and leaderboards per
assignment, every text escaped; built from the class's data (grader.report_data) and the figures' names.
"""

from __future__ import annotations

import collections
import datetime
import html
from typing import TYPE_CHECKING

from grader.report_data import ANONYMOUS, ClassData, Measured, Standing, failure_table, leaderboard, ranked_checks
from grader.report_plots import title

if TYPE_CHECKING:
    import pandas as pd

EXAMPLE_CHARS = 400  # one real message per reason, cut here
LISTED_STUDENTS = 8  # a reason's students named on the page; more are counted

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


def _students(names: list[str], anonymous: bool = False) -> str:
    if anonymous:
        return f"{len(names)} student{'s' * (len(names) != 1)}"
    shown = ", ".join(_e(n) for n in sorted(names)[:LISTED_STUDENTS])
    return shown + (f" and {len(names) - LISTED_STUDENTS} more" if len(names) > LISTED_STUDENTS else "")


def _failure_rows(table: pd.DataFrame, anonymous: bool = False) -> list[list[str]]:
    rows = []
    for row in table.itertuples():
        example = row.example if len(row.example) <= EXAMPLE_CHARS else row.example[: EXAMPLE_CHARS - 3] + "..."
        rows.append(
            [
                f"#{row.n}",
                f"<code>{_e(row.cell)}</code>",
                _e(row.reason),
                f'<span class="example">{_e(example)}</span>' if example else "",
                _students(row.students, anonymous),
            ]
        )
    return rows


def _number(value: float | None) -> str:
    return "" if value is None else f"#{value:.3f}"


def _measured_rows(figure: str, found: list[Measured]) -> list[list[str]]:
    """One row for a check at one setting: students, passed, the spread, threshold, the reference, the figure."""
    results = [m.result for m in found]
    first = results[0]
    values = sorted(r.value for r in results)
    thresholds = [r.threshold for r in results if r.threshold is not None]
    threshold = collections.Counter(thresholds).most_common(1)[0][0] if thresholds else None
    references = sorted(r.reference for r in results if r.reference is not None)
    reference = f"{references[len(references) // 2]:.3f}" if references else "not measured by the check"
    sources = ", ".join(f"{n} {s}" for s, n in sorted(collections.Counter(r.source for r in results).items()))
    noises = [r.noise for r in results if r.noise is not None]
    side = "<= " if first.passes_below else ">= "
    return [
        [
            _e(title(first)),
            f"#{len(values)}",
            f"#{sum(bool(r.passed) for r in results)}" if threshold is not None else "shown, not judged",
            f"#{values[len(values) // 2]:.3f}",
            f"#{values[0]:.3f}",
            f"#{values[-1]:.3f}",
            _e(side + f"{threshold:g}") if threshold is not None else "",
            _e(reference),
            _e(f"+-{max(noises):.1%}") if noises else "",
            _e(sources),
            f'<a href="{_e(figure)}.png">{_e(figure)}.png</a>',
        ]
    ]


def _standing_rows(standings: list[Standing]) -> list[list[str]]:
    rows = []
    for s in standings:
        judged = "; ".join(
            f"{o.value:.3f} {o.quantity}" + ("" if o.passed is None else " (met)" if o.passed else " (missed)")
            for o in s.others
        )
        noise = f" +-{s.result.noise:.1%}" if s.result.noise is not None else ""
        rows.append(
            [
                f"#{s.place}" + (" (tie)" if s.tied else ""),
                _e(s.student),
                f"#{s.result.value:.3f}",
                _e(noise.strip()),
                _number(s.result.reference),
                _e(judged),
                _e(s.result.source),
                _e(s.result.detail),
            ]
        )
    return rows


def _leaderboards(data: ClassData, assignment: str, anonymous: bool) -> list[str]:
    """The leaderboard of each ranked check of the assignment: its place, the ranked number, the noise, ties."""
    found = [m for m in data.measured if m.assignment == assignment]
    parts = []
    for check in ranked_checks(found):
        standings = leaderboard(found, check, anonymous=anonymous)
        first = standings[0].result
        parts.append(f"<h3>Leaderboard: {_e(check)}</h3>")
        parts.append(
            f"<p>Ranked by {_e(first.quantity)}, "
            + ("lowest" if first.passes_below else "highest")
            + " first. Students within the measurement's noise of the first of a place share it (a tie): no "
            "measurement tells them apart. The reference column is the course's own schedule measured the same way "
            "in the same run" + (f"; students are not named ({_e(ANONYMOUS)})" if anonymous else "") + ".</p>"
        )
        header = ["place", "student", first.quantity, "noise", "reference", "judged", "source", "measured"]
        parts.append(_table(f"leaderboard-{assignment}", header, _standing_rows(standings)))
    return parts


def render(grading_name: str, data: ClassData, figures: dict[str, str], *, anonymous: bool = False) -> str:
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
        parts += _scores(data, assignment, figures)
        parts += _pending_gpu(data, assignment, anonymous)
        parts += _failures(data, assignment, anonymous)
        parts += _measured(data, assignment, figures, anonymous)
    parts.append("</body></html>")
    return "\n".join(parts)


def _scores(data: ClassData, assignment: str, figures: dict[str, str]) -> list[str]:
    """An assignment's heading, its scores per cell, and their figure."""
    parts = [
        f"<h2>{_e(assignment)}</h2><h3>Scores</h3>",
        "<p>Graded submissions only; full marks, 0 and in between count students. Written answers are graded "
        "by hand in the formgrader and are not in the autograded total. Pending a GPU: cells a check could not "
        "verify without a GPU; they count 0 (in the mean and the total) until graded on a GPU, and are neither "
        "full marks, 0 nor in between here (the total row: students with any such cell).</p>",
        _table(
            f"scores-{assignment}",
            ["cell", "points", "graded", "full marks", "0", "in between", "pending a GPU", "mean"],
            _score_rows(data, assignment),
        ),
    ]
    if f"scores-{assignment}" in figures:
        parts.append(f'<img src="{_e(figures[f"scores-{assignment}"])}" alt="scores of {_e(assignment)}">')
    return parts


def _pending_gpu(data: ClassData, assignment: str, anonymous: bool) -> list[str]:
    """The cells pending a GPU and whose they are (nothing where none is)."""
    waiting = data.grades[(data.grades.assignment == assignment) & data.grades.gpu]
    if waiting.empty:
        return []
    by_cell = waiting.groupby("cell", sort=False).student.agg(list)
    rows = [[f"<code>{_e(c)}</code>", f"#{len(names)}", _students(names, anonymous)] for c, names in by_cell.items()]
    return [
        "<h3>Pending a GPU</h3>",
        "<p>Cells a check could not verify without a GPU (neither passed nor failed): 0 until the class is "
        "graded again on a GPU machine.</p>",
        _table(f"pending-gpu-{assignment}", ["cell", "students", "who"], rows),
    ]


def _failures(data: ClassData, assignment: str, anonymous: bool) -> list[str]:
    """Why cells failed: each reason counted per cell, most common first."""
    rows = _failure_rows(failure_table(data, assignment), anonymous)
    return [
        "<h3>Why cells failed</h3>",
        "<p>Each failing test cell's error, its first line with numbers as # and paths as &lt;path&gt;, counted "
        "per cell, most common first; one real message beside each. Submissions that were not handed in or "
        "could not be graded are counted as whole submissions.</p>",
        _table(f"failures-{assignment}", ["count", "cell", "reason", "example", "students"], rows)
        if rows
        else "<p>No cell failed.</p>",
    ]


MEASURED_HEADER = ["check", "students", "passed", "median", "min", "max", "threshold", "reference", "noise"]


def _measured(data: ClassData, assignment: str, figures: dict[str, str], anonymous: bool) -> list[str]:
    """The numbers the timing checks measured, a histogram per check and setting, and the leaderboards."""
    mine = [m for m in data.measured if m.assignment == assignment]
    if not mine:
        return []
    by_figure: dict[str, list[Measured]] = collections.defaultdict(list)
    for m in mine:
        by_figure[m.result.figure].append(m)
    rows = [row for figure, found in by_figure.items() for row in _measured_rows(figure, found)]
    parts = [
        "<h3>Measured against the reference</h3>",
        "<p>The numbers the timing checks measured (recorded by the checks as data, not read from their "
        "sentences), one histogram per check and setting: the dashed line is the threshold, the solid one "
        "the reference's value measured the same way in the same run. Source: live on the GPU, the "
        "student's own exports, simulated on recorded stage times, or a recorded profile.</p>",
        _table(f"measured-{assignment}", [*MEASURED_HEADER, "source", "figure"], rows),
    ]
    parts += [f'<img src="{_e(figures[figure])}" alt="{_e(figure)}">' for figure in by_figure if figure in figures]
    return parts + _leaderboards(data, assignment, anonymous)
