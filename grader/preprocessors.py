"""The course's own nbgrader preprocessors; a grading directory's nbgrader_config.py installs them (grader.config).

ExecuteToTheEnd takes the place of nbgrader's Execute in `nbgrader autograde`. nbclient gives up on the whole
notebook when the kernel dies or stops answering, and nbgrader then drops the submission with every point it had
earned. Here the cell where the kernel was lost gets an error naming what happened, each later code cell a NotRun
error with the same reason, and the cells before keep their outputs and points. A cell interrupted at the limit
gets an error naming the cell and the limit:

    DeadKernelError: the kernel died (exit status 3) in cell chunk_count
    UnresponsiveKernelError: cell test_clamp_visible ran past the 120 s limit and did not stop when interrupted
    NotRun: the kernel died (exit status 3) in cell chunk_count
    CellTimeoutError: cell test_clamp_hidden ran past the 120 s limit and was interrupted

ExecuteOrReplay is an ExecuteToTheEnd. With `replay_root` set (phase 2 of grader.autograde) it executes nothing:
it copies into each code cell the outputs that phase 1 recorded for that submission, or, when there are none,
gives every code cell an error naming the reason, so that every autograded cell scores 0 and the feedback says why.

StderrToStdout runs after it, before SaveAutoGrades, in both phases. nbgrader scores 0 any graded test cell that
wrote to stderr (nbgrader.utils.determine_grade), so a progress bar or a warning zeroed a passing test. It turns the
stderr streams of graded test cells into stdout: the text stays, shown as ordinary output; a failing test still
fails, because Python reports it as an error output, which stays.

HideHiddenTests runs in `nbgrader generate_feedback` after GetGrades. Stock feedback renders the autograded
notebook, whose test cells hold the full source (hidden tests included) and whose failing hidden assert prints a
traceback quoting it. In every cell with a `### BEGIN HIDDEN TESTS` region this preprocessor replaces the region
by one comment line and all the cell's outputs (streams, tracebacks, values: any could quote hidden code or
inputs) by one line:

    hidden tests: passed | failed | not run (...) | not passed (...) | not decided without a GPU (...) -- score 0 / 2
"""

from __future__ import annotations

import re
import secrets
import signal
import tempfile
from pathlib import Path
from typing import Any

import nbformat
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import ClearHiddenTests, DeduplicateIds, Execute, NbGraderPreprocessor
from nbgrader.utils import is_grade, is_solution
from traitlets import Integer, Unicode

from grader.bundle import sandbox_library
from grader.feedback import split_hidden
from grader.judge import grade
from grader.layout import KERNEL_DIED, KERNEL_STUCK, NOT_GRADED, NOT_RUN, PENDING_GPU, TIMED_OUT, TIMES_KEY
from grader.outputs import error_output
from grader.program import cell_name
from grader.runner import ANSI, REPO


class ExecuteToTheEnd(Execute):
    """nbgrader's Execute, except that losing the kernel ends the notebook's execution, not its grading."""

    def preprocess(
        self, nb: NotebookNode, resources: dict[str, Any], km: Any = None
    ) -> tuple[NotebookNode, dict[str, Any]]:
        """Execute every code cell until the kernel is lost; the rest get the reason as a NotRun error."""
        self._lost = ""  # why the kernel was lost, once it is
        self._running = ""  # the name of the cell being executed
        self._interrupted_at: int | None = None  # the limit at which nbclient interrupted that cell
        return super().preprocess(nb, resources, km)

    def preprocess_cell(
        self, cell: NotebookNode, resources: dict[str, Any], index: int
    ) -> tuple[NotebookNode, dict[str, Any]]:
        """Execute one cell; a dead or unresponsive kernel becomes this cell's error instead of the notebook's."""
        if cell.cell_type != "code":
            return cell, resources
        if self._lost:
            cell.outputs = [error_output(NOT_RUN, self._lost)]
            return cell, resources
        self._running, self._interrupted_at = cell_name(cell, index), None
        try:
            return super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            ename, self._lost = KERNEL_DIED, f"the kernel died ({self._exit_status()}) in cell {self._running}"
        except CellTimeoutError:  # after the reply, nbclient waited iopub_timeout for the end of the output in vain
            ename, self._lost = KERNEL_STUCK, self._stuck()
        cell.outputs.append(error_output(ename, self._lost))
        return cell, resources

    async def _async_handle_timeout(self, timeout: int, cell: NotebookNode | None = None) -> dict[str, Any] | None:
        """nbclient's interrupt at the limit (it offers no hook for it); the error it records names cell and limit."""
        self._interrupted_at = timeout
        reply = await super()._async_handle_timeout(timeout, cell)
        if reply is not None and cell is not None:
            text = f"cell {self._running} ran past the {timeout} s limit and was interrupted"
            reply["content"].update(ename=TIMED_OUT, evalue=text, traceback=[f"{TIMED_OUT}: {text}"])
        return reply

    def _stuck(self) -> str:
        """Why the kernel stopped answering: the interrupt at the limit did not end the cell, or its output stalled."""
        if self._interrupted_at is not None:
            return f"cell {self._running} ran past the {self._interrupted_at} s limit and did not stop when interrupted"
        return f"cell {self._running} finished but its output did not arrive within {self.iopub_timeout} s"

    def _exit_status(self) -> str:
        """How the kernel process ended, as the local provisioner saw it."""
        process = getattr(getattr(self.km, "provisioner", None), "process", None)
        return exit_status(getattr(process, "returncode", None))


def exit_status(returncode: int | None) -> str:
    """'exit status 3', 'killed by SIGKILL' (a negative return code) or 'exit status unknown'."""
    if returncode is None:
        return "exit status unknown"
    if returncode >= 0:
        return f"exit status {returncode}"
    try:
        return f"killed by {signal.Signals(-returncode).name}"
    except ValueError:
        return f"killed by signal {-returncode}"


class ExecuteOrReplay(ExecuteToTheEnd):
    """In Execute's place: grade in the sandbox and the trusted checker; with replay_root set, copy phase 1's outputs.

    Unset, it never executes the notebook in this process: grader.judge.grade runs the student's cells in the
    sandbox and the test cells in the checker, and fills the outputs from both.
    """

    replay_root = Unicode("", help="Scratch folder of phase 1: <root>/<student>/autograded/... and reason.txt").tag(
        config=True
    )
    library = Unicode("", help="The sandbox's packages (grader.withhold); empty: written for each notebook").tag(
        config=True
    )
    seed = Integer(0, help="The seed of the checks' random inputs (labcore.answers); 0: a fresh one").tag(config=True)
    checker_lock = Unicode("", help="A file whose lock checkers take turns holding (one GPU); empty: none").tag(
        config=True
    )

    def preprocess(self, nb: NotebookNode, resources: dict[str, Any]) -> tuple[NotebookNode, dict[str, Any]]:
        """Grade in the sandbox and the checker, or replay phase 1's outputs (or the reason it has none)."""
        if not self.replay_root:
            return self._grade(nb, resources), resources
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

    def _grade(self, nb: NotebookNode, resources: dict[str, Any]) -> NotebookNode:
        folder = Path(resources.get("metadata", {}).get("path") or ".")
        seed = self.seed or secrets.randbelow(2**31 - 1) + 1
        with tempfile.TemporaryDirectory(prefix="grader-grade-") as tmp:
            library = Path(self.library) if self.library else Path(tmp) / "library"
            if not self.library:
                sandbox_library(REPO, library)
            lock = Path(self.checker_lock) if self.checker_lock else None
            return grade(
                nb,
                folder=folder,
                library=library,
                scratch=Path(tmp),
                timeout_s=self.timeout,
                seed=seed,
                checker_lock=lock,
            )


def mark_not_graded(nb: NotebookNode, reason: str) -> None:
    """Give every code cell an error naming why the notebook has no outputs: each autograded cell scores 0."""
    text = f"this notebook could not be graded: {reason}; every autograded cell scores 0"
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [error_output(NOT_GRADED, text)]


class DropDuplicateIds(DeduplicateIds):
    """nbgrader's DeduplicateIds, except that a duplicate loses its nbgrader metadata entirely.

    Stock, it leaves `nbgrader: {}` behind, which nbgrader's metadata check then takes for an old schema and
    answers by aborting the whole autograde (SchemaTooOldError): one student who copies a locked cell, grade id
    and all, would stop every later submission being recorded. Without the key the cell is a plain cell.
    """

    def preprocess_cell(
        self, cell: NotebookNode, resources: dict[str, Any], index: int
    ) -> tuple[NotebookNode, dict[str, Any]]:
        cell, resources = super().preprocess_cell(cell, resources, index)
        if cell.metadata.get("nbgrader") == {}:
            del cell.metadata["nbgrader"]
        return cell, resources


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
