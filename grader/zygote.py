"""`python -m grader.zygote LESSON...`: the warm sandbox, one process inside bubblewrap that grades many submissions.

It starts once per grading worker (grader.warm.WarmSandbox runs it in grader.sandbox's bwrap, with a new PID
namespace), imports what the notebooks import and reads the shipped profiles once, and then, for every job read
from standard input (one JSON line: the job's folder name, the program of grader.program, seed, per-cell limit),
forks a child that runs the student's cells:

- the child first points standard input, output and error away from the protocol (a student's code cannot
  speak for the zygote), moves into /sandbox/work/JOB, sets LABCORE_ANSWERS=ask, and runs the program's cells in a
  fresh namespace, filing their outputs in /sandbox/out/JOB/cells.jsonl (data, read by the grader as such), and
  telling the zygote on a pipe which cell it starts. The program holds no test cell: in a test cell's place it has
  the questions the trusted planner recorded from it (grader.checker), which the child answers from the student's
  names (labcore.answers.ask), sending each answer as a JSON line on that same pipe, opened before any student code
  ran, so answers and cell starts arrive in the order they were sent;
- the zygote keeps an answer only to a question of the test cell the child said it started, each at most once and
  in the plan's order: any other line on that pipe (an answer not asked, or asked by another cell, a second answer,
  a forged or unreadable line) refuses every answer of the job, with the reason. Each answer it keeps, and a
  refusal, it passes on at once on its own standard output, the protocol no process of the student's can write:
  the trusted side (grader.warm.WarmSandbox) writes the checker's answers file from those, nothing the sandbox
  wrote. (A student's code runs in the child and may speak on the pipe too, but an answer that passes is then
  just what that code gave for the question's trusted inputs: it is judged like any other);
- a cell past the limit gets SIGINT (a KeyboardInterrupt in the cell: the next cells still run), and SIGKILL if
  no next cell starts within GRACE_S; a child that dies ends the job with the cell it died in;
- each cell's start is also told on standard output ({"cell": N}): the trusted side (grader.warm.WarmSandbox) keeps
  a clock of its own, and kills the whole sandbox when the zygote falls silent (a student's code can stop it);
- when the child is gone, every other process in the sandbox's PID namespace is killed (nothing a student
  started outlives their job) and /tmp and /dev/shm are emptied (never below a mount point in them), before the
  zygote answers on standard output: one JSON line with the cells that timed out, and the cell the child was lost
  in and why.

The zygote cannot be traced or read by the children (PR_SET_DUMPABLE 0), so no job reaches into the next one.
"""

from __future__ import annotations

import ctypes
import importlib
import importlib.util
import json
import os
import select
import signal
import sys
import time
from pathlib import Path
from typing import Any

from grader import cells
from labcore.answers import MAX_FILE_BYTES as MAX_ANSWERS_BYTES

INSIDE = Path("/sandbox")
END = b"end\n"  # the child ran every cell: without it, the child was lost in the cell it last named
GRACE_S = 5.0  # after SIGINT, the time a cell has to give way before the child is killed
PR_SET_DUMPABLE = 4
SCRATCH = (Path("/tmp"), Path("/dev/shm"))  # the sandbox's fresh tmpfs folders, emptied after every job


IMPORTS_ONLY = "--imports-only"  # a first argument: warm() imports the lessons but reads no shipped profile


def warm(argv: list[str]) -> None:
    """Import what the notebooks import and read the shipped profiles once: every job's child inherits them.

    argv names the lessons, after IMPORTS_ONLY in a process that forks no job and reads a profile at most once
    (the planner): a lesson's profile is a second of parsing, paid again by every warm process that reads it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot

    profiles = argv[:1] != [IMPORTS_ONLY]
    for lesson in argv if profiles else argv[1:]:  # grader names no lesson: the assignments say which
        if importlib.util.find_spec(lesson) is None:  # one without a package has none
            continue
        checks = importlib.import_module(f"{lesson}.checks")
        prepare = getattr(checks, "prepare", None)
        if prepare is not None and profiles:
            prepare()


def _undumpable() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


class Answering:
    """The answers the child sends on its report pipe, each line checked against the plan as it comes. `forward(line)`,
    when given, passes each answer taken (and a refusal) on at once to the trusted side, on the protocol no process
    of the job's can write: a zygote stopped or killed later keeps the answers of the cells before."""

    def __init__(self, job: dict[str, Any], forward: Any = None) -> None:
        self.forward = forward
        program = job["program"]
        planned = program.get("questions", {})
        self.keys = {
            index: [q["key"] for q in planned.get(str(index), [])]
            for index, source, _ in program["cells"]
            if source is None
        }
        self.size = 0
        self.cell: int | None = None  # the cell the child last said it started: only its questions may be answered
        self.answered: dict[int, int] = {}  # cell -> its plan position after the last answer taken
        self.refused = ""

    def line(self, raw: bytes) -> None:
        """One answer line: kept, or the reason every answer of the job is refused."""
        if self.refused:
            return
        self.size += len(raw) + 1
        self._take(raw)
        if self.refused and self.forward is not None:
            self.forward(json.dumps({"refused": self.refused}).encode())

    def _take(self, raw: bytes) -> None:
        try:
            line = json.loads(raw)
            key = line["key"]
        except (ValueError, TypeError, KeyError):
            self.refused = "the sandbox sent a line that is not an answer"
            return
        at = self.answered.get(self.cell, 0) if self.cell is not None else 0
        asked = self.keys.get(self.cell, []) if self.cell is not None else []
        if self.size > MAX_ANSWERS_BYTES:
            self.refused = f"the answers came to more than {MAX_ANSWERS_BYTES >> 20} MiB"
        elif not isinstance(line, dict) or set(line) not in ({"key", "value"}, {"key", "raised"}):
            self.refused = "the sandbox sent a line that is not an answer"
        elif key not in asked[at:]:
            self.refused = "an answer to a question not asked, or a second answer to one, came from the sandbox"
        else:
            self.answered[self.cell] = asked.index(key, at) + 1
            if self.forward is not None:
                self.forward(b'{"answer":' + raw + b"}")  # raw parsed as one JSON object above

    def bounded(self, pending: bytes) -> bytes:
        """A partial line waiting for its end, unless it is already past the answers' limit (then refused)."""
        if len(pending) > MAX_ANSWERS_BYTES:
            if not self.refused:
                self.refused = f"the answers came to more than {MAX_ANSWERS_BYTES >> 20} MiB"
                if self.forward is not None:
                    self.forward(json.dumps({"refused": self.refused}).encode())
            return b""
        return pending


def _sender(fd: int) -> Any:
    def send(line: dict[str, Any]) -> None:
        data = (json.dumps(line, separators=(",", ":")) + "\n").encode()
        while data:  # a signal may cut a write short: send the rest
            data = data[os.write(fd, data) :]

    return send


def _child(job: dict[str, Any], report: int, ip: Any, acked: int = -1) -> None:
    """In the forked child: run the job's cells, answer its questions. Never returns.

    Each cell's start waits for the zygote's word on `acked` that it has read everything before it: the answers of
    the cells before are then with the trusted side before any more of the student's code runs (a cell that kills
    or stops the zygote loses nothing already answered)."""
    try:
        work, out = INSIDE / "work" / job["job"], INSIDE / "out" / job["job"]
        log = os.open(out / "output.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(null)
        os.close(log)
        sys.stdin = open(os.devnull)
        os.chdir(work)
        os.environ["LABCORE_ANSWERS"] = "ask"  # no file: the answers go to the zygote on the report pipe
        os.environ.pop("LABCORE_SEED", None)  # the questions carry the inputs: the run's seed stays outside
        signal.signal(signal.SIGINT, signal.default_int_handler)
        cells.fresh_namespace(ip)
        program = job["program"]
        questions, send, whole = program.get("questions", {}), _sender(report), bool(program.get("whole"))
        cells.run_cell(ip, cells.placeholders(program["placeholders"]), 0)
        with open(out / "cells.jsonl", "a") as filed:
            for index, source, count in program["cells"]:
                os.write(report, f"{index}\n".encode())
                if acked >= 0:
                    os.read(acked, 1)  # b"" when the zygote is gone: the job is lost anyway
                if source is None:  # a test cell's place: its planned questions
                    outputs = cells.ask_cell(ip, questions.get(str(index), []), send)
                else:
                    outputs = cells.run_cell(ip, source, count, rich=whole)
                filed.write(json.dumps({"cell": index, "outputs": outputs}) + "\n")
                filed.flush()
        os.write(report, END)
    finally:
        os._exit(0)


def exit_status(status: int) -> str:
    """How the child ended, in grader.preprocessors' words for a kernel: 'exit status 3', 'killed by SIGKILL'."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return f"killed by {signal.Signals(number).name}"
        except ValueError:
            return f"killed by signal {number}"
    return f"exit status {os.WEXITSTATUS(status)}"


def _drain(fd: int, most: int = 1 << 20) -> tuple[bytes, bool]:
    """What a non-blocking pipe holds now (at most about `most` bytes: a flooding writer waits for the next read),
    and whether it is at its end (every writer gone)."""
    data = b""
    while len(data) < most:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return data, False
        if not chunk:
            return data, True
        data += chunk
    return data, False


def _ack(fd: int) -> None:
    """Tell the child that every line before its cell's start is read (and its answers passed on)."""
    try:
        os.write(fd, b"k")
    except (BlockingIOError, BrokenPipeError):
        pass


def _stopped(pid: int) -> bool:
    """Whether a process is stopped (SIGSTOP, or a tracer's stop): its state in this namespace's /proc."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("T", "t")
    except (OSError, IndexError):
        return False


def _kill_others() -> None:
    """Kill every process of this PID namespace but the zygote and bwrap's init (its pid 1).

    kill(-1) is the kernel's own list of them, not /proc's (which a mount could have hidden): it ends when no
    process is left to signal. Orphans are reaped by bwrap's init, the zygote's own children here."""
    for _ in range(500):
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            return
        try:
            while os.waitpid(-1, os.WNOHANG) != (0, 0):
                pass
        except ChildProcessError:
            pass
        time.sleep(0.01)


def _wipe(folder: Path) -> None:
    """Empty a folder of this job's files, staying on its own file system: a mount point in it (a venv under /tmp
    bound into the sandbox) and everything under one is never touched."""
    try:
        device = folder.lstat().st_dev
    except OSError:
        return
    _wipe_on(folder, device)


def _wipe_on(folder: Path, device: int) -> None:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if info.st_dev != device:  # a mount point: not this job's
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                os.chmod(entry.path, 0o700)  # a folder the job closed (mode 000) is still its own to empty
                _wipe_on(Path(entry.path), device)
                os.rmdir(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:  # a folder holding a mount point stays, emptied of the rest
            pass


def _clean_up() -> None:
    """Nothing of one job for the next: no process, nothing in /tmp or /dev/shm."""
    _kill_others()
    for folder in SCRATCH:
        _wipe(folder)
    Path("/tmp/home").mkdir(exist_ok=True)


def run_job(job: dict[str, Any], ip: Any, tell: Any = None, forward: Any = None) -> dict[str, Any]:
    """Fork, run, watch the clock; what happened, as data. tell(cell) says each cell's start to the trusted side
    (grader.warm), whose own clock outlives a stopped zygote; forward(line) passes each answer taken on to it."""
    read, write = os.pipe()
    acked, ack = os.pipe()
    answering = Answering(job, forward)
    pid = os.fork()
    if pid == 0:
        os.close(read)
        os.close(ack)
        _child(job, write, ip, acked)
    os.close(write)
    os.close(acked)
    os.set_blocking(ack, False)  # a child that never reads its acks cannot stop the zygote
    # the child's end: its pidfd, not the pipe's EOF (a process it left behind may hold the pipe open)
    gone = os.pidfd_open(pid)
    os.set_blocking(read, False)
    limit = float(job["timeout_s"])
    current, deadline, interrupted, ended = None, None, False, False
    timed_out: list[int] = []
    lost: dict[str, Any] | None = None
    buffer = b""
    while not ended:
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([read, gone], [], [], wait)
        if ready:
            chunk, at_end = _drain(read)
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if line + b"\n" == END:
                    ended = True
                    continue
                if line.startswith(b"{"):  # an answer, in order with the cell starts around it
                    answering.line(line)
                    continue
                try:
                    cell = int(line)
                except ValueError:
                    continue
                _ack(ack)
                # the pipe is the student's too: only a later cell restarts the clock, so no cell gets more time
                if current is not None and cell <= current:
                    continue
                current, deadline, interrupted = cell, time.monotonic() + limit, False
                answering.cell = current
                if tell is not None:
                    tell(current)
            buffer = answering.bounded(buffer)
            if gone in ready or at_end:
                break
            continue
        if not interrupted:  # past the limit: interrupt the cell, as a notebook's kernel would be
            timed_out.append(current)
            os.kill(pid, signal.SIGINT)
            deadline, interrupted = time.monotonic() + GRACE_S, True
        else:
            why = "stopped" if _stopped(pid) else "stuck"  # a stopped child never sees its interrupt
            os.kill(pid, signal.SIGKILL)
            lost = {"cell": current, "why": why}
            break
    os.close(gone)
    os.close(read)
    os.close(ack)
    _, status = os.waitpid(pid, 0)
    if lost is None and not ended:
        lost = {"cell": current, "why": "died", "status": exit_status(status)}
    _clean_up()
    return {"job": job["job"], "timed_out": timed_out, "lost": lost, "answers_refused": answering.refused}


def main(argv: list[str]) -> int:
    protocol_in, protocol_out = sys.stdin.buffer, sys.stdout
    sys.stdout = sys.stderr  # nothing but answers on the protocol
    warm(argv)
    ip = cells.shell()
    cells.keep_forever()
    _undumpable()
    protocol_out.write(json.dumps({"ready": True}) + "\n")
    protocol_out.flush()

    def tell(cell: int) -> None:
        protocol_out.write(json.dumps({"cell": cell}) + "\n")
        protocol_out.flush()

    def forward(line: bytes) -> None:
        protocol_out.buffer.write(line + b"\n")
        protocol_out.flush()

    for line in protocol_in:
        job = json.loads(line)
        protocol_out.write(json.dumps(run_job(job, ip, tell, forward)) + "\n")
        protocol_out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
