"""`nbgrader validate` both ways: the solutions pass, and the release's stubs fail without crashing the harness.

A solutions notebook passes when nbgrader's Validator finds no failing test cell and no cell raised at all.
A release notebook (validated with --invert) passes when no test cell passes with the stubs, and every
error is one a stub causes: an AssertionError of a check (AnswerRaised among them: a check naming what the
student's code raised), the stub's NotImplementedError, or a NameError
for what a stubbed cell did not define. Anything else (an ImportError, a TypeError inside a check, a
timeout, a dead kernel) means the harness crashed on the stubs instead of reporting a failure.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from grader.runner import ANSI, course_env
from labcore.pending import PENDING_GPU

if TYPE_CHECKING:
    from nbformat.notebooknode import NotebookNode

# AnswerRaised: a check's AssertionError saying that the student's code raised (labcore.answers), e.g. the stub's
STUB_FAILURES = ("AssertionError", "AnswerRaised", "NotImplementedError", "NameError")


@dataclasses.dataclass
class Verdict:
    """The outcome for one notebook: ok, and what went wrong."""

    path: Path
    ok: bool
    problems: list[str]
    test_cells: int


@contextlib.contextmanager
def _kernel_env() -> Iterator[None]:
    """Kernels started here import this checkout's packages."""
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = course_env()["PYTHONPATH"]
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def _label(cell: NotebookNode, index: int) -> str:
    grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
    return f"cell {index}" + (f" ({grade_id})" if grade_id else "")


def _errors(nb: NotebookNode) -> list[tuple[str, NotebookNode, NotebookNode]]:
    """(label, cell, error output) for every error in the executed notebook."""
    return [
        (_label(cell, i), cell, out)
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.output_type == "error"
    ]


def _first_line(error: NotebookNode) -> str:
    return f"{error.ename}: {str(error.evalue).splitlines()[0] if error.evalue else ''}".strip()


def run_validator(path: Path, *, invert: bool, timeout_s: int) -> tuple[dict, NotebookNode | None]:
    """nbgrader's verdict on one notebook and the executed notebook, run in a copy of its folder."""
    from nbgrader.validator import Validator  # seconds to import: --help and bad options do not wait for it
    from traitlets.config import Config  # comes with nbgrader, an optional extra of this package

    executed: list[NotebookNode] = []

    class KeepingValidator(Validator):
        """nbgrader's Validator, keeping the executed notebook to inspect every cell's errors."""

        def _preprocess(self, nb: NotebookNode) -> NotebookNode:
            executed.append(super()._preprocess(nb))
            return executed[-1]

    cfg = Config()
    cfg.Execute.timeout = timeout_s
    cfg.Validator.invert = invert
    # a copy, because the labs' notebooks write their run files beside themselves: the checkout stays clean
    with tempfile.TemporaryDirectory(prefix="grader-validate-") as tmp:
        folder = Path(tmp) / path.parent.name
        shutil.copytree(path.parent, folder, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        with _kernel_env():
            results = KeepingValidator(config=cfg).validate(str(folder / path.name))
    return results, executed[-1] if executed else None


def _is_test(cell: NotebookNode) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return bool(meta.get("grade")) and not meta.get("solution")


def _count_tests(nb: NotebookNode | None) -> int:
    return 0 if nb is None else sum(_is_test(c) for c in nb.cells)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in ANSI.sub("", text).splitlines() if line.strip()]
    return lines[-1] if lines else "no error text"


def validate_solution(path: Path, timeout_s: int) -> Verdict:
    """Solutions: every test passes and no cell raises."""
    try:
        results, nb = run_validator(path, invert=False, timeout_s=timeout_s)
    except Exception as exc:  # a dead kernel or a broken notebook is this notebook's verdict, not a crash of ours
        return Verdict(path, False, [f"could not run: {type(exc).__name__}: {exc}"], 0)
    problems = [f"test cell changed: {c['source'].splitlines()[0]}" for c in results.get("changed", [])]
    problems += [f"cell type changed: {c['source'].splitlines()[0]}" for c in results.get("type_changed", [])]
    # a test only a GPU can decide is pending offline (labcore.pending), as it is for a class: not a failure here
    failed = [c for c in results.get("failed", []) if PENDING_GPU not in c.get("raw_error", "")]
    problems += [f"test fails: {c['source'].splitlines()[0]} ({_last_line(c.get('raw_error', ''))})" for c in failed]
    problems += (
        [f"{label} raised {_first_line(err)}" for label, cell, err in _errors(nb) if not _is_test(cell)]
        if nb is not None
        else []
    )
    return Verdict(path, not problems, problems, _count_tests(nb))


def validate_release(path: Path, timeout_s: int) -> Verdict:
    """Release (--invert): no test passes with the stubs, and every failure is one a stub causes."""
    try:
        results, nb = run_validator(path, invert=True, timeout_s=timeout_s)
    except Exception as exc:
        return Verdict(path, False, [f"the harness crashed: {type(exc).__name__}: {exc}"], 0)
    failing = {cell.source for _, cell, _ in _errors(nb)} if nb is not None else set()
    problems = [
        f"test passes with the stubs: {c['source'].splitlines()[0]}"
        for c in results.get("passed", [])
        if c["source"] not in failing  # an optional cell worth 0 points "passes" nbgrader's count while it fails
    ]
    problems += [f"test cell changed: {c['source'].splitlines()[0]}" for c in results.get("changed", [])]
    problems += (
        [
            f"the harness crashed: {label} raised {_first_line(err)}"
            for label, _, err in _errors(nb)
            if err.ename not in STUB_FAILURES
        ]
        if nb is not None
        else []
    )
    return Verdict(path, not problems, problems, _count_tests(nb))
