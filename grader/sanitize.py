"""A handed-in notebook sanitized as nbgrader's autograde does it, by both passes that sanitize one: the coordinator
(grader.classgrade, before grading) and nbgrader's recording pass (grader.config's chain of
grader.preprocessors). Both must leave the same notebook: the recording pass replays the coordinator's outputs into
its own sanitized copy only where every cell's source matches (grader.preprocessors.Replay).

The steps, in order: the notebook's strings made safe to write (lone surrogates and controls as U+FFFD, as in
printed output: a notebook is JSON, whose escapes can hold what UTF-8 cannot), outputs cleared, duplicate ids
dropped (grader.program.drop_emptied_metadata), the kernelspec and every locked cell restored from the gradebook's
records of the source. Those records are read once per assignment (SourceCells) and answer nbgrader's own
OverwriteCells code, instead of a gradebook connection per notebook and a query per cell (about 60 ms a notebook).

nbgrader and nbformat are imported where they are used: `python -m grader --help` does not wait for them.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from grader.layout import COURSE_ID, RESTORED
from grader.outputs import clean_data
from grader.program import drop_emptied_metadata, grade_id

if TYPE_CHECKING:
    from nbformat.notebooknode import NotebookNode


class SourceCells:
    """The gradebook's record of one assignment's source notebooks, read once: what nbgrader's OverwriteKernelspec
    and OverwriteCells look up for each notebook they sanitize (its kernelspec; each cell's type, lock, checksum
    and source; each grade or task cell's points), answered as the Gradebook's find_* calls answer, MissingEntry
    included. Nothing writes these records while a class is graded (recording writes grades only)."""

    def __init__(self, db_url: str, assignment: str) -> None:
        from nbgrader.api import Gradebook, MissingEntry  # seconds to import: only once there is a gradebook

        self.assignment = assignment
        self.notebooks: dict[str, SimpleNamespace] = {}
        self.cells: dict[tuple[str, str], SimpleNamespace] = {}  # (cell name, notebook) -> the source cell
        self.graded: dict[tuple[str, str], SimpleNamespace] = {}  # (cell name, notebook) -> its points
        self.order: dict[str, list[str]] = {}  # notebook -> its cells' names, in the source's order
        self.flags: dict[tuple[str, str], dict[str, bool]] = {}  # (cell name, notebook) -> grade, solution, task
        with Gradebook(db_url, COURSE_ID) as gb:
            try:
                notebooks = gb.find_assignment(assignment).notebooks
            except MissingEntry:  # each notebook then fails as nbgrader's own lookup fails: not graded, saying why
                notebooks = []
            for nb in notebooks:
                self.notebooks[nb.name] = SimpleNamespace(name=nb.name, kernelspec=nb.kernelspec)
                for c in nb.source_cells:
                    fields = {k: getattr(c, k) for k in ("name", "cell_type", "locked", "checksum", "source")}
                    self.cells[(c.name, nb.name)] = SimpleNamespace(**fields)
                self.order[nb.name] = [c.name for c in nb.source_cells]  # the source's order, as nbgrader's own
                for c in [*nb.task_cells, *nb.grade_cells]:  # a grade cell first, as find_graded_cell looks
                    self.graded[(c.name, nb.name)] = SimpleNamespace(name=c.name, max_score=c.max_score)
                kinds = (("grade", nb.grade_cells), ("solution", nb.solution_cells), ("task", nb.task_cells))
                for flag, cells in kinds:
                    for c in cells:
                        self.flags.setdefault((c.name, nb.name), {})[flag] = True

    @staticmethod
    def _found(table: dict, key: Any, what: str) -> Any:
        from nbgrader.api import MissingEntry

        if key not in table:
            raise MissingEntry(f"No such {what}: {key}")
        return table[key]

    def find_notebook(self, name: str, assignment: str) -> SimpleNamespace:
        return self._found(self.notebooks if assignment == self.assignment else {}, name, "notebook")

    def find_source_cell(self, name: str, notebook: str, assignment: str) -> SimpleNamespace:
        return self._found(self.cells if assignment == self.assignment else {}, (name, notebook), "source cell")

    def find_graded_cell(self, name: str, notebook: str, assignment: str) -> SimpleNamespace:
        return self._found(self.graded if assignment == self.assignment else {}, (name, notebook), "grade cell")

    def metadata(self, name: str, notebook: str) -> dict[str, Any]:
        """The nbgrader metadata of a source cell, as the release's notebook carries it."""
        cell, flags = self.cells[(name, notebook)], self.flags.get((name, notebook), {})
        meta: dict[str, Any] = {
            "cell_type": cell.cell_type,
            "checksum": cell.checksum,
            "grade": flags.get("grade", False),
            "grade_id": name,
            "locked": cell.locked,
            "schema_version": 3,
            "solution": flags.get("solution", False),
            "task": flags.get("task", False),
        }
        if meta["grade"] or meta["task"]:
            meta["points"] = self.graded[(name, notebook)].max_score
        return meta


_SOURCES: dict[tuple[str, str], SourceCells] = {}  # (db url, assignment) -> read once in this process
HIDDEN = ("BEGIN HIDDEN TESTS", "END HIDDEN TESTS")  # nbgrader's ClearHiddenTests delimiters (its defaults)


def source_of(resources: dict[str, Any], given: SourceCells | None = None) -> SourceCells:
    """`given`, else this process's SourceCells of the notebook's assignment (an nbgrader command records one
    batch: nothing writes the source records meanwhile)."""
    if given is not None:
        return given
    key = (resources["nbgrader"]["db_url"], resources["nbgrader"]["assignment"])
    if key not in _SOURCES:
        _SOURCES[key] = SourceCells(*key)
    return _SOURCES[key]


def safe_notebook(nb: NotebookNode) -> NotebookNode:
    """Every string and key of the notebook safe to write (grader.outputs.clean_data)."""
    import nbformat  # seconds to import (jsonschema's format checks)

    return nbformat.from_dict(clean_data(nb))


def restore_cells(nb: NotebookNode, resources: dict[str, Any], source: SourceCells) -> NotebookNode:
    """The course's cells a notebook lost, put back before nbgrader's OverwriteCells looks for them by their
    metadata (nbgrader finds a cell only by its nbgrader metadata, and silently grades a missing test cell 0):

    - a cell without nbgrader metadata whose cell id names a source cell the notebook lacks gets that cell's
      metadata back (an editor that drops unknown metadata: VS Code, Colab, a script), so OverwriteCells then treats
      it as the release did: a locked cell's source restored, an answer cell the student's own;
    - a locked cell still missing (a test cell deleted, the setup cell) goes back as the source has it, just before
      the next of the course's cells the notebook has (at the end if none): after the student's own cells since the
      one before it, their answer among them.

    An answer cell is never made up: a deleted answer stays deleted (the test cell asking for it says so). Each
    restored cell is marked (RESTORED in its metadata) and the autograde table names the graded ones."""
    info = resources["nbgrader"]
    notebook = info["notebook"]
    order = source.order.get(notebook, []) if info["assignment"] == source.assignment else []
    known = set(order)
    have = {grade_id(cell) for cell in nb.cells if grade_id(cell)}
    ids = {cell.get("id") for cell in nb.cells}
    by_text = {  # a locked cell's text as the source has it, and as the release shows it (hidden tests cleared)
        text: name
        for name in reversed(order)
        if name not in have and (found := source.cells[(name, notebook)]).locked
        for text in (found.source.strip(), _released(found.source))
    }
    for cell in nb.cells:
        if "nbgrader" in cell.metadata:
            continue
        name = cell.get("id")
        how = "its cell id"
        if name not in known or name in have:
            name, how = by_text.get(cell.source.strip()), "its text, a locked cell's"
        if name is not None and name not in have:
            cell.metadata["nbgrader"] = source.metadata(name, notebook)
            cell.metadata[RESTORED] = f"its nbgrader metadata was missing (found by {how})"
            have.add(name)
    where = {grade_id(cell): index for index, cell in enumerate(nb.cells) if grade_id(cell)}
    before: dict[int, list[NotebookNode]] = {}  # index of the cell they precede (len: the end) -> cells put back
    anchor = len(nb.cells)
    for name in reversed(order):
        if name in where:
            anchor = where[name]
        elif source.cells[(name, notebook)].locked:
            minor = nb.get("nbformat_minor", 5)
            before.setdefault(anchor, []).insert(0, _source_cell(name, notebook, source, ids, minor))
    if before:
        at_end = before.get(len(nb.cells), [])
        nb.cells = [c for index, cell in enumerate(nb.cells) for c in (*before.get(index, []), cell)] + at_end
    return nb


def _released(text: str) -> str:
    """A cell's text as the release shows it: nbgrader's hidden-test regions (markers and all) cleared."""
    kept, inside = [], False
    for line in text.split("\n"):
        if HIDDEN[0] in line:
            inside = True
        elif HIDDEN[1] in line:
            inside = False
        elif not inside:
            kept.append(line)
    return "\n".join(kept).strip()


def _source_cell(name: str, notebook: str, source: SourceCells, ids: set, minor: int) -> NotebookNode:
    """A locked source cell as the release has it (nbgrader metadata, source), marked RESTORED; a cell id unique in
    the notebook (its name, unless a cell has it) where the notebook's format has cell ids."""
    import nbformat  # seconds to import (jsonschema's format checks)

    found = source.cells[(name, notebook)]
    metadata = {"deletable": False, "editable": False, "nbgrader": source.metadata(name, notebook)}
    metadata[RESTORED] = "missing from the notebook: put back as the course has it"
    cell: dict[str, Any] = {"cell_type": found.cell_type, "metadata": metadata, "source": found.source}
    if found.cell_type == "code":
        cell.update(execution_count=None, outputs=[])
    if minor >= 5:
        cell["id"] = next(c for c in (name, *(f"{name}-{n}" for n in range(1, len(ids) + 2))) if c not in ids)
        ids.add(cell["id"])
    return nbformat.from_dict(cell)


def overwrite_kernelspec(nb: NotebookNode, resources: dict[str, Any], source: SourceCells) -> NotebookNode:
    """nbgrader's OverwriteKernelspec, its lookup answered by `source`."""
    info = resources["nbgrader"]
    found = source.find_notebook(info["notebook"], info["assignment"])
    if found.kernelspec is not None and (kernelspec := json.loads(found.kernelspec)):
        nb.metadata["kernelspec"] = kernelspec
    return nb


def overwrite_cells(step: Any, nb: NotebookNode, resources: dict[str, Any], source: SourceCells) -> NotebookNode:
    """nbgrader's OverwriteCells (`step`, an instance), its own code cell by cell, every lookup answered by
    `source` instead of a gradebook query."""
    from nbgrader.preprocessors import NbGraderPreprocessor  # seconds to import

    step.notebook_id = resources["nbgrader"]["notebook"]
    step.assignment_id = resources["nbgrader"]["assignment"]
    step.gradebook = source
    return NbGraderPreprocessor.preprocess(step, nb, resources)[0]


def sanitized(db_url: str, assignment: str, student: str, path: Path, source: SourceCells) -> NotebookNode:
    """The coordinator's pass: the notebook at `path` as the recording pass will sanitize it (nbgrader's metadata
    check aside: that pass refuses a notebook with corrupted metadata by name; checked here too it would cost a
    second tenth of a second of schema validation a notebook)."""
    import nbformat  # seconds to import (jsonschema's format checks)
    from nbgrader.preprocessors import ClearOutput, DeduplicateIds, OverwriteCells  # seconds to import

    resources: dict[str, Any] = {
        "nbgrader": {"db_url": db_url, "assignment": assignment, "notebook": path.stem, "student": student}
    }
    nb = safe_notebook(nbformat.read(path, as_version=4))
    nb, resources = ClearOutput().preprocess(nb, resources)
    nb, resources = DeduplicateIds().preprocess(nb, resources)
    nb.cells = [drop_emptied_metadata(cell) for cell in nb.cells]  # as grader.preprocessors.DropDuplicateIds
    nb = restore_cells(nb, resources, source)
    nb = overwrite_kernelspec(nb, resources, source)
    return overwrite_cells(OverwriteCells(), nb, resources, source)
