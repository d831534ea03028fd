"""Many correct day-54 schedules, some of them slow: a class that tests "same work, same grade" (a timed verdict is
measured once for each distinct piece of work).

    python day54/benchmarks/distinct_schedules.py write DIR  # DIR/<name>/day54.ipynb a schedule, and DIR/also.txt
    python day54/benchmarks/distinct_schedules.py compare A.csv B.csv [C.csv ...]

`write` hands in the reference day-54 notebook with `my_pipelined` replaced by each schedule below (every one
correct: the recording fake finds no race in it), and writes `also.txt`, the `--also NOTEBOOK:N` options of
benchmarks/class_grade.py for COPIES students each. `compare` reads the `measured.csv` of several gradings of that
class (live twice, and offline) and prints, per schedule, the ratio check's verdicts in each, and whether they agree.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import nbformat

from grader.course import Course, solved_release

COPIES = 3  # students handing in each schedule

LOOP = "    for k in range(ctx.n_chunks):\n        pair = k % ctx.n_buffers\n"
CALLS = "        ctx.copy_in(k, pair)\n        ctx.launch(k, pair)\n        ctx.copy_out(k, pair)\n"

# Correct schedules, each a different trace: loop orders, stream and buffer assignments.
FAST = {
    "pairs-from-last": LOOP.replace("k % ctx.n_buffers", "ctx.n_buffers - 1 - k % ctx.n_buffers") + CALLS,
    "reversed-chunks": LOOP.replace("range(ctx.n_chunks)", "reversed(range(ctx.n_chunks))") + CALLS,
    "software-pipelined": "    n, b = ctx.n_chunks, ctx.n_buffers\n    for k in range(n):\n        pair = k % b\n"
    "        ctx.copy_in(k, pair)\n        if k >= b:\n            ctx.copy_out(k - b, pair)\n"
    "        ctx.launch(k, pair)\n    for k in range(max(0, n - b), n):\n        ctx.copy_out(k, k % b)\n",
    "round-batched": "    b = ctx.n_buffers\n    for first in range(0, ctx.n_chunks, b):\n"
    "        ks = range(first, min(first + b, ctx.n_chunks))\n"
    "        for k in ks:\n            ctx.copy_in(k, k % b)\n        for k in ks:\n            ctx.launch(k, k % b)\n"
    "        for k in ks:\n            ctx.copy_out(k, k % b)\n",
    "round-in-and-launch": "    b = ctx.n_buffers\n    for first in range(0, ctx.n_chunks, b):\n"
    "        ks = range(first, min(first + b, ctx.n_chunks))\n"
    "        for k in ks:\n            ctx.copy_in(k, k % b)\n            ctx.launch(k, k % b)\n"
    "        for k in ks:\n            ctx.copy_out(k, k % b)\n",
    "round-reversed": "    b = ctx.n_buffers\n    for first in range(0, ctx.n_chunks, b):\n"
    "        for k in reversed(range(first, min(first + b, ctx.n_chunks))):\n"
    "            ctx.copy_in(k, k % b)\n            ctx.launch(k, k % b)\n            ctx.copy_out(k, k % b)\n",
    "explicit-streams": LOOP + CALLS.replace("pair)", "pair, stream=pair)"),
    "stream-sync-after": LOOP + CALLS + "    for s in range(ctx.n_buffers):\n        ctx.stream_synchronize(s)\n",
    "device-sync-after": LOOP + CALLS + "    ctx.synchronize()\n",
    "blocks-of-four": "    n, b = ctx.n_chunks, ctx.n_buffers\n    order = [k for first in range(0, n, 4) "
    "for k in reversed(range(first, min(first + 4, n)))]\n    for k in order:\n        pair = k % b\n" + CALLS,
    "in-then-rest": LOOP + "        ctx.copy_in(k, pair)\n        ctx.launch(k, pair, stream=pair)\n"
    "        ctx.copy_out(k, pair, stream=pair)\n",
    "pairs-by-two": LOOP.replace("k % ctx.n_buffers", "(k // 2 + k) % ctx.n_buffers") + CALLS,
    "outs-lag-one": "    n, b = ctx.n_chunks, ctx.n_buffers\n    for k in range(n):\n        ctx.copy_in(k, k % b)\n"
    "        ctx.launch(k, k % b)\n        if k:\n            ctx.copy_out(k - 1, (k - 1) % b)\n"
    "    ctx.copy_out(n - 1, (n - 1) % b)\n",
    "middle-out": "    n, b = ctx.n_chunks, ctx.n_buffers\n"
    "    order = sorted(range(n), key=lambda k: (abs(2 * k - n), k))\n"
    "    for k in order:\n        pair = k % b\n" + CALLS,
    "pairs-swapped-halves": LOOP.replace("k % ctx.n_buffers", "(k + (k >= ctx.n_chunks // 2)) % ctx.n_buffers") + CALLS,
    "pairs-by-three": LOOP.replace("k % ctx.n_buffers", "(k // 3 + k) % ctx.n_buffers") + CALLS,
    "in-stream-explicit": LOOP + "        ctx.copy_in(k, pair, stream=pair)\n        ctx.launch(k, pair)\n"
    "        ctx.copy_out(k, pair)\n",
    "ins-ahead-one": "    n, b = ctx.n_chunks, ctx.n_buffers\n    ctx.copy_in(0, 0)\n    for k in range(n):\n"
    "        if k + 1 < n:\n            ctx.copy_in(k + 1, (k + 1) % b)\n"
    "        ctx.launch(k, k % b)\n        ctx.copy_out(k, k % b)\n",
    "stride-three-order": "    n, b = ctx.n_chunks, ctx.n_buffers\n"
    "    for k in [*range(0, n, 3), *range(1, n, 3), *range(2, n, 3)]:\n        pair = k % b\n" + CALLS,
    "pairs-offset-quarters": LOOP.replace("k % ctx.n_buffers", "(k + 1 + k // 4) % ctx.n_buffers") + CALLS,
    "launch-stream-explicit": LOOP + "        ctx.copy_in(k, pair)\n        ctx.launch(k, pair, stream=pair)\n"
    "        ctx.copy_out(k, pair)\n",
    "outs-stream-explicit": LOOP + "        ctx.copy_in(k, pair)\n        ctx.launch(k, pair)\n"
    "        ctx.copy_out(k, pair, stream=pair)\n",
}
# Correct but slow: they serialize what a pipeline overlaps.
SLOW = {
    "one-stream": LOOP + CALLS.replace("pair)", "pair, stream=0)"),
    "one-pair": "    for k in range(ctx.n_chunks):\n        ctx.copy_in(k, 0)\n        ctx.launch(k, 0)\n"
    "        ctx.copy_out(k, 0)\n",
    "device-sync-each": LOOP + CALLS + "        ctx.synchronize()\n",
    "stream-sync-each": LOOP + CALLS + "        ctx.stream_synchronize(pair)\n",
    "sync-every-two": LOOP + CALLS + "        if k % 2:\n            ctx.synchronize()\n",
    "pair-by-pair": "    b = ctx.n_buffers\n    for pair in range(b):\n        for k in range(pair, ctx.n_chunks, b):\n"
    + CALLS.replace("        ", "            "),
    "legacy-stream": "    from labcore.pipeline.context import LEGACY\n\n"
    + LOOP
    + CALLS.replace("pair)", "pair, stream=LEGACY)"),
    "sync-every-four": LOOP + CALLS + "        if k % 4 == 3:\n            ctx.synchronize()\n",
    "stream-sync-every-three": LOOP + CALLS + "        if k % 3 == 2:\n            ctx.stream_synchronize(pair)\n",
    "one-stream-reversed": LOOP.replace("range(ctx.n_chunks)", "reversed(range(ctx.n_chunks))")
    + CALLS.replace("pair)", "pair, stream=0)"),
}


def write(folder: Path) -> None:
    """One day54.ipynb a schedule, and the class's --also options."""
    course = Course.at(Path(__file__).resolve().parents[2])
    options = []
    for name, body in {**FAST, **SLOW}.items():
        notebook = solved_release(course, "day54")
        for cell in notebook.cells:
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "my_pipelined":
                cell.source = f"def my_pipelined(ctx):\n{body}"
        path = folder / name / "day54.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, path)
        options.append(f"--also {path}:{COPIES}")
    (folder / "also.txt").write_text(" ".join(options) + "\n")
    print(f"{len(FAST)} fast and {len(SLOW)} slow schedules, {COPIES} students each, in {folder}")


def verdicts(measured: Path) -> dict[str, dict[str, str]]:
    """{student: {setting: passed}} of the ratio check (yours / the reference pipeline) in a measured.csv."""
    found: dict[str, dict[str, str]] = {}
    with open(measured, newline="") as fh:
        for row in csv.DictReader(fh):
            if row["cell"] == "test_pipelined_ratio" and "reference pipeline" in row["check"]:
                found.setdefault(row["student"], {})[row["setting"]] = row["passed"]
    return found


def compare(paths: list[Path]) -> int:
    """Per group of students (one schedule), each grading's verdicts; 1 if any student's differ between gradings."""
    runs = [verdicts(p) for p in paths]
    students = sorted(set().union(*runs))
    groups: dict[str, set[tuple]] = {}
    differ = 0
    for student in students:
        seen = [tuple(sorted(run.get(student, {}).items())) for run in runs]
        differ += len(set(seen)) > 1
        groups.setdefault(student.split("-")[0], set()).add(tuple(seen))
    for group, seen in sorted(groups.items()):
        print(f"{group:10} {' | '.join(str(s) for s in sorted(seen))}")
    print(f"{len(students)} students, {differ} with verdicts that differ between the {len(paths)} gradings")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("write").add_argument("folder", type=Path)
    sub.add_parser("compare").add_argument("measured", type=Path, nargs="+")
    args = parser.parse_args()
    if args.command == "write":
        write(args.folder)
        return 0
    return compare(args.measured)


if __name__ == "__main__":
    sys.exit(main())
