"""Taking turns on a shared GPU: one timed section at a time per physical GPU, across processes and users.

Students on one lab machine share its GPUs. Two timed passes that overlap on one GPU disturb each other
(copy engines, SMs and the PCIe link are shared), so every timed section of the live lessons runs inside
`gpu_turn()`:

- one lock file per GPU, `<key>.lock`, under $LABCORE_LOCK_DIR (default /tmp/labcore-gpu-locks, a
  directory of mode 1777 like /tmp itself, files of mode 0666, so every user of the machine can use them);
  the key is the GPU's PCI bus id when CuPy knows it (CUDA_VISIBLE_DEVICES renumbers devices, the bus id
  names the physical GPU), else its device index. `fcntl.flock` on it is the mutual exclusion, and the
  kernel drops it when a holder dies.
- a ticket per process that wants or holds a turn, `<key>.ticket.<time ns>.<pid>`, flocked by its owner
  while it lives. Turns go in ticket order; the tickets ahead of one's own that are still locked are the
  'measurements ahead' a waiter is told about. A dead owner's ticket is unlocked: it stops counting at
  once and is removed by whoever finds it (sticky directory: only its owner can, otherwise it stays,
  uncounted, until that user's next run).
- a member file per process, `<key>.member.<pid>.<random>`, flocked for the process's life once it takes
  turns: the warning about other processes computing on the GPU leaves out those that take turns with us.

Turns nest: a timed section inside another takes the lock once. LABCORE_GPU_LOCK=off times without it.

GPU work that is not timed (allocations, fills, correctness passes, a check's set-up) runs inside `gpu_share()`:
any number of processes share the GPU, but never while a turn is timed. A turn takes `<key>.gate` exclusively for
its whole length and then `<key>.lock` exclusively, which waits for the sharers already in; a sharer passes the
gate (shared, for a moment) and holds `<key>.lock` shared. So a timed pass has the GPU to itself: the sharers in
finish first, new ones wait at the gate until the turn ends. A process that shares and then times drops its share
for the turn and takes it back after; a share inside a turn is the turn.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import errno
import fcntl
import functools
import os
import secrets
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

from labcore.device import cupy_or_none

LOCK_DIR_ENV = "LABCORE_LOCK_DIR"
SWITCH_ENV = "LABCORE_GPU_LOCK"
DEFAULT_LOCK_DIR = Path("/tmp/labcore-gpu-locks")  # not $TMPDIR: it may differ per user, and then so would the locks
DIR_MODE, FILE_MODE, TICKET_MODE = 0o1777, 0o666, 0o644  # tickets only need reading by others (flock needs no write)
POLL_S = 0.02  # how often a waiter behind others looks at the queue again
SMI_TIMEOUT_S = 10
OFF = {"off", "0", "no", "false"}


@dataclasses.dataclass(frozen=True)
class GpuId:
    """Which physical GPU a turn is for: a file-name-safe key, the label users read, and its PCI bus id if known."""

    key: str
    label: str
    bus_id: str | None = None


@dataclasses.dataclass
class TurnStats:
    """What this process's turns cost so far: turns taken, how many had to wait, seconds waited."""

    turns: int = 0
    waits: int = 0
    waited_s: float = 0.0


@dataclasses.dataclass(frozen=True)
class ComputeProcess:
    """A process with a compute context on a GPU, as nvidia-smi lists it."""

    pid: int
    name: str
    used_bytes: int | None
    bus_id: str | None

    def describe(self) -> str:
        """'pid 1234 python, 2.1 GiB'."""
        used = f", {self.used_bytes / 2**30:.1f} GiB" if self.used_bytes is not None else ""
        return f"pid {self.pid} {self.name}{used}"


def lock_enabled() -> bool:
    """False when LABCORE_GPU_LOCK says off (off, 0, no, false)."""
    return os.environ.get(SWITCH_ENV, "on").strip().lower() not in OFF


def lock_dir() -> Path:
    """The shared lock directory, created world-usable (mode 1777) if it is not there yet."""
    path = Path(os.environ.get(LOCK_DIR_ENV) or DEFAULT_LOCK_DIR)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(path)
        os.chmod(path, DIR_MODE)  # after mkdir: its mode passes through the umask
    except FileExistsError:
        pass
    if path.is_symlink() or not path.is_dir():
        raise OSError(errno.ENOTDIR, "not a plain directory", str(path))
    return path


def normalized_bus_id(text: str | None) -> str | None:
    """'00000000:3B:00.0' (nvidia-smi) and '0000:3b:00.0' (CUDA) both -> '0000:3b:00.0'; None if unreadable."""
    try:
        domain, bus, rest = (text or "").strip().split(":")
        device, function = rest.split(".")
        return f"{int(domain, 16):04x}:{int(bus, 16):02x}:{int(device, 16):02x}.{int(function, 16):x}"
    except ValueError:
        return None


def gpu_id(device: int | None = None) -> GpuId:
    """The GPU of `device` (default: CuPy's current device; 0 without CuPy)."""
    cp = cupy_or_none()
    if device is None:
        device = cp.cuda.Device().id if cp is not None else 0
    return _gpu_id(int(device))


@functools.cache
def _gpu_id(index: int) -> GpuId:
    cp = cupy_or_none()
    if cp is None:
        return GpuId(f"index-{index}", f"GPU {index}")
    try:
        bus_id = normalized_bus_id(cp.cuda.Device(index).pci_bus_id)
        name = cp.cuda.runtime.getDeviceProperties(index)["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
    except Exception:  # a driver that will not say: the index still keys a lock
        return GpuId(f"index-{index}", f"GPU {index}")
    label = f"GPU {index} ({name})"
    if bus_id is None:
        return GpuId(f"index-{index}", label)
    return GpuId("pci-" + bus_id.replace(":", "_"), label, bus_id)


# -- files in the lock directory ----------------------------------------------------------------------------


def _open_lock_file(path: Path) -> int:
    """Open (creating, mode 0666 whatever the umask) a file to flock; reading is enough for flock."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    except FileExistsError:
        return os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    os.fchmod(fd, FILE_MODE)
    return fd


def _claim(directory: Path, name: str) -> int:
    """A file `name` holding our pid, flocked by us before it appears under that name (so never seen unlocked)."""
    temporary = directory / f".new.{os.getpid()}.{secrets.token_hex(4)}"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, TICKET_MODE)
    try:
        os.fchmod(fd, TICKET_MODE)  # whatever the umask: other users open it to test whether we live
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, f"{os.getpid()}\n".encode())
        os.rename(temporary, directory / name)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return fd


def _alive(path: str) -> bool:
    """True while the process that claimed the file holds its flock; a dead one's file is removed if we may."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):  # another user's leftover in a sticky directory: it just stops counting
        os.unlink(path)
    return False


def _ticket_order(name: str, prefix: str) -> tuple[int, int] | None:
    """'<key>.ticket.<ns>.<pid>' -> (ns, pid); None for any other file."""
    if not name.startswith(prefix):
        return None
    try:
        ns, pid = name[len(prefix) :].split(".")
        return int(ns), int(pid)
    except ValueError:
        return None


def _live_pids(directory: Path, prefix: str) -> set[int]:
    """The pids in the live files whose names start with `prefix` + pid."""
    pids = set()
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.name.startswith(prefix):
                with contextlib.suppress(ValueError):
                    pid = int(entry.name[len(prefix) :].split(".")[0])
                    if _alive(entry.path):
                        pids.add(pid)
    return pids


class _Ticket:
    """This process's place in one GPU's queue, from asking for a turn until the turn ends."""

    def __init__(self, directory: Path, key: str) -> None:
        self.directory, self.prefix = directory, f"{key}.ticket."
        self.order = (time.time_ns(), os.getpid())
        self.path = directory / f"{self.prefix}{self.order[0]:020d}.{self.order[1]}"
        self.fd = _claim(directory, self.path.name)

    def ahead(self) -> int:
        """Live tickets older than ours: the holder's and those of processes waiting before us."""
        count = 0
        with os.scandir(self.directory) as entries:
            for entry in entries:
                order = _ticket_order(entry.name, self.prefix)
                if order is not None and order < self.order and _alive(entry.path):
                    count += 1
        return count

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.path)  # first, so nobody finds it unlocked and takes it for a dead one's
        os.close(self.fd)


# -- turns ------------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class _State:
    """One GPU's turn in this process: a thread lock, how deep the nested turns are, and the files held."""

    mutex: threading.RLock = dataclasses.field(default_factory=threading.RLock)
    depth: int = 0
    lock_fd: int | None = None
    gate_fd: int | None = None
    ticket: _Ticket | None = None
    shared: int = 0  # nested shares held
    share_fd: int | None = None  # <key>.lock flocked shared, while shared and no turn is held


_states: dict[str, _State] = {}
_states_guard = threading.Lock()
_members: dict[str, int] = {}  # "<directory>/<key>" -> fd of our member file, held for the process's life
_stats = TurnStats()
_said: set[str] = set()  # problems with the lock directory, said once each


def _forget_after_fork() -> None:
    """A forked child inherits our files but not our turns: forget them without unlocking (that would free the
    parent's lock, whose open file the child shares)."""
    for state in _states.values():
        for fd in (state.lock_fd, state.gate_fd, state.share_fd, state.ticket.fd if state.ticket else None):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
    for fd in _members.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    _states.clear()
    _members.clear()
    global _stats
    _stats = TurnStats()


os.register_at_fork(after_in_child=_forget_after_fork)


def _state(key: str) -> _State:
    with _states_guard:
        return _states.setdefault(key, _State())


def turn_stats() -> TurnStats:
    """This process's turns so far (a copy)."""
    return dataclasses.replace(_stats)


def _say_once(text: str, file: TextIO) -> None:
    if text not in _said:
        _said.add(text)
        print(text, file=file, flush=True)


def _join(directory: Path, key: str) -> None:
    """Become a member of this GPU's users for the rest of the process (see warn_if_shared)."""
    if f"{directory}/{key}" not in _members:
        path = directory / f"{key}.member.{os.getpid()}.{secrets.token_hex(4)}"
        _members[f"{directory}/{key}"] = _claim(directory, path.name)
        atexit.register(_leave, path, os.getpid())


def _leave(path: Path, pid: int) -> None:
    """At exit, tidy our member file (a killed process's is removed by whoever finds it unlocked); a forked
    child, which inherits this handler, leaves its parent's alone."""
    if os.getpid() == pid:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _lock_files(gpu: GpuId, file: TextIO, without: str) -> tuple[Path, int, int] | None:
    """(the lock directory, <key>.lock and <key>.gate opened), joining the GPU's users; None (said once) where the
    directory cannot be used, and the caller goes on `without` the lock."""
    try:
        directory = lock_dir()
        _join(directory, gpu.key)
        lock_fd = _open_lock_file(directory / f"{gpu.key}.lock")
        gate_fd = _open_lock_file(directory / f"{gpu.key}.gate")
    except OSError as exc:
        _say_once(f"labcore: cannot take turns on {gpu.label} ({exc}); {without} without the lock", file)
        return None
    return directory, lock_fd, gate_fd


def _acquire(gpu: GpuId, state: _State, file: TextIO) -> None:
    """Queue with a ticket, say once if others are ahead, and return holding the GPU's flock."""
    opened = _lock_files(gpu, file, "timing")
    if opened is None:
        return
    directory, lock_fd, gate_fd = opened
    started = time.perf_counter()
    try:
        ticket = _Ticket(directory, gpu.key)
    except OSError as exc:
        os.close(lock_fd)
        os.close(gate_fd)
        _say_once(f"labcore: cannot queue for {gpu.label} ({exc}); timing without the lock", file)
        return
    try:
        announced = False
        while True:
            ahead = ticket.ahead()
            if ahead == 0 and _try_flock(gate_fd) and _try_flock(lock_fd):
                break
            if not announced:
                announced = True
                shown = max(ahead, 1)  # none ahead but the lock held: a holder or sharers that got in before us
                noun = "measurement" if shown == 1 else "measurements"
                print(f"waiting for {gpu.label}: {shown} {noun} ahead", file=file, flush=True)
            if ahead == 0:
                fcntl.flock(gate_fd, fcntl.LOCK_EX)  # first in line: no new sharer gets in from now on
                fcntl.flock(lock_fd, fcntl.LOCK_EX)  # and the sharers inside finish
                break
            time.sleep(POLL_S)
    except BaseException:
        ticket.close()
        os.close(lock_fd)
        os.close(gate_fd)
        raise
    state.lock_fd, state.gate_fd, state.ticket = lock_fd, gate_fd, ticket
    _stats.turns += 1
    if announced:
        _stats.waits += 1
        _stats.waited_s += time.perf_counter() - started


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _release(state: _State) -> None:
    if state.ticket is not None:
        state.ticket.close()
    for fd in (state.lock_fd, state.gate_fd):
        if fd is not None:
            os.close(fd)  # closing the last descriptor drops the flock
    state.lock_fd, state.gate_fd, state.ticket = None, None, None


def _enter_share(gpu: GpuId, state: _State, file: TextIO) -> None:
    """Pass the gate (waiting while a turn is timed) and hold the GPU's lock shared."""
    opened = _lock_files(gpu, file, "sharing it")
    if opened is None:
        return
    _, lock_fd, gate_fd = opened
    try:
        fcntl.flock(gate_fd, fcntl.LOCK_SH)
        fcntl.flock(lock_fd, fcntl.LOCK_SH)
    except BaseException:
        os.close(lock_fd)
        raise
    finally:
        os.close(gate_fd)
    state.share_fd = lock_fd


def _leave_share(state: _State) -> None:
    if state.share_fd is not None:
        os.close(state.share_fd)
    state.share_fd = None


@contextlib.contextmanager
def gpu_share(device: int | None = None, *, file: TextIO | None = None) -> Iterator[None]:
    """Use this GPU for work that is not timed: alongside other sharers, never while another process's turn is timed
    (waits at the gate meanwhile). Inside a turn it is the turn; a turn inside it drops the share for its length."""
    out = sys.stderr if file is None else file

    def first(gpu: GpuId, state: _State) -> None:
        if state.depth == 0:
            _enter_share(gpu, state, out)

    with _held(device, "shared", first, lambda gpu, state: _leave_share(state)):
        yield


@contextlib.contextmanager
def gpu_turn(device: int | None = None, *, file: TextIO | None = None) -> Iterator[None]:
    """Hold this GPU's turn for the block: other processes' turns on it wait; nested turns here take it once.
    Also a decorator: `@gpu_turn()` makes each call one turn.

    A wait behind others is said once on `file` (default stderr): 'waiting for GPU 0 (NVIDIA H200): 2
    measurements ahead'.
    """
    out = sys.stderr if file is None else file

    def first(gpu: GpuId, state: _State) -> None:
        _leave_share(state)  # our own share would keep our turn waiting: it comes back after the turn
        _acquire(gpu, state, out)

    def last(gpu: GpuId, state: _State) -> None:
        _release(state)
        if state.shared:
            _enter_share(gpu, state, out)

    with _held(device, "depth", first, last):
        yield


@contextlib.contextmanager
def _held(
    device: int | None, count: str, first: Callable[[GpuId, _State], None], last: Callable[[GpuId, _State], None]
) -> Iterator[None]:
    """One more holder of this GPU's `count` (`shared` or `depth`, under its mutex) for the block: `first` when it
    is the first, `last` when the last leaves (nothing while locking is off)."""
    if not lock_enabled():
        yield
        return
    gpu = gpu_id(device)
    state = _state(gpu.key)
    with state.mutex:
        if getattr(state, count) == 0:
            first(gpu, state)
        setattr(state, count, getattr(state, count) + 1)
        try:
            yield
        finally:
            setattr(state, count, getattr(state, count) - 1)
            if getattr(state, count) == 0:
                last(gpu, state)


# -- who else computes on the GPU ---------------------------------------------------------------------------------

SMI_QUERY = "--query-compute-apps=gpu_bus_id,pid,process_name,used_memory"


def parse_compute_apps(text: str) -> list[ComputeProcess]:
    """nvidia-smi's `SMI_QUERY --format=csv,noheader,nounits` lines -> processes; lines it cannot read are skipped."""
    found = []
    for line in text.splitlines():
        parts = line.split(",", 2)
        if len(parts) < 3:
            continue
        name, _, used = parts[2].rpartition(",")
        try:
            pid = int(parts[1])
        except ValueError:
            continue
        try:
            used_bytes: int | None = int(float(used)) << 20  # MiB without units; '[N/A]' where not permitted
        except ValueError:
            used_bytes = None
        name = os.path.basename(name.strip()) or "?"
        found.append(ComputeProcess(pid, name, used_bytes, normalized_bus_id(parts[0])))
    return found


def compute_processes() -> list[ComputeProcess]:
    """Every compute process on every GPU that nvidia-smi lists; [] without nvidia-smi or when it fails."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        out = subprocess.run(
            [exe, SMI_QUERY, "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=SMI_TIMEOUT_S,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return parse_compute_apps(out)


def others_on(gpu: GpuId) -> list[ComputeProcess]:
    """Processes computing on `gpu` other than this one and those that take turns with us through the lock."""
    if gpu.bus_id is None:
        return []  # nvidia-smi names GPUs by bus id; without ours we cannot tell which lines are this GPU's
    members: set[int] = set()
    if lock_enabled():
        with contextlib.suppress(OSError):
            directory = lock_dir()
            _join(directory, gpu.key)  # before looking: a neighbour starting now sees us as one who takes turns
            members = _live_pids(directory, f"{gpu.key}.member.")
    return [p for p in compute_processes() if p.bus_id == gpu.bus_id and p.pid != os.getpid() and p.pid not in members]


def warn_if_shared(device: int | None = None, *, file: TextIO | None = None) -> str | None:
    """Say (and return) 'other processes are computing on GPU 0 (pid 1234 python, 2.1 GiB): timings may be
    disturbed' when nvidia-smi lists any; None and silence otherwise, and without a GPU or nvidia-smi."""
    if cupy_or_none() is None:
        return None
    gpu = gpu_id(device)
    others = others_on(gpu)
    if not others:
        return None
    where = gpu.label.split(" (")[0]
    text = (
        f"other processes are computing on {where} ({'; '.join(p.describe() for p in others)}): "
        "timings may be disturbed"
    )
    print(text, file=sys.stderr if file is None else file, flush=True)
    return text
