"""The adversarial corpus (tests/corpus.py) graded end to end with real nbgrader: offline without a GPU (CI), live
with one (the checks measure on it, and the corpus's `live` points apply).

Every submission goes into ONE grading directory: `python -m grader` setup, collect, one autograde of every
assignment (one cluster; a short per-cell limit: one submission hangs on purpose), export. Then, per submission:
every graded cell has exactly the points the corpus expects (read from the gradebook, the total cross-checked against
the export), and every cell that scored 0 shows a reason that is a verdict on the student's work (a failed check, a
stub, a timeout, the student's own dead kernel), never a crash of the grader (a TypeError inside a check, a notebook
that could not be graded, a zero with no error at all). The class also serves tests/test_feedback_now.py's
comparison: what autograde's default (`--feedback later`) shows for a cell it does not run, and for a sandbox that
its own cell stopped.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from pathlib import Path

import nbformat
import pytest
from corpus import CORPUS, POINTS, Submission
from corpus_class import COPIES, LIVE, REFERENCES, graded_class

from grader.classgrade import LESSON_NOTE
from grader.feedback import leak_lines, quoted_lines
from grader.layout import KERNEL_DIED, KERNEL_STUCK, NOT_RUN, PENDING_GPU, TIMED_OUT
from labcore.errors import UsageError
from labcore.lessons import names

pytestmark = pytest.mark.slow(seconds=300)  # grades a class of about 230 notebooks
# Errors that are the grader's verdict on a cell rather than its crash, besides every AssertionError (a failed
# check: labcore.answers' NoAnswer and AnswerRaised, labcore.pipeline.trace's NotAFixedSchedule, ...) and every
# UsageError (a student's file the grader refuses, naming what is wrong with it: an NsysFormatError).
VERDICTS = {"NameError", "NotImplementedError", "ReferenceWithheld", TIMED_OUT, KERNEL_DIED, NOT_RUN, PENDING_GPU}
COURSE = ("labcore", *names(), "grader")  # the packages whose errors are the course's own
STATUS: dict[tuple[str, str], str] = {}  # the export's status column, by (student, assignment), once graded
TABLE: list[str] = []  # what autograde printed (a table per assignment), once graded
CHECKOUT = Path(__file__).resolve().parents[1]
DECLARING = (
    "labcore.answers",
    "labcore.nsys",
    "labcore.pipeline.trace",
    *(f"{lesson}.{module.name}" for lesson in names() for module in pkgutil.iter_modules([str(CHECKOUT / lesson)])),
)  # every module of every lesson: the errors its checks declare


def _subclasses(cls: type) -> set[type]:
    found = set(cls.__subclasses__())
    for sub in list(found):
        found |= _subclasses(sub)
    return found


@functools.cache
def accepted_reasons() -> set[str]:
    """Names of the errors a zero may show: VERDICTS, and every AssertionError and UsageError the course declares."""
    import grader as grader_package

    names = [*DECLARING, *(f"grader.{m.name}" for m in pkgutil.iter_modules(grader_package.__path__))]
    for name in names:
        if not name.rsplit(".", 1)[-1].startswith("__"):
            try:
                importlib.import_module(name)
            except ImportError:  # a module this checkout does not have declares nothing a cell can show
                pass
    declared = _subclasses(AssertionError) | _subclasses(UsageError)
    return VERDICTS | {"AssertionError"} | {c.__name__ for c in declared if c.__module__.split(".")[0] in COURSE}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """(grading root, {(student, assignment, cell id): points or None}, {(student, assignment): raw score of the
    export}) for the corpus and the honest students graded after it (COPIES): tests/corpus_class.py's class."""
    graded = graded_class(tmp_path_factory)
    STATUS.update(graded.status)
    TABLE.append(graded.said)
    return graded.root, graded.points, graded.totals


def _autograded(root: Path, sub: Submission) -> nbformat.NotebookNode:
    return nbformat.read(root / "autograded" / sub.name / sub.assignment / f"{sub.assignment}.ipynb", as_version=4)


def _errors(cell: nbformat.NotebookNode) -> list[tuple[str, str]]:
    return [(o.ename, str(o.get("evalue", ""))[:300]) for o in cell.get("outputs", []) if o.output_type == "error"]


@pytest.mark.parametrize("sub", CORPUS, ids=[s.name for s in CORPUS])
def test_points(graded, sub):
    """Every graded cell gets exactly the expected points; the exported total agrees."""
    _, points, totals = graded
    got = {cell: points[(sub.name, sub.assignment, cell)] for cell in POINTS[sub.assignment]}
    expected = sub.expected(gpu=LIVE)
    assert got == expected, f"{sub.name} ({sub.tries}): got {got}, expected {expected}{' live' if LIVE else ''}"
    assert totals[(sub.name, sub.assignment)] == sum(expected.values())


@pytest.mark.parametrize("sub", CORPUS, ids=[s.name for s in CORPUS])
def test_every_zero_shows_a_verdict(graded, sub):
    """Each graded cell that scored 0 shows an error, and no error it shows is a crash of the grader."""
    root, points, _ = graded
    accepted = accepted_reasons()
    shown = {
        cell.metadata["nbgrader"]["grade_id"]: _errors(cell)
        for cell in _autograded(root, sub).cells
        if cell.metadata.get("nbgrader", {}).get("grade_id") in POINTS[sub.assignment]
    }
    bad = {}
    for cell, errors in shown.items():
        if points[(sub.name, sub.assignment, cell)] or not POINTS[sub.assignment][cell]:  # earned, or worth nothing
            continue
        names = {name for name, _ in errors}
        if TIMED_OUT in names:  # the interrupt at the limit may show beside the timeout that names it
            names.discard("KeyboardInterrupt")
        if not errors or not names <= accepted:
            bad[cell] = errors or "scored 0 with no error shown"
    assert not bad, f"{sub.name}: zeros whose reason is a crash or missing: {bad}"


@pytest.mark.parametrize("sub", CORPUS, ids=[s.name for s in CORPUS])
def test_cells_pending_a_gpu_say_so_and_no_others(graded, sub):
    """Offline, exactly the cells the corpus names pending show PendingGPU (0, neither passed nor failed); live,
    none."""
    root, _, _ = graded
    shown = {
        cell.metadata["nbgrader"]["grade_id"]
        for cell in _autograded(root, sub).cells
        if cell.metadata.get("nbgrader", {}).get("grade_id") in POINTS[sub.assignment]
        and any(name == PENDING_GPU for name, _ in _errors(cell))
    }
    assert shown == (set() if LIVE else set(sub.pending)), f"{sub.name}: pending a GPU {sorted(shown)}"
    status = STATUS[(sub.name, sub.assignment)]
    if shown:  # the export says it too, with the cells and their points
        points = sum(POINTS[sub.assignment][c] for c in sorted(shown))
        assert status.endswith(f"; pending a GPU: {', '.join(sorted(shown))} ({points:g} points)"), status
    else:
        assert "pending a GPU" not in status, status


def test_no_output_of_the_sandbox_quotes_a_hidden_line_in_any_encoding(graded):
    """What every submission's cells printed (the sandbox's outputs, the walkers' base64 and zlib among them) holds
    no hidden-test line, verbatim or encoded: the sandbox never had the hidden tests' text."""
    root, _, _ = graded
    walked = 0
    for sub in CORPUS:
        path = root / "autograded" / sub.name / sub.assignment / f"{sub.assignment}.ipynb"
        if not path.is_file():
            continue
        nb = nbformat.read(path, as_version=4)
        printed = "\n".join(
            o.get("text", "") for c in nb.cells for o in c.get("outputs", []) if o.output_type == "stream"
        )
        walked += "asked " in printed
        assert quoted_lines(printed, leak_lines(path)) == [], sub.name
    assert walked  # the walker ran inside the student's function while the sandbox asked


@pytest.mark.parametrize("assignment", sorted(REFERENCES))
def test_every_copy_of_the_reference_gets_the_references_points(graded, assignment):
    """Graded in the same class as the corpus, after it, each student handing in the reference (16 offline, 6 live)
    gets its points."""
    _, points, totals = graded
    reference = REFERENCES[assignment]
    wrong = {
        copy: got
        for copy in COPIES
        if (got := {cell: points[(copy, assignment, cell)] for cell in POINTS[assignment]})
        != reference.expected(gpu=LIVE)
    }
    assert not wrong, f"{len(wrong)} of {len(COPIES)} copies graded otherwise, e.g. {next(iter(wrong.items()))}"
    assert {totals[(copy, assignment)] for copy in COPIES} == {sum(reference.expected(gpu=LIVE).values())}


def test_the_corpus_covers_every_assignment_and_every_cell_both_ways():
    """At least 22 submissions, cases for every lesson of the list (its folder's tests/corpus.py); each graded cell is
    earned by some submission and lost by another (Lesson rule 9 on the architecture page)."""
    assert len(CORPUS) >= 22
    missing = [f"{name}/tests/corpus.py" for name in names() if name not in POINTS]
    assert missing == [], "every lesson of the list has its cases in its folder"
    assert sorted(POINTS) == sorted(names())
    for assignment, cells in POINTS.items():
        subs = [s for s in CORPUS if s.assignment == assignment]
        for cell, top in cells.items():
            # earned offline, or, for a cell pending a GPU offline, earned live (its `live` points)
            assert any(s.points[cell] == top or s.live.get(cell) == top for s in subs), (assignment, cell)
            assert any(s.points[cell] == 0 for s in subs), (assignment, cell)


def test_no_submission_planted_a_hook_in_the_environment(graded):
    """d54-remounts-env-pth wrote zz_grade.pth into site-packages if its remount worked, d54-plants-bytecode a .pyc
    into a __pycache__ folder (which the environment's digest leaves out), d54-poisons-the-replay-cache a parse that
    runs code when read into the grader's replay cache: none is there, and the poison never ran."""
    import site

    from grader.sandbox import bound_environment
    from labcore.kit import replay

    folders = {*site.getsitepackages(), *map(str, bound_environment())}
    assert not [f for f in folders if Path(f, "zz_grade.pth").exists()]
    folders.add(str(CHECKOUT))  # the course's packages, which the sandboxes bind too
    planted = [p for f in folders for p in Path(f).glob("*/zz_planted.cpython-311.pyc")]
    assert not planted and not [f for f in folders if Path(f, "zz_planted_pkg").exists()], planted
    # d54-poisons-the-replay-cache: no trusted process read its forged parse, and none is in the grader's cache
    assert not Path("/tmp/zz-replay-cache-poisoned").exists()
    cache = replay.cache_folder()
    assert cache is None or not cache.is_dir() or not [p for p in cache.iterdir() if b"zz-replay" in p.read_bytes()]


def _cell(nb: nbformat.NotebookNode, grade_id: str) -> nbformat.NotebookNode:
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def test_a_lesson_cell_says_it_did_not_run(graded):
    """autograde's default runs the answers only: a lesson cell shows the note instead of its figure
    (tests/test_feedback_now.py shows the figure with --feedback now)."""
    root, _, _ = graded
    sub = next(s for s in CORPUS if s.name == "d54-only-16-chunks")
    assert [o.get("text") for o in _cell(_autograded(root, sub), "timeline").outputs] == [LESSON_NOTE]


def test_a_sandbox_stopped_by_its_own_cell_is_killed_and_reported(graded):
    """d54-stops-parent-in-sweep SIGSTOPs its zygote in the sweep cell: the trusted clock kills the sandbox at the
    limit, the cell says so, and the table names it (tests/test_feedback_now.py: the same with --feedback now)."""
    root, _, _ = graded
    sub = next(s for s in CORPUS if s.name == "d54-stops-parent-in-sweep")
    errors = [o for c in _autograded(root, sub).cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert any(o.ename == KERNEL_STUCK and "was stopped (SIGSTOP)" in o.evalue for o in errors), errors
    row = next(x for x in "".join(TABLE).splitlines() if x.startswith(f"{sub.name} "))
    assert "was stopped (SIGSTOP) and killed at the" in row, row
