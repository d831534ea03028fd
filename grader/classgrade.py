"""Grade a class from its answers: warm workers on a Dask cluster, one writer, nothing lost.

`python -m grader autograde DIR` (with the default `--feedback later`) grades each submission without running its
lesson: the coordinator (this module, the only process that touches DIR) sanitizes every notebook as nbgrader
does (locked cells restored from the gradebook), turns it into a job (grader.warm.Job: the answer cells for the
sandbox, the test cells for the checker, as grader.program picks them) and hands the jobs to the cluster
(grader.cluster). As each submission's results come back they are written to

    DIR/.grading/<assignment>/<student>/<notebook>.json     {"key", "seed", "result"} or {"key", "error"}

before anything else happens, so a coordinator killed mid-class loses nothing: the next run finds each result
whose key (a digest of the sanitized notebook, the run files and the course code) still matches, and grades only
the rest. A failed try never replaces a result that was recorded. When every job is in, nbgrader records the
grades: the results are laid out as phase 1 of grader.autograde leaves them and one `nbgrader autograde --force`
replays them into DIR/gradebook.db (grader.autograde.record_all), so the gradebook, feedback and export are
nbgrader's own. The lesson cells of the autograded notebooks carry a note instead of outputs; `--feedback now`
runs whole notebooks instead (grader.autograde), for feedback that shows them.
"""

from __future__ import annotations

import copy
import hashlib
import json
import secrets
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
from nbformat.notebooknode import NotebookNode

from grader import cluster, warm
from grader.autograde import Outcome, absent, outcome, record_all
from grader.grading import GradingDir
from grader.judge import grade_id, is_test, merge
from grader.layout import KERNEL_DIED, KERNEL_STUCK, NOT_GRADED, NOT_RUN, TIMED_OUT, TIMES_KEY, run_files_glob
from grader.outputs import error_output
from grader.program import answers_program, checker_program, is_lesson
from grader.sandbox import SandboxRun

STORE = ".grading"
LESSON_NOTE = (
    "(lesson cell: not run while grading, which runs only your answers and the tests; run the notebook yourself to "
    "see its output)\n"
)
LESSONS = ("day54", "zero_copy")


def sanitized(grading: GradingDir, assignment: str, student: str, path: Path) -> NotebookNode:
    """The notebook as nbgrader's autograde sanitizes it: outputs cleared, locked cells restored from the gradebook."""
    from nbgrader.preprocessors import CheckCellMetadata, ClearOutput, OverwriteCells, OverwriteKernelspec

    from grader.preprocessors import DropDuplicateIds

    nb = nbformat.read(path, as_version=4)
    info = {"db_url": grading.db_url, "assignment": assignment, "notebook": path.stem, "student": student}
    resources: dict[str, Any] = {"nbgrader": info}
    for step in (ClearOutput, DropDuplicateIds, OverwriteKernelspec, OverwriteCells, CheckCellMetadata):
        nb, resources = step().preprocess(nb, resources)
    return nb


def _run_files(folder: Path, assignment: str) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob(run_files_glob(assignment))) if p.is_file()}


def _key(text: str, files: dict[str, bytes], code: str) -> str:
    digest = hashlib.sha256(code.encode() + b"\0" + text.encode())
    for name, data in files.items():
        digest.update(b"\0" + name.encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()[:24]


def _stored(grading: GradingDir, job_name: str, notebook: str) -> Path:
    return grading.root / STORE / job_name / f"{notebook}.json"


def _read(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_suffix(".part")
    part.write_text(json.dumps(data))
    part.replace(path)  # whole or not at all: a coordinator killed while writing leaves the old file


# -- the autograded notebook from the two results ---------------------------------------------------------------


def filled(nb: NotebookNode, result: dict[str, Any]) -> NotebookNode:
    """The autograded notebook: the sandbox's outputs for the cells it ran, the checker's verdicts for test cells."""
    nb = copy.deepcopy(nb)
    extracted, checked = result["extracted"], result["checked"]
    ran = copy.deepcopy(nb)
    order = [i for i, _ in answers_program(nb).cells]
    lost = extracted.get("lost") or {}
    lost_at = lost.get("cell") if isinstance(lost, dict) else None
    after_lost = False
    for index, cell in enumerate(ran.cells):
        if cell.cell_type != "code":
            continue
        if is_lesson(cell):
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=LESSON_NOTE)]
            continue
        outputs = [nbformat.from_dict(o) for o in extracted.get("cells", {}).get(str(index), [])]
        if index in extracted.get("timed_out", []):
            outputs.append(error_output(TIMED_OUT, f"the cell ran past the {result.get('timeout_s', '')} s limit"))
        if after_lost:
            outputs = [error_output(NOT_RUN, f"not run: the run was lost in an earlier cell ({lost.get('why')})")]
        elif index == lost_at:
            ename = KERNEL_STUCK if lost.get("why") == "stuck" else KERNEL_DIED
            outputs.append(error_output(ename, f"the run {lost.get('why')} in this cell"))
            after_lost = True
        cell.outputs = outputs
        cell.execution_count = order.index(index) + 1 if index in order else None
    verdicts = checked.get("verdicts", {})
    judged = {}
    for index, cell in enumerate(nb.cells):
        if is_test(cell) and str(index) in verdicts:
            judged[grade_id(cell)] = nbformat.v4.new_code_cell(
                outputs=[nbformat.from_dict(o) for o in verdicts[str(index)]]
            )
    run = SandboxRun(ran, Path("answers.jsonl"), extracted.get("reason", ""))
    merge(nb, run, judged, checked.get("trouble", ""))
    nb.metadata[TIMES_KEY] = {
        "sandbox_s": extracted.get("sandbox_s"),
        "checker_s": checked.get("checker_s"),
        "waited_s": 0.0,
    }
    return nb


def not_graded(nb: NotebookNode, reason: str) -> NotebookNode:
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [error_output(NOT_GRADED, f"this notebook could not be graded: {reason}")]
    return nb


# -- the class ------------------------------------------------------------------------------------------------


def grade_class(
    grading: GradingDir,
    assignment: str,
    *,
    client: Any,
    timeout_s: int,
    regrade: bool = False,
    started: Callable[[str], None] | None = None,
    progress: Callable[[str], None] | None = None,
    reused: Callable[[int], None] | None = None,
) -> list[Outcome]:
    """Grade every submission of one assignment on the cluster behind `client`; record them; one Outcome each."""
    students = grading.submitted(assignment)
    code = warm.code_digest()
    seed = secrets.randbelow(2**31 - 1) + 1
    lessons = LESSONS  # one warm sandbox and checker per worker serve every assignment
    todo: list[warm.Job] = []
    sources: dict[tuple[str, str], tuple[NotebookNode, str]] = {}
    problems: dict[str, str] = {}
    kept = 0
    for student in students:
        folder = grading.root / "submitted" / student / assignment
        files = _run_files(folder, assignment)
        for path in sorted(folder.glob("*.ipynb")):
            try:
                nb = sanitized(grading, assignment, student, path)
            except Exception as exc:  # nbgrader refuses it (corrupted metadata): that notebook is not graded
                problems[student] = f"nbgrader could not read it ({type(exc).__name__}: {str(exc)[:200]})"
                continue
            text = nbformat.writes(nb)
            key = _key(text, files, code)
            sources[(student, path.stem)] = (nb, key)
            stored = _read(_stored(grading, f"{assignment}/{student}", path.stem))
            if not regrade and stored.get("key") == key and "result" in stored:
                kept += 1
                continue
            todo.append(
                warm.Job(
                    assignment=assignment,
                    student=student,
                    notebook=text,
                    run_files=files,
                    answers_program=answers_program(nb).to_json(),
                    checker_program=checker_program(nb).to_json(),
                    seed=seed,
                    timeout_s=timeout_s,
                    lessons=lessons,
                    code=code,
                    notebook_name=path.stem,
                )
            )
    if reused:
        reused(kept)

    def arrived(one: cluster.Done) -> None:
        job = one.job
        where = _stored(grading, job.name, job.notebook_name)
        if one.result is not None:
            result = {**one.result, "timeout_s": job.timeout_s}
            _write(where, {"key": sources[(job.student, job.notebook_name)][1], "seed": job.seed, "result": result})
        else:  # a failed try never replaces a result recorded for the same submission
            key = sources[(job.student, job.notebook_name)][1]
            before = _read(where)
            if not ("result" in before and before.get("key") == key):
                _write(where, {"key": key, "error": one.error})
        if progress:
            progress(job.student)

    def working(name: str) -> None:  # the cluster names a job assignment/student
        if started:
            started(name.split("/", 1)[-1])

    cluster.run(client, todo, started=working, done=arrived)
    with tempfile.TemporaryDirectory(prefix="grader-record-") as tmp:
        scratch = Path(tmp)
        for student in students:
            reason = problems.get(student, "")
            for (who, notebook), (nb, key) in sources.items():
                if who != student:
                    continue
                stored = _read(_stored(grading, f"{assignment}/{student}", notebook))
                out = scratch / student / "autograded" / student / assignment / f"{notebook}.ipynb"
                out.parent.mkdir(parents=True, exist_ok=True)
                if "result" in stored and stored.get("key") == key:
                    nbformat.write(filled(nb, stored["result"]), out)
                else:
                    reason = (stored.get("error") if stored.get("key") == key else "") or "it was not graded"
                    problems.setdefault(student, reason)
            if reason:
                (scratch / student).mkdir(parents=True, exist_ok=True)
                (scratch / student / "reason.txt").write_text(reason + "\n")
        unrecorded = record_all(grading, scratch, assignment)
    found = [
        outcome(grading, assignment, s, problems.get(s, ""), unrecorded.get(s) or unrecorded.get("*")) for s in students
    ]
    return found + absent(grading, assignment, students)
