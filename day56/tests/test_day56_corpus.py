"""The day-56 corpus (day56/tests/corpus.py), quickly: each submission whose points do not hang on the grading
sandbox (withheld references, a first cell's patches, the release's stubs) has its answers run through the test
cells of the solutions notebook here, in the student's own kernel, and scores what the corpus says offline. The
whole corpus is graded end to end, sandbox and all, by tests/test_corpus.py."""

from __future__ import annotations

import types
from pathlib import Path

import nbformat
import pytest

from day56.tests.corpus import POINTS, submissions
from labcore.device import gpu_available
from labcore.pending import PendingGPU

NOTEBOOK = Path(__file__).resolve().parents[1] / "solutions" / "day56.ipynb"
SANDBOX_ONLY = {
    "d56-untouched",
    "d56-stubs-left",
    "d56-calls-the-model",
    "d56-lessons-schedule",
    "d56-reads-the-key",
    "d56-patches-the-checks",
    "d56-forges-the-trace",
}


def _made(name, assignment, tries, points, **kwargs):
    return types.SimpleNamespace(name=name, assignment=assignment, tries=tries, points=points, **kwargs)


def _full(assignment, **points):
    return {**POINTS, **points}


def _zero(assignment, **points):
    return {**dict.fromkeys(POINTS, 0), **points}


CORPUS = submissions(types.SimpleNamespace(Submission=_made, full=_full, zero=_zero))


def _cells():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    return {cell["id"]: cell for cell in notebook.cells}


def _strip(source: str, *markers: str) -> str:
    return "\n".join(line for line in source.splitlines() if not any(m in line for m in markers))


def test_the_corpus_names_every_graded_cell_of_the_notebook():
    graded = {
        i: c.metadata["nbgrader"].get("points")
        for i, c in _cells().items()
        if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"
    }
    assert graded == POINTS
    for sub in CORPUS:
        assert set(sub.points) == set(POINTS), sub.name
        assert all(sub.points[c] == 0 for c in getattr(sub, "pending", ())), sub.name


@pytest.mark.skipif(gpu_available(), reason="the offline points: with a GPU the timed cell measures")
@pytest.mark.parametrize("sub", [s for s in CORPUS if s.name not in SANDBOX_ONLY], ids=lambda s: s.name)
def test_each_submission_scores_its_offline_points(sub, monkeypatch, as_graded):
    monkeypatch.delenv("LABCORE_ANSWERS", raising=False)
    cells = _cells()
    namespace: dict = {"__name__": "__main__"}
    exec(_strip(cells["setup"].source, "%matplotlib"), namespace)
    for cell_id in ("break_even_launches", "my_capturable", "my_capture_answers"):
        source = (getattr(sub, "edits", None) or {}).get(
            cell_id, _strip(cells[cell_id].source, "### BEGIN SOLUTION", "### END SOLUTION")
        )
        exec(source, namespace)
    for test_id, points in POINTS.items():
        source = _strip(cells[test_id].source, "HIDDEN TESTS")
        try:
            exec(source, namespace)
            got, why = points, "passed"
        except PendingGPU:
            got, why = 0, "pending"
        except AssertionError as exc:
            got, why = 0, str(exc)[:200]
        assert got == sub.points[test_id], f"{sub.name} {test_id}: {why}"
        assert (why == "pending") == (test_id in getattr(sub, "pending", ())), f"{sub.name} {test_id}: {why}"
