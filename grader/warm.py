"""A grading worker's two warm processes, and the two steps of grading a submission that use them.

    extract(job)             the test cells planned in a warm planner (grader.checker's plan: the questions they
                             ask, no test text), then the student's cells and those questions in the warm sandbox
                             (grader.zygote, in bwrap): the answers file and each cell's outputs come back as data;
                             no GPU
    check(job, extracted)    the test cells in the warm trusted checker (grader.checker) against those answers:
                             each test cell's verdict, with what the sandbox said of each cell (the answers
                             themselves, megabytes of arrays, stay with the workers); the only step that uses a GPU

Both processes start on a worker's first job and serve every later one (imports, shipped profiles and a GPU's
context made once); a process that fails or overruns its budget is killed and the next job starts a new one.
Jobs and results are plain data (cells as text, run files as bytes), so they travel to any worker of
a cluster (grader.cluster); a worker needs the same course code, which the job's `code` digest checks.
"""

from __future__ import annotations

import atexit
import dataclasses
import hashlib
import json
import logging
import os
import select
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from grader import hops, sandbox
from grader.bundle import sandbox_library
from grader.checker import hidden_inputs
from grader.runner import REPO, course_env, kill_tree
from grader.zygote import GRACE_S, IMPORTS_ONLY, Answering, framed
from labcore import lessons
from labcore.answers import MAX_FILE_BYTES as MAX_ANSWERS_BYTES
from labcore.errors import UsageError
from labcore.lessons import TESTS_DIR

READY_S = 120  # a warm process's start: imports and the shipped profiles
MAX_CELLS_BYTES = 64 << 20  # the sandbox's cells file: larger is not read
ANSWER_PREFIX = b'{"answer":'  # grader.zygote passes each answer it takes on as this prefix, the line, "}"
MAX_PLANS = 64  # plans a planner keeps: one per assignment and grading run is the use
SILENT_S = 15.0  # past a cell's limit and the zygote's grace: its own kill and clean-up, before it is given up
# The sandbox's work and out folders are the grading machine's disk: a job that takes more of it than this (bytes,
# or files: inodes), or leaves less than DISK_FLOOR_BYTES free, is killed at once (looked at every DISK_EVERY_S)
MAX_JOB_DISK_BYTES = 2 << 30
MAX_JOB_FILES = 100_000
DISK_FLOOR_BYTES = 256 << 20
DISK_EVERY_S = 0.25


@dataclasses.dataclass(frozen=True)
class Job:
    """One submission to grade: its run files, the programs of its sanitized notebook, the seed and the limits."""

    assignment: str
    student: str
    run_files: dict[str, bytes]
    answers_program: dict
    checker_program: dict
    seed: int
    timeout_s: int
    lessons: tuple[str, ...]
    code: str  # code_digest() of the coordinator: a worker with other code refuses the job
    notebook_name: str = ""  # the notebook's name in the assignment (default: the assignment's)

    @property
    def name(self) -> str:
        return f"{self.assignment}/{self.student}"


def code_digest() -> str:
    """A digest of the course's Python and CUDA sources: workers must grade with the coordinator's code."""
    digest = hashlib.sha256()
    for package in ("grader", "labcore", *lessons.names()):
        for path in sorted((REPO / package).rglob("*")):
            if path.suffix in (".py", ".cu", ".cuh") and not {"__pycache__", TESTS_DIR} & set(path.parts):
                digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


class _Warm:
    """A long-lived child that reads one JSON job per line and answers with one JSON line."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.log = Path(os.devnull)
        self.child: subprocess.Popen | None = None
        self.started = False  # whether the last job started the child (its first cells pay imports and compiles)

    def _start(self) -> None:
        raise NotImplementedError

    def _line(self, budget_s: float) -> dict[str, Any]:
        assert self.child is not None and self.child.stdout is not None
        stream: IO[bytes] = self.child.stdout
        ready, _, _ = select.select([stream], [], [], budget_s)
        if not ready:
            self.stop()
            raise _Trouble(f"the {self.what} ran past its {budget_s:.0f} s budget and was stopped")
        line = stream.readline()
        if not line:
            code = self.child.wait()
            self.child = None
            raise _Trouble(f"the {self.what} ended (exit status {code}): {self._tail()}")
        return json.loads(line)

    def _tail(self) -> str:
        """The last line of the child's log."""
        text = self.log.read_text(errors="replace") if self.log.is_file() else ""
        lines = [x for x in text.splitlines() if x.strip()]
        return lines[-1][:300] if lines else "no output"

    def ensure(self) -> bool:
        """Start the child unless it runs, and wait for it to be ready; whether it had to start."""
        if self.child is None or self.child.poll() is not None:
            if self.child is not None:
                sandbox.ended(self.child)
            self._start()
            self._line(READY_S)
            return True
        return False

    def ask(self, job: dict[str, Any], budget_s: float) -> dict[str, Any]:
        self.started = self.ensure()
        assert self.child is not None and self.child.stdin is not None
        self.child.stdin.write((json.dumps(job) + "\n").encode())
        self.child.stdin.flush()
        return self._line(budget_s)

    def stop(self) -> None:
        if self.child is not None:
            kill_tree(self.child.pid)
            self.child.wait()
            sandbox.ended(self.child)
            self.child = None


class _Trouble(Exception):
    pass


class WarmSandbox(_Warm):
    """grader.zygote in bwrap, with its library (references withheld), work and out folders in a scratch folder.

    The per-cell clock is kept here, outside the sandbox, as well as in the zygote: a student's code can stop the
    zygote (SIGSTOP: the same user), never this process. The zygote tells each cell's start; when it is silent past
    the cell's limit, its grace and SILENT_S, the whole bwrap tree is killed, the job ends in that cell with the
    true reason (stopped, or stuck), earlier cells keep what they filed, and the next job starts a new sandbox."""

    def __init__(self, lessons: tuple[str, ...], scratch: Path) -> None:
        super().__init__("sandbox")
        self.lessons, self.scratch = lessons, scratch
        self.work, self.out = scratch / "work", scratch / "out"
        self.log = scratch / "zygote.log"
        self.count = 0
        self.buffer = b""
        self.answering: Answering | None = None
        self.planned: dict[str, list] = {}

    def _start(self) -> None:
        # root's own folders (the sandbox's user cannot swap a job's folder for a link); each job's is the sandbox's
        for folder in (self.work, self.out):
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            folder.chmod(0o755)
        sandbox.readable(_library())
        argv = [sys.executable, "-m", "grader.zygote", *self.lessons]  # its children share the profiles it read
        env = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}  # no display
        line = sandbox.command(argv, library=_library(), work=self.work, out=self.out, env=env)
        self.buffer = b""
        with open(self.log, "ab") as log:
            try:
                self.child = sandbox.spawn(line, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)
            except OSError as exc:
                raise _Trouble(f"the {self.what} did not start ({exc})") from None

    def _next(self, budget_s: float) -> dict[str, Any] | None:
        """The zygote's next line within budget_s; None when it stays silent; _Trouble when it ends."""
        assert self.child is not None and self.child.stdout is not None
        fd = self.child.stdout.fileno()
        deadline = time.monotonic() + budget_s
        while b"\n" not in self.buffer:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                code = self.child.wait()
                sandbox.ended(self.child)
                self.child = None
                raise _Trouble(f"the {self.what} ended (exit status {code}): {self._tail()}")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        if line.startswith(ANSWER_PREFIX) and line.endswith(b"}"):  # megabytes of arrays: kept as they came, unparsed
            return {"answer": line[len(ANSWER_PREFIX) : -1]}
        try:
            told = json.loads(line)
        except ValueError:
            told = None
        if not isinstance(told, dict):
            self.stop()
            raise _Trouble(f"the {self.what} said something that is not its protocol and was stopped")
        return told

    def _line(self, budget_s: float) -> dict[str, Any]:
        told = self._next(budget_s)
        if told is None:
            self.stop()
            raise _Trouble(f"the {self.what} ran past its {budget_s:.0f} s budget and was stopped")
        return told

    def _stopped(self) -> bool:
        """Whether a process of the sandbox is stopped (SIGSTOP, or a tracer's stop)."""
        import psutil  # comes with the course extra, like nbgrader; needed only when a sandbox falls silent

        assert self.child is not None
        try:
            family = psutil.Process(self.child.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return False
        stops = (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP)
        return any(_status(proc) in stops for proc in family)

    def _watch(self, request: dict[str, Any], limit_s: float, budget_s: float) -> tuple[dict[str, Any], str]:
        """Send a job and keep the clock on it: (the zygote's answer, or one made here when it was lost; reason)."""
        assert self.child is not None and self.child.stdin is not None
        try:  # the job, then its plan: the supervisor reads the plan only once it has forked the child
            self.child.stdin.write(framed(json.dumps(request).encode()) + framed(json.dumps(self.planned).encode()))
            self.child.stdin.flush()
        except OSError:
            self.stop()
            return {}, f"the {self.what} ended: {self._tail()}"
        began = time.monotonic()
        end, deadline, current = began + budget_s, began + limit_s + GRACE_S + SILENT_S, None
        disk = _Disk(self.work, self.out)
        while True:
            wait = max(0.0, min(deadline, end) - time.monotonic())
            try:
                told = self._next(min(wait, DISK_EVERY_S))
            except _Trouble as trouble:  # the zygote ended: killed by the cell it last said it started, or crashed
                if current is None:
                    return {}, str(trouble)
                return {"timed_out": [], "lost": {"cell": current, "why": "sandbox", "status": str(trouble)}}, ""
            if told is None:
                silent = self._silent(current, disk if wait > DISK_EVERY_S else None, end, budget_s)
                if silent is None:
                    continue
                return silent
            if "job" not in told and ("answer" in told or "refused" in told):
                self._streamed(told)
                continue
            cell = told.get("cell")
            if "job" not in told and isinstance(cell, int) and not isinstance(cell, bool):
                if current is None or cell > current:  # a cell's start: its clock starts here too
                    current, deadline = cell, time.monotonic() + limit_s + GRACE_S + SILENT_S
                    self.answering.cell = cell
                continue
            if isinstance(told.get("lost"), dict) and told["lost"].get("cell") is None:
                told["lost"]["cell"] = current  # the zygote answered for a supervisor killed in that cell
            return told, ""

    def _silent(
        self, current: int | None, disk: _Disk | None, end: float, budget_s: float
    ) -> tuple[dict[str, Any], str] | None:
        """What the zygote's silence means: with `disk` (only the disk's turn), None while the job keeps to its share,
        else the job lost in cell `current` (killed for the disk it took, stopped, stuck), or past its budget."""
        if disk is not None:
            too_much = disk.too_much()
            if not too_much:
                return None
            self.stop()
            return {"timed_out": [], "lost": {"cell": current, "why": "disk", "status": too_much}, "killed": True}, ""
        why = "stopped" if self._stopped() else "stuck"
        self.stop()
        if time.monotonic() >= end and why == "stuck":
            return {}, f"the {self.what} ran past its {budget_s:.0f} s budget and was stopped"
        return {"timed_out": [], "lost": {"cell": current, "why": why}, "killed": True}, ""

    def _streamed(self, told: dict[str, Any]) -> None:
        """An answer line the zygote passed on, or its refusal of them all, as it happened: judged against the plan
        here (Answering), outside the sandbox, and kept when it answers the question asked."""
        if "refused" in told:
            self._taken(json.dumps({"refused": str(told["refused"])[:300]}).encode())
            return
        answer = told["answer"]  # the line as the child sent it, as its bytes (the checker reads it as data)
        self.answering.line(answer if isinstance(answer, bytes) else json.dumps(answer).encode())

    def _taken(self, line: bytes) -> None:
        """What Answering passes on: an answer taken, or the refusal of them all."""
        if self.refused:
            return
        if line.startswith(ANSWER_PREFIX):
            text = line[len(ANSWER_PREFIX) : -1].decode("utf-8", "replace")
            self.answered_bytes += len(text) + 1
            if self.answered_bytes > MAX_ANSWERS_BYTES:
                self.refused = f"the answers came to more than {MAX_ANSWERS_BYTES >> 20} MiB"
            else:
                self.answers.append(text)
            return
        self.refused = str(json.loads(line)["refused"])[:300]

    def _answers_text(self) -> str:
        """The answers file the checker reads: what the zygote passed on while the job ran, never a file the
        sandbox's processes could write."""
        if self.refused:
            return json.dumps({"refused": self.refused}) + "\n"
        return "".join(line + "\n" for line in self.answers)

    def run(self, job: Job, questions: dict[str, list] | None = None) -> hops.Extracted:
        self.answers, self.answered_bytes, self.refused = [], 0, ""
        try:
            self.ensure()
        except _Trouble as trouble:
            return hops.unextracted(str(trouble))
        program, questions = job.answers_program, questions or {}
        self.answering = Answering({"program": {**program, "questions": questions}}, self._taken)
        # the plan as the zygote's supervisor gets it, after it forked the child: which are hidden tests stays here
        self.planned = {c: [{k: v for k, v in q.items() if k != "hidden"} for q in qs] for c, qs in questions.items()}
        self.count += 1
        name = f"job{self.count}"
        work, out = self.work / name, self.out / name
        work.mkdir()
        out.mkdir()
        try:
            for file, data in job.run_files.items():
                (work / Path(file).name).write_bytes(data)
            sandbox.hand_over(work, out)
            cells = len(job.answers_program["cells"])
            budget = job.timeout_s * (cells + 1) + sandbox_grace(cells)
            began = time.perf_counter()
            request = {"job": name, "program": program, "timeout_s": job.timeout_s}  # no seed, no question
            running = self.child
            killed_before = sandbox.oom_kills(running) if running is not None else 0
            told, reason = self._watch(request, job.timeout_s, budget)
            if told.get("fresh") is False:  # its /tmp or /dev/shm still holds something: the next job gets a new one
                self.stop()
            took = round(time.perf_counter() - began, 3)
            order = [i for i, _, _ in job.answers_program["cells"]]
            filed = _read_cells(out / "cells.jsonl", set(order))
            lost = told.get("lost")
            if isinstance(lost, dict) and running is not None and sandbox.oom_kills(running) > killed_before:
                limit = sandbox.MAX_SANDBOX_MEMORY_BYTES >> 30
                lost["status"] = f"{lost.get('status') or 'killed'}: out of memory, past the sandbox's {limit} GiB"
            if told.get("killed"):  # a stopped zygote may not have read the start of the cell it was lost in
                lost["cell"] = next((i for i in order if str(i) not in filed and i >= (lost["cell"] or 0)), None)
            return hops.extracted(
                filed,
                self._answers_text(),
                timed_out=[i for i in told.get("timed_out", []) if isinstance(i, int)],
                lost=lost if isinstance(lost, dict) else None,
                reason=reason,
                answers_refused=self.refused,
                sandbox_s=took,
            )
        finally:
            for folder in (self.work, self.out):  # nothing of one job is there for the next
                for entry in folder.iterdir():
                    shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)


class _Disk:
    """The disk under a sandbox's work and out folders, as a job found it, and what the job may take of it.

    The disk as a whole is looked at first (statvfs: cheap); only when it lost more than a job may take, or runs
    low, does each job count its own folders, so a job is killed for what it wrote, never for another's."""

    def __init__(self, *folders: Path) -> None:
        self.folders = folders
        self.bytes, self.files = self._free()

    def _free(self) -> tuple[int, int]:
        seen = os.statvfs(self.folders[0])
        return seen.f_bavail * seen.f_frsize, seen.f_favail

    def too_much(self) -> str:
        """'' while the job stays within its share of the disk, else what it took."""
        free, files = self._free()
        low = free < DISK_FLOOR_BYTES
        if not low and self.bytes - free <= MAX_JOB_DISK_BYTES and self.files - files <= MAX_JOB_FILES:
            return ""
        used, made = _usage(self.folders)
        if made > MAX_JOB_FILES:
            return f"it made more than {MAX_JOB_FILES} files on the grading machine's disk"
        if used > MAX_JOB_DISK_BYTES or (low and used > DISK_FLOOR_BYTES // 4):
            limit = MAX_JOB_DISK_BYTES >> 20
            return f"it wrote {used >> 20} MiB to the grading machine's disk (a job may write {limit} MiB)"
        return ""


def _usage(folders: tuple[Path, ...]) -> tuple[int, int]:
    """(bytes on disk, entries) under the folders, links not followed; the count stops past what a job may have."""
    used, made, stack = 0, 0, [str(f) for f in folders]
    while stack and made <= MAX_JOB_FILES and used <= MAX_JOB_DISK_BYTES:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    made += 1
                    try:
                        used += entry.stat(follow_symlinks=False).st_blocks * 512
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                    except OSError:
                        continue
        except OSError:
            continue
    return used, made


def _status(proc: Any) -> str:
    import psutil

    try:
        return proc.status()
    except psutil.Error:
        return ""


def sandbox_grace(cells: int) -> float:
    """Seconds beyond the cells' limits that a job may take: the zygote's fork and clean-up."""
    return 30.0 + cells


def _read_data(path: Path, limit: int) -> str | None:
    """A file the sandbox wrote, as text: None unless it is a plain file (not a link to root's files, not a FIFO
    that would hang this reader) of at most `limit` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as stream:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        return stream.read(limit + 1)[:limit].decode(errors="replace")


def _read_cells(path: Path, known: set[int]) -> dict[str, list[dict[str, Any]]]:
    """The outputs the sandbox filed per cell, as data: only stream and error outputs of known cells are kept."""
    filed = _read_data(path, MAX_CELLS_BYTES)
    if filed is None:
        return {}
    found: dict[str, list[dict[str, Any]]] = {}
    for text in filed.splitlines():
        try:
            line = json.loads(text)
        except ValueError:
            continue
        if not isinstance(line, dict) or line.get("cell") not in known or not isinstance(line.get("outputs"), list):
            continue
        found.setdefault(str(line["cell"]), [o for o in map(_output, line["outputs"]) if o is not None])
    return found


def _output(data: Any) -> dict[str, Any] | None:
    """One output the sandbox filed, rebuilt from its plain parts (stream, error, and a whole notebook's displays:
    text by MIME type), or None."""
    if not isinstance(data, dict):
        return None
    if data.get("output_type") == "stream" and data.get("name") in ("stdout", "stderr"):
        return {"output_type": "stream", "name": data["name"], "text": str(data.get("text", ""))}
    if data.get("output_type") in ("display_data", "execute_result") and isinstance(data.get("data"), dict):
        shown = {str(mime): str(value) for mime, value in data["data"].items() if isinstance(value, str)}
        found: dict[str, Any] = {"output_type": data["output_type"], "data": shown, "metadata": {}}
        count = data.get("execution_count")
        if data["output_type"] == "execute_result":
            found["execution_count"] = count if isinstance(count, int) and not isinstance(count, bool) else None
        return found
    if data.get("output_type") == "error":
        lines = data.get("traceback")
        return {
            "output_type": "error",
            "ename": str(data.get("ename", "")),
            "evalue": str(data.get("evalue", "")),
            "traceback": [str(x) for x in lines] if isinstance(lines, list) else [],
        }
    return None


class WarmChecker(_Warm):
    """grader.checker: trusted, outside the sandbox, with the GPU when there is one; as a planner, never a GPU."""

    def __init__(self, lessons: tuple[str, ...], scratch: Path, *, planner: bool = False) -> None:
        super().__init__("planner" if planner else "checker")
        self.lessons, self.scratch, self.planner = lessons, scratch, planner
        self.plans: dict[str, dict[str, list]] = {}  # a planner's plans by (program, seed)
        self.log = scratch / f"{self.what}.log"
        self.count = 0
        self.fresh = False  # started and no submission judged yet: the next one's checker is cold (it planned, at most)

    def plan(self, job: Job) -> dict[str, list]:
        """The questions of the job's test cells, per cell index (raises _Trouble when the planner fails).

        The plan is a function of the test cells and the seed alone (the planner is handed nothing else), and a
        class shares both: each worker plans each (program, seed) once."""
        key = hashlib.sha256(json.dumps([job.checker_program, job.seed], sort_keys=True).encode()).hexdigest()
        if key not in self.plans:
            budget = job.timeout_s * (len(job.checker_program["cells"]) + 1)
            asked = {"plan": True, "program": job.checker_program, "seed": job.seed}
            if len(self.plans) >= MAX_PLANS:
                self.plans.clear()
            self.plans[key] = self.ask(asked, budget)["questions"]
        return self.plans[key]

    def _start(self) -> None:
        self.fresh = True
        env = {**course_env(), "MPLBACKEND": "Agg", **({"CUDA_VISIBLE_DEVICES": ""} if self.planner else {})}
        for name in ("LABCORE_ANSWERS", "LABCORE_SEED"):
            env.pop(name, None)
        with open(self.log, "ab") as log:
            self.child = subprocess.Popen(
                [sys.executable, "-m", "grader.checker", *([IMPORTS_ONLY] if self.planner else []), *self.lessons],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                cwd=self.scratch,
                env=env,
                start_new_session=True,
            )

    def run(self, job: Job, extracted: hops.Extracted) -> hops.Checked:
        self.count += 1
        folder = self.scratch / f"job{self.count}"
        folder.mkdir()
        try:
            for file, data in job.run_files.items():
                (folder / Path(file).name).write_bytes(data)
            (folder / "answers.jsonl").write_text(extracted.get("answers", ""))
            cells = len(job.checker_program["cells"])
            budget = job.timeout_s * (cells + 1)
            try:
                told = self.ask({"dir": str(folder), "program": job.checker_program, "seed": job.seed}, budget)
                cold, self.fresh = self.fresh, False
                return hops.checked(hops.Judged(**told), cold=cold)
            except _Trouble as trouble:
                return hops.checked(None, trouble=str(trouble))
        finally:
            shutil.rmtree(folder, ignore_errors=True)


# -- the worker's warm processes, made on its first job ---------------------------------------------------------

_WARM: dict[str, Any] = {}


def _scratch() -> Path:
    if "scratch" not in _WARM:
        _WARM["scratch"] = Path(tempfile.mkdtemp(prefix="grader-worker-"))
    return _WARM["scratch"]


LIBRARY_ENV = "GRADER_LIBRARY"  # a local cluster's: the library its coordinator wrote, for all its workers


def _library() -> Path:
    """The sandbox's copy of the course packages, references withheld: written once per process, or the one a local
    cluster's coordinator wrote for its workers (LIBRARY_ENV: same machine, same code; the sandboxes bind it
    read-only). 0.6 s of CPU a worker otherwise."""
    if "library" not in _WARM:
        given = os.environ.get(LIBRARY_ENV, "")
        if given and Path(given).is_dir():
            _WARM["library"] = Path(given)
        else:
            sandbox_library(REPO, _scratch() / "library")
            _WARM["library"] = _scratch() / "library"
    return _WARM["library"]


def shared_library() -> dict[str, str]:
    """What a local cluster's workers are given to use this process's library (written now, once a process)."""
    library = _library()
    sandbox.readable(library)
    return {LIBRARY_ENV: str(library)}


def _code() -> str:
    if "code" not in _WARM:
        _WARM["code"] = code_digest()
    return _WARM["code"]


WORKER_ENV = "GRADER_WORKER_ENV"  # a local cluster's: the names of the coordinator's environment variables (JSON)


def _coordinators_environment() -> bool:
    """A worker forked from the coordinator's forkserver has the server's environment, updated with the coordinator's
    (the Nanny's env): what the coordinator has since dropped is dropped here too, all but what Dask's config adds.
    True for such a worker (a local cluster's), False for any other."""
    import dask

    names = os.environ.pop(WORKER_ENV, None)
    if names is None:
        return False
    kept = {*json.loads(names), "PYTHONHASHSEED"}
    for key in ("distributed.nanny.pre-spawn-environ", "distributed.nanny.environ"):
        kept |= set(dask.config.get(key, {}) or {})
    for name in set(os.environ) - kept:
        del os.environ[name]
    return True


def dask_setup(worker: Any = None) -> None:
    """A worker that preloads this module (`--preload grader.warm`; the local cluster does) makes here, at its
    start, what its first job would: the digest of its course code and the sandbox's library. Doing it before
    any task runs keeps that parsing (the library is written from the sources' syntax trees) out of the task
    thread while the worker's own thread compiles imports: Python 3.11 can fail two threads parsing at once
    ("SystemError: AST constructor recursion depth mismatch")."""
    if _coordinators_environment():
        # a local worker reports through the coordinator alone, whose table shows a task's error: Dask's own log
        # here is kept to the critical (at ERROR it wrote a worker closing with the coordinator after Ctrl-C, a
        # heartbeat cut short as the worker closed its connections, on the command's stderr)
        logging.getLogger("distributed").setLevel(logging.CRITICAL)
    _code()
    _library()


def _sandbox_refused() -> str:
    """'' when the sandbox holds on this worker's host (sandbox.preflight, once per worker), else why not."""
    if "preflight" not in _WARM:
        try:
            sandbox.preflight()
            _WARM["preflight"] = ""
        except UsageError as exc:
            _WARM["preflight"] = str(exc)
    return _WARM["preflight"]


def _refuse_other_code(job: Job) -> None:
    if job.code != _code():
        raise RuntimeError(
            f"this worker's course code ({_code()}) is not the coordinator's ({job.code}): "
            "install the same commit of the course on every grading machine"
        )


def _warm(kind: str, job: Job, make: Any) -> Any:
    key = f"{kind}:{','.join(job.lessons)}"
    if key not in _WARM:
        _WARM[key] = make(job.lessons, _scratch() / f"{kind}-{len(_WARM)}")
        _WARM[key].scratch.mkdir(parents=True)
    return _WARM[key]


def extract(job: Job, checker_plans: bool = False) -> hops.Extracted:
    """Step 1 of grading a submission, on any worker: the test cells' questions planned, then the student's cells and
    those questions in the warm sandbox. The planner is a checker of its own with no GPU; with `checker_plans` (a
    cluster without GPUs, whose checks run on these same workers) the worker's checker plans too: one warm process
    fewer a worker (its start is a second or two of CPU), the same plan (a function of the test cells and the seed)."""
    _refuse_other_code(job)
    refused = _sandbox_refused()
    if refused:  # this worker's host (a cluster's node) does not give what the sandbox needs: no one graded here
        return hops.unextracted(refused)
    if checker_plans:
        planner = _warm("checker", job, WarmChecker)
    else:
        planner = _warm("planner", job, lambda lessons, scratch: WarmChecker(lessons, scratch, planner=True))
    try:
        questions = planner.plan(job)
    except _Trouble as trouble:
        return hops.unextracted(f"the test cells' questions could not be planned: {trouble}")
    # the hidden questions' inputs go with the result (the instructors' store), for the feedback scan
    return hops.Extracted(**_warm("sandbox", job, WarmSandbox).run(job, questions), drawn=hidden_inputs(questions))


def check(job: Job, extracted: hops.Extracted) -> hops.Outcome:
    """Step 2, on a worker holding a GPU when grading live: the test cells in the warm checker. The submission's
    result: what the sandbox said of each cell and the verdicts, less the answers (grader.hops.outcome)."""
    _refuse_other_code(job)
    return hops.outcome(extracted, _warm("checker", job, WarmChecker).run(job, extracted))


def grade(job: Job, checker_plans: bool = False) -> hops.Outcome:
    """Both steps in this process, one after the other."""
    return check(job, extract(job, checker_plans))


def close() -> None:
    """Stop this process's warm children and remove their scratch (a worker's teardown; tests)."""
    for value in list(_WARM.values()):
        if isinstance(value, _Warm):
            value.stop()
    if "scratch" in _WARM:
        shutil.rmtree(_WARM["scratch"], ignore_errors=True)
    _WARM.clear()


atexit.register(close)  # a worker's warm processes end with it
