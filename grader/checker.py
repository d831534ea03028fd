"""`python -m grader.checker LESSON...`: the warm trusted checker, one process that judges many submissions.

It never runs a line of a student's: for each job read from standard input (one JSON line: a folder holding the
answers file the sandbox filled and the student's run files, the checker program of grader.program, the seed) it
runs the locked setup cell, placeholders for the student's names, and the locked test cells, in a fresh namespace,
acting the role labcore.answers.Role.judge(FOLDER/answers.jsonl, seed), which it passes explicitly, in that
folder. It answers with one JSON line: each test cell's
outputs (what the check printed, and the error that fails it).

A job {"plan": true, ...} instead runs the same cells acting Role.plan(FILE, seed) and answers with the questions
they asked, per test cell (labcore.answers: key, asker, arguments): the sandbox's program asks those and holds no
test cell. A grading worker keeps one such planner beside its sandbox (grader.warm), with no GPU.

Imports, the shipped profiles and, on a GPU, the CUDA context, compiled kernels and the checks' large buffers
(labcore.reuse) are made once and kept for every later submission.

With GRADER_CHECKER_PROFILE=DIR in its environment (benchmarks/class_grade.py --checker-profile), each job's test
cells run under cProfile and the statistics go to DIR/checker-PID-N.prof: where a class's checker time goes.
"""

from __future__ import annotations

import ast
import cProfile
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from grader import cells, hops
from grader.zygote import warm
from labcore import answers, reuse

PROFILE_ENV = "GRADER_CHECKER_PROFILE"
_profiled = 0  # jobs profiled by this process


def judge(job: dict[str, Any], ip: Any) -> hops.Judged:
    folder = Path(job["dir"])
    os.chdir(folder)
    answers.act(answers.Role.judge(folder / "answers.jsonl", job["seed"]))
    answers._answers.cache_clear()
    cells.fresh_namespace(ip)
    program = job["program"]
    cells.run_cell(ip, cells.placeholders(program["placeholders"]), 0)
    began = time.perf_counter()
    judged, seconds = {}, {}
    profiles = os.environ.get(PROFILE_ENV)
    profile = cProfile.Profile() if profiles else None
    for index, source, count in program["cells"]:
        start = time.perf_counter()
        if profile is not None:
            profile.enable()
        judged[str(index)] = cells.run_cell(ip, source, count)
        if profile is not None:
            profile.disable()
        seconds[str(index)] = round(time.perf_counter() - start, 3)
    if profile is not None:
        global _profiled
        _profiled += 1
        profile.dump_stats(Path(profiles) / f"checker-{os.getpid()}-{_profiled}.prof")
    return hops.Judged(cells=judged, cells_s=seconds, checker_s=round(time.perf_counter() - began, 3))


def plan(job: dict[str, Any], ip: Any) -> hops.Planned:
    """The questions the test cells ask, by cell index, in order; nothing is answered or judged. A question asked
    only by a hidden-test region is marked `hidden` (the feedback scan looks for its inputs; the sandbox never
    learns which are)."""
    with tempfile.TemporaryDirectory(prefix="grader-plan-") as folder:
        path = Path(folder) / "plan.jsonl"
        path.touch()
        os.chdir(folder)
        answers.act(answers.Role.plan(path, job["seed"]))
        cells.fresh_namespace(ip)
        program = job["program"]
        cells.run_cell(ip, cells.placeholders(program["placeholders"]), 0)
        questions, seen = {}, 0
        for index, source, count in program["cells"]:
            shown = visible_part(source)
            visible: Counter[str] = Counter()
            if shown is not None:  # the visible part alone first: what it asks is no hidden test's
                _ask_each(ip, shown, count)
                lines = path.read_text().splitlines()
                visible.update(json.loads(line)["key"] for line in lines[seen:])
                seen = len(lines)
            _ask_each(ip, source, count)  # a check stops after asking: its outputs say nothing here
            lines = path.read_text().splitlines()
            questions[str(index)] = [_marked(json.loads(line), visible, shown) for line in lines[seen:]]
            seen = len(lines)
        os.chdir("/")
    return hops.Planned(questions=questions)


def _ask_each(ip: Any, source: str, count: int) -> None:
    """Run a test cell in the planner one top-level statement at a time: a plain `assert call(...) == 5` fails there
    for want of an answer (labcore.answers.UNANSWERED equals nothing but itself), and the statements after it still
    ask their questions. A check function asks all of its questions before it judges anything, so one statement
    asks them all; a question asked only past a failing test in the same statement is not planned (and, unanswered,
    fails that test's cell when judged)."""
    for statement in statements(source):
        cells.run_cell(ip, statement, count)


def statements(source: str) -> list[str]:
    """A cell's top-level statements, each as its own source (decorators with what they decorate, statements that
    share a line together); the whole cell where it is not plain Python (a syntax error, an IPython magic)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return [source]
    starts = sorted({min([n.lineno, *(d.lineno for d in getattr(n, "decorator_list", []))]) for n in tree.body})
    if not starts:
        return [source]
    lines = source.split("\n")
    ends = [*starts[1:], len(lines) + 1]
    return ["\n".join(lines[start - 1 : end - 1]) for start, end in zip(starts, ends, strict=True)]


HIDDEN_BEGIN, HIDDEN_END = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"  # nbgrader's delimiters (the course's)


def visible_part(source: str) -> str | None:
    """A test cell's source with its hidden-test regions cut, as the release shows it; None when it has none."""
    kept, inside, found = [], False, False
    for line in source.split("\n"):
        if HIDDEN_BEGIN in line and not inside:
            inside = found = True
        elif HIDDEN_END in line and inside:
            inside = False
        elif not inside:
            kept.append(line)
    return "\n".join(kept) if found else None


def _marked(question: dict[str, Any], visible: Counter[str], shown: str | None) -> dict[str, Any]:
    """The question, marked hidden when the cell's visible part did not ask it (as often)."""
    if shown is not None and visible[question["key"]] > 0:
        visible[question["key"]] -= 1
    elif shown is not None:
        question["hidden"] = True
    return question


MIN_DRAWN_DIGITS = 6  # a hidden question's inputs worth looking for on a page: this many digits in all


def hidden_inputs(questions: dict[str, list]) -> list[list[float]]:
    """The numbers each hidden question (one no visible part also asks) was asked with, in order: what the
    feedback scan looks for on the student's pages (grader.feedback.quoted_values). Never sent to the sandbox."""
    shown = {q["key"] for asked in questions.values() for q in asked if not q.get("hidden")}
    found = []
    for asked in questions.values():
        for question in asked:
            numbers = _numbers(question.get("args", []))
            digits = sum(map(digits_of, numbers))
            if question.get("hidden") and question["key"] not in shown and digits >= MIN_DRAWN_DIGITS:
                if numbers not in found:
                    found.append(numbers)
    return found


def digits_of(number: float) -> int:
    """The digits a number is written with, but leading zeros: 10.0 has 2, 0.1547 has 4, 3001 has 4."""
    text = repr(abs(number)).removesuffix(".0")
    return len(text.replace(".", "").lstrip("0")) if "e" not in text else len(text)


def _numbers(data: Any) -> list[float]:
    """Every number in a planned argument (encoded data: lists, tuples, dicts), in order; a student's name has none."""
    if isinstance(data, bool) or data is None or isinstance(data, str):
        return []
    if isinstance(data, (int, float)):
        return [data]
    if isinstance(data, dict):
        return [n for value in data.values() for n in _numbers(value)]
    if isinstance(data, list):
        return [n for value in data for n in _numbers(value)]
    return []


def main(argv: list[str]) -> int:
    protocol_in, protocol_out = sys.stdin, sys.stdout
    sys.stdout = sys.stderr
    warm(argv)
    reuse.keep()  # the checks' big buffers (a 1 GiB mapped table) serve every submission this process judges
    ip = cells.shell()
    cells.keep_forever()
    protocol_out.write(json.dumps({"ready": True}) + "\n")
    protocol_out.flush()
    for line in protocol_in:
        job = json.loads(line)
        protocol_out.write(json.dumps(plan(job, ip) if job.get("plan") else judge(job, ip)) + "\n")
        protocol_out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
