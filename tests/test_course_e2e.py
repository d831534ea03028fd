"""The real course, graded end to end on a CPU machine with real nbgrader (no GPU: offline checks).

Submissions are the generated release with the solution cells filled in: the reference answers, the
untouched release, and wrong answers that must lose exactly the points of the cells they break.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from labcore.device import gpu_available

pytestmark = pytest.mark.skipif(gpu_available(), reason="expected scores are those of the offline checks")
ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 20

WRONG_OFFSET = '''def my_pipelined(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in((k + 1) % ctx.n_chunks, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)'''
EARLY_REUSE = '''def my_pipelined(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair, stream=(pair + 1) % ctx.n_buffers)'''
HARD_CODED = '''def sweep_ratios(record, buffers):
    return {4 * 2**20: 0.559, 64 * 2**20: 0.582, 256 * 2**20: 0.643}'''
RAISES = '''def my_pipelined(ctx):
    raise RuntimeError("my kernel blew up")'''
HANGS = '''def my_pipelined(ctx):
    while True:
        pass'''
UNSORTED_IDS = '''def order_ids(ids):
    return ids.copy(), np.arange(ids.size)'''
WRONG_RESTORE = '''def order_ids(ids):
    order = np.argsort(ids, kind="stable")
    return ids[order], order'''

# student -> assignment -> {cell id: source}, plus the autograded score each must get (out of 10)
CASES = {
    "reference": ({"day54": {}, "zero_copy": {}}, {"day54": 10, "zero_copy": 10}),
    "untouched": ({"day54": None, "zero_copy": None}, {"day54": 0, "zero_copy": 0}),
    "wrong_offset": ({"day54": {"my_pipelined": WRONG_OFFSET}}, {"day54": 7}),
    "early_reuse": ({"day54": {"my_pipelined": EARLY_REUSE}}, {"day54": 7}),
    "hard_coded": ({"day54": {"sweep_ratios": HARD_CODED}}, {"day54": 8}),
    "raises": ({"day54": {"my_pipelined": RAISES}}, {"day54": 4}),
    "hangs": ({"day54": {"my_pipelined": HANGS}}, {"day54": 4}),
    "unsorted_ids": ({"zero_copy": {"gather_exercise": UNSORTED_IDS}}, {"zero_copy": 8}),
    "wrong_restore": ({"zero_copy": {"gather_exercise": WRONG_RESTORE}}, {"zero_copy": 5}),
}


def _submission(assignment: str, edits: dict[str, str] | None) -> nbformat.NotebookNode:
    """The release, with the reference solutions filled in and then `edits` applied (None: untouched)."""
    release = nbformat.read(ROOT / "course" / assignment / f"{assignment}.ipynb", as_version=4)
    if edits is None:
        return release
    solved = {c["id"]: c for c in nbformat.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb",
                                                  as_version=4).cells}
    for cell in release.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            cell.source = "\n".join(line for line in solved[cell["id"]].source.splitlines()
                                     if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line)
        if cell["id"] in edits:
            cell.source = edits[cell["id"]] if cell["id"] != "gather_exercise" else \
                _replace_function(cell.source, edits[cell["id"]])
    return release


def _replace_function(source: str, new: str) -> str:
    """Swap one top-level function (named in `new`) inside a cell that defines several."""
    name = new.split("(")[0].removeprefix("def ")
    head, _, rest = source.partition(f"def {name}(")
    _, _, tail = rest.partition("\n\n\n")
    return head + new + ("\n\n\n" + tail if tail else "\n")


def grader(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("e2e")
    subs, root = base / "submissions", base / "grading"
    for student, (assignments, _) in CASES.items():
        (subs / student).mkdir(parents=True)
        for assignment, edits in assignments.items():
            nbformat.write(_submission(assignment, edits), subs / student / f"{assignment}.ipynb")
    for step in (("setup", str(root)), ("collect", str(root), str(subs)),
                 ("autograde", str(root), "--jobs", "2", "--timeout", str(TIMEOUT_S)), ("feedback", str(root)),
                 ("export", str(root), "--to", str(base / "grades.csv"))):
        done = grader(*step)
        assert done.returncode == 0, (step, done.stdout[-2000:], done.stderr[-2000:])
    with open(base / "grades.csv") as fh:
        rows = list(csv.DictReader(fh))
    return root, {(r["student_id"], r["assignment"]): float(r["raw_score"]) for r in rows}


@pytest.mark.parametrize("student", list(CASES))
def test_scores(graded, student):
    """Each submission gets exactly the autograded points its answers deserve."""
    _, scores = graded
    for assignment, expected in CASES[student][1].items():
        assert scores[(student, assignment)] == expected, (student, assignment, scores)


def test_feedback_has_no_hidden_test_source(graded):
    """No feedback page quotes a hidden test line of either assignment."""
    root, _ = graded
    hidden = []
    for assignment in ("day54", "zero_copy"):
        nb = nbformat.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
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


def test_real_course_validates_both_ways():
    """nbgrader validate passes on solutions/; --invert finds no passing test in course/ and no harness crash."""
    done = grader("validate", "--timeout", "60")
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
