"""Day 57's submissions for the adversarial corpus (tests/corpus.py's format and points): honest, unusual but
correct, wrong, and cheating. tests/corpus.py adds them to its CORPUS and POINTS (it finds this module through the
list of lessons), and tests/test_corpus.py grades every submission end to end with real nbgrader;
test_day57_corpus.py runs the answers through the check here, in the student's own kernel."""

from __future__ import annotations

from types import ModuleType

A = "day57"
POINTS = {"test_bytes_moved": 2}

UNUSUAL = """def bytes_moved(total_bytes, runs, advised):
    # a sum over the runs, the input counted once when it is read-mostly
    moved = 0
    for run in range(runs):
        moved += total_bytes if (advised and run) else 2 * total_bytes
    return moved"""

NO_ADVICE = """def bytes_moved(total_bytes, runs, advised):
    return 2 * total_bytes * runs  # the advice ignored: every run moves its input again"""

INPUT_ONCE_EVEN_FOR_NO_RUN = """def bytes_moved(total_bytes, runs, advised):
    return total_bytes * (runs + 1) if advised else 2 * total_bytes * runs  # zero runs still move the input"""

# The wrong answer only the hidden test catches (tests/test_course_e2e.py): graded, the visible cell's cases and the
# drawn ones never ask an advised job of zero runs; the hidden cell does
FAILS_ONLY_HIDDEN = ("test_bytes_moved", {"bytes_moved": INPUT_ONCE_EVEN_FOR_NO_RUN})

CALLS_THE_MODEL = """import day57.model


def bytes_moved(total_bytes, runs, advised):
    return day57.model.bytes_moved(total_bytes, runs, advised)"""

# Answered from the lesson's public.json alone: the shipped value at each visible case, a guess elsewhere. It passes
# its cell in the student's kernel; graded, the drawn cases find it out.
PUBLIC_ONLY = """import json
import pathlib

import day57

_ROWS = json.loads((pathlib.Path(day57.__file__).parent / "public.json").read_text())["bytes-moved"]
_SHIPPED = {json.dumps(case): value for case, value in _ROWS}


def bytes_moved(total_bytes, runs, advised):
    return _SHIPPED.get(json.dumps([total_bytes, runs, advised]), 2 * total_bytes * runs)"""


def submissions(corpus: ModuleType) -> tuple:
    """The day-57 submissions, made with tests/corpus.py's Submission, full and zero (corpus: that module)."""
    s, full, zero = corpus.Submission, corpus.full, corpus.zero
    return (
        s("d57-reference", A, "the reference solution", full(A)),
        s("d57-untouched", A, "the release as handed out: the stub raises", zero(A), edits=None),
        s(
            "d57-unusual",
            A,
            "a loop over the runs, the input counted once when advised: full",
            full(A),
            edits={"bytes_moved": UNUSUAL},
        ),
        s("d57-no-advice", A, "the advice ignored (2 x total every run): 0", zero(A), edits={"bytes_moved": NO_ADVICE}),
        s(
            "d57-zero-runs",
            A,
            "the input counted for zero advised runs: 0",
            zero(A),
            edits={"bytes_moved": INPUT_ONCE_EVEN_FOR_NO_RUN},
        ),
        s(
            "d57-calls-the-model",
            A,
            "calls day57.model's bytes_moved: withheld in the sandbox, 0",
            zero(A),
            edits={"bytes_moved": CALLS_THE_MODEL},
        ),
        s(
            "d57-public-only",
            A,
            "the shipped public values and a guess elsewhere: the drawn cases find it, 0",
            zero(A),
            edits={"bytes_moved": PUBLIC_ONLY},
        ),
    )
