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

from grader.layout import COURSE_ID
from grader.outputs import clean_data
from grader.program import drop_emptied_metadata

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
                for c in [*nb.task_cells, *nb.grade_cells]:  # a grade cell first, as find_graded_cell looks
                    self.graded[(c.name, nb.name)] = SimpleNamespace(name=c.name, max_score=c.max_score)

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


_SOURCES: dict[tuple[str, str], SourceCells] = {}  # (db url, assignment) -> read once in this process


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
    nb = overwrite_kernelspec(nb, resources, source)
    return overwrite_cells(OverwriteCells(), nb, resources, source)
