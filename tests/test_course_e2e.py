"""The real course, graded end to end on a CPU machine with real nbgrader (no GPU: offline checks).

The one grading test on the real course, kept to what only it can show. Submissions are the generated release
with the solution cells filled in: the reference answers (full marks, and no cell raises: the solutions pass),
the untouched release (zero, and every error is one a stub causes: the harness never crashes), and one wrong
answer that fails only a hidden test, so it must lose exactly that cell's points and its feedback must say
"failed" without quoting the hidden test. Wrong answers of every other kind are graded on the toy assignment
(tests/test_grader_cli.py: raises, hangs, deaf kernels), the checks they call are tested in the lessons' check
tests, and the verdict lines in tests/test_preprocessors.py. The class is tests/now_class.py's, graded with
`--feedback now` beside tests/test_feedback_now.py's students, once a run.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from grader.feedback import html_text
from grader.validate import STUB_FAILURES
from labcore.device import gpu_available
from labcore.lessons import lesson, names
from labcore.pending import PENDING_GPU

from installed import autograded_points
from now_class import end_to_end, hidden_only, now_class

pytestmark = [
    pytest.mark.skipif(gpu_available(), reason="expected scores are those of the offline checks"),
    pytest.mark.slow(seconds=140),  # grades the real course, whole notebooks, and writes feedback
]
ASSIGNMENTS = names()


def _points(assignment: str, cell_id: str) -> float:
    nb = nbformat.read(lesson(assignment).solutions, as_version=4)
    return float(next(c for c in nb.cells if c.get("id") == cell_id).metadata["nbgrader"].get("points", 0))


HIDDEN_ONLY = hidden_only()  # each lesson's wrong answer that only a hidden test catches: its test cell, its edits
# student -> the score each assignment must get (tests/now_class.py hands each in)
CASES = {
    "reference": {a: autograded_points(a) for a in ASSIGNMENTS},
    "untouched": dict.fromkeys(ASSIGNMENTS, 0),
    "fails_a_hidden_test": {a: autograded_points(a) - _points(a, test) for a, (test, _) in HIDDEN_ONLY.items()},
}
assert set(CASES) == set(end_to_end())


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The class of tests/now_class.py (graded once a run, with tests/test_feedback_now.py's students): its grading
    root, and the export's raw score by (student, assignment)."""
    made = now_class(tmp_path_factory)
    return made.root, made.scores


def _errors(root: Path, student: str, assignment: str) -> list[tuple[str, str]]:
    """(cell id, error name) of every error in a submission's autograded notebook."""
    nb = nbformat.read(root / "autograded" / student / assignment / f"{assignment}.ipynb", as_version=4)
    return [
        (cell.get("id"), out.ename)
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.output_type == "error"
    ]


@pytest.mark.parametrize("student", list(CASES))
def test_scores(graded, student):
    """Each submission gets exactly the autograded points its answers deserve."""
    root, scores = graded
    for assignment, expected in CASES[student].items():
        if student == "reference":  # offline, a cell only a GPU can decide is pending: 0 until graded live
            expected -= sum(_points(assignment, cell) for cell in _pending(root, student, assignment))
        assert scores[(student, assignment)] == expected, (student, assignment, scores)


def _pending(root: Path, student: str, assignment: str) -> list[str]:
    return [cell for cell, ename in _errors(root, student, assignment) if ename == PENDING_GPU]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_solutions_pass_and_the_stubs_fail_cleanly(graded, assignment):
    """The reference raises in no cell at all and says it replays; the untouched release fails only by its stubs."""
    root, _ = graded
    assert [e for e in _errors(root, "reference", assignment) if e[1] != PENDING_GPU] == []
    # pending a GPU offline: only a lesson's timed cells, said as pending (labcore.pending), never another error
    assert all("time" in cell for cell in _pending(root, "reference", assignment))
    nb = nbformat.read(root / "autograded" / "reference" / assignment / f"{assignment}.ipynb", as_version=4)
    streams = [o.text for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "stream"]
    assert any("replay of" in text and "no GPU here" in text for text in streams), "no cell printed the mode line"
    stub_errors = _errors(root, "untouched", assignment)
    assert stub_errors and [e for e in stub_errors if e[1] not in STUB_FAILURES] == []


def test_feedback_has_no_hidden_test_source(graded):
    """No feedback page quotes a hidden test line of either assignment."""
    root, _ = graded
    hidden = []
    for assignment in ASSIGNMENTS:
        nb = nbformat.read(lesson(assignment).solutions, as_version=4)
        for cell in nb.cells:
            inside = False
            for line in cell.source.splitlines():
                if "BEGIN HIDDEN TESTS" in line:
                    inside = True
                elif "END HIDDEN TESTS" in line:
                    inside = False
                elif inside and len(line.strip()) > 8:
                    hidden.append(line.strip())
    pages = list((root / "feedback").glob("*/*/*.html"))
    assert len(pages) >= len(CASES)
    for page in pages:
        text = page.read_text()
        assert not [line for line in hidden if line in text], page


def test_some_lesson_declares_a_wrong_answer_only_a_hidden_test_catches():
    """Not vacuous: the hidden-test case below is graded for at least one lesson."""
    assert HIDDEN_ONLY


@pytest.mark.parametrize("assignment", list(HIDDEN_ONLY))
def test_a_failed_hidden_test_is_a_verdict_in_the_feedback(graded, assignment):
    """The wrong answer failed inside the hidden region of its test cell (day 54's: a sweep right for the 2 buffers
    the visible check asks about, wrong for the 3 only the hidden check asks about); its feedback says 'failed' with
    the score, nothing more."""
    root, _ = graded
    test = HIDDEN_ONLY[assignment][0]
    assert _errors(root, "fails_a_hidden_test", assignment) == [(test, "AssertionError")]
    text = html_text(root / "feedback" / "fails_a_hidden_test" / assignment / f"{assignment}.html")
    assert f"hidden tests: failed -- score 0 / {_points(assignment, test):g}" in text
