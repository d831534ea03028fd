"""The course's own nbgrader preprocessors; a grading directory's nbgrader_config.py installs them (grader.config).

Replay takes the place of nbgrader's Execute in `nbgrader autograde`: nothing executes in nbgrader's process.
The one grading engine (grader.classgrade: the sandbox, the trusted checker) has already made each submission's
autograded notebook; `nbgrader autograde A --force --Replay.replay_root=SCRATCH` (grader.autograde.record_all)
copies its outputs into each sanitized notebook, or, when there are none, gives every code cell an error naming
the reason, so that every autograded cell scores 0 and the feedback says why. A grading directory's plain
`nbgrader autograde`, with no replay root, grades nobody: it refuses each submission, naming the command that
grades (nbgrader then records nothing for it).

SafeText comes first in sanitizing, and SourceKernelspec and SourceOverwriteCells take the place of nbgrader's own
(grader.sanitize says why: the coordinator sanitizes the same way). DropDuplicateIds takes the place of nbgrader's
DeduplicateIds in sanitizing (nbgrader's recording pass and the
coordinator's own, grader.sanitize.sanitized).

StderrToStdout runs after Replay, before SaveAutoGrades. nbgrader scores 0 any graded test cell that wrote to
stderr (nbgrader.utils.determine_grade), so a progress bar or a warning zeroed a passing test. It turns the
stderr streams of graded test cells into stdout: the text stays, shown as ordinary output; a failing test still
fails, because Python reports it as an error output, which stays.

HideHiddenTests runs in `nbgrader generate_feedback` after GetGrades. Stock feedback renders the autograded
notebook, whose test cells hold the full source (hidden tests included) and whose failing hidden assert prints a
traceback quoting it. In every cell with a `### BEGIN HIDDEN TESTS` region this preprocessor replaces the region
by one comment line and all the cell's outputs (streams, tracebacks, values: any could quote hidden code or
inputs) by one line:

    hidden tests: passed | failed | not run (...) | not passed (...) | not decided without a GPU (...) -- score 0 / 2

In the same pass a grade cell with no hidden region whose check left it pending a GPU (labcore.pending: its error
is PendingGPU) is shown as the one line its check wrote, "pending a GPU: <what is left>; this cell counts 0 until
it is graded on a GPU", in place of its outputs: its traceback, or a "✗ ... fix it", would read as a wrong answer.
(The chain of a grading directory made before this keeps working: no new preprocessor to configure.)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import nbformat
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import ClearHiddenTests, DeduplicateIds, NbGraderPreprocessor, OverwriteCells
from nbgrader.utils import is_grade, is_solution
from traitlets import Unicode

from grader.feedback import split_hidden
from grader.layout import KERNEL_DIED, KERNEL_STUCK, NOT_GRADED, NOT_RUN, PENDING_GPU, TIMED_OUT, TIMES_KEY
from grader.outputs import error_output
from grader.program import drop_emptied_metadata
from grader.report_data import cell_error
from grader.runner import ANSI
from grader.sanitize import overwrite_cells, overwrite_kernelspec, restore_cells, safe_notebook, source_of
from labcore.pending import pending_message

GRADE_WITH = "python -m grader autograde"  # what grades a grading directory's submissions


class Replay(NbGraderPreprocessor):
    """In Execute's place: the outputs the grading engine made for this submission, or the reason it has none."""

    replay_root = Unicode(
        "", help="<root>/<student>/autograded/<student>/<a>/<nb>.ipynb, or <root>/<student>/reason.txt"
    ).tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        """Copy the autograded notebook's outputs (or every code cell the reason it has none)."""
        if not self.replay_root:
            raise RuntimeError(
                f"this grading directory grades with `{GRADE_WITH}`; nbgrader autograde alone runs nothing"
            )
        info = resources["nbgrader"]
        scratch = Path(self.replay_root) / info["student"]
        done = scratch / "autograded" / info["student"] / info["assignment"] / f"{info['notebook']}.ipynb"
        if done.is_file():
            ran = nbformat.read(done, as_version=nbformat.NO_CONVERT)
            if [c.source for c in ran.cells] == [c.source for c in nb.cells]:
                for cell, ran_cell in zip(nb.cells, ran.cells, strict=True):
                    if cell.cell_type == "code":
                        cell.outputs, cell.execution_count = ran_cell.outputs, ran_cell.execution_count
                if TIMES_KEY in ran.metadata:
                    nb.metadata[TIMES_KEY] = ran.metadata[TIMES_KEY]
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
            cell.outputs = [error_output(NOT_GRADED, text)]


class SafeText(NbGraderPreprocessor):
    """First in sanitizing: every string of the notebook, its keys too, made safe to write (grader.sanitize)."""

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        return safe_notebook(nb), resources


class SourceRestoreCells(NbGraderPreprocessor):
    """The course's cells a notebook lost (a locked cell deleted, nbgrader's metadata dropped by an editor) put back
    before OverwriteCells looks for them (grader.sanitize.restore_cells)."""

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        return restore_cells(nb, resources, source_of(resources)), resources


class SourceKernelspec(NbGraderPreprocessor):
    """nbgrader's OverwriteKernelspec, its lookup answered by the source records read once (grader.sanitize)."""

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        return overwrite_kernelspec(nb, resources, source_of(resources)), resources


class SourceOverwriteCells(OverwriteCells):
    """nbgrader's OverwriteCells, its code as it is, every lookup answered by the source records read once
    (grader.sanitize) instead of a query."""

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        if self.add_missing_cells:  # its lookups reach further than SourceCells keeps: nbgrader's own
            return super().preprocess(nb, resources)
        return overwrite_cells(self, nb, resources, source_of(resources)), resources


class DropDuplicateIds(DeduplicateIds):
    """nbgrader's DeduplicateIds, except that a duplicate loses its nbgrader metadata entirely
    (grader.program.drop_emptied_metadata says why)."""

    def preprocess_cell(
        self, cell: NotebookNode, resources: dict[str, Any], index: int
    ) -> tuple[NotebookNode, dict[str, Any]]:
        cell, resources = super().preprocess_cell(cell, resources, index)
        return drop_emptied_metadata(cell), resources


class StderrToStdout(NbGraderPreprocessor):
    """Autograde preprocessor: graded test cells' stderr becomes stdout, so that it cannot zero a passing test."""

    def preprocess_cell(
        self, cell: NotebookNode, resources: dict[str, Any], index: int
    ) -> tuple[NotebookNode, dict[str, Any]]:
        """Rename the stderr streams of a graded test cell; other cells and outputs pass unchanged."""
        if cell.cell_type == "code" and is_grade(cell) and not is_solution(cell):
            for output in cell.outputs:
                if output.output_type == "stream" and output.name == "stderr":
                    output.name = "stdout"
        return cell, resources


class HideHiddenTests(ClearHiddenTests):
    """Feedback preprocessor: hidden-test regions out of sources, their cells' outputs down to a verdict line, and
    a visible test cell pending a GPU down to its pending line.

    A ClearHiddenTests, so the delimiters configured for generating the release apply here too.
    """

    def preprocess_cell(
        self, cell: NotebookNode, resources: dict[str, Any], index: int
    ) -> tuple[NotebookNode, dict[str, Any]]:
        """Rewrite one cell if it holds hidden tests or is pending a GPU; other cells pass unchanged."""
        visible, _, first = split_hidden(cell.source, self.begin_test_delimeter, self.end_test_delimeter)
        if first is None:
            pending = pending_gpu_output(cell)
            if pending is not None:
                cell.outputs = [pending]
            return cell, resources
        if cell.cell_type == "code":
            line = f"hidden tests: {verdict(cell, first)}{_points(cell)}\n"
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=line)]
        cell.source = "\n".join(visible)
        return cell, resources


def pending_gpu_output(cell: NotebookNode) -> NotebookNode | None:
    """The one stdout line that stands for a grade cell a check left pending a GPU, or None for any other cell."""
    if cell.cell_type != "code" or not cell.metadata.get("nbgrader", {}).get("grade"):
        return None
    error = cell_error(cell)  # what decided the cell, as every other surface reads it (grader.report_data)
    if error is None or error[0] != PENDING_GPU:
        return None
    said = error[1].strip().splitlines()[0] if error[1].strip() else ""
    line = said if said.startswith("pending a GPU") else pending_message(said or "not verified without a GPU")
    return nbformat.v4.new_output("stream", name="stdout", text=line + "\n")


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
        # stderr is left in a test cell only where StderrToStdout is disabled; nbgrader then scores it 0
        wrote_stderr = any(o.output_type == "stream" and o.get("name") == "stderr" for o in cell.get("outputs", []))
        return "failed (the cell wrote to stderr, which counts as failing)" if wrote_stderr else "passed"
    stopped = [e for e in errors if e.ename in (KERNEL_DIED, KERNEL_STUCK, TIMED_OUT)]  # after the KeyboardInterrupt
    if stopped:
        return f"not passed ({stopped[0].evalue})"
    error = errors[0]
    if error.ename in (NOT_GRADED, NOT_RUN):
        return f"not run ({error.evalue})"
    if error.ename == PENDING_GPU:  # its message says what is left; it says nothing of the hidden tests' code
        return f"not decided without a GPU ({error.evalue})"
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
