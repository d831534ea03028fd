"""An instructor's grading directory, outside the checkout: nbgrader's layout with its own gradebook.

    DIR/nbgrader_config.py    calls grader.config.configure_grading (root DIR, gradebook DIR/gradebook.db);
                              written by `grading_config_text` below
    DIR/gradebook.db          the only gradebook; one writer at a time (DIR/.grader.lock)
    DIR/source/<a>/           a COPY of the checkout's <a>/solutions/ made by setup (commit noted in the config)
    DIR/release/<a>/          generated from source/ by setup; equals the checkout's course/<a>/ when that is current
    DIR/submitted/<s>/<a>/    filled by collect
    DIR/autograded/, DIR/feedback/   written by autograde and feedback

source/ is a copy, not a link: grading must use the tests the students' release was made from, even after
the checkout moves on (the gradebook stores those cells; a changed source would no longer match it).

What a student hands in is a folder SUBMISSIONS/<student>/ holding `<a>.ipynb` and whatever the run left
beside it: nsys exports `<a>_run_*.csv` and the results record `<a>_run.json`. Naming rule: a student's
own files are named `<a>_run*`, and no file of source/<a>/ may match that pattern, because
`nbgrader autograde` overwrites every non-notebook file of a submission that has the name of a source
file. collect copies the notebook and the `<a>_run*` files, ignores (and names) anything else, and
refuses to run if the source breaks the rule.
"""

from __future__ import annotations

import contextlib
import difflib
import fcntl
import fnmatch
import functools
import json
import multiprocessing
import os
import re
import shutil
import sqlite3
import stat
import subprocess
from collections.abc import Callable, Iterator
from multiprocessing.context import ForkServerProcess
from pathlib import Path
from typing import Any

from grader.course import Course, run_file_clashes, tag_raising_cells, tree_differences
from grader.layout import (
    BEFORE_RECORDING,
    COURSE_ID,
    GRADEBOOK,
    GRADING_CONFIG,
    MAX_NOTEBOOK_BYTES,
    MAX_NOTEBOOK_CELLS,
    MAX_RUN_FILE_BYTES,
    MAX_RUN_FILES,
    MAX_RUN_FILES_BYTES,
    RELEASE_DIR,
    SKIPPED_AT_COLLECT,
    SOURCE_DIR,
    STORE,
    db_url,
    run_files_glob,
)
from grader.runner import REPO, nbgrader_or_fail
from labcore import lessons
from labcore.errors import UsageError, output_folder, require_listed

STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]*$")  # no glob characters: nbgrader treats ids as globs
SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database file
GRADEBOOK_TABLES = ("assignment", "student", "submitted_assignment", "grade")  # some of nbgrader's, none optional


@functools.lru_cache(maxsize=32)
def _read_notebook(path: Path, *stat: int) -> Any:
    import nbformat  # seconds to import (jsonschema's format checks): --help does not wait for it

    return nbformat.read(path, as_version=4)


def read_notebook(path: Path) -> Any:
    """A notebook of the grading directory, read (and validated) once while it does not change: a class's
    summary reads each autograded notebook for its state, its pending cells and its notes. Shared: callers do not
    modify it."""
    stat = path.stat()
    return _read_notebook(path, stat.st_mtime_ns, stat.st_size, stat.st_ino, stat.st_ctime_ns)


def source_notebooks(root: Path, assignment: str) -> list[tuple[str, Any]]:
    """(name, notebook) of an assignment's source notebooks in a grading directory, by name: each read once while
    it does not change (a class's summary asks for them per student). Shared: callers do not modify them."""
    found = []
    for path in sorted((root / "source" / assignment).glob("*.ipynb")):
        found.append((path.stem, read_notebook(path)))
    return found


class GradingDir:
    """A grading directory made by setup."""

    def __init__(self, root: str | Path, *, must_exist: bool = True) -> None:
        self.root = Path(root).expanduser().resolve()
        if must_exist and not (self.root / GRADING_CONFIG).is_file():
            raise UsageError(
                f"{self.root} is not a grading directory (no {GRADING_CONFIG}); "
                f"make one with: python -m grader setup {self.root}"
            )

    @classmethod
    def opened(cls, root: str | Path) -> GradingDir:
        """A grading directory a command reads or grades: made by setup, its gradebook an nbgrader gradebook that
        SQLite reads, its source/ holding an assignment; UsageError naming what is wrong otherwise."""
        grading = cls(root)
        grading.check_gradebook()
        if not grading.assignments():
            source = grading.root / "source"
            held = "is missing" if not source.is_dir() else "holds no assignment's notebook"
            raise UsageError(
                f"{source} {held}: it is setup's copy of the lessons' solutions, which grading needs (the tests the "
                f"students' release was made from); restore it, or make a new grading directory with `python -m "
                "grader setup` and collect again"
            )
        return grading

    def check_gradebook(self) -> None:
        """UsageError naming what is wrong with DIR/gradebook.db: missing, not a file, not SQLite, damaged, or not
        nbgrader's (nbgrader would make a new, empty one in its place, and grades would be lost without a word)."""
        book = self.root / GRADEBOOK
        kept = self.root / STORE / BEFORE_RECORDING
        backup = f"{kept} (kept before the last recording), then autograde again" if kept.is_file() else "a backup"
        remedy = (
            f"restore {GRADEBOOK} from {backup}, or make a new grading directory with `python -m grader setup` and "
            "collect again"
        )
        if not book.exists():
            raise UsageError(f"{book} is missing (setup made it; it was deleted or moved): {remedy}")
        if not book.is_file():
            raise UsageError(f"{book} is not a file but a {'folder' if book.is_dir() else 'special file'}: {remedy}")
        try:
            with book.open("rb") as f:
                head = f.read(len(SQLITE_HEADER))
            if head != SQLITE_HEADER:
                what = "an empty file" if not head else "not an SQLite database (corrupted or overwritten)"
                raise UsageError(f"{book} is {what}: {remedy}")
            with contextlib.closing(sqlite3.connect(f"{book.as_uri()}?mode=ro", uri=True)) as db:
                state = db.execute("PRAGMA quick_check").fetchone()[0]
                tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.Error as exc:
            raise UsageError(f"{book} is a damaged SQLite database ({exc}): {remedy}") from None
        except OSError as exc:
            raise UsageError(f"{book} cannot be read ({exc.strerror or exc}): {remedy}") from None
        if state != "ok":
            raise UsageError(f"{book} is a damaged SQLite database ({state}): {remedy}")
        missing = [table for table in GRADEBOOK_TABLES if table not in tables]
        if missing:
            raise UsageError(
                f"{book} is an SQLite database but not nbgrader's gradebook (no {missing[0]} table): {remedy}"
            )

    @property
    def db_url(self) -> str:
        return db_url(self.root)

    def assignments(self) -> list[str]:
        """Assignments set up here: folders of source/ holding a notebook."""
        source = self.root / "source"
        return (
            sorted(p.name for p in source.iterdir() if p.is_dir() and any(p.glob("*.ipynb"))) if source.is_dir() else []
        )

    def pick(self, assignment: str | None) -> list[str]:
        """One named assignment (checked) or all; UsageError listing what is set up."""
        known = self.assignments()
        if assignment is None:
            return known
        require_listed(assignment, known, f"no assignment {assignment!r} in {self.root / 'source'}")
        return [assignment]

    def submitted(self, assignment: str) -> list[str]:
        """Students with a submitted notebook of this assignment."""
        return sorted({p.parent.parent.name for p in (self.root / "submitted").glob(f"*/{assignment}/*.ipynb")})

    @contextlib.contextmanager
    def writer(self) -> Iterator[None]:
        """Hold DIR/.grader.lock: the gradebook takes one writer at a time."""
        with open(self.root / ".grader.lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise UsageError(
                    f"another `python -m grader` is writing to {self.root / GRADEBOOK}; wait for it to finish"
                ) from None
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def grading_config_text(root: Path, code: Path, provenance: str) -> str:
    """The nbgrader_config.py written into a grading directory; code is the checkout holding grader/."""
    return (
        f'"""nbgrader configuration of the grading directory {root} (made by `python -m grader setup`)."""\n\n'
        f"# {provenance}\n"
        "import sys\n\n"
        f"sys.path.insert(0, {str(code)!r})  # the course checkout: grader, labcore, the lessons\n\n"
        "from grader.config import configure_grading  # noqa: E402\n\n"
        f"configure_grading(get_config(), root={str(root)!r}, repo={str(code)!r})  # noqa: F821\n"
        "# Local overrides go below, e.g. c = get_config(); c.Execute.timeout = 300\n"
    )


def _inside(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


def _provenance(course: Course) -> str:
    """Which checkout and commit the source copy came from."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=course.root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", *(str(course.source_of(n)) for n in course.assignments())],
            cwd=course.root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return f"source/ copied from {course.root}'s lessons (not a git checkout)"
    return f"source/ copied from {course.root}'s lessons at commit {commit}" + (
        " with uncommitted changes" if dirty else ""
    )


def new_grading_dir(course: Course, root: str | Path) -> GradingDir:
    """Where setup may make a grading directory: outside the checkout, new or empty; UsageError otherwise."""
    grading = GradingDir(root, must_exist=False)
    if _inside(grading.root, course.root):
        raise UsageError(
            f"{grading.root} is inside the course checkout {course.root}; grading data "
            "(submissions, gradebook) must live outside it: pick a folder elsewhere"
        )
    if grading.root.exists() and (not grading.root.is_dir() or any(grading.root.iterdir())):
        raise UsageError(f"{grading.root} exists and is not an empty folder; setup wants a new or empty folder")
    for name in course.assignments():
        check_run_files_rule(course.source_of(name), name)
    output_folder(grading.root, "setup DIR", given=root)  # made now: one that cannot be is refused before any work
    return grading


def setup(
    course: Course, grading: GradingDir, assignments: list[str], progress: Callable[[str], None] | None = None
) -> list[str]:
    """Fill a new grading directory; the returned lines name releases that differ from the checkout's course/. A
    setup that fails (nbgrader refusing a notebook, Ctrl-C) takes back what it made: the folder is new or empty
    again, and the same command can be run once more."""
    made = not grading.root.exists()
    try:
        grading.root.mkdir(parents=True, exist_ok=True)
        (grading.root / GRADING_CONFIG).write_text(grading_config_text(grading.root, REPO, _provenance(course)))
        stale = []
        for name in assignments:
            shutil.copytree(
                course.source_of(name),
                grading.root / "source" / name,
                ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"),
            )
            nbgrader_or_fail(["generate_assignment", name, "--force"], cwd=grading.root)
            tag_raising_cells(grading.root / "release" / name)  # as `generate` does: the release compared is the same
            stale += tree_differences(course.release / name, grading.root / "release" / name, f"course/{name}")
            if progress:
                progress(name)
    except BaseException:
        _stop_nbgrader()
        _take_back(grading.root, made)
        raise
    return stale


def _stop_nbgrader() -> None:
    """Kill an nbgrader command still running for this process (Ctrl-C leaves it running: it ignores SIGINT), so
    that it writes nothing into what is taken back."""
    for child in multiprocessing.active_children():
        if isinstance(child, ForkServerProcess):
            child.kill()
            child.join()


def _take_back(root: Path, made: bool) -> None:
    """Undo a setup that failed: remove the folder it made, or empty the empty folder it was given."""
    if made:
        shutil.rmtree(root, ignore_errors=True)
        return
    for path in root.iterdir() if root.is_dir() else ():
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def check_run_files_rule(source: Path, assignment: str) -> None:
    """UsageError if a source file of the assignment has a name students' run files use."""
    clash = run_file_clashes(source, assignment)
    if clash:
        raise UsageError(
            f"{source} has {', '.join(clash)}: names matching {run_files_glob(assignment)} are "
            "reserved for students' run files (nbgrader autograde would overwrite theirs with it); "
            "remove or rename it"
        )


def _student_files(folder: Path, assignment: str) -> list[Path]:
    """The files of one assignment in a student's folder: its notebook and run files (no other notebook: nbgrader
    would grade one as another notebook of the assignment, which the gradebook does not know)."""
    pattern = run_files_glob(assignment)
    return [
        p
        for p in folder.iterdir()
        if _plain(p, "file")
        and (p.name == f"{assignment}.ipynb" or (fnmatch.fnmatch(p.name, pattern) and p.suffix != ".ipynb"))
    ]


def _plain(path: Path, kind: str) -> bool:
    """A regular file (or folder) itself, never a link: a link handed in (an archive can hold one) would have
    collect copy whatever it points to on the grading machine, the instructor's solutions or a host's secrets,
    as the student's own notebook or run file."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) if kind == "file" else stat.S_ISDIR(mode)


def _not_plain(path: Path) -> str:
    """Why collect leaves a file whatever its name: a link, not a regular file, too large ('' for none)."""
    if path.is_symlink():
        return "a link, not collected (only regular files are: a link could point anywhere on this machine)"
    return "" if _plain(path, "file") or _plain(path, "dir") else "not a regular file, not collected"


def past_run_files(files: list[Path]) -> dict[str, str]:
    """{name: why} of the run files among `files` past what one assignment may have (grader.layout: a count and a
    total), by name: the first ones are kept."""
    count = total = 0
    past = {}
    for path in sorted(p for p in files if p.suffix != ".ipynb"):
        count, total = count + 1, total + path.stat().st_size
        if count > MAX_RUN_FILES or total > MAX_RUN_FILES_BYTES:
            limits = f"{MAX_RUN_FILES} run files and {MAX_RUN_FILES_BYTES >> 20} MiB"
            past[path.name] = f"past the {limits} an assignment's run files may come to; not collected"
    return past


def _copy_data(source: Path, to: Path) -> None:
    """A handed-in file's bytes and times, never its mode: a copy made as root keeping a set-user-ID bit or an
    executable one would be a program of root's that a student wrote. Read and written, nothing more (0644)."""
    shutil.copyfile(source, to)
    to.chmod(0o644)
    times = source.stat()
    os.utime(to, ns=(times.st_atime_ns, times.st_mtime_ns))


def too_large(path: Path, *, count_cells: bool = True) -> str:
    """'' for a notebook or run file of a size grading reads, else why it is not read (grader.layout's limits; a
    notebook's cells counted unless told not to)."""
    limit, what = (MAX_NOTEBOOK_BYTES, "notebook") if path.suffix == ".ipynb" else (MAX_RUN_FILE_BYTES, "run file")
    size = path.stat().st_size
    if size > limit:
        return f"{size / 2**20:,.0f} MiB, more than the {limit >> 20} MiB a {what} may be; not collected"
    if what == "notebook" and count_cells:
        try:
            cells = json.loads(path.read_bytes()).get("cells")
        except (ValueError, AttributeError, RecursionError):  # not a notebook nbgrader reads: grading says why
            return ""
        if isinstance(cells, list) and len(cells) > MAX_NOTEBOOK_CELLS:
            return f"{len(cells):,} cells, more than the {MAX_NOTEBOOK_CELLS:,} a notebook may have; not collected"
    return ""


def collect(grading: GradingDir, submissions: str | Path) -> tuple[dict[str, list[str]], list[str]]:
    """Copy SUBMISSIONS/<student>/ into submitted/<student>/<assignment>/ and add the students to the gradebook.
    A student's files may also be in nbgrader's own layout, SUBMISSIONS/<student>/<assignment>/ (an exchange's
    `submitted` folder).

    Returns {student: [assignments]} and lines naming what was skipped. A student's earlier submission of the
    same assignment is replaced.
    """
    base = Path(submissions).expanduser().resolve()
    if not base.is_dir():
        what = "a file, not a folder" if base.exists() else "no such folder"
        raise UsageError(f"{base}: {what} (expected SUBMISSIONS/<student>/<assignment>.ipynb)")
    refuse_course_folders(grading, base)
    assignments = grading.assignments()
    for name in assignments:
        check_run_files_rule(grading.root / "source" / name, name)
    taken: dict[str, list[str]] = {}
    empty: dict[str, str] = {}  # student: what was skipped, for the students nothing was taken from
    skipped = [f"{p.name}: not inside a student's folder" for p in sorted(base.iterdir()) if not p.is_dir()]
    skipped += [f"{p.name}/: {_not_plain(p)}" for p in sorted(base.iterdir()) if p.is_dir() and p.is_symlink()]
    for folder in sorted(p for p in base.iterdir() if _plain(p, "dir")):
        if not STUDENT_ID.match(folder.name):
            skipped.append(f"{folder.name}/: not a usable student id (letters, digits, _ . @ -; no spaces)")
            continue
        leftovers = {p.name for p in folder.iterdir()}
        odd = {p.name: why for p in folder.iterdir() if (why := _not_plain(p))}
        for name in assignments:
            where = folder
            if not os.path.lexists(folder / f"{name}.ipynb") and _plain(folder / name, "dir"):
                where = folder / name  # nbgrader's own layout (its exchange, zip_collect): <student>/<assignment>/
                leftovers.discard(name)
                leftovers |= {f"{name}/{p.name}" for p in where.iterdir()}
                odd.update({f"{name}/{p.name}": why for p in where.iterdir() if (why := _not_plain(p))})
            files = _student_files(where, name)
            odd.update({_within(folder, p): why for p in files if (why := too_large(p))})
            files = [p for p in files if _within(folder, p) not in odd]
            odd.update({_within(folder, where / n): why for n, why in past_run_files(files).items()})
            files = [p for p in files if _within(folder, p) not in odd]
            if not any(p.suffix == ".ipynb" for p in files):
                continue
            dest = grading.root / "submitted" / folder.name / name
            shutil.rmtree(dest, ignore_errors=True)
            dest.mkdir(parents=True)
            for path in files:
                _copy_data(path, dest / path.name)
                leftovers.discard(_within(folder, path))
            taken.setdefault(folder.name, []).append(name)
        skipped += [f"{folder.name}/{n}: {odd.get(n) or not_collected(n, assignments)}" for n in sorted(leftovers)]
        if folder.name not in taken:
            expected = " or ".join(f"{a}.ipynb" for a in assignments)
            found = ", ".join(f"{n} ({odd[n]})" if n in odd else n for n in sorted(leftovers)) or "nothing"
            empty[folder.name] = f"no notebook named {expected} (the folder held {found})"
    if taken or empty:
        add_students(grading, sorted({*taken, *empty}))
    record_skipped(grading, taken, empty)
    return taken, skipped


def course_folder(path: Path) -> str:
    """What course folder `path` is: 'a grading directory' (nbgrader_config.py beside a gradebook or source/), 'a
    course checkout' (nbgrader_config.py beside lessons.txt), else ''."""
    if not (path / GRADING_CONFIG).is_file():
        return ""
    if (path / lessons.LIST_NAME).is_file():
        return "a course checkout"
    return "a grading directory" if (path / GRADEBOOK).exists() or (path / "source").is_dir() else ""


def _course_own(grading: GradingDir, base: Path) -> str:
    """Why SUBMISSIONS is, or holds, the course's own folders rather than students': '' when it is not."""
    if _inside(base, grading.root):
        return f"{base} is {'this grading directory' if base == grading.root else 'inside this grading directory'}"
    if _inside(grading.root, base):
        return f"{base} holds this grading directory {grading.root}"
    for place in (base, *base.parents):
        kind = course_folder(place)
        if not kind:
            continue
        if place == base:
            return f"{base} is {kind}"
        if kind == "a grading directory":
            return f"{base} is inside {kind}, {place}"
        part = base.relative_to(place).parts[0]
        if part == RELEASE_DIR or (place / part / SOURCE_DIR).is_dir():  # the release, or a lesson's folder
            return f"{base} is inside {kind}'s {part}/ ({place})"
    for child in sorted(p for p in base.iterdir() if _plain(p, "dir")):
        kind = course_folder(child)
        if kind:
            return f"{base} holds {kind}, {child.name}/"
    return ""


def refuse_course_folders(grading: GradingDir, base: Path) -> None:
    """UsageError when SUBMISSIONS is the course's own: a grading directory (this one or another, or a folder in
    one), a course checkout, its release or a lesson's folder, or a folder holding one of those; their folders
    (release/, source/: the reference solutions) would be collected as students."""
    why = _course_own(grading, base)
    if why:
        raise UsageError(
            f"SUBMISSIONS {why}: its folders are the course's own (releases, the reference solutions), not "
            "students'; give the folder that holds only the students' folders, <student>/<assignment>.ipynb"
        )


def _within(folder: Path, path: Path) -> str:
    """A file's name in a student's folder: `day54.ipynb`, or `day54/day54.ipynb` in nbgrader's own layout."""
    return path.relative_to(folder).as_posix()


def not_collected(name: str, assignments: list[str]) -> str:
    """Why collect left a file: a notebook not named as an assignment's says the name it expected."""
    if not name.lower().endswith(".ipynb"):
        return f"not collected (only <a>.ipynb and the <a>_run* files beside it are; a = {', '.join(assignments)})"
    stem = name[: -len(".ipynb")].lower()
    close = difflib.get_close_matches(stem, assignments, n=1, cutoff=0.6)
    return f"not an assignment's notebook; expected {' or '.join(f'{a}.ipynb' for a in close or assignments)}"


def record_skipped(grading: GradingDir, taken: dict[str, list[str]], empty: dict[str, str]) -> None:
    """Keep DIR/collect_skipped.json: {student: what was skipped} of the students collect took nothing from.

    A later collect that takes a student's notebook forgets that student's skip."""
    path = grading.root / SKIPPED_AT_COLLECT
    known = skipped_at_collect(grading)
    known = {s: why for s, why in {**known, **empty}.items() if s not in taken}
    path.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")


def skipped_at_collect(grading: GradingDir) -> dict[str, str]:
    """{student: what collect skipped} of the students it took no notebook from (none before a collect)."""
    path = grading.root / SKIPPED_AT_COLLECT
    return json.loads(path.read_text()) if path.is_file() else {}


def add_students(grading: GradingDir, students: list[str]) -> None:
    """Create the students' gradebook entries (existing ones are kept)."""
    from nbgrader.api import Gradebook  # seconds to import: --help and bad options do not wait for it

    with Gradebook(grading.db_url, COURSE_ID) as gb:
        for student in students:
            gb.update_or_create_student(student)


def export(grading: GradingDir, to: Path) -> Path:
    """Write nbgrader's CSV of grades (one row per student and assignment) to `to`."""
    from nbgrader.api import Gradebook  # seconds to import: --help and bad options do not wait for it
    from nbgrader.plugins import CsvExportPlugin  # nbgrader too: loaded only to export

    with Gradebook(grading.db_url, COURSE_ID) as gb:
        CsvExportPlugin(to=str(to)).export(gb)
    return to
