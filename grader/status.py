"""What each student's grade of an assignment is: graded, graded with written answers pending, graded with cells
pending a GPU, not submitted, or not graded and why. The CSV export, the autograde table and the feedback pages
say it in these words, so that a real 0 never looks like a missing one, nor a 0 pending a GPU like a failure.

The state of a submission is the class report's (grader.report_data.submission_state); a student whose folder
collect took no notebook from (misnamed, nested) is "not graded: skipped at collect: ..." (DIR/collect_skipped.json,
written by grader.grading.collect).
"""

from __future__ import annotations

import csv
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from grader.grading import GradingDir, export, skipped_at_collect, source_notebooks
from grader.layout import COURSE_ID, unrecorded_note
from grader.report_data import pending_gpu, pending_gpu_words, submission_state
from grader.runner import REPO
from labcore.errors import UsageError

GRADED = "graded"
PENDING = "graded, written answers pending"
# then, where a check could not verify a cell offline: "; pending a GPU: test_publish (3 points)" (grader.report)
NOT_SUBMITTED = "not submitted"
SKIPPED = "skipped at collect"
UNRECORDED_STATE = "not graded (autograde has not recorded it)"  # grader.report_data.submission_state's words


def written_cells(grading: GradingDir, assignment: str) -> dict[tuple[str, str], float]:
    """{(notebook, grade_id): points} of the answers graded by hand (grade and solution cells) in the source."""
    cells = {}
    for name, nb in source_notebooks(grading.root, assignment):
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade") and meta.get("solution"):
                cells[(name, meta["grade_id"])] = float(meta.get("points", 0))
    return cells


def pending(gb: Any, grading: GradingDir, assignment: str, student: str, notebook: str = "") -> dict[str, float]:
    """{grade_id: points} of the student's written answers that wait for grading by hand (in one notebook if named)."""
    from nbgrader.api import MissingEntry  # seconds to import: only once there is a gradebook to read

    found = {}
    for (name, grade_id), points in written_cells(grading, assignment).items():
        if notebook and name != notebook:
            continue
        try:
            grade = gb.find_grade(grade_id, name, assignment, student)
        except MissingEntry:
            continue
        if grade.needs_manual_grade:
            found[grade_id] = points
    return found


def state(gb: Any, grading: GradingDir, assignment: str, student: str) -> str:
    """One of: graded / graded, written answers pending / not submitted / not graded: why; a graded one ends with
    '; pending a GPU: CELLS (N points)' when a check left cells pending a GPU (0 until graded live)."""
    from nbgrader.api import MissingEntry  # seconds to import: only once there is a gradebook to read

    skipped = skipped_at_collect(grading)
    try:
        in_gradebook = bool(gb.find_submission(assignment, student))
    except MissingEntry:
        in_gradebook = False
    if student in skipped and not in_gradebook:
        return f"not graded: {SKIPPED}: {skipped[student]}"
    notebooks = sorted(p.stem for p in (grading.root / "source" / assignment).glob("*.ipynb"))
    found = submission_state(grading, assignment, notebooks, student, in_gradebook)
    note = unrecorded_note(grading.root, assignment, student)
    if found == UNRECORDED_STATE and note.is_file():  # the Recorder could not record it, and kept why
        return f"not graded: {note.read_text(errors='replace').strip()}"
    if found.startswith("not graded ("):
        return f"not graded: {found[len('not graded (') : -1]}"
    if found != GRADED:
        return found
    words = PENDING if pending(gb, grading, assignment, student) else GRADED
    gpu = pending_gpu_words(pending_gpu(grading, assignment, notebooks, student))
    return f"{words}; {gpu}" if gpu else words


def export_with_status(grading: GradingDir, to: Path) -> Path:
    """nbgrader's CSV plus a `status` column; raw_score and score empty where nothing was graded. Written whole or
    not at all: a file beside `to` until the last row is in (a failure or Ctrl-C leaves no half CSV)."""
    from nbgrader.api import Gradebook  # seconds to import: only once there is a gradebook to read

    partial = to.with_name(f".{to.name}.partial")
    try:
        export(grading, partial)
        with partial.open(newline="") as f:
            rows = list(csv.DictReader(f))
            header = list(rows[0].keys()) if rows else []
        if not header:
            with partial.open(newline="") as f:
                header = next(csv.reader(f), [])
        with Gradebook(grading.db_url, COURSE_ID) as gb:
            for row in rows:
                row["status"] = state(gb, grading, row["assignment"], row["student_id"])
                if not row["status"].startswith(GRADED):
                    row["raw_score"] = row["score"] = ""
        with partial.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=[*header, "status"])
            writer.writeheader()
            writer.writerows(rows)
        partial.replace(to)
    except OSError as exc:  # the folder went away or turned read-only, the disk filled
        raise UsageError(f"--to {to}: cannot write the grades there ({exc.strerror or exc})") from None
    finally:
        partial.unlink(missing_ok=True)
    return to


def machine_paths(grading: GradingDir) -> list[str]:
    """Absolute paths of the grading machine a page must not show, longest first."""
    places = {grading.root, REPO, Path.home(), Path(sys.prefix), Path(sys.base_prefix), Path(tempfile.gettempdir())}
    return sorted({str(p) for p in places if len(p.parts) > 1}, key=lambda p: -len(p))


def strip_paths(text: str, paths: list[str]) -> str:
    """`text` with every path in `paths` (and what follows it up to a quote, space or tag) as <path>."""
    for place in paths:
        for form in {place, place.replace("&", "&amp;")}:
            text = re.sub(rf"(?<![\w/.~-]){re.escape(form)}(?![\w.-])(?:/[^\s\"'<>&]*)?", "&lt;path&gt;", text)
    return text
