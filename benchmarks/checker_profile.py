"""Where a checker's seconds go: the reference submission judged in one warm process, its test cells each timed,
for two submissions of different seeds, as a class's jobs have (the first pays for imports, compiles and
allocations; the second is what a warm grading worker pays per submission), and a cProfile of the second. The
test cells are those autograde runs, hidden tests included.

    python benchmarks/checker_profile.py [--assignment day54|zero_copy] [--sequence A,B,...] [--top 25]

As in grading, first the sandbox's program (setup, the solved exercises, the test cells: grader.program) runs
here in collect mode and writes the answers file; then the checker's program (setup, placeholders, the test
cells) is judged against it, as grader.checker does, so the checks do the same GPU work as the trusted checker.
Without a GPU they take their offline paths.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from grader import cells
from grader.course import Course, solved_release
from grader.program import answers_program, checker_program, grade_id, is_test
from labcore import answers, reuse
from labcore.lessons import names


def one_pass(ip, nb, program, role: answers.Role) -> dict[str, float]:
    """Run the program's cells acting the role; seconds per test cell (grade id); says what failed."""
    answers.act(role)
    answers._answers.cache_clear()
    cells.fresh_namespace(ip)
    cells.run_cell(ip, cells.placeholders(list(program.placeholders)), 0)
    seconds: dict[str, float] = {}
    for index, source, count in program.cells:
        began = time.perf_counter()
        # a test cell's place in the sandbox's program has no source: this profile collects with the cell itself
        outputs = cells.run_cell(ip, nb.cells[index].source if source is None else source, count)
        took = time.perf_counter() - began
        cell = nb.cells[index]
        errors = [o for o in outputs if o["output_type"] == "error"]
        if is_test(cell):
            seconds[grade_id(cell)] = took
            if errors:
                print(f"  {grade_id(cell)} failed: {errors[0]['ename']}: {errors[0]['evalue'][:300]}")
    return seconds


def graded_notebook(course: Course, assignment: str) -> nbformat.NotebookNode:
    """The reference as autograde judges it: the solved release with every test cell as in the course's source,
    hidden tests included (nbgrader restores locked cells from the gradebook the same way)."""
    nb = solved_release(course, assignment)
    source = {c.get("id"): c for c in nbformat.read(course.source / assignment / f"{assignment}.ipynb", 4).cells}
    for cell in nb.cells:
        if is_test(cell) and cell.get("id") in source:
            cell.source = source[cell["id"]].source
    return nb


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assignment", default=names()[0])
    parser.add_argument(
        "--sequence",
        default=None,
        help="assignments judged one after another in this one process, as a class's checker does (e.g. "
        f"{','.join(names())}); default: --assignment twice",
    )
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    sequence = args.sequence.split(",") if args.sequence else [args.assignment] * 2
    notebooks = {name: graded_notebook(Course.at(), name) for name in dict.fromkeys(sequence)}
    ip = cells.shell()
    reuse.keep()  # as the warm checker does
    passes = []
    profile = cProfile.Profile()
    with tempfile.TemporaryDirectory() as work:
        for seed, name in enumerate(sequence, 1):  # each submission its own seed, as every job of a class has
            nb = notebooks[name]
            filled = Path(work) / f"answers-{seed}.jsonl"
            one_pass(ip, nb, answers_program(nb), answers.Role.collect(filled, seed))
            last = seed == len(sequence)
            if last:
                profile.enable()
            passes.append(one_pass(ip, nb, checker_program(nb), answers.Role.judge(filled, seed)))
            if last:
                profile.disable()
    if args.sequence is None:
        first, second = passes
        print(f"{args.assignment}: seconds per test cell, first pass (cold) / second pass (warm)")
        for cell in first:
            print(f"  {cell:<28} {first[cell]:7.2f}  {second[cell]:7.2f}")
        print(f"  {'total':<28} {sum(first.values()):7.2f}  {sum(second.values()):7.2f}")
    else:
        print("seconds per test cell, submission by submission, in one process")
        for n, (name, seconds) in enumerate(zip(sequence, passes, strict=True), 1):
            cells_text = ", ".join(f"{cell} {s:.2f}" for cell, s in seconds.items())
            print(f"  {n}. {name}: total {sum(seconds.values()):.2f}: {cells_text}")
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(args.top)
    print(f"cProfile of the last submission\n{text.getvalue()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
