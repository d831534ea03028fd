"""Day 55's corpus graded end to end (offline: no GPU in the checker) by the class path: setup, collect, autograde in
the sandbox with the references withheld, the trusted checker judging answers as data, export. Every submission's
every graded cell must score what day55/tests/corpus.py says; cells pending a GPU say so and only those. The whole
corpus, with honest copies of each reference, is tests/test_corpus.py's job: in a run that holds it, this file reads
its day-55 grades from that class (tests/corpus_class.py); alone, it grades only its own, quicker."""

from __future__ import annotations

import csv

import nbformat
import pytest

from day55.tests import corpus as corpus_of_day55
from labcore.device import gpu_available
from tests.corpus import CORPUS, POINTS
from tests.corpus_class import graded_class, whole_corpus_runs
from tests.installed import grader

# alone it grades its 20-odd submissions; beside tests/test_corpus.py it reads that class, so it starts after it
pytestmark = pytest.mark.slow(seconds=20, last=True)
DAY55 = [s for s in CORPUS if s.assignment == corpus_of_day55.A]  # gathered with every lesson's, as graded


@pytest.fixture(scope="module")
def graded(request, tmp_path_factory):
    if whole_corpus_runs(request.session):  # the run grades the whole corpus anyway: its day-55 grades
        whole = graded_class(tmp_path_factory)
        points = {(name, cell): p for (name, a, cell), p in whole.points.items() if a == corpus_of_day55.A}
        return whole.root, points, {s: status for (s, a), status in whole.status.items() if a == corpus_of_day55.A}
    from grader.layout import COURSE_ID, db_url

    base = tmp_path_factory.mktemp("corpus55")
    subs, root = base / "submissions", base / "grading"
    for sub in DAY55:
        sub.write(subs / sub.name)
    steps = [
        ("setup", str(root)),
        ("collect", str(root), str(subs)),
        ("autograde", str(root), "--assignment", corpus_of_day55.A, "--jobs", "1", "--timeout", "300"),
        ("export", str(root), "--to", str(base / "grades.csv")),
    ]
    for step in steps:
        done = grader(*step)
        assert done.rc == 0, (step, done.out[-3000:], done.err[-3000:])
    from nbgrader.api import Gradebook, MissingEntry

    points = {}
    with Gradebook(db_url(root), COURSE_ID) as gb:
        for sub in DAY55:
            for cell in POINTS[corpus_of_day55.A]:
                try:
                    points[(sub.name, cell)] = gb.find_grade(cell, sub.assignment, sub.assignment, sub.name).score
                except MissingEntry:
                    points[(sub.name, cell)] = None
    with open(base / "grades.csv") as fh:
        status = {r["student_id"]: r["status"] for r in csv.DictReader(fh) if r["assignment"] == corpus_of_day55.A}
    return root, points, status


@pytest.mark.parametrize("sub", DAY55, ids=[s.name for s in DAY55])
def test_points(graded, sub):
    _, points, _ = graded
    got = {cell: points[(sub.name, cell)] for cell in POINTS[sub.assignment]}
    assert got == sub.expected(gpu=gpu_available()), sub.tries


@pytest.mark.parametrize("sub", DAY55, ids=[s.name for s in DAY55])
def test_only_the_cells_pending_a_gpu_say_so(graded, sub):
    root, _, _ = graded
    nb = nbformat.read(root / "autograded" / sub.name / sub.assignment / f"{sub.assignment}.ipynb", as_version=4)
    pending = {
        cell.id
        for cell in nb.cells
        if any(o.output_type == "error" and o.ename == "PendingGPU" for o in cell.get("outputs", []))
    }
    assert pending == (set() if gpu_available() else set(sub.pending))


def test_the_corpus_earns_and_loses_every_cell():
    for cell, top in POINTS[corpus_of_day55.A].items():
        assert any(s.expected(gpu=True)[cell] == top for s in DAY55), cell
        assert any(s.expected(gpu=True)[cell] == 0 for s in DAY55), cell
