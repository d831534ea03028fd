"""`python -m grader.zygote LESSON...`: the warm sandbox, one process inside bubblewrap that grades many submissions.

It starts once per grading worker (grader.warm.WarmSandbox runs it in grader.sandbox's bwrap, as the init of a new
PID namespace), imports what the notebooks import and reads the shipped profiles once. It never reads a job: for
each one it forks a supervisor ahead, which reads the job from standard input (a framed JSON message: the job's
folder name, the program of grader.program, the per-cell limit; no question, no seed), forks the child that runs
the student's cells, and only then reads the job's plan (the test cells' questions, the next message), each message
read whole and no further.
So nothing of one job (its program, answers, questions) is ever in the memory the next job is forked from, and the
plan and the seed never are in a child's:

- the child first closes every descriptor but its own (standard input from /dev/null, output and error to its log,
  its report pipe, its ack pipe and its question pipe), moves into /sandbox/work/JOB, sets LABCORE_ANSWERS=ask, and
  runs the program's cells in a fresh namespace, filing their outputs in /sandbox/out/JOB/cells.jsonl (data, read by
  the grader as such), and telling the supervisor on a pipe which cell it starts. The program holds no test cell:
  in a test cell's place the child reads that cell's questions from its question pipe, which the supervisor
  writes only once the cell has started, answers them from the student's names
  (labcore.answers.ask) and sends each answer as a JSON line on the report pipe;
- the supervisor passes each cell start (a later one than the last) and each answer line on at once, in the order
  they came, on its standard output, the protocol no process of the student's can write: the trusted side keeps an
  answer only to a question of the cell last started, each at most once and in the plan's order (grader.zygote's
  Answering, run there), and writes the checker's answers file from those;
- a cell past the limit gets SIGINT (a KeyboardInterrupt in the cell: the next cells still run), and SIGKILL if
  no next cell starts within GRACE_S; a child that dies ends the job with the cell it died in;
- when the child is gone, the supervisor kills every other process of the sandbox's PID namespace (kill(-1) until
  the kernel finds none left: nothing a student started outlives their job), empties /tmp and /dev/shm (never below a
  mount point in them) and checks that their file systems hold nothing any more (a deleted file still open would),
  before it answers on standard output: one JSON line with the cells that timed out, the cell the child was lost in
  and why, and whether the sandbox is fresh again (when it is not, the trusted side starts a new one);
- the zygote reaps whatever ends meanwhile, and when the supervisor is gone kills whatever is left (a student can
  kill the supervisor: the zygote then answers for it, the job lost in its last cell).

The zygote is its PID namespace's init (bwrap --as-pid-1), not dumpable: no process of a job can trace it, read its
memory, stop it or kill it; the supervisor and the child are not dumpable either (a fork keeps it), so the plan in
the supervisor's memory is out of the child's reach.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import importlib.util
import json
import os
import select
import signal
import sys
import time
import traceback
from collections.abc import Iterator
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
    (the planner): a lesson's profile is a second of parsing, paid again by every warm process that reads it.
    matplotlib (the lessons' figures, 0.6 s) is imported where a lesson has a package: an assignment of none (a
    course's own exercises) does not wait for it, and a cell that imports it anyway still can."""
    profiles = argv[:1] != [IMPORTS_ONLY]
    # grader names no lesson: the assignments say which; one without a package has none
    packaged = [lesson for lesson in (argv if profiles else argv[1:]) if importlib.util.find_spec(lesson) is not None]
    if packaged:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot
    for lesson in packaged:
        checks = importlib.import_module(f"{lesson}.checks")
        prepare = getattr(checks, "prepare", None)
        if prepare is not None and profiles:
            prepare()


def _undumpable() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


class Answering:
    """The answer lines of a job, each checked against the plan as it comes, on the trusted side (grader.warm: the
    plan never enters the sandbox). `cell` is the cell the child last said it started. `forward(line)`, when given,
    is told each answer taken (and a refusal)."""

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


def _child(job: dict[str, Any], report: int, ip: Any, acked: int = -1, questions: int = -1) -> None:
    """In the forked child: run the job's cells, answer its questions. Never returns.

    Each cell's start waits for the supervisor's word on `acked` that it has read everything before it: the answers
    of the cells before are then with the trusted side before any more of the student's code runs (a cell that kills
    or stops the supervisor loses nothing already answered)."""
    try:
        work, out = INSIDE / "work" / job["job"], INSIDE / "out" / job["job"]
        log = os.open(out / "output.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        _close_all_but({0, 1, 2, report, acked, questions})
        sys.stdin = open(os.devnull)
        os.chdir(work)
        os.environ["LABCORE_ANSWERS"] = "ask"  # no file: the answers go to the supervisor on the report pipe
        os.environ.pop("LABCORE_SEED", None)  # the questions carry the inputs: the run's seed stays outside
        signal.signal(signal.SIGINT, signal.default_int_handler)
        cells.fresh_namespace(ip)
        program = job["program"]
        send, whole = _sender(report), bool(program.get("whole"))
        cells.run_cell(ip, cells.placeholders(program["placeholders"]), 0)
        with open(out / "cells.jsonl", "a") as filed:
            for index, source, count in program["cells"]:
                os.write(report, f"{index}\n".encode())
                if acked >= 0:
                    os.read(acked, 1)  # b"" when the supervisor is gone: the job is lost anyway
                if source is None:  # a test cell's place: its questions, sent now that it has started
                    outputs = cells.ask_cell(ip, _questions(questions), send)
                else:
                    outputs = cells.run_cell(ip, source, count, rich=whole)
                filed.write(json.dumps({"cell": index, "outputs": outputs}) + "\n")
                filed.flush()
        os.write(report, END)
    finally:
        os._exit(0)


def _close_all_but(keep: set[int]) -> None:
    """Close every descriptor of this process but `keep`: nothing the zygote held (its protocol, a file) reaches
    the student's code."""
    for name in os.listdir("/proc/self/fd"):
        if int(name) not in keep:
            with contextlib.suppress(OSError):  # the listing's own descriptor, closed already
                os.close(int(name))


def _questions(fd: int) -> Iterator[dict[str, Any]]:
    """The questions of the test cell that just started: one JSON line the trusted side writes on the question pipe
    once it knows the cell started (none at all when the pipe ends first)."""
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(fd, 1 << 16) if fd >= 0 else b""
        if not chunk:
            return
        line += chunk
    yield from json.loads(line)


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
    """Kill every process of this PID namespace but this one and its init (the zygote).

    kill(-1) is the kernel's own list of them, not /proc's (which a mount could have hidden): it ends when no
    process is left to signal, which is the proof that none is. Orphans are the zygote's children: it reaps them."""
    for _ in range(500):
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            return
        _reap_any()
        time.sleep(0.01)
    raise RuntimeError("processes of the job are still there after 5 s of SIGKILL")


def _reap_any() -> None:
    """Reap every child of this process that has ended (orphans come to the zygote, the init)."""
    try:
        while os.waitpid(-1, os.WNOHANG) != (0, 0):
            pass
    except ChildProcessError:
        pass


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


def _clean_up() -> bool:
    """Nothing of one job for the next: no process, nothing in /tmp or /dev/shm. Whether their file systems are
    empty again (a file a process still holds open, deleted or not, keeps its blocks)."""
    _kill_others()
    for folder in SCRATCH:
        _wipe(folder)
    Path("/tmp/home").mkdir(exist_ok=True)
    return all(_empty(folder) for folder in SCRATCH)


def _empty(folder: Path) -> bool:
    """Whether a tmpfs holds no data: a folder takes no block of one, every file with data does."""
    try:
        seen = os.statvfs(folder)
    except OSError:
        return True  # not there (a host without /dev/shm): nothing of a job's in it
    return seen.f_blocks == seen.f_bfree


class _Forwarding:
    """The child's answer lines, passed on to the trusted side as they come (which judges them against the plan),
    until they come to more than the answers' limit: then one refusal, and nothing more."""

    def __init__(self, forward: Any) -> None:
        self.forward, self.size, self.refused = forward, 0, ""

    def line(self, raw: bytes) -> None:
        if self.refused:
            return
        self.size += len(raw) + 1
        if self.size > MAX_ANSWERS_BYTES:
            self._refuse()
        elif self.forward is not None:
            self.forward(b'{"answer":' + raw + b"}")  # the trusted side reads what is inside as data

    def bounded(self, pending: bytes) -> bytes:
        """A partial line waiting for its end, unless it is already past the answers' limit (then refused)."""
        if len(pending) > MAX_ANSWERS_BYTES:
            if not self.refused:
                self._refuse()
            return b""
        return pending

    def _refuse(self) -> None:
        self.refused = f"the answers came to more than {MAX_ANSWERS_BYTES >> 20} MiB"
        if self.forward is not None:
            self.forward(json.dumps({"refused": self.refused}).encode())


class _Asking:
    """The child's question pipe, written by the supervisor: a test cell's questions once the child has started
    that cell, as one JSON line, never blocking (what the pipe cannot take yet waits for select). The plan arrives
    after the child was forked, so the child's memory never held it."""

    def __init__(self, program: dict[str, Any]) -> None:
        self.tests = {index for index, source, _ in program["cells"] if source is None}
        self.read, self.fd = os.pipe()
        self.planned: dict[str, list] = {}
        self.pending = b""

    def forked(self, planned: dict[str, list]) -> None:
        """In the supervisor, the child forked: the read end is the child's alone, the plan comes now."""
        os.close(self.read)
        os.set_blocking(self.fd, False)
        self.planned = planned

    def started(self, cell: int) -> None:
        if cell in self.tests:
            self.pending += (json.dumps(self.planned.get(str(cell), [])) + "\n").encode()
            self.flush()

    def flush(self) -> None:
        while self.pending:
            try:
                self.pending = self.pending[os.write(self.fd, self.pending) :]
            except BlockingIOError:
                return
            except BrokenPipeError:  # the child is gone: nobody reads them
                self.pending = b""

    def waiting(self) -> list[int]:
        return [self.fd] if self.pending else []


def run_job(job: dict[str, Any], ip: Any, tell: Any = None, forward: Any = None, planned: Any = None) -> dict[str, Any]:
    """Fork, run, watch the clock; what happened, as data. tell(cell) says each cell's start to the trusted side
    (grader.warm), whose own clock outlives a stopped supervisor; forward(line) passes each answer line on to it;
    planned() gives the test cells' questions, read only once the child is forked."""
    read, write = os.pipe()
    acked, ack = os.pipe()
    asking = _Asking(job["program"])
    pid = os.fork()
    if pid == 0:
        os.close(read)
        os.close(ack)
        os.close(asking.fd)
        _child(job, write, ip, acked, asking.read)
    os.close(write)
    os.close(acked)
    asking.forked(planned() if planned is not None else {})
    os.set_blocking(ack, False)  # a child that never reads its acks cannot stop the supervisor
    timed_out, lost, answering = _watch(job, pid, read, ack, asking, tell, _Forwarding(forward))
    os.close(read)
    os.close(ack)
    os.close(asking.fd)
    _, status = os.waitpid(pid, 0)
    if lost is not None and lost.get("why") == "died":
        lost["status"] = exit_status(status)
    fresh = _clean_up()
    return {
        "job": job["job"],
        "timed_out": timed_out,
        "lost": lost,
        "answers_refused": answering.refused,
        "fresh": fresh,
    }


class _Cells:
    """The child's report pipe read line by line: which cell it runs and until when, and whether it said it ended."""

    def __init__(self, limit_s: float, ack: int, asking: _Asking, tell: Any, answering: _Forwarding) -> None:
        self.limit_s, self.ack, self.asking, self.tell, self.answering = limit_s, ack, asking, tell, answering
        self.current: int | None = None
        self.deadline: float | None = None
        self.interrupted = False
        self.ended = False

    def wait_s(self) -> float | None:
        """How long the watch may wait for the child before the running cell is past its deadline."""
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    def read(self, lines: list[bytes]) -> None:
        for line in lines:
            if line + b"\n" == END:
                self.ended = True
            elif line.startswith(b"{"):  # an answer, in order with the cell starts around it
                self.answering.line(line)
            elif line.strip().isdigit():
                self._started(int(line))
                _ack(self.ack)

    def _started(self, cell: int) -> None:
        # the pipe is the student's too: only a later cell restarts the clock and asks its questions
        if self.current is not None and cell <= self.current:
            return
        self.current, self.deadline, self.interrupted = cell, time.monotonic() + self.limit_s, False
        self.asking.started(cell)
        if self.tell is not None:
            self.tell(cell)

    def interrupt(self, pid: int) -> None:
        """Past the limit: interrupt the cell, as a notebook's kernel would be, and give it GRACE_S to stop."""
        os.kill(pid, signal.SIGINT)
        self.deadline, self.interrupted = time.monotonic() + GRACE_S, True


def _watch(
    job: dict[str, Any], pid: int, read: int, ack: int, asking: _Asking, tell: Any, answering: _Forwarding
) -> tuple[list[int], dict[str, Any] | None, _Forwarding]:
    """The child's report pipe and clock, until it has run every cell, died or been killed: (the cells that timed
    out, where and why it was lost or None, the answers passed on)."""
    gone = os.pidfd_open(pid)  # the child's end: not the pipe's EOF (a process it left may hold the pipe open)
    os.set_blocking(read, False)
    cells = _Cells(float(job["timeout_s"]), ack, asking, tell, answering)
    timed_out: list[int] = []
    lost: dict[str, Any] | None = None
    buffer = b""
    try:
        while not cells.ended:
            ready, writable, _ = select.select([read, gone], asking.waiting(), [], cells.wait_s())
            if writable:
                asking.flush()
            if ready:
                chunk, at_end = _drain(read)
                *lines, buffer = (buffer + chunk).split(b"\n")
                cells.read(lines)
                buffer = answering.bounded(buffer)
                if gone in ready or at_end:
                    break
            elif writable:
                continue
            elif not cells.interrupted:
                timed_out.append(cells.current)
                cells.interrupt(pid)
            else:
                lost = {"cell": cells.current, "why": "stopped" if _stopped(pid) else "stuck"}  # a stopped child
                os.kill(pid, signal.SIGKILL)  # never sees its interrupt
                break
    finally:
        os.close(gone)
    if lost is None and not cells.ended:
        lost = {"cell": cells.current, "why": "died"}
    return timed_out, lost, answering


EOF_EXIT = 3  # a supervisor's exit status when the protocol has ended: the zygote ends too


def framed(data: bytes) -> bytes:
    """One message of the protocol into the zygote: its length on a line, then its bytes."""
    return b"%d\n" % len(data) + data


def _message(fd: int) -> bytes | None:
    """One framed message read whole, and nothing after it (the next is the child's to never hold): None at the
    protocol's end."""
    header = bytearray()
    while not header.endswith(b"\n"):
        byte = os.read(fd, 1)
        if not byte:
            return None
        header += byte
    size, data = int(header), bytearray()
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def _say(protocol: Any, data: dict[str, Any] | bytes) -> None:
    protocol.write(data + b"\n" if isinstance(data, bytes) else (json.dumps(data) + "\n").encode())
    protocol.flush()


def _supervise(ip: Any, protocol: Any) -> None:
    """A supervisor forked ahead of its job: the job read, its child forked, then the plan read, the job run and
    answered for. Never returns."""
    status = 0
    try:
        raw = _message(0)
        if raw is None:
            status = EOF_EXIT
            return
        tell, forward = (lambda cell: _say(protocol, {"cell": cell})), (lambda line: _say(protocol, line))
        _say(protocol, run_job(json.loads(raw), ip, tell, forward, lambda: json.loads(_message(0) or b"{}")))
    except BaseException:
        status = 1
        traceback.print_exc()  # to the zygote's log
    finally:
        os._exit(status)


def _answer_for(status: int, protocol: Any) -> None:
    """After a supervisor a student's process killed: everything else killed, the job's answer given for it."""
    _clean_up()
    lost = {"cell": None, "why": "sandbox", "status": f"the job's supervisor was {exit_status(status)}"}
    # not fresh: the trusted side starts a new sandbox (a plan may be left unread on the protocol)
    _say(protocol, {"job": "", "timed_out": [], "lost": lost, "answers_refused": "", "fresh": False})


def _reaped(supervisor: int) -> int:
    """Reap every process that ends (orphans come here) until the supervisor does; its wait status."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 0
        if pid == supervisor:
            return status


def main(argv: list[str]) -> int:
    protocol = sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but the protocol's lines on it
    sys.stdin = open(os.devnull)  # the supervisors read the protocol's lines, unbuffered
    warm(argv)
    ip = cells.shell()
    cells.keep_forever()
    _undumpable()
    _say(protocol, {"ready": True})
    while True:
        # forked ahead of its job (it waits for the job's line, or the protocol's end): the fork is not on the job's
        # clock, and what the zygote holds is no job's
        supervisor = os.fork()
        if supervisor == 0:
            _supervise(ip, protocol)
        status = _reaped(supervisor)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == EOF_EXIT:
            return 0
        if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
            _answer_for(status, protocol)
        else:
            _kill_others()  # the supervisor left none: the kernel says so before the next job starts


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
