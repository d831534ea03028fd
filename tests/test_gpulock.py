"""Taking turns on a shared GPU (labcore.gpulock), offline: processes contending for one lock file, tickets,
a killed holder, nesting, permissions, and reading nvidia-smi's list of compute processes."""

from __future__ import annotations

import fcntl
import io
import itertools
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from labcore import gpulock
from labcore.gpulock import GpuId, gpu_turn, turn_stats

ROOT = Path(__file__).resolve().parents[1]
KEY = "index-0"  # gpu_id(0) without CuPy: the device index keys the lock

# One student's timed section: take GPU 0's turn, log enter and exit, hold it for `hold` seconds or until the
# file `hold` appears, then, if asked, linger without a turn (a member of the GPU's users).
WORKER = """
import sys, time
from pathlib import Path
from labcore.gpulock import gpu_turn
name, log, hold, linger = sys.argv[1], Path(sys.argv[2]), sys.argv[3], float(sys.argv[4])
with gpu_turn(0):
    with log.open("a") as fh:
        fh.write(f"enter {time.time()}\\n")
    if hold.replace(".", "").isdigit():
        time.sleep(float(hold))
    else:
        while not Path(hold).exists():
            time.sleep(0.01)
    with log.open("a") as fh:
        fh.write(f"exit {time.time()}\\n")
print("done", flush=True)
time.sleep(linger)
"""


@pytest.fixture
def locks(tmp_path, monkeypatch):
    """A private lock directory, the lock on, and this process's turn state fresh."""
    directory = tmp_path / "locks"
    monkeypatch.setenv(gpulock.LOCK_DIR_ENV, str(directory))
    monkeypatch.delenv(gpulock.SWITCH_ENV, raising=False)
    return directory


def start(name: str, tmp_path: Path, hold: str, linger: float = 0.0) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    log = tmp_path / f"{name}.log"
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, name, str(log), hold, str(linger)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(condition, what: str, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def tickets(directory: Path) -> list[Path]:
    return sorted(directory.glob(f"{KEY}.ticket.*")) if directory.is_dir() else []


def entered(tmp_path: Path, name: str) -> bool:
    log = tmp_path / f"{name}.log"
    return log.exists() and "enter" in log.read_text()


def interval(tmp_path: Path, name: str) -> tuple[float, float]:
    times = dict(line.split() for line in (tmp_path / f"{name}.log").read_text().splitlines())
    return float(times["enter"]), float(times["exit"])


def lock_is_free(directory: Path) -> bool:
    """Whether another open file description could flock the GPU's lock file right now."""
    fd = os.open(directory / f"{KEY}.lock", os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def test_three_processes_take_turns_in_order_and_say_how_many_are_ahead(locks, tmp_path):
    """A holds GPU 0; B, then C, queue: they never overlap, go in ticket order, and say 1, then 2, ahead."""
    release = tmp_path / "release-a"
    a = start("a", tmp_path, str(release))
    wait_for(lambda: entered(tmp_path, "a"), "a's turn")
    b = start("b", tmp_path, "0.3")
    wait_for(lambda: len(tickets(locks)) == 2, "b's ticket")
    c = start("c", tmp_path, "0.3")
    wait_for(lambda: len(tickets(locks)) == 3, "c's ticket")
    time.sleep(0.2)  # c has looked at the queue and said so
    release.touch()
    errs = {name: p.communicate(timeout=30)[1] for name, p in (("a", a), ("b", b), ("c", c))}
    assert [p.returncode for p in (a, b, c)] == [0, 0, 0], errs
    assert errs["a"] == ""
    assert errs["b"].strip() == "waiting for GPU 0: 1 measurement ahead"
    assert errs["c"].strip() == "waiting for GPU 0: 2 measurements ahead"
    spans = [interval(tmp_path, name) for name in "abc"]
    for (_, exit_s), (enter_s, _) in itertools.pairwise(spans):
        assert enter_s >= exit_s, spans  # b after a, c after b: in ticket order, never overlapping
    assert tickets(locks) == []  # each took its ticket away with its turn


def test_a_killed_holder_frees_the_gpu_and_its_ticket_stops_counting(locks, tmp_path):
    """SIGKILL the holder: the waiter gets the turn, and a later waiter counts only that one ahead."""
    a = start("a", tmp_path, str(tmp_path / "never"))
    wait_for(lambda: entered(tmp_path, "a"), "a's turn")
    b = start("b", tmp_path, str(tmp_path / "release-b"))
    wait_for(lambda: len(tickets(locks)) == 2, "b's ticket")
    a.send_signal(signal.SIGKILL)
    a.wait(timeout=10)
    wait_for(lambda: entered(tmp_path, "b"), "b's turn after a was killed")
    c = start("c", tmp_path, "0")
    wait_for(lambda: len(tickets(locks)) == 2, "c's ticket beside b's, a's gone")
    (tmp_path / "release-b").touch()
    _, err_b = b.communicate(timeout=30)
    _, err_c = c.communicate(timeout=30)
    assert err_b.strip() == "waiting for GPU 0: 1 measurement ahead"
    assert err_c.strip() == "waiting for GPU 0: 1 measurement ahead"  # b only: dead a's ticket does not count
    assert b.returncode == c.returncode == 0
    assert tickets(locks) == []


def test_a_dead_processs_ticket_is_not_waited_for_and_is_cleared(locks):
    """A ticket file nobody holds a flock on (its owner died) costs no wait and is removed."""
    gpulock.lock_dir()
    stale = locks / f"{KEY}.ticket.{1:020d}.999999"
    stale.write_text("999999\n")
    err = io.StringIO()
    before = turn_stats()
    with gpu_turn(0, file=err):
        assert not lock_is_free(locks)
    assert err.getvalue() == ""
    assert turn_stats().waits == before.waits
    assert not stale.exists()


def test_nested_turns_take_the_lock_once(locks):
    """Inner turns (a timed pass inside a timed section, a decorated function) neither wait nor release."""
    before = turn_stats().turns

    @gpu_turn(0)
    def timed_pass() -> bool:
        return lock_is_free(locks)

    with gpu_turn(0):
        with gpu_turn(0):
            assert not lock_is_free(locks)
            assert len(tickets(locks)) == 1
        assert not lock_is_free(locks)  # the inner exit kept the outer's turn
        assert timed_pass() is False
        assert not lock_is_free(locks)
    assert lock_is_free(locks)
    assert tickets(locks) == []
    assert turn_stats().turns == before + 1
    assert timed_pass() is False  # on its own, the decorated call is one turn
    assert turn_stats().turns == before + 2


def test_off_switch_times_without_the_lock(locks, monkeypatch):
    """LABCORE_GPU_LOCK=off: no turn is taken, no file is made."""
    monkeypatch.setenv(gpulock.SWITCH_ENV, "off")
    with gpu_turn(0):
        assert not locks.exists()


def test_directory_and_lock_file_are_usable_by_every_user_whatever_the_umask(locks):
    """Directory 1777 (sticky, like /tmp), lock file 0666, even under umask 077; tickets readable by all."""
    old = os.umask(0o077)
    try:
        with gpu_turn(0):
            ticket_modes = [stat.S_IMODE(p.stat().st_mode) for p in tickets(locks)]
    finally:
        os.umask(old)
    assert stat.S_IMODE(locks.stat().st_mode) == 0o1777
    assert stat.S_IMODE((locks / f"{KEY}.lock").stat().st_mode) == 0o666
    assert ticket_modes == [0o644]


def test_a_lock_directory_that_cannot_be_used_is_said_once_and_timing_goes_on(tmp_path, monkeypatch):
    """A lock directory path that is a file: one line says the timing goes on without the lock."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv(gpulock.LOCK_DIR_ENV, str(blocker))
    err = io.StringIO()
    for _ in range(2):
        with gpu_turn(0, file=err):
            pass
    assert err.getvalue().count("timing without the lock") == 1
    assert err.getvalue().startswith("labcore: cannot take turns on GPU 0")


# -- nvidia-smi's compute processes -------------------------------------------------------------------------------

BUS = "0000:3b:00.0"
GPU = GpuId("pci-0000_3b_00.0", "GPU 0 (NVIDIA H200)", BUS)


def canned(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def fake_smi(tmp_path: Path, monkeypatch, output: str, *, exit_code: int = 0, sleep_s: float = 0) -> Path:
    """An `nvidia-smi` first on PATH that prints `output` for the compute-apps query."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "output.txt").write_text(output)
    script = bin_dir / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n"
        f'case "$1" in --query-compute-apps=gpu_bus_id,pid,process_name,used_memory) ;; *) exit 2 ;; esac\n'
        f"sleep {sleep_s}\n"
        f'cat "{bin_dir / "output.txt"}"\n'
        f"exit {exit_code}\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return script


def test_compute_apps_lines_are_parsed_with_bus_ids_names_and_memory():
    """Bus ids of either width match, paths become names, '[N/A]' memory is unknown, junk lines are skipped."""
    found = gpulock.parse_compute_apps(
        canned(
            "00000000:3B:00.0, 1234, /usr/bin/python3.12, 2150",
            "00000000:3B:00.0, 77, [Insufficient Permissions], [N/A]",
            "00000000:86:00.0, 4321, my, odd, name, 512",
            "No running processes found",
            "",
        )
    )
    assert [(p.pid, p.name, p.used_bytes, p.bus_id) for p in found] == [
        (1234, "python3.12", 2150 << 20, BUS),
        (77, "[Insufficient Permissions]", None, BUS),
        (4321, "my, odd, name", 512 << 20, "0000:86:00.0"),
    ]
    assert found[0].describe() == "pid 1234 python3.12, 2.1 GiB"
    assert gpulock.normalized_bus_id("0000:3B:00.0") == gpulock.normalized_bus_id("00000000:3b:00.0") == BUS


def test_others_on_this_gpu_exclude_us_other_gpus_and_processes_that_take_turns(locks, tmp_path, monkeypatch):
    """Of five listed processes only the stranger on our GPU counts: not us, not another GPU's, not a student
    of ours who takes turns through the lock (a member), even one that holds no turn right now."""
    student = start("student", tmp_path, "0", linger=60)
    try:
        assert student.stdout.readline().strip() == "done"  # it took a turn on GPU 0 and holds none now
        fake_smi(
            tmp_path,
            monkeypatch,
            canned(
                f"00000000:3B:00.0, {os.getpid()}, python, 900",
                f"00000000:3B:00.0, {student.pid}, python, 1024",
                "00000000:3B:00.0, 1, trainer, 40960",
                "00000000:86:00.0, 2, elsewhere, 100",
            ),
        )
        # the student, without CuPy, keyed GPU 0 by its index: look at the same key
        others = gpulock.others_on(GpuId(KEY, GPU.label, BUS))
    finally:
        student.kill()
        student.wait(timeout=10)
    assert [(p.pid, p.name) for p in others] == [(1, "trainer")]


def test_the_warning_names_the_gpu_and_the_processes(monkeypatch, tmp_path, locks):
    """'other processes are computing on GPU 0 (pid 1 trainer, 40.0 GiB): timings may be disturbed'."""
    monkeypatch.setattr(gpulock, "cupy_or_none", lambda: object())
    monkeypatch.setattr(gpulock, "gpu_id", lambda device=None: GPU)
    fake_smi(tmp_path, monkeypatch, canned("00000000:3B:00.0, 1, trainer, 40960", "00000000:3B:00.0, 2, x, 1024"))
    err = io.StringIO()
    text = gpulock.warn_if_shared(file=err)
    assert err.getvalue() == (
        "other processes are computing on GPU 0 (pid 1 trainer, 40.0 GiB; pid 2 x, 1.0 GiB): timings may be disturbed\n"
    )
    assert text == err.getvalue().strip()


@pytest.mark.parametrize("case", ["missing", "fails", "hangs", "nothing listed"])
def test_no_nvidia_smi_or_a_broken_one_says_nothing(case, monkeypatch, tmp_path, locks):
    """No nvidia-smi, one that exits non-zero, one that hangs past the timeout, or an idle GPU: no warning."""
    monkeypatch.setattr(gpulock, "cupy_or_none", lambda: object())
    monkeypatch.setattr(gpulock, "gpu_id", lambda device=None: GPU)
    monkeypatch.setattr(gpulock, "SMI_TIMEOUT_S", 0.5)
    listed = canned("00000000:3B:00.0, 1, trainer, 40960")
    if case == "missing":
        monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    elif case == "fails":
        fake_smi(tmp_path, monkeypatch, listed, exit_code=9)
    elif case == "hangs":
        fake_smi(tmp_path, monkeypatch, listed, sleep_s=5)
    else:
        fake_smi(tmp_path, monkeypatch, "")
    err = io.StringIO()
    assert gpulock.warn_if_shared(file=err) is None
    assert err.getvalue() == ""


def test_without_a_gpu_the_warning_is_silent(monkeypatch):
    """No GPU: nothing is asked and nothing said."""
    monkeypatch.setattr(gpulock, "cupy_or_none", lambda: None)
    monkeypatch.setattr(gpulock, "compute_processes", lambda: pytest.fail("nvidia-smi asked without a GPU"))
    err = io.StringIO()
    assert gpulock.warn_if_shared(file=err) is None
    assert err.getvalue() == ""


# One process's work on GPU 0: a share or a turn (argv[2]), logging enter and exit, held until the file argv[4]
# appears; "share-then-turn" takes a turn inside its share (a check's set-up, then its timed pass).
USER = """
import sys, time
from pathlib import Path
from labcore.gpulock import gpu_share, gpu_turn
name, kind, log, hold = sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])

def note(word):
    with log.open("a") as fh:
        fh.write(f"{word} {time.time()}\\n")

def held():
    note("enter")
    while not hold.exists():
        time.sleep(0.01)
    note("exit")

if kind == "share-then-turn":
    with gpu_share(0):
        note("shared")
        with gpu_turn(0):
            held()
        note("shared-again")
else:
    with (gpu_share(0) if kind == "share" else gpu_turn(0)):
        held()
"""


def start_user(name: str, kind: str, tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    hold = tmp_path / f"{name}.go"
    proc = subprocess.Popen(
        [sys.executable, "-c", USER, name, kind, str(tmp_path / f"{name}.log"), str(hold)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, hold


def log_words(tmp_path: Path, name: str) -> list[str]:
    log = tmp_path / f"{name}.log"
    return [line.split()[0] for line in log.read_text().splitlines()] if log.exists() else []


def test_sharers_overlap_and_a_turn_waits_for_them_then_keeps_new_ones_out(locks, tmp_path):
    """Two shares run together; a turn asked meanwhile starts only when both have left, and a share asked while the
    turn waits or runs starts only after the turn: a timed pass has the GPU to itself."""
    a, go_a = start_user("a", "share", tmp_path)
    b, go_b = start_user("b", "share", tmp_path)
    wait_for(lambda: "enter" in log_words(tmp_path, "a") and "enter" in log_words(tmp_path, "b"), "two sharers in")
    t, go_t = start_user("t", "turn", tmp_path)
    wait_for(lambda: tickets(locks), "the turn's ticket")
    time.sleep(0.3)
    assert log_words(tmp_path, "t") == []  # sharers inside: the turn waits
    c, go_c = start_user("c", "share", tmp_path)
    go_a.touch()
    time.sleep(0.3)
    assert log_words(tmp_path, "t") == [] and log_words(tmp_path, "c") == []  # b is still in; c waits at the gate
    go_b.touch()
    wait_for(lambda: "enter" in log_words(tmp_path, "t"), "the turn")
    time.sleep(0.3)
    assert log_words(tmp_path, "c") == []  # the turn runs alone
    go_t.touch()
    wait_for(lambda: "enter" in log_words(tmp_path, "c"), "the late sharer")
    go_c.touch()
    for proc in (a, b, t, c):
        assert proc.wait(timeout=20) == 0, proc.stderr.read()


def test_a_process_drops_its_own_share_for_its_turn_and_takes_it_back(locks, tmp_path):
    """A check that shares for its set-up and then times: its own share does not keep its turn waiting, and while
    the turn runs another process's share waits."""
    p, go_p = start_user("p", "share-then-turn", tmp_path)
    wait_for(lambda: "enter" in log_words(tmp_path, "p"), "the turn inside the share")
    o, go_o = start_user("o", "share", tmp_path)
    time.sleep(0.3)
    assert log_words(tmp_path, "o") == []
    go_p.touch()
    wait_for(lambda: "enter" in log_words(tmp_path, "o"), "the other sharer")
    go_o.touch()
    assert p.wait(timeout=20) == 0 and o.wait(timeout=20) == 0, p.stderr.read()
    assert log_words(tmp_path, "p") == ["shared", "enter", "exit", "shared-again"]
