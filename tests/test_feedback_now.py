"""`--feedback now` is the one grading engine with the lesson cells added: wrong and cheating submissions of the
adversarial corpus (tests/corpus.py) get the same points through it as through autograde's default, on the real
course with real nbgrader, and a submission that stops its own sandbox is killed at the limit and reported.

One grading directory (tests/now_class.py's, shared with tests/test_course_e2e.py's students): setup, collect,
`autograde --feedback now`, reading the gradebook after it. The same submissions graded by autograde's default are
tests/test_corpus.py's class (their points, the note a lesson cell shows there, the stopped sandbox in its table),
graded once for both.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from corpus import CORPUS, POINTS

from grader.layout import COURSE_ID, KERNEL_STUCK, db_url

from now_class import ADVERSARIAL, LIVE, SHOWS_INPUTS, now_class

pytestmark = pytest.mark.slow(seconds=110)  # grades nine notebooks whole, one of them stopped until the limit
CASES = ADVERSARIAL
SUBS = [s for s in CORPUS if s.name in CASES]


def _points(root: Path) -> dict[tuple[str, str], float | None]:
    from nbgrader.api import Gradebook, MissingEntry  # seconds to import: after grading, which imports it anyway

    found: dict[tuple[str, str], float | None] = {}
    with Gradebook(db_url(root), COURSE_ID) as gb:
        for sub in SUBS:
            for cell in POINTS[sub.assignment]:
                try:
                    found[(sub.name, cell)] = gb.find_grade(cell, sub.assignment, sub.assignment, sub.name).score
                except MissingEntry:
                    found[(sub.name, cell)] = None
    return found


def _autograded(root: Path, name: str, assignment: str) -> nbformat.NotebookNode:
    return nbformat.read(root / "autograded" / name / assignment / f"{assignment}.ipynb", as_version=4)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """tests/now_class.py's class (graded once a run, with tests/test_course_e2e.py's students)."""
    assert len(SUBS) == len(CASES)
    made = now_class(tmp_path_factory)
    return made.said, _points(made.root), {s.name: _autograded(made.root, s.name, s.assignment) for s in SUBS}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    return now_class(tmp_path_factory)


@pytest.mark.parametrize("name", CASES)
def test_feedback_now_gives_the_points_autograde_gives(graded, name):
    """The corpus's expected points, which autograde's default gives it (tests/test_corpus.py's test_points)."""
    sub = next(s for s in SUBS if s.name == name)
    expected = sub.expected(gpu=LIVE)
    _, points, _ = graded
    got = {cell: points[(name, cell)] for cell in POINTS[sub.assignment]}
    assert got == expected, f"{name} with --feedback now: got {got}, expected {expected}"


def test_feedback_now_shows_the_lesson_cells(graded):
    """The lesson's figures are in the autograded notebook with --feedback now (without it, the note:
    tests/test_corpus.py's test_a_lesson_cell_says_it_did_not_run)."""
    _, _, now = graded
    shown = next(
        c for c in now["d54-only-16-chunks"].cells if c.metadata.get("nbgrader", {}).get("grade_id") == "timeline"
    )
    assert any("image/png" in o.get("data", {}) for o in shown.outputs), shown.outputs  # as the inline backend shows it


def test_a_sandbox_stopped_by_its_own_cell_is_killed_and_reported_as_autograde_does(graded):
    """d54-stops-parent-in-sweep SIGSTOPs its zygote in the sweep cell: the trusted clock kills the sandbox at the
    limit, the cell says so, the cells before keep their points, and the table names it (as without --feedback:
    tests/test_corpus.py's test_a_sandbox_stopped_by_its_own_cell_is_killed_and_reported)."""
    done, _, notebooks = graded
    nb = notebooks["d54-stops-parent-in-sweep"]
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert any(o.ename == KERNEL_STUCK and "was stopped (SIGSTOP)" in o.evalue for o in errors), errors
    row = next(x for x in done.splitlines() if x.startswith("d54-stops-parent-in-sweep "))
    assert "was stopped (SIGSTOP) and killed at the" in row, row


def test_a_page_showing_the_hidden_inputs_is_deleted_and_named(made):
    """d54-prints-prediction-inputs and d56-prints-break-even-inputs keep every input the graded questions hand them
    and print them in a later cell: the hidden questions' drawn numbers reach their autograded notebooks, so `grader
    feedback` deletes each one's page and names it, exit 1 (tests/now_class.py); their points stay the answers' (above),
    and every other student's page of those lessons is kept."""
    errors = [line for line in made.feedback_err.splitlines() if line.startswith("error: ")]
    assert len(errors) == len(SHOWS_INPUTS), errors
    for name in SHOWS_INPUTS:
        assignment = next(s.assignment for s in SUBS if s.name == name)
        page = f"feedback/{name}/{assignment}/{assignment}.html"
        assert [e for e in errors if e.startswith(f"error: {page} showed a hidden test's inputs (")], (page, errors)
        assert not (made.root / page).exists()
        kept = {p.parent.parent.name for p in (made.root / "feedback").glob(f"*/{assignment}/{assignment}.html")}
        graded = {p.parent.parent.name for p in (made.root / "autograded").glob(f"*/{assignment}/{assignment}.ipynb")}
        assert kept == graded - set(SHOWS_INPUTS) and kept, (assignment, kept, graded)
