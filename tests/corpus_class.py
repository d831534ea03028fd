"""The corpus (tests/corpus.py) graded as one class, once a run (tests/once.py): every submission and the honest copies
after it in one grading directory, by `python -m grader` setup, collect, one autograde of every assignment, export.
tests/test_corpus.py judges all of it; a lesson's own corpus test reads its submissions' grades from the same class
when the run holds tests/test_corpus.py, and grades only its own otherwise (quicker, alone)."""

from __future__ import annotations

import csv
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from corpus import CORPUS, POINTS

from grader.layout import COURSE_ID, db_url
from labcore.device import gpu_available

from installed import grader
from once import made_once

LIVE = gpu_available()  # the checker measures on this GPU: Submission.live's points apply
TIMEOUT_S = 60 if LIVE else 30  # per cell: honest cells take seconds (more on a busy machine); one loops forever
JOBS = 8 if LIVE else max(2, len(os.sched_getaffinity(0)))  # offline: a sandbox per core
# Honest students graded beside the corpus, each handing in the reference of every assignment. Their names sort
# after every corpus submission's, so each assignment grades them last, in the warm sandboxes every cheat, crash and
# hostile cell of the corpus ran in before them: whatever a submission could leave behind for later students reaches
# them. Enough to pass through each sandbox several times (offline a sandbox per core); a class of 100 is
# benchmarks/class_grade.py's (live, fewer: each costs GPU seconds).
COPIES = tuple(f"zz-copy-{n:03d}" for n in range(6 if LIVE else 16))
assert all(copy > sub.name for copy in COPIES for sub in CORPUS), "the copies are graded after the corpus"
REFERENCES = {s.assignment: s for s in CORPUS if s.name.split("-", 1)[1] == "reference"}  # not d54-alias-reference
assert sorted(REFERENCES) == sorted(POINTS), REFERENCES
WHOLE = "tests/test_corpus.py"  # the test file that grades the whole corpus


@dataclass(frozen=True)
class GradedClass:
    """A graded class: its grading root, each graded cell's points by (student, assignment, cell id) (None: no grade
    recorded), the export's raw score and status by (student, assignment), and what autograde printed."""

    root: Path
    points: dict[tuple[str, str, str], float | None]
    totals: dict[tuple[str, str], float]
    status: dict[tuple[str, str], str]
    said: str


def _grade(folder: Path) -> dict:
    subs, root = folder / "submissions", folder / "grading"
    for sub in CORPUS:
        sub.write(subs / sub.name)
    for assignment, reference in REFERENCES.items():
        nb = reference.notebook()
        for copy in COPIES:
            (subs / copy).mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, subs / copy / f"{assignment}.ipynb")
    steps = [
        ("setup", str(root)),
        ("collect", str(root), str(subs)),
        ("autograde", str(root), "--jobs", str(JOBS), "--timeout", str(TIMEOUT_S)),  # every assignment: one cluster
        ("export", str(root), "--to", str(folder / "grades.csv")),
    ]
    said, table = [], ""  # what grading printed: kept under $CORPUS_KEEP with the export (benchmarks/h200.sh corpus)
    for step in steps:
        done = grader(*step)
        said.append(f"$ grader {' '.join(step)}\n{done.out}{done.err}")
        assert done.rc == 0, (step, done.out[-3000:], done.err[-3000:])
        if step[0] == "autograde":  # no submission changed what the sandbox binds (a remount and a .pth tried)
            assert "environment after grading: unchanged" in done.out, done.out[-3000:]
            table = done.out
    if keep := os.environ.get("CORPUS_KEEP"):
        Path(keep).mkdir(parents=True, exist_ok=True)
        Path(keep, "corpus_grading.txt").write_text("\n".join(said))
        shutil.copy(folder / "grades.csv", Path(keep, "corpus_grades.csv"))
    from nbgrader.api import Gradebook, MissingEntry  # seconds to import: after grading, which imports it anyway

    points = []
    with Gradebook(db_url(root), COURSE_ID) as gb:
        named = [(sub.name, sub.assignment) for sub in CORPUS] + [(c, a) for c in COPIES for a in REFERENCES]
        for name, assignment in named:
            for cell in POINTS[assignment]:
                try:
                    points.append([name, assignment, cell, gb.find_grade(cell, assignment, assignment, name).score])
                except MissingEntry:
                    points.append([name, assignment, cell, None])
    with open(folder / "grades.csv") as fh:
        exported = [[r["student_id"], r["assignment"], r["raw_score"], r["status"]] for r in csv.DictReader(fh)]
    return {"root": str(root), "points": points, "exported": exported, "said": table}


def graded_class(tmp_path_factory: pytest.TempPathFactory) -> GradedClass:
    """The whole corpus graded, once a run."""
    made = made_once(tmp_path_factory, "corpus", _grade)
    return GradedClass(
        root=Path(made["root"]),
        points={(n, a, c): p for n, a, c, p in made["points"]},
        totals={(s, a): float(raw or 0) for s, a, raw, _ in made["exported"]},
        status={(s, a): status for s, a, _, status in made["exported"]},
        said=made["said"],
    )


def whole_corpus_runs(session: pytest.Session) -> bool:
    """Whether this run holds the test file that grades the whole corpus (then a lesson's corpus test reads it)."""
    return any(item.nodeid.startswith(f"{WHOLE}::") for item in session.items)
