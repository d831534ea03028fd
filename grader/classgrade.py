"""Grade a class from its answers: warm workers on a Dask cluster, one writer, nothing lost.

`python -m grader autograde DIR` (with the default `--feedback later`) grades each submission without running its
lesson: the coordinator (this module, the only process that touches DIR) sanitizes every notebook as nbgrader
does (locked cells restored from the gradebook), turns it into a job (grader.warm.Job: the answer cells for the
sandbox, the test cells for the checker, as grader.program picks them) and hands the jobs to the cluster
(grader.cluster). As each submission's results come back they are written to

    DIR/.grading/<assignment>/<student>/<notebook>.json     {"key", "seed", "result"} or {"key", "error"}

before anything else happens, so a coordinator killed mid-class loses nothing: the next run finds each result
whose key (a digest of the sanitized notebook, the run files and the course code) still matches, and grades only
the rest. A failed try never replaces a result that was recorded. nbgrader records the grades while the rest are
graded: the Recorder, the one writer, takes the students whose results are all in, a batch at a time, lays their
results out as phase 1 of grader.autograde leaves them and has one `nbgrader autograde --force` for just those
students replay them into DIR/gradebook.db (grader.autograde.record_all), so the gradebook, feedback and export
are nbgrader's own. The lesson cells of the autograded notebooks carry a note instead of outputs; `--feedback now`
runs whole notebooks instead (grader.autograde), for feedback that shows them.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader import cluster, warm
from grader.autograde import Outcome, absent, outcome, record_all
from grader.grading import GradingDir
from grader.judge import merge
from grader.layout import (
    COURSE_ID,
    KERNEL_DIED,
    KERNEL_STUCK,
    NOT_RUN,
    STORE,
    TIMED_OUT,
    TIMES_KEY,
    run_files_glob,
    unrecorded_note,
)
from grader.outputs import clean_data, clean_text, error_output, safe_outputs
from grader.program import answers_program, cell_name, checker_program, grade_id, is_lesson, is_test
from grader.sandbox import SandboxRun
from labcore.errors import UsageError

if TYPE_CHECKING:
    from nbformat.notebooknode import NotebookNode

RECORD_BATCH = 8  # the Recorder waits for this many students ready (or the assignment's end) before it records
LESSON_NOTE = (
    "(lesson cell: not run while grading, which runs only your answers and the tests; run the notebook yourself to "
    "see its output)\n"
)
UNRECORDED = "could not be recorded"  # how the table, the CSV and the feedback begin a recording's failure


def sanitized(grading: GradingDir, assignment: str, student: str, path: Path) -> NotebookNode:
    """The notebook as nbgrader's autograde sanitizes it: outputs cleared, locked cells restored from the gradebook
    (nbgrader's metadata check aside: see below)."""
    import nbformat  # seconds to import (jsonschema's format checks): `python -m grader --help` does not wait for it
    from nbgrader.preprocessors import ClearOutput, DeduplicateIds, OverwriteCells, OverwriteKernelspec

    nb = nbformat.read(path, as_version=4)
    info = {"db_url": grading.db_url, "assignment": assignment, "notebook": path.stem, "student": student}
    resources: dict[str, Any] = {"nbgrader": info}
    # nbgrader's CheckCellMetadata is left to the recording pass (its sanitize step), which refuses a notebook with
    # corrupted metadata by name: checked here too it would cost a second tenth of a second of schema validation
    for step in (ClearOutput, DeduplicateIds, OverwriteKernelspec, OverwriteCells):
        nb, resources = step().preprocess(nb, resources)
        if step is DeduplicateIds:  # as grader.preprocessors.DropDuplicateIds: no `nbgrader: {}` left to abort on
            for cell in nb.cells:
                if cell.metadata.get("nbgrader") == {}:
                    del cell.metadata["nbgrader"]
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


def safe_result(result: dict[str, Any]) -> dict[str, Any]:
    """A submission's result safe to store and record: every string valid Unicode, each cell's outputs capped
    (grader.outputs), whatever the student printed."""
    result = clean_data(result)
    for part, key in (("extracted", "cells"), ("checked", "verdicts")):
        cells = result.get(part, {}).get(key) if isinstance(result.get(part), dict) else None
        if isinstance(cells, dict):
            result[part][key] = {i: safe_outputs(o) if isinstance(o, list) else [] for i, o in cells.items()}
    return result


def store(where: Path, key: str, one: cluster.Done) -> None:
    """File one try of a submission as it arrives: its result, or its error unless a result of the same
    submission (same key) is already filed: a failed retry never replaces a grade that was recorded."""
    if one.result is not None:
        result = {**safe_result(one.result), "timeout_s": one.job.timeout_s}
        _write(where, {"key": key, "seed": one.job.seed, "result": result})
        return
    before = _read(where)
    if not ("result" in before and before.get("key") == key):
        _write(where, {"key": key, "error": one.error})


# -- the autograded notebook from the two results ---------------------------------------------------------------


def _sandbox_lost(nb: NotebookNode, extracted: dict[str, Any]) -> dict[str, Any] | None:
    """Where a run whose sandbox itself was lost (killed, or past its budget: `reason`, no `lost` cell) stopped:
    the first cell of the program that filed no outputs; the cells before it keep what they answered. None when
    no cell filed any (the sandbox never ran the notebook: it is not graded, and says why)."""
    trouble = extracted.get("reason")
    if not trouble or not isinstance(trouble, str):
        return None
    filed = {str(key) for key in extracted.get("cells", {})}
    program = [index for index, _, _ in answers_program(nb).cells]
    missing = [index for index in program if str(index) not in filed]
    if not missing or missing[0] == program[0]:
        return None
    return {"cell": missing[0], "why": "sandbox", "status": trouble}


def filled(nb: NotebookNode, result: dict[str, Any]) -> NotebookNode:
    """The autograded notebook: the sandbox's outputs for the cells it ran, the checker's verdicts for test cells."""
    import nbformat  # seconds to import (jsonschema's format checks): `python -m grader --help` does not wait for it

    nb = copy.deepcopy(nb)
    result = safe_result(result)  # a result stored by an older grader may hold anything a student printed
    extracted, checked = result["extracted"], result["checked"]
    ran = copy.deepcopy(nb)
    counts = {i: n for i, _, n in answers_program(nb).cells}
    limit = result.get("timeout_s")
    lost = extracted.get("lost") if isinstance(extracted.get("lost"), dict) else None
    lost = lost or _sandbox_lost(nb, extracted)
    reason = ""  # once the run was lost, why: the later cells say it (the words of grader.preprocessors)
    for index, cell in enumerate(ran.cells):
        if cell.cell_type != "code":
            continue
        if is_lesson(cell):
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=LESSON_NOTE)]
            continue
        cell.execution_count = counts.get(index)
        if reason:
            cell.outputs = [error_output(NOT_RUN, reason)]
            continue
        name = cell_name(cell, index)
        outputs = [nbformat.from_dict(o) for o in extracted.get("cells", {}).get(str(index), [])]
        if lost is not None and index == lost.get("cell"):
            if lost.get("why") == "sandbox":
                ename, reason = (
                    KERNEL_DIED,
                    f"the sandbox was killed in cell {name} ({lost['status']}); earlier cells kept",
                )
            elif lost.get("why") == "stuck":
                ename, reason = (
                    KERNEL_STUCK,
                    f"cell {name} ran past the {limit} s limit and did not stop when interrupted",
                )
            elif lost.get("why") == "stopped":  # grader.warm: a process of the sandbox was stopped (SIGSTOP)
                ename, reason = (
                    KERNEL_STUCK,
                    f"cell {name} was stopped (SIGSTOP) and killed at the {limit} s limit",
                )
            else:
                ename, reason = (
                    KERNEL_DIED,
                    f"the kernel died ({lost.get('status', 'exit status unknown')}) in cell {name}",
                )
            outputs.append(error_output(ename, reason))
        elif index in extracted.get("timed_out", []):
            outputs.append(error_output(TIMED_OUT, f"cell {name} ran past the {limit} s limit and was interrupted"))
        cell.outputs = outputs
    verdicts = checked.get("verdicts", {})
    judged = {}
    for index, cell in enumerate(nb.cells):
        if is_test(cell) and str(index) in verdicts:
            judged[grade_id(cell)] = nbformat.v4.new_code_cell(
                outputs=[nbformat.from_dict(o) for o in verdicts[str(index)]]
            )
    run = SandboxRun(ran, Path("answers.jsonl"), extracted.get("reason", ""))
    merge(nb, run, judged, checked.get("trouble", ""))
    seconds = checked.get("cells_s") or {}
    nb.metadata[TIMES_KEY] = {
        "sandbox_s": extracted.get("sandbox_s"),
        "checker_s": checked.get("checker_s"),
        "waited_s": 0.0,
        "checker_cold": bool(checked.get("checker_cold")),
        "checker_cells_s": {grade_id(c): seconds[str(i)] for i, c in enumerate(nb.cells) if str(i) in seconds},
    }
    return nb


# -- the class ------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Graded:
    """One assignment's submissions once the cluster has graded them: what recording them needs."""

    assignment: str
    students: list[str]
    sources: dict[tuple[str, str], tuple[NotebookNode, str]]  # (student, notebook) -> (sanitized, key)
    problems: dict[str, str]  # student -> why a notebook of theirs was not graded
    phases: dict[str, float]  # wall seconds: prepare, grade, record in N batches (overlapping the grading), summarize


@dataclasses.dataclass(frozen=True)
class Ready:
    """A student of one assignment whose every notebook has its result stored (or its reason): ready to record."""

    assignment: str
    student: str
    notebooks: tuple[tuple[str, NotebookNode, str], ...]  # (notebook, sanitized, key)
    problem: str  # why a notebook of theirs was not graded, or ''


class _Clock:
    def __init__(self, phases: dict[str, float]) -> None:
        self.phases, self.last = phases, time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.phases[name] = self.phases.get(name, 0.0) + now - self.last
        self.last = now


def grade_answers(
    grading: GradingDir,
    assignment: str,
    *,
    client: Any,
    timeout_s: int,
    regrade: bool = False,
    started: Callable[[str], None] | None = None,
    progress: Callable[[str], None] | None = None,
    reused: Callable[[int], None] | None = None,
    ready: Callable[[Ready], None] | None = None,
) -> Graded:
    """Every submission of one assignment graded on the cluster behind `client`, each result stored as it arrives;
    `ready` is told of each student once all their notebooks' results are stored (a Recorder records them). Each
    job goes to the cluster as soon as its notebook is sanitized, so the workers start while the coordinator
    prepares the rest."""
    import nbformat  # seconds to import (jsonschema's format checks): `python -m grader --help` does not wait for it

    graded = Graded(assignment, grading.submitted(assignment), {}, {}, {})
    clock = _Clock(graded.phases)
    code = warm.code_digest()
    seed = secrets.randbelow(2**31 - 1) + 1
    lessons = tuple(grading.pick(None))  # the lessons: one warm sandbox and checker per worker serve them all
    kept = 0
    waiting: dict[str, int] = {}  # student -> notebooks of theirs still on the cluster

    def tell(student: str) -> None:
        if ready:
            notebooks = tuple((n, nb, key) for (who, n), (nb, key) in graded.sources.items() if who == student)
            ready(Ready(assignment, student, notebooks, graded.problems.get(student, "")))

    def jobs() -> Iterator[warm.Job]:
        nonlocal kept
        for student in graded.students:
            folder = grading.root / "submitted" / student / assignment
            files = _run_files(folder, assignment)
            waiting[student] = 1  # until every notebook of theirs is sent
            for path in sorted(folder.glob("*.ipynb")):
                try:
                    nb = sanitized(grading, assignment, student, path)
                except Exception as exc:  # nbgrader refuses it (corrupted metadata): that notebook is not graded
                    why = f"{type(exc).__name__}: {str(exc)[:200]}"
                    graded.problems[student] = clean_text(f"nbgrader could not read it ({why})")
                    continue
                key = _key(nbformat.writes(nb), files, code)
                graded.sources[(student, path.stem)] = (nb, key)
                stored = _read(_stored(grading, f"{assignment}/{student}", path.stem))
                if not regrade and stored.get("key") == key and "result" in stored:
                    kept += 1
                    continue
                waiting[student] += 1
                yield warm.Job(
                    assignment=assignment,
                    student=student,
                    run_files=files,
                    answers_program=answers_program(nb).to_json(),
                    checker_program=checker_program(nb).to_json(),
                    seed=seed,
                    timeout_s=timeout_s,
                    lessons=lessons,
                    code=code,
                    notebook_name=path.stem,
                )
            done_with(student)

    def done_with(student: str) -> None:
        waiting[student] -= 1
        if not waiting[student]:
            tell(student)

    def arrived(one: cluster.Done) -> None:
        job = one.job
        where = _stored(grading, job.name, job.notebook_name)
        store(where, graded.sources[(job.student, job.notebook_name)][1], one)
        if progress:
            progress(job.student)
        done_with(job.student)

    def working(name: str) -> None:  # the cluster names a job assignment/student
        if started:
            started(name.split("/", 1)[-1])

    cluster.run(client, jobs(), started=working, done=arrived, submitted=lambda: clock.lap("prepare"))
    if reused:
        reused(kept)
    clock.lap("grade")
    return graded


def _lay_out(grading: GradingDir, scratch: Path, item: Ready) -> str:
    """Phase 1's files for one student in scratch, from their stored results; why a notebook has none ('' if all
    have one). Raises what a result that does not make a notebook raises."""
    import nbformat  # seconds to import (jsonschema's format checks): `python -m grader --help` does not wait for it

    reason = item.problem
    for notebook, nb, key in item.notebooks:
        stored = _read(_stored(grading, f"{item.assignment}/{item.student}", notebook))
        out = scratch / item.student / "autograded" / item.student / item.assignment / f"{notebook}.ipynb"
        out.parent.mkdir(parents=True, exist_ok=True)
        if "result" in stored and stored.get("key") == key:
            nbformat.write(filled(nb, stored["result"]), out)
        else:
            reason = reason or (stored.get("error") if stored.get("key") == key else "") or "it was not graded"
    return reason


def _not_graded(scratch: Path, student: str, reason: str) -> None:
    """Lay a student out with no notebook, only the reason: nbgrader records every autograded cell 0, saying why."""
    shutil.rmtree(scratch / student, ignore_errors=True)
    (scratch / student).mkdir(parents=True)
    (scratch / student / "reason.txt").write_text(reason + "\n")


def _why(exc: BaseException) -> str:
    return clean_text(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc).strip() else ''}"[:300])


def record_batch(grading: GradingDir, items: list[Ready]) -> tuple[dict[str, str], dict[str, str]]:
    """nbgrader records these students of one assignment from their stored results (the caller is the one
    writer); ({student: why a notebook of theirs has no result}, {student: why nbgrader did not record them}).

    One student's failure is theirs: a result that does not make a notebook, or a notebook nbgrader fails on, is
    recorded as not graded, saying why ("could not be recorded: ..."); where even that fails, the student is
    left out of the gradebook with the reason. When nbgrader fails as a whole, naming no one, each student is
    recorded alone to find whose it was. Everyone else is recorded as usual."""
    assignment, reasons, unrecorded = items[0].assignment, {}, {}
    students = [item.student for item in items]
    with tempfile.TemporaryDirectory(prefix="grader-record-") as tmp:
        scratch = Path(tmp)
        for item in items:
            try:
                reason = _lay_out(grading, scratch, item)
            except Exception as exc:  # a stored result that does not make a notebook: that student's alone
                reason = f"{UNRECORDED}: {_why(exc)}"
                unrecorded[item.student] = reason
            if reason:
                reasons[item.student] = reason
                _not_graded(scratch, item.student, reason)
        failed = record_all(grading, scratch, assignment, students=students)
        if len(students) > 1 and set(failed) == set(students):  # nbgrader failed naming no one: find whose it was
            failed = {}
            for student in students:
                failed.update(record_all(grading, scratch, assignment, students=[student]))
        for student, error in failed.items():  # once more, as not graded: the gradebook then says why
            reason = f"{UNRECORDED}: {clean_text(error)}"
            reasons[student] = unrecorded[student] = reason
            _not_graded(scratch, student, reason)
            _note(grading, assignment, student, reason if record_all(grading, scratch, assignment, [student]) else "")
    for student in set(students) - set(failed):
        _note(grading, assignment, student, "")
    return reasons, unrecorded


def _note(grading: GradingDir, assignment: str, student: str, reason: str) -> None:
    """Keep why nbgrader could not record a student (grader.status reads it), or forget it once it could."""
    where = unrecorded_note(grading.root, assignment, student)
    if reason:
        where.parent.mkdir(parents=True, exist_ok=True)
        where.write_text(reason + "\n")
    else:
        where.unlink(missing_ok=True)


def summarize(
    grading: GradingDir, graded: Graded, reasons: dict[str, str], unrecorded: dict[str, str]
) -> list[Outcome]:
    """One Outcome per student of the assignment (`reasons` and `unrecorded` as record_batch gave them), and one
    per student known to the gradebook who submitted nothing of it (the caller is the one writer: nothing
    writes the gradebook meanwhile)."""
    from nbgrader.api import Gradebook  # seconds to import: only once there is a gradebook to read

    problems = {**reasons, **graded.problems}
    with Gradebook(grading.db_url, COURSE_ID) as gb:  # one session for the whole class
        found = [
            _outcome(grading, graded.assignment, s, problems.get(s, ""), unrecorded.get(s), gb) for s in graded.students
        ]
    return found + absent(grading, graded.assignment, graded.students)


def _outcome(
    grading: GradingDir, assignment: str, student: str, reason: str, unrecorded: str | None, gb: Any
) -> Outcome:
    """The student's Outcome; one whose recorded grades do not read back is theirs alone, said so."""
    try:
        return outcome(grading, assignment, student, reason, unrecorded, gb)
    except Exception as exc:  # a recorded notebook that does not read back: that student's, not the class's
        return outcome(grading, assignment, student, "", f"{UNRECORDED}: {_why(exc)}", gb)


class Recorder:
    """The one writer: a thread of its own records students as they become ready, a batch at a time (one nbgrader
    command at a time, every assignment in turn), while the cluster grades the rest.

    `ready(item)` hands it a student whose results are stored; `finish(graded)` says the assignment has no more
    and returns a function that waits for its recording and gives its Outcomes (or raises what recording raised).
    A batch is RECORD_BATCH students, or all that are ready once the assignment is finished; whatever is ready
    when the thread comes back goes together, so a class that grades faster than it records gets fewer, larger
    batches."""

    def __init__(self, grading: GradingDir, batch: int = RECORD_BATCH) -> None:
        self.grading, self.batch = grading, batch
        self._lock = threading.Condition()
        self._ready: dict[str, list[Ready]] = {}  # assignment -> students ready, not yet recorded
        self._finished: dict[str, Graded] = {}  # assignments with no more students to come
        self._outcomes: dict[str, list[Outcome] | BaseException] = {}
        self._reasons: dict[str, dict[str, str]] = {}  # assignment -> student -> why a notebook has no result
        self._unrecorded: dict[str, dict[str, str]] = {}  # assignment -> student -> why nbgrader did not record
        self._record_s: dict[str, list[float]] = {}  # wall seconds of each batch
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="grader-recorder", daemon=True)
        self._thread.start()

    def ready(self, item: Ready) -> None:
        with self._lock:
            self._ready.setdefault(item.assignment, []).append(item)
            self._lock.notify_all()

    def finish(self, graded: Graded) -> Callable[[], list[Outcome]]:
        with self._lock:
            self._ready.setdefault(graded.assignment, [])
            self._finished[graded.assignment] = graded
            self._lock.notify_all()

        def outcomes() -> list[Outcome]:
            with self._lock:
                self._lock.wait_for(lambda: graded.assignment in self._outcomes)
                found = self._outcomes[graded.assignment]
            if isinstance(found, BaseException):
                raise found
            return found

        return outcomes

    def close(self) -> None:
        """Stop the thread once it has nothing left to do (an unfinished assignment is not waited for)."""
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        self._thread.join()

    def _next(self) -> tuple[str, list[Ready]] | None:
        """The next work: (assignment, students to record), or (assignment, []) to summarize it; None once closed."""
        with self._lock:
            while True:
                for assignment, items in self._ready.items():
                    finished = assignment in self._finished
                    if assignment in self._outcomes or not (len(items) >= self.batch or finished):
                        continue
                    self._ready[assignment] = []
                    return assignment, items
                if self._closed:
                    return None
                self._lock.wait()

    def _record(self, items: list[Ready]) -> tuple[dict[str, str], dict[str, str]]:
        """record_batch; should it fail as a whole, its students are not recorded, each saying why, and the
        thread records the next batch."""
        try:
            return record_batch(self.grading, items)
        except UsageError:  # the grading directory's own fault (its configuration does not load): the class's
            raise
        except Exception as exc:  # a scratch folder that cannot be written, a gradebook locked: these students'
            why = f"{UNRECORDED}: {_why(exc)}"
            return {}, {item.student: why for item in items}

    def _run(self) -> None:
        while (work := self._next()) is not None:
            assignment, items = work
            began = time.perf_counter()
            try:
                if items:
                    reasons, unrecorded = self._record(items)
                    self._reasons.setdefault(assignment, {}).update(reasons)
                    self._unrecorded.setdefault(assignment, {}).update(unrecorded)
                    self._record_s.setdefault(assignment, []).append(time.perf_counter() - began)
                    continue
                graded = self._finished[assignment]
                found: list[Outcome] | BaseException = summarize(
                    self.grading, graded, self._reasons.get(assignment, {}), self._unrecorded.get(assignment, {})
                )
                batches = self._record_s.get(assignment, [])
                graded.phases[f"record in {len(batches)} batches"] = sum(batches)
                graded.phases["summarize"] = time.perf_counter() - began
            except Exception as exc:  # a gradebook that does not open, a config that does not load: the caller's
                found = exc
            with self._lock:
                self._outcomes[assignment] = found
                self._lock.notify_all()


def grade_class(grading: GradingDir, assignment: str, **options: Any) -> list[Outcome]:
    """One assignment graded and recorded as it is graded (options as grade_answers takes them)."""
    recorder = Recorder(grading)
    try:
        return recorder.finish(grade_answers(grading, assignment, ready=recorder.ready, **options))()
    finally:
        recorder.close()
