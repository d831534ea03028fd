"""A class graded offline or live: N copies of the reference submission for both assignments, through
`python -m grader` setup, collect and autograde (the Dask path, --feedback later), each step timed.

    python benchmarks/class_grade.py --students 100 [--assignments A ...] [--also NOTEBOOK:N ...] [--report]
                                     [--jobs 2] [--cluster local] [--keep DIR]
                                     [--autograde-limit S] [--results-from SAVED] [--checker-profile DIR]
                                     [--record-profile DIR]

`--assignments` hands in only those (default: every lesson in lessons.txt), so that a class of the same
assignments can be timed against an older commit that had fewer lessons.

`--also NOTEBOOK:N` hands in N more students (ids `alsoK-sNNN`, K the option's place) with that notebook, for
the assignment its file name gives (`day54.ipynb`): a class with a group that answers differently. `--report`
then runs `grader report` and prints, per group of students and per check that measured a number, how many
passed its threshold (from the report's measured.csv): for instance how many copies of an answer met a bar live.

Prints one line per step (wall seconds, and the CPU seconds of the children it waited for), the autograde
summary's own "time:" lines (where the time went: sandboxes, checkers, recording), and the grades that are not
the reference's full marks. Run it under benchmarks/cpu_time.sh for the CPU of the whole process tree.

A class too long for one sitting (a live class of 100 on one GPU, under a 10-minute limit per command) grades in
parts: `--autograde-limit S` stops the autograde after S seconds (SIGKILL, as a lost coordinator) and copies the
results stored so far (DIR/grading/.grading, small JSON files) to DIR/saved, and a tar of them to DIR/saved.tar
(it comes back from a device call whole); a later run with the same --keep DIR and `--results-from` that copy (or
the tar) grades only the rest (grader autograde keeps what is stored, by its key).

`--checker-profile DIR` has every checker write a cProfile of each job's test cells to DIR (grader.checker) and
prints the functions that took the most time over all of them: where a class's checker time goes.
`--record-profile DIR` does the same for every nbgrader command (grader.runner): where the recording, the one
writer, spends its time.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import pstats
import resource
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import nbformat

from grader.checker import PROFILE_ENV
from grader.classgrade import STORE
from grader.course import Course, solved_release
from grader.runner import PROFILE_ENV as NBGRADER_PROFILE_ENV
from labcore.lessons import names

ASSIGNMENTS = names()


def _children_cpu_s() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def step(*args: str) -> list[str]:
    """Run `python -m grader ARGS`; print its wall and CPU; its output lines (exit on failure)."""
    wall, cpu = time.perf_counter(), _children_cpu_s()
    done = subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True)
    print(f"{args[0]:<10} {time.perf_counter() - wall:7.1f} s wall  {_children_cpu_s() - cpu:7.1f} s CPU", flush=True)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-3000:]
        sys.exit(f"class_grade: grader {args[0]} failed (exit status {done.returncode}):\n{tail}")
    return done.stdout.splitlines()


def autograde_part(args: list[str], limit: float, root: Path, saved: Path) -> list[str] | None:
    """`grader autograde ARGS`, stopped (SIGKILL to its process group) after `limit` seconds: its output lines,
    or None when it was stopped, after copying what it stored to `saved`."""
    wall, cpu = time.perf_counter(), _children_cpu_s()
    proc = subprocess.Popen(
        [sys.executable, "-m", "grader", "autograde", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        shutil.copytree(root / STORE, saved, dirs_exist_ok=True)
        with tarfile.open(saved.with_suffix(".tar"), "w") as tar:
            tar.add(saved, arcname=".")
        n = sum(1 for _ in saved.rglob("*.json"))
        print(f"autograde  stopped at the {limit:.0f} s limit; {n} stored results copied to {saved}", flush=True)
        return None
    print(f"autograde  {time.perf_counter() - wall:7.1f} s wall  {_children_cpu_s() - cpu:7.1f} s CPU", flush=True)
    if proc.returncode != 0:
        sys.exit(f"class_grade: grader autograde failed (exit status {proc.returncode}):\n{out[-3000:]}")
    return out.splitlines()


def _also(text: str) -> tuple[Path, int]:
    notebook, _, count = text.rpartition(":")
    path = Path(notebook)
    if not path.is_file() or path.suffix != ".ipynb" or path.stem not in ASSIGNMENTS or not count.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: expected NOTEBOOK:N, an <assignment>.ipynb that exists and N")
    return path, int(count)


def passes_by_group(measured: Path) -> None:
    """Per group of students (the reference's s*, each --also's alsoK-*) and per check with a threshold: passes."""
    with open(measured, newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["passed"]]
    counts: dict[tuple[str, ...], list[int]] = {}
    for row in rows:
        group = row["student"].split("-")[0] if "-" in row["student"] else "reference"
        key = (row["assignment"], group, row["cell"], row["check"], row["setting"])
        tally = counts.setdefault(key, [0, 0])
        tally[0] += row["passed"] == "true"
        tally[1] += 1
    for (assignment, group, cell, check, setting), (passed, total) in sorted(counts.items()):
        print(f"  {assignment} {group}: {cell} {check} ({setting}): passed {passed} of {total}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--assignments", nargs="+", choices=ASSIGNMENTS, default=ASSIGNMENTS, metavar="A")
    parser.add_argument("--also", action="append", default=[], type=_also, metavar="NOTEBOOK:N")
    parser.add_argument("--report", action="store_true", help="grader report; per group, each check's passes")
    parser.add_argument("--jobs", type=int, default=None, help="CPU workers (grader autograde --jobs)")
    parser.add_argument("--cluster", default="local")
    parser.add_argument("--timeout", type=int, default=60, help="per cell, seconds")
    parser.add_argument("--keep", type=Path, default=None, help="grade in this new folder and leave it there")
    parser.add_argument("--autograde-limit", type=float, default=None, help="stop the autograde after S seconds")
    parser.add_argument("--results-from", type=Path, default=None, help="a saved .grading copy (or its tar) to start")
    parser.add_argument("--checker-profile", type=Path, default=None, help="cProfile every checker job into DIR")
    parser.add_argument("--record-profile", type=Path, default=None, help="cProfile every nbgrader command into DIR")
    args = parser.parse_args()
    for folder, variable in ((args.checker_profile, PROFILE_ENV), (args.record_profile, NBGRADER_PROFILE_ENV)):
        if folder:
            folder.mkdir(parents=True, exist_ok=True)
            os.environ[variable] = str(folder.resolve())
    course = Course.at()
    base = Path(args.keep or tempfile.mkdtemp(prefix="class-grade-"))
    subs, root = base / "submissions", base / "grading"
    for assignment in args.assignments:
        reference = solved_release(course, assignment)
        for n in range(args.students):
            (subs / f"s{n:03d}").mkdir(parents=True, exist_ok=True)
            nbformat.write(reference, subs / f"s{n:03d}" / f"{assignment}.ipynb")
    for k, (notebook, count) in enumerate(args.also, start=1):
        for n in range(count):
            (subs / f"also{k}-s{n:03d}").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(notebook, subs / f"also{k}-s{n:03d}" / notebook.name)
    print(f"class_grade: {args.students} students x {len(args.assignments)} assignments in {base}", flush=True)
    step("setup", str(root))
    step("collect", str(root), str(subs))
    if args.results_from:
        if args.results_from.is_file():
            with tarfile.open(args.results_from) as tar:
                tar.extractall(root / STORE, filter="data")
        else:
            shutil.copytree(args.results_from, root / STORE, dirs_exist_ok=True)
        print(f"results    {sum(1 for _ in (root / STORE).rglob('*.json'))} stored results from {args.results_from}")
    jobs = ["--jobs", str(args.jobs)] if args.jobs else []
    grade = [str(root), "--cluster", args.cluster, "--timeout", str(args.timeout), *jobs]
    if args.autograde_limit is None:
        out = step("autograde", *grade)
    else:
        out = autograde_part(grade, args.autograde_limit, root, base / "saved")
        if out is None:
            return 0
    short: dict[str, int] = {}  # a row short of full marks, without its student and seconds: how many
    for line in out:
        if line.startswith(("grader autograde", "time:")) or "already graded" in line:
            print("  " + line)
        elif line.startswith(("s", "also")) and " / " in line and line.split()[1] != line.split()[3]:
            words = line.split()
            row = " ".join(words[1:4] + words[6:])
            short[row] = short.get(row, 0) + 1
    for row, count in short.items():
        print(f"  short of full marks, {count} student(s): {row}")
    step("export", str(root), "--to", str(base / "grades.csv"))
    with open(base / "grades.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    scores: dict[tuple[str, str], int] = {}
    for row in rows:
        key = (row["assignment"], row["raw_score"] or "-")
        scores[key] = scores.get(key, 0) + 1
    for (assignment, score), count in sorted(scores.items()):
        print(f"  {assignment}: {count} students scored {score}")
    if args.report:
        step("report", str(root), "--out", str(base / "report" / "index.html"))
        passes_by_group(base / "report" / "measured.csv")
    for folder, pattern, what in (
        (args.checker_profile, "checker-*.prof", "checker jobs"),
        (args.record_profile, "nbgrader-*.prof", "nbgrader commands"),
    ):
        found = sorted(folder.glob(pattern)) if folder else []
        if found:
            text = io.StringIO()
            pstats.Stats(*map(str, found), stream=text).sort_stats("cumulative").print_stats(40)
            print(f"profile over {len(found)} {what} (cumulative seconds, all together)\n{text.getvalue()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
