"""Autograde many submissions at once, with one writer on the sqlite gradebook.

nbgrader's gradebook is one sqlite file, and `nbgrader autograde` writes to it when it starts a submission
and again when it saves the grades; two autograde processes on one gradebook meet "database is locked",
and nbgrader then drops that submission. So grading runs in two phases:

1. Execute, in parallel (--jobs at a time). Each submission gets its own `nbgrader autograde A --student S`
   process in a scratch course root: DIR/source and the student's DIR/submitted/S/A linked in, and a private
   COPY of the gradebook, so no two processes ever share a sqlite file. In it, ExecuteOrReplay executes
   nothing itself: the student's notebook runs in the sandbox, which brings back answers as data, and the
   test cells run in the trusted checker, which judges them (grader.sandbox, grader.judge). The sandbox's
   packages (reference answers withheld: grader.withhold) are written once per run, and one fresh seed
   per run makes the checks' random inputs. This is the slow part (kernels, the checker's GPU runs,
   replays of the student's exports), and the only parallel one.
2. Record, serially (one process). `nbgrader autograde A --force` in DIR, where ExecuteOrReplay
   (grader.preprocessors, installed by DIR/nbgrader_config.py) copies phase 1's outputs into each sanitized
   notebook instead of executing it. nbgrader's own code then writes every grade, comment and late penalty
   into DIR/gradebook.db, one submission after another. The writer lock DIR/.grader.lock keeps a second
   `python -m grader` out.

With a GPU, only the trusted checkers use it, and they take turns (a lock in the scratch folder): submissions
graded side by side overlap their sandboxes, never their timed runs.

Timeouts and lost kernels: `Execute.timeout` (--timeout) is per cell. nbclient interrupts a cell that runs past
it and records a CellTimeoutError naming the cell and the limit; the following cells still run, so only the
cells that time out (and those that need their results) score 0. A kernel that dies in a cell, or that a cell
keeps busy through the interrupt, ends the notebook's execution there (grader.preprocessors.ExecuteToTheEnd):
every cell before keeps its points, the cell gets the reason ("the kernel died (exit status 3) in cell
chunk_count") and every later cell scores 0 with it; the table names it. A phase-1 process that outlives its
budget (timeout x (code cells + 1) + startup) is killed with its kernel. A kernel that dies while starting
(kernels started side by side can race for a free port) is retried twice. Whatever still fails, phase 2 grades
anyway: every code cell gets an error naming the reason, every autograded cell scores 0, and the feedback says
why. The other submissions keep their grades.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.bundle import sandbox_library
from grader.grading import GradingDir, skipped_at_collect, source_notebooks
from grader.layout import (
    COURSE_ID,
    GRADEBOOK,
    KERNEL_DIED,
    KERNEL_STUCK,
    NOT_GRADED,
    NOT_RUN,
    PENDING_GPU,
    TIMED_OUT,
    TIMES_KEY,
)
from grader.report_data import pending_gpu
from grader.runner import KILLED, REPO, last_error, nbgrader
from grader.status import pending, state
from labcore.device import gpu_available

if TYPE_CHECKING:
    from nbformat.notebooknode import NotebookNode

KERNEL_START_FAILURES = ("Kernel died before replying to kernel_info", "Kernel didn't respond in")
KERNEL_START_RETRIES = 2
STARTUP_S = 240  # nbgrader start-up, two kernels' start (nbclient's startup_timeout is 60 s) and shutdown
CHECKER_LOCK = "_checker.lock"  # with a GPU, checkers take turns: their timings are not disturbed
LIBRARY = "_sandbox_library"  # in the scratch folder; not a student id (ids start with a letter or digit)


@dataclasses.dataclass
class Outcome:
    """How one submission was graded."""

    student: str
    score: float = 0.0
    max_score: float = 0.0
    timed_out: list[str] = dataclasses.field(default_factory=list)
    failed: list[str] = dataclasses.field(default_factory=list)
    reason: str = ""
    recorded: bool = True
    sandbox_s: float | None = None  # wall seconds in the sandbox (no GPU)
    checker_s: float | None = None  # wall seconds in the trusted checker: the only process that uses a GPU
    checker_cells_s: dict[str, float] = dataclasses.field(default_factory=dict)  # of checker_s, per cell (grade id)
    checker_cold: bool = False  # its checker process started for it (imports, compiles, first allocations)
    state: str = "graded"  # grader.status's words: graded, graded with written answers pending, not submitted, ...
    pending: dict[str, float] = dataclasses.field(default_factory=dict)  # written answers to grade by hand: points
    pending_gpu: dict[str, float] = dataclasses.field(default_factory=dict)  # cells left to a GPU (0 until): points


def _notebooks(folder: Path) -> list[tuple[str, NotebookNode]]:
    """(name, notebook) of every notebook in a folder, by name."""
    import nbformat  # seconds to import (jsonschema's format checks): --help and bad options do not wait for it

    return [(path.stem, nbformat.read(path, as_version=4)) for path in sorted(folder.glob("*.ipynb"))]


def code_cells(grading: GradingDir, assignment: str) -> int:
    """Cells a submission's grading executes: every code cell in the sandbox, the test cells (and two) in the checker.

    They set a submission's time budget."""
    notebooks = source_notebooks(grading.root, assignment)
    sandbox = sum(sum(c.cell_type == "code" for c in nb.cells) for _, nb in notebooks)
    checker = sum(sum(_is_test(c) for c in nb.cells) + 2 for _, nb in notebooks)
    return sandbox + checker


def scratch_root(grading: GradingDir, scratch: Path, assignment: str, student: str) -> Path:
    """A course root for one submission: linked source and submission, a private copy of the gradebook."""
    root = scratch / student
    (root / "submitted" / student).mkdir(parents=True)
    (root / "source").symlink_to(grading.root / "source")
    (root / "submitted" / student / assignment).symlink_to(grading.root / "submitted" / student / assignment)
    shutil.copy2(grading.root / GRADEBOOK, root / GRADEBOOK)
    return root


def execute_one(
    grading: GradingDir, scratch: Path, assignment: str, student: str, timeout_s: int, budget_s: float, seed: int
) -> str:
    """Phase 1 for one submission; '' when it ran, else the reason it did not (also left in reason.txt)."""
    root = scratch / student
    args = [
        "autograde",
        assignment,
        f"--student={student}",
        f"--CourseDirectory.root={root}",
        f"--CourseDirectory.db_url=sqlite:///{root / GRADEBOOK}",
        f"--Execute.timeout={timeout_s}",
        f"--ExecuteOrReplay.library={scratch / LIBRARY}",
        f"--ExecuteOrReplay.seed={seed}",
        *([f"--ExecuteOrReplay.checker_lock={scratch / CHECKER_LOCK}"] if gpu_available() else []),
    ]
    for _ in range(1 + KERNEL_START_RETRIES):
        done = nbgrader(args, cwd=grading.root, limit_s=budget_s)
        if not any(sign in done.stdout for sign in KERNEL_START_FAILURES):
            break
    if done.returncode == 0:
        return ""
    if done.returncode == KILLED:
        reason = f"it ran past its {budget_s:.0f} s budget and was stopped"
    else:
        reason = f"nbgrader could not execute it ({last_error(done.stdout)})"
    (root / "reason.txt").write_text(reason + "\n")
    return reason


def record_all(
    grading: GradingDir, scratch: Path, assignment: str, students: list[str] | None = None
) -> dict[str, str]:
    """Phase 2: nbgrader writes the grades of every submission (or of `students` only) from the replayed outputs;
    {student: error}, or {"*": error} when nbgrader failed as a whole."""
    args = ["autograde", assignment, "--force", f"--ExecuteOrReplay.replay_root={scratch}"]
    if students is not None:  # nbgrader takes one glob of ids, or a list to leave out: every other submission
        others = sorted({p.parent.name for p in (grading.root / "submitted").glob(f"*/{assignment}")} - set(students))
        args += [f"--CourseDirectory.student_id_exclude={','.join(others)}"] if others else []
    done = nbgrader(args, cwd=grading.root)
    failed = re.findall(rf"error processing assignment '{re.escape(assignment)}' for student '([^']+)'", done.stdout)
    if done.returncode != 0 and not failed:
        return dict.fromkeys(students or ["*"], last_error(done.stdout))
    return {student: last_error(done.stdout) for student in failed}


def autograde(
    grading: GradingDir,
    assignment: str,
    *,
    jobs: int,
    timeout_s: int,
    progress: Callable[[str], None] | None = None,
    started: Callable[[str], None] | None = None,
) -> list[Outcome]:
    """Grade every submitted notebook of one assignment; one Outcome per student, then one per student in the
    gradebook or skipped at collect who has no submission of it (not submitted, not graded: skipped at collect).

    `started(student)` is called as a submission's grading begins, `progress(student)` as it ends."""
    students = grading.submitted(assignment)
    budget_s = timeout_s * (code_cells(grading, assignment) + 1) + STARTUP_S
    reasons: dict[str, str] = {}
    seed = secrets.randbelow(2**31 - 1) + 1
    with tempfile.TemporaryDirectory(prefix="grader-autograde-") as tmp:
        scratch = Path(tmp)
        sandbox_library(REPO, scratch / LIBRARY)
        for student in students:
            scratch_root(grading, scratch, assignment, student)

        def one(student: str) -> str:
            if started:
                started(student)
            return execute_one(grading, scratch, assignment, student, timeout_s, budget_s, seed)

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            running = {pool.submit(one, s): s for s in students}
            for future in as_completed(running):
                reasons[running[future]] = future.result()
                if progress:
                    progress(running[future])
        unrecorded = record_all(grading, scratch, assignment)
    found = [
        outcome(grading, assignment, s, reasons.get(s, ""), unrecorded.get(s) or unrecorded.get("*")) for s in students
    ]
    return found + absent(grading, assignment, students)


def absent(grading: GradingDir, assignment: str, submitted: list[str]) -> list[Outcome]:
    """Outcomes of the students known to the gradebook or skipped at collect who submitted nothing of it."""
    from nbgrader.api import Gradebook  # seconds to import: only once there is a gradebook to read

    with Gradebook(grading.db_url, COURSE_ID) as gb:
        known = {s.id for s in gb.students} | set(skipped_at_collect(grading))
        return [
            Outcome(s, recorded=True, state=state(gb, grading, assignment, s)) for s in sorted(known - set(submitted))
        ]


def _is_test(cell: NotebookNode) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return cell.cell_type == "code" and bool(meta.get("grade")) and not meta.get("solution")


def graded_cells(grading: GradingDir, assignment: str) -> dict[tuple[str, str], float]:
    """{(notebook, grade_id): points} of the autograded test cells in the assignment's source."""
    cells = {}
    for name, nb in source_notebooks(grading.root, assignment):
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade") and not meta.get("solution"):
                cells[(name, meta["grade_id"])] = float(meta.get("points", 0))
    return cells


def scores(grading: GradingDir, assignment: str, student: str, gb: Any = None) -> dict[str, float | None]:
    """{grade_id: autograded score} of one submission's test cells (None where the gradebook has none)."""
    from nbgrader.api import Gradebook, MissingEntry  # seconds to import: only once there is a gradebook to read

    found: dict[str, float | None] = {}
    with contextlib.nullcontext(gb) if gb is not None else Gradebook(grading.db_url, COURSE_ID) as book:
        for notebook, grade_id in graded_cells(grading, assignment):
            try:
                found[grade_id] = book.find_grade(grade_id, notebook, assignment, student).score
            except MissingEntry:
                found[grade_id] = None
    return found


def _cell_notes(autograded: list[tuple[str, NotebookNode]]) -> tuple[list[str], list[str], list[str]]:
    """(test cells that timed out, test cells that failed otherwise, notes on lost kernels) of the autograded notebooks.

    A cell the kernel was lost in, and the cells after it, are named in the notes rather than among the failures;
    a cell pending a GPU is not a failure either (Outcome.pending_gpu names it).
    """
    timed_out, failed, notes = [], [], []
    for _, nb in autograded:
        lost, not_run = "", []
        for cell in nb.cells:
            errors = {o.get("ename"): o.get("evalue", "") for o in cell.get("outputs", []) if o.output_type == "error"}
            lost = lost or errors.get(KERNEL_DIED) or errors.get(KERNEL_STUCK) or ""
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type != "code" or not meta.get("grade") or meta.get("solution"):
                continue
            if TIMED_OUT in errors:
                timed_out.append(meta["grade_id"])
            elif NOT_RUN in errors:
                not_run.append(meta["grade_id"])
            elif errors and not errors.keys() & {KERNEL_DIED, KERNEL_STUCK, NOT_GRADED, PENDING_GPU}:
                failed.append(meta["grade_id"])
        if lost:
            notes.append(f"{lost}; not run: {', '.join(not_run)}" if not_run else lost)
    return timed_out, failed, notes


def outcome(
    grading: GradingDir, assignment: str, student: str, reason: str, unrecorded: str | None, gb: Any = None
) -> Outcome:
    """Summarize one submission from the gradebook (an open one, if given) and its autograded notebooks."""
    points = {gid: p for (_, gid), p in graded_cells(grading, assignment).items()}
    if unrecorded:
        why = f"not graded: {unrecorded}"
        return Outcome(student, max_score=sum(points.values()), reason=unrecorded, recorded=False, state=why)
    from nbgrader.api import Gradebook  # seconds to import: only once there is a gradebook to read

    with contextlib.nullcontext(gb) if gb is not None else Gradebook(grading.db_url, COURSE_ID) as book:
        found_state = state(book, grading, assignment, student)
        waiting = pending(book, grading, assignment, student)
        got = scores(grading, assignment, student, book)
    autograded = _notebooks(grading.root / "autograded" / student / assignment)
    timed_out, failed, notes = _cell_notes(autograded)
    times = [nb.metadata.get(TIMES_KEY, {}) for _, nb in autograded]
    return Outcome(
        student,
        score=sum(v or 0.0 for v in got.values()),
        max_score=sum(points.values()),
        timed_out=timed_out,
        failed=failed,
        reason="; ".join([reason] if reason else notes),
        sandbox_s=_total(t.get("sandbox_s") for t in times),
        checker_s=_total(t.get("checker_s") for t in times),
        checker_cells_s={k: v for t in times for k, v in (t.get("checker_cells_s") or {}).items()},
        checker_cold=any(t.get("checker_cold") for t in times),
        state=found_state,
        pending=waiting,
        pending_gpu=pending_gpu(grading, assignment, [name for name, _ in autograded], student),
    )


def _total(values: Iterable[float | None]) -> float | None:
    found = [v for v in values if isinstance(v, (int, float))]
    return round(sum(found), 3) if found else None
