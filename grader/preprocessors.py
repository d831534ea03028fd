"""The course's own nbgrader preprocessors; a grading directory's nbgrader_config.py installs them (grader.config).

ExecuteOrReplay takes the place of nbgrader's Execute in `nbgrader autograde`. Without options it is Execute.
With `replay_root` set (phase 2 of grader.autograde) it executes nothing: it copies into each code cell the
outputs that phase 1 recorded for that submission, or, when there are none, gives every code cell an error
naming the reason, so that every autograded cell scores 0 and the feedback says why.

HideHiddenTests runs in `nbgrader generate_feedback` after GetGrades. Stock feedback renders the autograded
notebook, whose test cells hold the full source (hidden tests included) and whose failing hidden assert prints a
traceback quoting it. In every cell with a `### BEGIN HIDDEN TESTS` region this preprocessor replaces the region
by one comment line and all the cell's outputs (streams, tracebacks, values: any could quote hidden code or
inputs) by one line:

    hidden tests: passed | failed | not run (...) | not passed (...) -- score 0 / 2
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import nbformat
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import ClearHiddenTests, Execute
from traitlets import Unicode

from grader.feedback import split_hidden
from grader.runner import ANSI

NOT_GRADED = "GradingError"  # the error name ExecuteOrReplay gives the cells of a notebook it has no outputs for


class ExecuteOrReplay(Execute):
    """nbgrader's Execute; with replay_root set, copies the outputs phase 1 recorded instead of executing."""

    replay_root = Unicode("", help="Scratch folder of phase 1: <root>/<student>/autograded/... and reason.txt").tag(
        config=True
    )

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        """Execute as nbgrader does, or replay phase 1's outputs (or the reason it has none)."""
        if not self.replay_root:
            return super().preprocess(nb, resources)
        info = resources["nbgrader"]
        scratch = Path(self.replay_root) / info["student"]
        done = scratch / "autograded" / info["student"] / info["assignment"] / f"{info['notebook']}.ipynb"
        if done.is_file():
            ran = nbformat.read(done, as_version=nbformat.NO_CONVERT)
            if [c.source for c in ran.cells] == [c.source for c in nb.cells]:
                for cell, ran_cell in zip(nb.cells, ran.cells, strict=True):
                    if cell.cell_type == "code":
                        cell.outputs, cell.execution_count = ran_cell.outputs, ran_cell.execution_count
                return nb, resources
            reason = "the executed notebook does not match the submission"
        else:
            reason_file = scratch / "reason.txt"
            reason = reason_file.read_text().strip() if reason_file.is_file() else "it was not executed"
        mark_not_graded(nb, reason)
        return nb, resources


def mark_not_graded(nb: NotebookNode, reason: str) -> None:
    """Give every code cell an error naming why the notebook has no outputs: each autograded cell scores 0."""
    text = f"this notebook could not be graded: {reason}; every autograded cell scores 0"
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [
                nbformat.v4.new_output("error", ename=NOT_GRADED, evalue=text, traceback=[f"{NOT_GRADED}: {text}"])
            ]


class HideHiddenTests(ClearHiddenTests):
    """Feedback preprocessor: hidden-test regions out of sources, their cells' outputs down to a verdict line.

    A ClearHiddenTests, so the delimiters configured for generating the release apply here too.
    """

    def preprocess_cell(
        self, cell: NotebookNode, resources: dict[str, Any], index: int
    ) -> tuple[NotebookNode, dict[str, Any]]:
        """Rewrite one cell if it holds hidden tests; other cells pass unchanged."""
        visible, _, first = split_hidden(cell.source, self.begin_test_delimeter, self.end_test_delimeter)
        if first is None:
            return cell, resources
        if cell.cell_type == "code":
            line = f"hidden tests: {verdict(cell, first)}{_points(cell)}\n"
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=line)]
        cell.source = "\n".join(visible)
        return cell, resources


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
