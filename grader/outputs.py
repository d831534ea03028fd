"""Cell outputs that grading writes: errors whose whole traceback is one line naming what happened."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nbformat.notebooknode import NotebookNode


def error_output(ename: str, evalue: str) -> NotebookNode:
    """An error output whose whole traceback is one line, 'ename: evalue'."""
    import nbformat  # seconds to import (jsonschema's format checks): `python -m grader --help` does not wait for it

    return nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])
