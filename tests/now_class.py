"""The real course graded with `--feedback now` as one class, once a run (tests/once.py): the students of
tests/test_course_e2e.py (every lesson's reference answers, its untouched release, and a wrong answer only a hidden
test catches) beside the adversarial submissions tests/test_feedback_now.py judges, in one grading directory, by
`python -m grader` setup, collect, `autograde --feedback now`, feedback and export. Each file reads its own students.

On a GPU the end-to-end students are left out: their file expects the offline checks' scores and skips there.
"""

from __future__ import annotations

import csv
import importlib
import os
from pathlib import Path
from types import SimpleNamespace

import nbformat
from corpus import CORPUS

from labcore.device import gpu_available
from labcore.lessons import lesson, names

from installed import grader
from once import made_once

ROOT = Path(__file__).resolve().parents[1]
LIVE = gpu_available()
TIMEOUT_S = 60 if LIVE else 20  # per cell, as tests/test_corpus.py grades
JOBS = max(2, len(os.sched_getaffinity(0)))  # a sandbox per core

# tests/test_feedback_now.py's submissions of the corpus (tests/corpus.py)
ADVERSARIAL = (
    "d54-only-16-chunks",  # wrong at the drawn chunk counts
    "d54-patches-harness",  # patches the trace recorder to record the reference
    "q-forged-answers-d54",  # files answers computed at home
    "d54-stops-parent-in-sweep",  # SIGSTOPs its sandbox: the outer clock kills it
    "zc-flag-first-idle-block",  # wrong publish order and one block too many
    "zc-patches-checks",  # replaces every check with a do-nothing lambda
    "zc-exits-first",  # os._exit before any check
    "d54-prints-prediction-inputs",  # prints the inputs the hidden questions drew: feedback deletes its page
    "d56-prints-break-even-inputs",  # the same in another lesson
)
SHOWS_INPUTS = ("d54-prints-prediction-inputs", "d56-prints-break-even-inputs")  # the pages feedback must delete


def hidden_only() -> dict[str, tuple[str, dict[str, str]]]:
    """Each lesson's wrong answer that only a hidden test catches, where its folder declares one (FAILS_ONLY_HIDDEN
    in <lesson>/tests/corpus.py): the test cell that catches it, and the answer cells' sources."""
    found = {}
    for assignment in names():
        declared = getattr(importlib.import_module(f"{assignment}.tests.corpus"), "FAILS_ONLY_HIDDEN", None)
        if declared is not None:
            found[assignment] = declared
    return found


def end_to_end() -> dict[str, dict[str, dict[str, str] | None]]:
    """tests/test_course_e2e.py's students: student -> assignment -> the edits to the solved release (None: the
    release untouched)."""
    return {
        "reference": {a: {} for a in names()},
        "untouched": dict.fromkeys(names()),
        "fails_a_hidden_test": {a: edits for a, (_, edits) in hidden_only().items()},
    }


def submission(assignment: str, edits: dict[str, str] | None) -> nbformat.NotebookNode:
    """The release, with the reference solutions filled in and then `edits` applied (None: untouched)."""
    release = nbformat.read(ROOT / "course" / assignment / f"{assignment}.ipynb", as_version=4)
    if edits is None:
        return release
    solved = {c["id"]: c for c in nbformat.read(lesson(assignment).solutions, as_version=4).cells}
    for cell in release.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            cell.source = "\n".join(
                line
                for line in solved[cell["id"]].source.splitlines()
                if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line
            )
        cell.source = edits.get(cell["id"], cell.source)
    return release


def _grade(base: Path) -> dict:
    subs, root = base / "submissions", base / "grading"
    for sub in CORPUS:
        if sub.name in ADVERSARIAL:
            sub.write(subs / sub.name)
    for student, assignments in ({} if LIVE else end_to_end()).items():
        (subs / student).mkdir(parents=True)
        for assignment, edits in assignments.items():
            nbformat.write(submission(assignment, edits), subs / student / f"{assignment}.ipynb")
    said = {}
    for step in (
        ("setup", str(root)),
        ("collect", str(root), str(subs)),
        ("autograde", str(root), "--jobs", str(JOBS), "--timeout", str(TIMEOUT_S), "--feedback", "now"),
        ("feedback", str(root)),
        ("export", str(root), "--to", str(base / "grades.csv")),
    ):
        done = grader(*step)
        expected = 1 if step[0] == "feedback" else 0  # feedback deletes SHOWS_INPUTS' pages: exit 1, naming them
        assert done.rc == expected, (step, done.out[-3000:], done.err[-3000:])
        said[step[0]] = done.out
        said[f"{step[0]}-err"] = done.err
    return {
        "root": str(root),
        "csv": str(base / "grades.csv"),
        "autograde": said["autograde"],
        "feedback-err": said["feedback-err"],
    }


def now_class(tmp_path_factory) -> SimpleNamespace:
    """The class, graded by the first test of the run that asks: its grading root, what autograde printed, what
    feedback printed on stderr, and the export's raw score by (student, assignment) (an empty score: nothing graded,
    0)."""
    made = made_once(tmp_path_factory, "now-class", _grade)
    with open(made["csv"]) as fh:
        scores = {(r["student_id"], r["assignment"]): float(r["raw_score"] or 0) for r in csv.DictReader(fh)}
    return SimpleNamespace(
        root=Path(made["root"]), said=made["autograde"], feedback_err=made["feedback-err"], scores=scores
    )
