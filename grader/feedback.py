"""Feedback that never shows hidden tests.

Stock `nbgrader generate_feedback` renders the autograded notebook, whose test cells hold the full source
(hidden tests included) and whose failing hidden assert prints a traceback quoting it. HideHiddenTests
runs in the feedback pipeline after GetGrades (DIR/nbgrader_config.py puts it there): in every cell with a
`### BEGIN HIDDEN TESTS` region it replaces the region by one comment line and replaces all the cell's
outputs (streams, tracebacks, values: any could quote hidden code or inputs) by one line:

    hidden tests: passed | failed | not run (...) | not passed (...) -- score 0 / 2

`write_feedback` then reads every produced HTML file as text and looks for each hidden-test line that does
not also appear in the visible part of that notebook; an HTML file that quotes one is deleted and reported.
nbgrader also copies the other files of each autograded folder into feedback/ (the student's run files and
every non-notebook file of source/<a>/): hidden test data must never live in such a file.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import nbformat
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import ClearHiddenTests

from grader.autograde import NOT_GRADED
from grader.grading import GradingDir
from grader.runner import ANSI, nbgrader_or_fail

PLACEHOLDER = "# hidden tests: not shown"
MIN_LEAK_CHARS = 8  # shorter hidden lines ("else:", ")") say nothing and occur everywhere


def split_hidden(source: str, begin: str, end: str) -> tuple[list[str], list[str], int | None]:
    """(visible lines with a placeholder per region, hidden lines, 1-based line of the first marker)."""
    visible, hidden, first = [], [], None
    inside = False
    for number, line in enumerate(source.split("\n"), start=1):
        if begin in line and not inside:
            inside = True
            first = first or number
            visible.append(line[: len(line) - len(line.lstrip())] + PLACEHOLDER)
        elif end in line and inside:
            inside = False
        elif inside:
            hidden.append(line)
        else:
            visible.append(line)
    return visible, hidden, first


def failing_line(error: NotebookNode, execution_count: int | None) -> int | None:
    """The line of this cell an error was raised from, read off IPython's traceback."""
    text = ANSI.sub("", "\n".join(error.get("traceback", [])))
    for count, line in re.findall(r"Cell In\s*\[(\d+)\],\s*line (\d+)", text):
        if execution_count is None or int(count) == execution_count:
            return int(line)
    return None


def verdict(cell: NotebookNode, first_hidden: int) -> str:
    """What to tell the student about a cell's hidden tests, without quoting them."""
    errors = [o for o in cell.get("outputs", []) if o.output_type == "error"]
    if not errors:
        wrote_stderr = any(o.output_type == "stream" and o.get("name") == "stderr" for o in cell.get("outputs", []))
        return "failed (the cell wrote to stderr, which counts as failing)" if wrote_stderr else "passed"
    if any(e.ename == "CellTimeoutError" for e in errors):  # nbgrader adds it after the KeyboardInterrupt
        return "not passed (the cell ran past the time limit and was stopped)"
    error = errors[0]
    if error.ename == NOT_GRADED:
        return f"not run ({error.evalue})"
    line = failing_line(error, cell.get("execution_count"))
    if line is not None and line < first_hidden:
        detail = f"{error.ename}: {error.evalue[:200]}" if error.get("evalue") else error.ename
        return f"not run (a visible check before them failed: {detail})"
    return "failed"


def _points(cell: NotebookNode) -> str:
    """' -- score 1 / 2' from the grade GetGrades put in the metadata, when there is one."""
    meta = cell.metadata.get("nbgrader", {})
    if meta.get("points") is None:
        return ""
    return f" -- score {float(meta.get('score') or 0):g} / {float(meta['points']):g}"


class HideHiddenTests(ClearHiddenTests):
    """Feedback preprocessor: hidden-test regions out of sources, their cells' outputs down to a verdict line."""

    def preprocess_cell(self, cell: NotebookNode, resources: dict[str, Any],
                        index: int) -> tuple[NotebookNode, dict[str, Any]]:
        """Rewrite one cell if it holds hidden tests; other cells pass unchanged."""
        visible, _, first = split_hidden(cell.source, self.begin_test_delimeter, self.end_test_delimeter)
        if first is None:
            return cell, resources
        if cell.cell_type == "code":
            line = f"hidden tests: {verdict(cell, first)}{_points(cell)}\n"
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=line)]
        cell.source = "\n".join(visible)
        return cell, resources


def leak_lines(notebook: Path) -> set[str]:
    """Hidden-test lines of an autograded notebook worth looking for: long enough, not also visible."""
    begin, end = ClearHiddenTests.begin_test_delimeter.default_value, ClearHiddenTests.end_test_delimeter.default_value
    hidden, visible = set(), set()
    for cell in nbformat.read(notebook, as_version=4).cells:
        shown, secret, _ = split_hidden(cell.source, begin, end)
        visible.update(line.strip() for line in shown)
        hidden.update(line.strip() for line in secret)
    return {line for line in hidden - visible if len(line) >= MIN_LEAK_CHARS}


def html_text(path: Path) -> str:
    """The text a reader sees in an HTML file: tags (syntax-highlighting spans) removed, entities decoded."""
    return html.unescape(re.sub(r"<[^>]*>", "", path.read_text(errors="replace")))


def leaks(grading: GradingDir, assignment: str) -> list[str]:
    """Feedback files quoting a hidden-test line; each is deleted and named with the line it quotes."""
    found = []
    for page in sorted((grading.root / "feedback").glob(f"*/{assignment}/*.html")):
        student = page.parent.parent.name
        notebook = grading.root / "autograded" / student / assignment / f"{page.stem}.ipynb"
        text = html_text(page)
        quoted = sorted(line for line in leak_lines(notebook) if line in text) if notebook.is_file() else []
        if quoted:
            page.unlink()
            found.append(f"{page.relative_to(grading.root)} quoted a hidden test ({quoted[0]!r}); deleted it")
    return found


def write_feedback(grading: GradingDir, assignment: str) -> tuple[list[Path], list[str]]:
    """nbgrader generate_feedback for one assignment, then the leak check; (HTML files kept, leaks)."""
    nbgrader_or_fail(["generate_feedback", assignment, "--force"], cwd=grading.root)
    found = leaks(grading, assignment)
    return sorted((grading.root / "feedback").glob(f"*/{assignment}/*.html")), found

