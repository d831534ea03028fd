"""Where a checker's seconds go: the reference submission judged in one warm process, its test cells each timed,
twice (the first pays for imports, compiles and allocations; the second is what a warm grading worker pays per
submission), and a cProfile of the second pass.

    python benchmarks/checker_profile.py [--assignment day54|zero_copy] [--top 25]

As in grading, first the sandbox's program (setup, the solved exercises, the test cells: grader.program) runs
here in collect mode and writes the answers file; then the checker's program (setup, placeholders, the test
cells) is judged against it, as grader.checker does, so the checks do the same GPU work as the trusted checker.
Without a GPU they take their offline paths.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

from grader import cells
from grader.course import Course, solved_release
from grader.program import answers_program, checker_program, grade_id, is_test
from labcore import answers, reuse


def one_pass(ip, nb, program, role: str) -> dict[str, float]:
    """Run the program's cells with LABCORE_ANSWERS=role; seconds per test cell (grade id); says what failed."""
    os.environ["LABCORE_ANSWERS"] = role
    answers._answers.cache_clear()
    cells.fresh_namespace(ip)
    cells.run_cell(ip, cells.placeholders(list(program.placeholders)), 0)
    seconds: dict[str, float] = {}
    for index, source, count in program.cells:
        began = time.perf_counter()
        outputs = cells.run_cell(ip, source, count)
        took = time.perf_counter() - began
        cell = nb.cells[index]
        errors = [o for o in outputs if o["output_type"] == "error"]
        if is_test(cell):
            seconds[grade_id(cell)] = took
            if errors:
                print(f"  {grade_id(cell)} failed: {errors[0]['ename']}: {errors[0]['evalue'][:300]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assignment", default="day54")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    nb = solved_release(Course.at(), args.assignment)
    ip = cells.shell()
    reuse.keep()  # as the warm checker does
    with tempfile.TemporaryDirectory() as work:
        filled = Path(work) / "answers.jsonl"
        one_pass(ip, nb, answers_program(nb), f"collect:{filled}")
        judged = checker_program(nb)
        first = one_pass(ip, nb, judged, f"judge:{filled}")
        profile = cProfile.Profile()
        profile.enable()
        second = one_pass(ip, nb, judged, f"judge:{filled}")
        profile.disable()
    print(f"{args.assignment}: seconds per test cell, first pass (cold) / second pass (warm)")
    for cell in first:
        print(f"  {cell:<28} {first[cell]:7.2f}  {second[cell]:7.2f}")
    print(f"  {'total':<28} {sum(first.values()):7.2f}  {sum(second.values()):7.2f}")
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(args.top)
    print(text.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
