"""What grading runs of a submission, and where: the answer cells in the sandbox, the test cells in the checker.

A grade needs the student's answers and the trusted checks, not the lesson: so a submission's grading runs, in
the sandbox, only

    the locked `setup` cell, every cell the student may edit (exercises, predictions, cells they added), and the
    test cells (whose checks ask the student's code their questions and file the answers),

in notebook order, after a cell binding every name that a skipped lesson cell would have made (`record`,
`breakeven_run`, ...) to a placeholder: checks never take lesson data from the notebook while grading (they read
the shipped profile). The lesson cells (locked, not graded, not `setup`) run only for feedback (`--feedback now`).
The checker runs the setup cell, placeholders for every other name the test cells read, and the test cells.

Cells are named by their index in the sanitized notebook (nbgrader's: locked cells restored from the gradebook).
"""

from __future__ import annotations

import builtins
import dataclasses

from nbformat.notebooknode import NotebookNode

from grader.judge import SETUP_CELL, _names, grade_id, is_test


def is_lesson(cell: NotebookNode) -> bool:
    """A locked lesson cell: measures, shows or plots; run only for feedback."""
    meta = cell.metadata.get("nbgrader", {})
    return (
        cell.cell_type == "code"
        and bool(meta.get("locked"))
        and not meta.get("grade")
        and not meta.get("solution")
        and meta.get("grade_id") != SETUP_CELL
    )


def is_setup(cell: NotebookNode) -> bool:
    return cell.cell_type == "code" and grade_id(cell) == SETUP_CELL and bool(cell.metadata["nbgrader"].get("locked"))


@dataclasses.dataclass(frozen=True)
class Program:
    """Cells to run, as (index, source) in order, and the names bound to placeholders before them."""

    cells: tuple[tuple[int, str], ...]
    placeholders: tuple[str, ...]

    def to_json(self) -> dict:
        return {"cells": [list(c) for c in self.cells], "placeholders": list(self.placeholders)}


def answers_program(nb: NotebookNode) -> Program:
    """The sandbox's program: setup, the student's cells and the test cells; lesson names as placeholders."""
    run = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code" and not is_lesson(c)]
    made: set[str] = set()
    for cell in nb.cells:
        if is_lesson(cell):
            made |= _names(cell.source)[1]
    read: set[str] = set()
    for _, cell in run:
        read |= _names(cell.source)[0]
    return Program(tuple((i, c.source) for i, c in run), tuple(sorted(made & read)))


def checker_program(nb: NotebookNode) -> Program:
    """The checker's program: the setup cell and the test cells; every other name they read a placeholder."""
    setup = [(i, c) for i, c in enumerate(nb.cells) if is_setup(c)][:1]
    tests = [(i, c) for i, c in enumerate(nb.cells) if is_test(c)]
    defined = _names("\n".join(c.source for _, c in setup))[1]
    read: set[str] = set()
    for _, cell in tests:
        read |= _names(cell.source)[0]
    names = sorted(read - defined - set(dir(builtins)))
    return Program(tuple((i, c.source) for i, c in [*setup, *tests]), tuple(names))
