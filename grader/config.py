"""nbgrader settings of an instructor's grading directory.

`python -m grader setup DIR` writes DIR/nbgrader_config.py (grader.grading), which calls `configure_grading`
below, so plain `nbgrader` commands run in DIR (formgrader included) grade exactly as `python -m grader` does.
This module imports nbgrader and the course's preprocessors; `python -m grader` itself never imports it (the
nbgrader processes it starts do, when they load that file), so its commands start without that cost.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.converters import Autograde
from nbgrader.nbgraderformat import common as nbgraderformat_common
from nbgrader.preprocessors import (
    CheckCellMetadata,
    DeduplicateIds,
    Execute,
    GetGrades,
    OverwriteCells,
    OverwriteKernelspec,
    SaveAutoGrades,
)

from grader.layout import CELL_TIMEOUT_S, COURSE_ID, db_url
from grader.preprocessors import (
    DropDuplicateIds,
    HideHiddenTests,
    Replay,
    SafeText,
    SourceKernelspec,
    SourceOverwriteCells,
    SourceRestoreCells,
    StderrToStdout,
)


def configure_grading(c: Any, *, root: str, repo: str) -> None:
    """nbgrader settings of a grading directory: own gradebook, timeouts, stderr not a failure, hidden tests hidden."""
    c.CourseDirectory.root = root
    c.CourseDirectory.course_id = COURSE_ID
    c.CourseDirectory.db_url = db_url(Path(root))
    c.Execute.timeout = CELL_TIMEOUT_S
    c.Execute.interrupt_on_timeout = True  # a timed-out cell is interrupted and fails; the next cells still run
    # nbconvert validates the notebook after every preprocessor by default (twelve schema validations a notebook
    # in autograde); optimistic, once after the last one: a notebook a preprocessor broke is still refused
    c.Exporter.optimistic_validation = True
    defaults = Autograde.class_traits()["autograde_preprocessors"].default()
    chain = [Replay if pp is Execute else pp for pp in defaults]
    chain.insert(chain.index(SaveAutoGrades), StderrToStdout)  # before nbgrader scores stderr as a failure
    # nbgrader checks the cells' metadata again after executing, in case the student's code changed it while it
    # ran in nbgrader's kernel; here no student code runs there (Replay fills outputs from the sandbox's
    # and the checker's data, never metadata), and the check before grading (sanitize) stays. A tenth of a second
    # of schema validation per notebook, which a class pays hundreds of times.
    chain = [pp for pp in chain if pp is not CheckCellMetadata]
    c.Autograde.autograde_preprocessors = chain
    sanitize = Autograde.class_traits()["sanitize_preprocessors"].default()
    # nbgrader's own sanitizing, its gradebook lookups answered from the source records read once per command
    # (grader.sanitize.SourceCells: a connection per notebook and a query per cell before), the notebook's
    # strings made safe first
    ours = {
        DeduplicateIds: DropDuplicateIds,
        OverwriteKernelspec: SourceKernelspec,
        OverwriteCells: SourceOverwriteCells,
    }
    sanitize = [SafeText, *(ours.get(pp, pp) for pp in sanitize)]
    # the course's cells a notebook lost put back, before nbgrader looks for them (grader.sanitize.restore_cells)
    sanitize.insert(sanitize.index(DropDuplicateIds) + 1, SourceRestoreCells)
    c.Autograde.sanitize_preprocessors = sanitize
    c.GenerateFeedback.preprocessors = [GetGrades, CSSHTMLHeaderPreprocessor, HideHiddenTests]
    nbgraderformat_common.jsonschema = CheckedSchemas()
    _prepend_pythonpath(repo)


class CheckedSchemas:
    """What nbgrader's metadata check calls `jsonschema`: the same validation, with each schema checked against
    its metaschema once per process rather than once per cell (nbgrader calls `jsonschema.validate(meta, schema)`
    for every cell of every notebook, a quarter of its autograde time, for a schema that never changes).
    Everything else is jsonschema's own."""

    def __init__(self) -> None:
        self._validators: dict[str, Any] = {}  # the schema as canonical JSON -> its checked validator

    def validate(self, instance: Any, schema: Any) -> None:
        """jsonschema.validate: the best-matching error raised, if any."""
        key = json.dumps(schema, sort_keys=True)  # nbgrader reads the schema anew for every notebook
        if key not in self._validators:
            kind = jsonschema.validators.validator_for(schema)
            kind.check_schema(schema)
            self._validators[key] = kind(schema)
        error = jsonschema.exceptions.best_match(self._validators[key].iter_errors(instance))
        if error is not None:
            raise error

    def __getattr__(self, name: str) -> Any:
        return getattr(jsonschema, name)


def _prepend_pythonpath(repo: str) -> None:
    """Kernels started by nbgrader inherit this, so notebooks import the checkout's packages."""
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if repo not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([repo, *parts])
