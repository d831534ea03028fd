"""python -m grader report: one HTML page that shows an instructor what the class did not get.

For a grading directory DIR (setup, collect, autograde), it writes DIR/report/index.html (or --out), PNGs and
measured.csv beside it:

1. Scores: per assignment, how many students got each score on every autograded cell, and the autograded
   total; written answers say how many have been graded by hand so far (they are never shown as zeros).
   Scores come from the gradebook (nbgrader's Gradebook API).
2. Why cells failed: each failing test cell's error in the autograded notebooks (DIR/autograded/...), as its
   name and the first line of its message with numbers, paths and the student's id replaced, so that one
   reason is counted once however the numbers fell; one real message is shown beside each. Submissions that
   were not handed in, or could not be graded, are counted with their reason.
3. Measured numbers: what the timing checks measured, as data (labcore.checking.Result in the test cells' outputs,
   recorded by the trusted checker, never by the student's code), one histogram per check and setting, with the
   threshold, the reference's value, the noise and where each number came from; every number also in
   measured.csv.
4. Leaderboards: a check whose result ranks (day54's challenge: yours over the link floor) ranks the class, ties
   within the measurement's noise shown as ties; --anonymous names no student on the page or in the CSV.

The page names no absolute path: messages are shown with paths replaced, and the grading directory by name.
The data is grader.report_data's, the figures grader.report_plots', the page grader.report_html's.
"""

from __future__ import annotations

import argparse
import collections
import html
from pathlib import Path

from grader.grading import GradingDir
from grader.report_data import ClassData, Measured, failure_table, read_class, write_csv
from grader.report_html import render
from grader.report_plots import ratio_figure, score_figure
from grader.runner import REPO
from labcore.errors import UsageError, output_file

REPORT_DIR = "report"
PAGE = "index.html"
CSV = "measured.csv"  # every measured number beside the page


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
    return output_file(path, "--out")


def write_report(grading: GradingDir, page: Path, *, anonymous: bool = False) -> tuple[ClassData, list[Path]]:
    """Read the class, draw the PNGs and write the CSV beside the page, and the page; UsageError when nothing is
    graded yet."""
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
    for m in data.measured:
        by_figure[m.result.figure].append(m)
    for figure, found in by_figure.items():
        figures[figure] = ratio_figure(figure, [m.result for m in found], page.parent).name
    write_csv(data.measured, page.parent / CSV, anonymous=anonymous)
    text = render(grading.root.name, data, figures, anonymous=anonymous)
    for place in sorted({grading.root, REPO, Path.home()}, key=lambda p: -len(str(p))):
        if len(place.parts) > 1:  # a path with a space in it escapes PATH; these ones never reach the page
            text = text.replace(html.escape(str(place)), "&lt;path&gt;")
    page.write_text(text)
    return data, [page.parent / name for name in figures.values()]


def cmd_report(args: argparse.Namespace) -> int:
    """python -m grader report DIR [--out PATH] [--anonymous]: the class report, and its headline on stdout."""
    grading = GradingDir.opened(args.dir)
    page = report_path(grading, args.out, args.repo)
    print(f"grader report: {grading.root} -> {page}", flush=True)
    data, pngs = write_report(grading, page, anonymous=getattr(args, "anonymous", False))
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
    print(f"wrote {page.name}, {CSV} and {len(pngs)} PNG(s) in {page.parent}: {', '.join(p.name for p in pngs)}")
    return 0
