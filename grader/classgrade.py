"""Grade a class from its answers: warm workers on a Dask cluster, one writer, nothing lost.

`python -m grader autograde DIR` grades each submission with the one grading engine: the coordinator (this module,
the only process that touches DIR) sanitizes every notebook as nbgrader does (locked cells restored from the
gradebook), turns it into a job (grader.warm.Job: the cells for the sandbox, the test cells for the checker, as
grader.program picks them) and hands the jobs to the cluster (grader.cluster). With the default `--feedback
later` the sandbox runs only the answer cells; with `--feedback now` it runs the lesson cells too and keeps their
figures, for feedback that shows them; the questions, the answers channel and the checker are the same, and so
are the points. As each submission's results come back they are written to

    DIR/.grading/<assignment>/<student>/<notebook>.json     {"version", "key", "seed", "result"} or
                                                            {"version", "key", "error"} (grader.hops.Stored)

before anything else happens, so a coordinator killed mid-class loses nothing: the next run finds each result
whose key (a digest of the sanitized notebook, the run files, the course code and the feedback asked for) still
matches, and grades only the rest. A failed try never replaces a result that was recorded. nbgrader records the
grades while the rest are graded: the Recorder, the one writer, takes the students whose results are all in, a
batch at a time, lays their autograded notebooks out in a scratch folder and has one `nbgrader autograde --force`
for just those students replay them into DIR/gradebook.db (grader.autograde.record_all,
grader.preprocessors.Replay), so the gradebook, feedback and export are nbgrader's own. Without `--feedback now`
the lesson cells of the autograded notebooks carry a note instead of outputs.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import hashlib
import json
import secrets
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader import cluster, hops, warm
from grader.autograde import Outcome, absent, outcome, record_all
from grader.grading import GradingDir, past_run_files, too_large
from grader.layout import (
    BEFORE_RECORDING,
    COURSE_ID,
    GRADEBOOK,
    KERNEL_DIED,
    KERNEL_STUCK,
    MAX_NOTEBOOK_CELLS,
    NOT_GRADED,
    NOT_RUN,
    STORE,
    TIMED_OUT,
    TIMES_KEY,
    run_files_glob,
    unrecorded_note,
)
from grader.outputs import clean_data, clean_text, error_output, safe_cells, safe_outputs
from grader.program import (
    answers_program,
    cell_name,
    checker_program,
    grade_id,
    is_lesson,
    is_solution,
    is_test,
)
from grader.sanitize import SourceCells, sanitized
from labcore.errors import UsageError

if TYPE_CHECKING:
    from nbformat.notebooknode import NotebookNode

RECORD_BATCH = 8  # the Recorder waits for this many students ready (or the assignment's end) before it records
LESSON_NOTE = (
    "(lesson cell: not run while grading, which runs only your answers and the tests; run the notebook yourself to "
    "see its output)\n"
)
UNRECORDED = "could not be recorded"  # how the table, the CSV and the feedback begin a recording's failure
LOST = (KERNEL_DIED, KERNEL_STUCK, NOT_RUN, TIMED_OUT)  # the sandbox never reached, or never finished, the cell
WITHHELD_NOTE = (
    "(not run while grading: this lesson cell calls the lesson's reference answers, which are withheld from the "
    "sandbox that runs your notebook; your own run shows its output)\n"
)
STOPPED_NOTE = "(this lesson cell stopped while grading, {error}; lesson cells are not graded)\n"


def _run_files(folder: Path, assignment: str) -> dict[str, bytes]:
    files = sorted(folder.glob(run_files_glob(assignment)))  # as collect takes them: no link, none too large
    files = [p for p in files if p.is_file() and not p.is_symlink() and p.suffix != ".ipynb" and not too_large(p)]
    past = past_run_files(files)
    return {p.name: p.read_bytes() for p in files if p.name not in past}


def _key(text: str, files: dict[str, bytes], code: str, whole: bool = False) -> str:
    digest = hashlib.sha256(code.encode() + b"\0" + text.encode() + (b"\0whole" if whole else b""))
    for name, data in files.items():
        digest.update(b"\0" + name.encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()[:24]


def _stored(grading: GradingDir, job_name: str, notebook: str) -> Path:
    return grading.root / STORE / job_name / f"{notebook}.json"


def _read(path: Path) -> hops.Stored:
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _write(path: Path, data: hops.Stored) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_suffix(".part")
    part.write_text(json.dumps(data))
    part.replace(path)  # whole or not at all: a coordinator killed while writing leaves the old file


def safe_result(result: hops.Outcome) -> hops.Outcome:
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
        whole = bool(one.job.answers_program.get("whole"))
        result = hops.Outcome(**safe_result(one.result), timeout_s=one.job.timeout_s, whole=whole)
        _write(where, hops.Stored(version=hops.HOPS_VERSION, key=key, seed=one.job.seed, result=result))
        return
    before = _read(where)
    if not (hops.current(before) and before.get("key") == key):
        _write(where, hops.Stored(version=hops.HOPS_VERSION, key=key, error=one.error))


# -- the autograded notebook from the two results ---------------------------------------------------------------


def _sandbox_lost(nb: NotebookNode, extracted: hops.Extracted, whole: bool) -> hops.Lost | None:
    """Where a run whose sandbox itself was lost (killed, or past its budget: `reason`, no `lost` cell) stopped:
    the first cell of the program that filed no outputs; the cells before it keep what they answered. None when
    no cell filed any (the sandbox never ran the notebook: it is not graded, and says why)."""
    trouble = extracted.get("reason")
    if not trouble or not isinstance(trouble, str):
        return None
    filed = {str(key) for key in extracted.get("cells", {})}
    program = [index for index, _, _ in answers_program(nb, whole=whole).cells]
    missing = [index for index in program if str(index) not in filed]
    if not missing or missing[0] == program[0]:
        return None
    return hops.Lost(cell=missing[0], why="sandbox", status=trouble)


def _lost_error(lost: hops.Lost, name: str, limit: Any) -> tuple[str, str]:
    """(error name, reason) of the cell a run was lost in, in the words of grader.layout's errors."""
    why = lost.get("why")
    if why == "sandbox":
        return KERNEL_DIED, f"the sandbox was killed in cell {name} ({lost['status']}); earlier cells kept"
    if why == "stuck":
        return KERNEL_STUCK, f"cell {name} ran past the {limit} s limit and did not stop when interrupted"
    if why == "disk":  # grader.warm: the job took more than its share of the grading machine's disk
        return KERNEL_DIED, f"the sandbox was killed in cell {name}: {lost.get('status')}; earlier cells kept"
    if why == "stopped":  # grader.warm: a process of the sandbox was stopped (SIGSTOP)
        return KERNEL_STUCK, f"cell {name} was stopped (SIGSTOP) and killed at the {limit} s limit"
    return KERNEL_DIED, f"the kernel died ({lost.get('status', 'exit status unknown')}) in cell {name}"


def _ran(nb: NotebookNode, extracted: hops.Extracted, limit: Any, whole: bool) -> dict[int, list[NotebookNode]]:
    """Each code cell's outputs from the sandbox, by index: what it filed, then the error that lost the run in it
    or its timeout; every later cell NotRun with that reason. A lesson cell the sandbox did not run: a note."""
    import nbformat  # seconds to import (jsonschema's format checks): `python -m grader --help` does not wait for it

    lost = extracted.get("lost") if isinstance(extracted.get("lost"), dict) else None
    lost = lost or _sandbox_lost(nb, extracted, whole)
    reason = ""  # once the run was lost, why: the later cells say it
    ran: dict[int, list[NotebookNode]] = {}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if is_lesson(cell) and not whole:
            ran[index] = [nbformat.v4.new_output("stream", name="stdout", text=LESSON_NOTE)]
            continue
        if reason:
            ran[index] = [error_output(NOT_RUN, reason)]
            continue
        name = cell_name(cell, index)
        outputs = [nbformat.from_dict(o) for o in extracted.get("cells", {}).get(str(index), [])]
        if lost is not None and index == lost.get("cell"):
            ename, reason = _lost_error(lost, name, limit)
            outputs.append(error_output(ename, reason))
        elif index in extracted.get("timed_out", []):
            outputs.append(error_output(TIMED_OUT, f"cell {name} ran past the {limit} s limit and was interrupted"))
        ran[index] = outputs
    return ran


def filled(nb: NotebookNode, result: hops.Outcome) -> NotebookNode:
    """The autograded notebook: the sandbox's outputs for the cells it ran, the checker's verdicts for test cells;
    safe to record (grader.outputs), every test cell without a verdict saying why."""
    import nbformat  # seconds to import (jsonschema's format checks): `python -m grader --help` does not wait for it

    nb = copy.deepcopy(nb)
    result = safe_result(result)  # a result stored by an older grader may hold anything a student printed
    extracted, checked = result["extracted"], result["checked"]
    whole = bool(result.get("whole"))
    counts = {i: n for i, _, n in answers_program(nb, whole=whole).cells}
    ran = _ran(nb, extracted, result.get("timeout_s"), whole)
    verdicts, trouble = checked.get("verdicts", {}), checked.get("trouble", "")
    lost = extracted.get("reason", "")  # the sandbox's own trouble, when it had any
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        cell.execution_count = counts.get(index)
        outputs = ran[index]
        if not is_test(cell):
            cell.outputs = outputs if is_solution(cell) else _shown(outputs)
            continue
        stopped = [o for o in outputs if o.output_type == "error" and o.ename in LOST]
        verdict = [nbformat.from_dict(o) for o in verdicts.get(str(index), [])] if str(index) in verdicts else None
        if stopped:
            cell.outputs = [stopped[-1]]
        elif trouble or verdict is None:
            why = trouble or "the checker gave no verdict for it"
            cell.outputs = [error_output(NOT_GRADED, f"this cell could not be judged: {why}")]
        elif lost and any(o.output_type == "error" and o.ename == "NoAnswer" for o in verdict):
            cell.outputs = [error_output(NOT_GRADED, f"no answer came back from running your notebook: {lost}")]
        else:  # what the student's code printed while it answered, then the verdict
            cell.outputs = [*(o for o in outputs if o.output_type == "stream"), *verdict]
    safe_cells(nb)  # whatever the student printed can be written, recorded and shown (grader.outputs)
    seconds = checked.get("cells_s") or {}
    nb.metadata[TIMES_KEY] = hops.Times(
        sandbox_s=extracted.get("sandbox_s"),
        checker_s=checked.get("checker_s"),
        waited_s=0.0,
        checker_cold=bool(checked.get("checker_cold")),
        checker_cells_s={grade_id(c): seconds[str(i)] for i, c in enumerate(nb.cells) if str(i) in seconds},
    )
    return nb


def _shown(outputs: list[NotebookNode]) -> list[NotebookNode]:
    """A lesson (or setup) cell's outputs from the sandbox; an error in it (but a lost run's) becomes a note.

    Lesson cells are not graded, and in the sandbox some cannot run: those that call withheld references, and
    those that use what such a cell would have made. Their errors are not the student's; the note says so.
    """
    import nbformat  # seconds to import (jsonschema's format checks): `python -m grader --help` does not wait for it

    shown = []
    for out in outputs:
        if out.output_type != "error" or out.get("ename") in LOST:
            shown.append(out)
            continue
        first = (str(out.get("evalue", "")).splitlines() or [""])[0]
        text = (
            WITHHELD_NOTE
            if out.get("ename") == "ReferenceWithheld"
            else STOPPED_NOTE.format(error=f"{out.get('ename')}: {first}")
        )
        shown.append(nbformat.v4.new_output("stream", name="stdout", text=text))
    return shown


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
    whole: bool = False,
    lessons: tuple[str, ...] | None = None,
) -> Graded:
    """Every submission of one assignment graded on the cluster behind `client`, each result stored as it arrives;
    `ready` is told of each student once all their notebooks' results are stored (a Recorder records them). Each
    job goes to the cluster as soon as its notebook is sanitized, so the workers start while the coordinator
    prepares the rest. With `whole` (`--feedback now`) the sandbox runs the lesson cells too (grader.program)."""

    graded = Graded(assignment, grading.submitted(assignment), {}, {}, {})
    clock = _Clock(graded.phases)
    # the lessons a worker's warm sandbox and checker serve (each reads their shipped profiles once): those graded
    # in this run, the same for each of its assignments (default: every lesson of the course)
    run = _Run(
        grading,
        graded,
        SourceCells(grading.db_url, assignment),
        warm.code_digest(),
        secrets.randbelow(2**31 - 1) + 1,
        timeout_s,
        lessons or tuple(grading.pick(None)),
        whole,
        regrade,
        _Told(started, progress, ready),
    )
    cluster.run(client, run.jobs(), started=run.working, done=run.arrived, submitted=lambda: clock.lap("prepare"))
    if reused:
        reused(run.kept)
    clock.lap("grade")
    return graded


@dataclasses.dataclass(frozen=True)
class _Told:
    """Whom grade_answers tells of what: a student's first job started, a result stored, a student ready."""

    started: Callable[[str], None] | None
    progress: Callable[[str], None] | None
    ready: Callable[[Ready], None] | None


@dataclasses.dataclass
class _Run:
    """One assignment's grading run on the coordinator: its jobs made as notebooks are sanitized, its results
    stored as they arrive, each student told ready once every notebook of theirs is stored."""

    grading: GradingDir
    graded: Graded
    source: SourceCells
    code: str
    seed: int
    timeout_s: int
    lessons: tuple[str, ...]
    whole: bool
    regrade: bool
    told: _Told
    kept: int = 0
    waiting: dict[str, int] = dataclasses.field(default_factory=dict)  # student -> notebooks still on the cluster

    def jobs(self) -> Iterator[warm.Job]:
        for student in self.graded.students:
            folder = self.grading.root / "submitted" / student / self.graded.assignment
            files = _run_files(folder, self.graded.assignment)
            self.waiting[student] = 1  # until every notebook of theirs is sent
            for path in sorted(folder.glob("*.ipynb")):
                job = self._job(student, path, files)
                if job is not None:
                    self.waiting[student] += 1
                    yield job
            self.done_with(student)

    def _job(self, student: str, path: Path, files: dict[str, bytes]) -> warm.Job | None:
        """The job grading one notebook; None where it is not graded (its problem noted) or its result is kept."""
        nb = self._readable(student, path)
        if nb is None:
            return None
        key = _key(json.dumps(nb, sort_keys=True), files, self.code, self.whole)  # the sanitized notebook, as data
        self.graded.sources[(student, path.stem)] = (nb, key)
        stored = _read(_stored(self.grading, f"{self.graded.assignment}/{student}", path.stem))
        if not self.regrade and stored.get("key") == key and hops.current(stored):
            self.kept += 1
            return None
        return warm.Job(
            assignment=self.graded.assignment,
            student=student,
            run_files=files,
            answers_program=answers_program(nb, whole=self.whole).to_json(),
            checker_program=checker_program(nb, whole=self.whole).to_json(),
            seed=self.seed,
            timeout_s=self.timeout_s,
            lessons=self.lessons,
            code=self.code,
            notebook_name=path.stem,
        )

    def _readable(self, student: str, path: Path) -> NotebookNode | None:
        """The notebook sanitized as nbgrader does, or None with the student's problem noted."""
        if why := too_large(path, count_cells=False):  # put there by hand, past collect: not read
            self.graded.problems[student] = f"{path.name}: {why.removesuffix('; not collected')}"
            return None
        try:
            nb = sanitized(self.grading.db_url, self.graded.assignment, student, path, self.source)
        except Exception as exc:  # nbgrader refuses it (corrupted metadata): that notebook is not graded
            why = f"{type(exc).__name__}: {str(exc)[:200]}"
            self.graded.problems[student] = clean_text(f"nbgrader could not read it ({why})")
            return None
        if len(nb.cells) > MAX_NOTEBOOK_CELLS:  # as collect refuses: put there by hand
            self.graded.problems[student] = f"{path.name}: {len(nb.cells):,} cells, more than a notebook may have"
            return None
        return nb

    def done_with(self, student: str) -> None:
        self.waiting[student] -= 1
        if not self.waiting[student] and self.told.ready:
            sources = self.graded.sources.items()
            notebooks = tuple((n, nb, key) for (who, n), (nb, key) in sources if who == student)
            problem = self.graded.problems.get(student, "")
            self.told.ready(Ready(self.graded.assignment, student, notebooks, problem))

    def arrived(self, one: cluster.Done) -> None:
        job = one.job
        where = _stored(self.grading, job.name, job.notebook_name)
        store(where, self.graded.sources[(job.student, job.notebook_name)][1], one)
        if self.told.progress:
            self.told.progress(job.student)
        self.done_with(job.student)

    def working(self, name: str) -> None:  # the cluster names a job assignment/student
        if self.told.started:
            self.told.started(name.split("/", 1)[-1])


def _lay_out(grading: GradingDir, scratch: Path, item: Ready) -> str:
    """Phase 1's files for one student in scratch, from their stored results; why a notebook has none ('' if all
    have one). Raises what a result that does not make a notebook raises."""
    import nbformat  # seconds to import (jsonschema's format checks): `python -m grader --help` does not wait for it

    reason = item.problem
    for notebook, nb, key in item.notebooks:
        stored = _read(_stored(grading, f"{item.assignment}/{item.student}", notebook))
        out = scratch / item.student / "autograded" / item.student / item.assignment / f"{notebook}.ipynb"
        out.parent.mkdir(parents=True, exist_ok=True)
        if hops.current(stored) and stored.get("key") == key:
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
            # a notebook already not graded keeps its own reason (nbgrader failing on it too says less)
            reason = reasons.get(student) or f"{UNRECORDED}: {clean_text(error)}"
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


def keep_gradebook(grading: GradingDir) -> Path:
    """A copy of the gradebook as it is before a recording (SQLite's backup: consistent, whatever else reads it):
    nbgrader's commands write without waiting for the disk (grader.runner), so a machine that loses power while
    recording may leave DIR/gradebook.db damaged; this copy, with the stored results, rebuilds it, the grades an
    instructor gave by hand included."""
    kept = grading.root / STORE / BEFORE_RECORDING
    kept.parent.mkdir(parents=True, exist_ok=True)
    partial = kept.with_suffix(".partial")
    with contextlib.closing(sqlite3.connect(f"{(grading.root / GRADEBOOK).as_uri()}?mode=ro", uri=True)) as book:
        with contextlib.closing(sqlite3.connect(partial)) as copy_of:
            book.backup(copy_of)
    partial.replace(kept)
    return kept


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
        keep_gradebook(grading)
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
