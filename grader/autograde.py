"""Recording graded submissions in nbgrader's gradebook, and reading back how each was graded.

nbgrader's gradebook is one sqlite file, and one writer records into it: the grading engine (grader.classgrade)
has graded every submission in the sandbox and the trusted checker and laid its autograded notebooks out in a
scratch folder; `record_all` has `nbgrader autograde A --force` replay them (grader.preprocessors.Replay installed
by DIR/nbgrader_config.py copies the outputs into each sanitized notebook instead of executing it), so nbgrader's
own code writes every grade, comment and late penalty into DIR/gradebook.db, one submission after another. A
submission laid out with only a reason (DIR's scratch <student>/reason.txt) gets that reason in every code cell,
and every autograded cell scores 0 with it; the other submissions keep their grades.

`outcome` reads one submission back (its points, the cells that timed out or failed, the lost run's reason, the
seconds its sandbox and checker took) for the autograde table; `absent` names the students who handed in nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.grading import GradingDir, read_notebook, skipped_at_collect, source_notebooks
from grader.layout import (
    COURSE_ID,
    KERNEL_DIED,
    KERNEL_STUCK,
    NOT_GRADED,
    NOT_RUN,
    PENDING_GPU,
    RESTORED,
    TIMED_OUT,
    TIMES_KEY,
)
from grader.report_data import pending_gpu_cells
from grader.runner import ANSI, last_error, nbgrader
from grader.status import pending, state

if TYPE_CHECKING:
    from nbformat.notebooknode import NotebookNode


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
    """(name, notebook) of every notebook in a folder, by name (shared: not to be modified)."""
    return [(path.stem, read_notebook(path)) for path in sorted(folder.glob("*.ipynb"))]


def record_all(
    grading: GradingDir, scratch: Path, assignment: str, students: list[str] | None = None
) -> dict[str, str]:
    """Phase 2: nbgrader writes the grades of every submission (or of `students` only) from the replayed outputs;
    {student: error}, or {"*": error} when nbgrader failed as a whole."""
    args = ["autograde", assignment, "--force", f"--Replay.replay_root={scratch}"]
    if students is not None:  # nbgrader takes one glob of ids, or a list to leave out: every other submission
        others = sorted({p.parent.name for p in (grading.root / "submitted").glob(f"*/{assignment}")} - set(students))
        args += [f"--CourseDirectory.student_id_exclude={','.join(others)}"] if others else []
    done = nbgrader(args, cwd=grading.root)
    failed = re.findall(rf"error processing assignment '{re.escape(assignment)}' for student '([^']+)'", done.stdout)
    if done.returncode != 0 and not failed:
        return dict.fromkeys(students or ["*"], last_error(done.stdout))
    own = _errors_by_student(done.stdout)
    return {student: own.get(student) or last_error(done.stdout) for student in failed}


def _errors_by_student(log: str) -> dict[str, str]:
    """{student: the telling line of their own traceback} from an nbgrader autograde log, which prints each failed
    submission's traceback under 'There was an error processing assignment: DIR/submitted/STUDENT/ASSIGNMENT' and
    names the students only at the end: with two failures in one batch, the log's last error is one student's."""
    found = {}
    head = r"There was an error processing assignment: (\S+)"
    for block in re.split(r"(?m)^(?=.*There was an error processing assignment: )", ANSI.sub("", log))[1:]:
        where = re.match(r".*" + head, block)
        if where:
            own = block.split("Removing failed assignment", 1)[0]
            found[Path(where.group(1)).parent.name] = last_error(own.split("\n", 1)[1] if "\n" in own else "")
    return found


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
        lost, not_run, restored = "", [], []
        for cell in nb.cells:
            errors = {o.get("ename"): o.get("evalue", "") for o in cell.get("outputs", []) if o.output_type == "error"}
            lost = lost or errors.get(KERNEL_DIED) or errors.get(KERNEL_STUCK) or ""
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade") and RESTORED in cell.metadata:
                restored.append(meta["grade_id"])
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
        if restored:  # grader.sanitize.restore_cells: a deleted cell, or one an editor stripped of its metadata
            put_back = ", ".join(restored)
            notes.append(f"graded cells put back as the course has them (lost from the notebook): {put_back}")
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
        pending_gpu=pending_gpu_cells(nb for _, nb in autograded),
    )


def _total(values: Iterable[float | None]) -> float | None:
    found = [v for v in values if isinstance(v, (int, float))]
    return round(sum(found), 3) if found else None
