"""A class graded offline or live: N copies of the reference submission for both assignments, through
`python -m grader` setup, collect and autograde (the Dask path, --feedback later), each step timed.

    python benchmarks/class_grade.py --students 100 [--jobs 2] [--cluster local] [--keep DIR]

Prints one line per step (wall seconds, and the CPU seconds of the children it waited for), the autograde
summary's own "time:" lines (where the time went: sandboxes, checkers, recording), and the grades that are not
the reference's full marks. Run it under benchmarks/cpu_time.sh for the CPU of the whole process tree.
"""

from __future__ import annotations

import argparse
import csv
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from grader.course import Course, solved_release

ASSIGNMENTS = ("day54", "zero_copy")


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=None, help="CPU workers (grader autograde --jobs)")
    parser.add_argument("--cluster", default="local")
    parser.add_argument("--timeout", type=int, default=60, help="per cell, seconds")
    parser.add_argument("--keep", type=Path, default=None, help="grade in this new folder and leave it there")
    args = parser.parse_args()
    course = Course.at()
    base = Path(args.keep or tempfile.mkdtemp(prefix="class-grade-"))
    subs, root = base / "submissions", base / "grading"
    for assignment in ASSIGNMENTS:
        reference = solved_release(course, assignment)
        for n in range(args.students):
            (subs / f"s{n:03d}").mkdir(parents=True, exist_ok=True)
            nbformat.write(reference, subs / f"s{n:03d}" / f"{assignment}.ipynb")
    print(f"class_grade: {args.students} students x {len(ASSIGNMENTS)} assignments in {base}", flush=True)
    step("setup", str(root))
    step("collect", str(root), str(subs))
    jobs = ["--jobs", str(args.jobs)] if args.jobs else []
    out = step("autograde", str(root), "--cluster", args.cluster, "--timeout", str(args.timeout), *jobs)
    for line in out:
        if line.startswith(("grader autograde", "time:")) or "already graded" in line:
            print("  " + line)
        elif line.startswith("s") and " / " in line and line.split()[1] != line.split()[3]:  # a row short of full marks
            print("  short of full marks: " + line)
    step("export", str(root), "--to", str(base / "grades.csv"))
    with open(base / "grades.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    scores: dict[tuple[str, str], int] = {}
    for row in rows:
        key = (row["assignment"], row["raw_score"] or "-")
        scores[key] = scores.get(key, 0) + 1
    for (assignment, score), count in sorted(scores.items()):
        print(f"  {assignment}: {count} students scored {score}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
