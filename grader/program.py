"""What grading runs of a submission, and where: the answer cells in the sandbox, the test cells on the trusted side.

One engine grades every submission, whichever `--feedback` an instructor asks for. A grade needs the student's
answers and the trusted checks, not the lesson: so a submission's grading runs, in the sandbox, only

    the locked `setup` cell, every cell the student may edit (exercises, predictions, cells they added), and in
    each test cell's place (its source is None there: no test cell's text reaches the sandbox) the questions the
    trusted planner recorded from it (grader.checker's plan: which asker, with which arguments),

in notebook order, after a cell binding every name that a skipped lesson cell would have made (`record`,
`breakeven_run`, ...) to a placeholder: checks never take lesson data from the notebook while grading (they read
the shipped profile). With `whole` (`--feedback now`) the sandbox's program holds the lesson cells too (locked,
not graded, not `setup`), in their places, and keeps their rich outputs (figures, tables), for feedback that shows
them; everything else is the same: the same sandbox, questions, answers channel and checker program.
The planner and the checker run the setup cell, placeholders for every other name the test cells read, and the test
cells: the planner to record the questions, the checker to judge their answers.

Cells are named by their index in the sanitized notebook (nbgrader's: locked cells restored from the gradebook);
a cell's count (its In [n]) is its place among the cells the sandbox runs, the same in both programs.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nbformat.notebooknode import NotebookNode

SETUP_CELL = "setup"  # the grade id of the locked cell with the imports every test cell relies on


def _meta(cell: NotebookNode) -> dict:
    return cell.metadata.get("nbgrader", {})


def grade_id(cell: NotebookNode) -> str:
    return _meta(cell).get("grade_id", "")


def is_solution(cell: NotebookNode) -> bool:
    """A cell the student writes in (nbgrader's `solution` flag)."""
    return bool(_meta(cell).get("solution"))


def is_test(cell: NotebookNode) -> bool:
    """An autograded test cell as nbgrader restored it: graded, not a solution, locked, with its grade id.

    A cell a student added with made-up metadata lost its grade id to nbgrader (unknown ids are dropped, a
    duplicate id keeps one cell, whose source nbgrader restores), so no cell of the student's is one of these.
    """
    meta = _meta(cell)
    return (
        cell.cell_type == "code"
        and bool(meta.get("grade"))
        and not meta.get("solution")
        and bool(meta.get("locked"))
        and bool(meta.get("grade_id"))
    )


def drop_emptied_metadata(cell: NotebookNode) -> NotebookNode:
    """A cell whose nbgrader metadata nbgrader's DeduplicateIds emptied (`nbgrader: {}`, a duplicate grade id: a
    student who copied a locked cell, id and all) loses the key, and is a plain cell. Left empty, nbgrader's
    metadata check takes it for an old schema and aborts the whole autograde (SchemaTooOldError): one student
    would stop every later submission being recorded. The one place this is decided (grader.preprocessors'
    DropDuplicateIds in nbgrader's sanitizing, grader.classgrade.sanitized in the coordinator's)."""
    if cell.metadata.get("nbgrader") == {}:
        del cell.metadata["nbgrader"]
    return cell


# a cell's names are kept by source up to this many characters (a lesson's longest cell: 2,541), for at most
# CACHED_CELLS sources: 16 MiB at the most, whatever a class hands in
CACHED_SOURCE = 1 << 14
CACHED_CELLS = 1024


def names(source: str) -> tuple[frozenset[str], frozenset[str]]:
    """(names a cell reads, names it binds), IPython magics and shell lines left out. Kept by source: a class's
    notebooks share most cells (the lesson's, locked), and the coordinator reads each cell's names twice a notebook;
    a long cell (a student's pasted megabytes) is read afresh and never kept."""
    return _names(source) if len(source) <= CACHED_SOURCE else _names.__wrapped__(source)


@functools.lru_cache(maxsize=CACHED_CELLS)
def _names(source: str) -> tuple[frozenset[str], frozenset[str]]:
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return frozenset(), frozenset()
    read: set[str] = set()
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
    return frozenset(read), frozenset(bound)


def cell_name(cell: NotebookNode, index: int) -> str:
    """How a reason names a cell: its nbgrader grade id, else its position among the notebook's cells (#1 first)."""
    return cell.metadata.get("nbgrader", {}).get("grade_id") or f"#{index + 1}"


def is_lesson(cell: NotebookNode) -> bool:
    """A locked lesson cell: measures, shows or plots; run only for feedback."""
    meta = _meta(cell)
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
    """Cells to run, as (index, source, count) in order, and the names bound to placeholders before them.

    A cell's count is its In [count] in the autograded notebook, the same for a test cell in both programs. In the
    sandbox's program a test cell's source is None: its place, where the planned questions are asked."""

    cells: tuple[tuple[int, str | None, int], ...]
    placeholders: tuple[str, ...]
    whole: bool = False  # the lesson cells run too, and rich outputs are kept (`--feedback now`)

    def to_json(self) -> dict:
        return {"cells": [list(c) for c in self.cells], "placeholders": list(self.placeholders), "whole": self.whole}


def answers_program(nb: NotebookNode, *, whole: bool = False) -> Program:
    """The sandbox's program: setup, the student's cells and the test cells' places (no source), and with `whole`
    the lesson cells; lesson names that the cells it runs read as placeholders (a lesson cell that runs binds its
    own over them)."""
    run = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code" and (whole or not is_lesson(c))]
    made: set[str] = set()
    for cell in nb.cells:
        if is_lesson(cell):
            made |= names(cell.source)[1]
    read: set[str] = set()
    for _, cell in run:
        read |= set() if is_test(cell) else names(cell.source)[0]
    cells = tuple((i, None if is_test(c) else c.source, n) for n, (i, c) in enumerate(run, 1))
    return Program(cells, tuple(sorted(made & read)), whole)


def checker_program(nb: NotebookNode, *, whole: bool = False) -> Program:
    """The checker's program: the setup cell and the test cells; every other name they read a placeholder. The
    same for both sandbox programs but for the cells' counts, which follow the sandbox's (`whole` as there)."""
    setup = [(i, c) for i, c in enumerate(nb.cells) if is_setup(c)][:1]
    tests = [(i, c) for i, c in enumerate(nb.cells) if is_test(c)]
    defined = names("\n".join(c.source for _, c in setup))[1]
    read: set[str] = set()
    for _, cell in tests:
        read |= names(cell.source)[0]
    unbound = sorted(read - defined - set(dir(builtins)))
    counts = {i: n for i, _, n in answers_program(nb, whole=whole).cells}
    return Program(tuple((i, c.source, counts[i]) for i, c in [*setup, *tests]), tuple(unbound))
