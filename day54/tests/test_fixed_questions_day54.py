"""Every test cell that asks for a schedule's trace or the sweep asks something drawn for the grading run:
a notebook of stubs whose cell replaces the grader's question-asking function cannot answer such a cell with values
made at home, since no question of it is the same twice. Planned from day 54's solution at two seeds, as grading
plans it (grader.warm's planner)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import nbformat
import pytest

from grader import warm
from grader.program import answers_program, checker_program
from grader.runner import REPO

DRAWN_ASKERS = ("day54.checks.ask_trace", "day54.checks.ask_sweep")


@pytest.fixture(scope="module")
def plans():
    nb = nbformat.read(REPO / "day54" / "solutions" / "day54.ipynb", as_version=4)
    planner = warm.WarmChecker(("day54",), Path(tempfile.mkdtemp()) / "planner", planner=True)
    planner.scratch.mkdir(parents=True)
    try:
        made = []
        for seed in (11, 12, 13, 14):  # a draw may repeat at two seeds, never at four for every cell
            job = warm.Job(
                "day54", "s", {}, answers_program(nb).to_json(), checker_program(nb).to_json(), seed, 120,
                ("day54",), warm.code_digest(),
            )  # fmt: skip
            made.append(planner.plan(job))
        yield made
    finally:
        planner.stop()


def test_every_cell_asking_for_a_trace_or_the_sweep_asks_something_drawn(plans):
    first, *others = plans
    cells = [c for c, asked in first.items() if any(q["asker"] in DRAWN_ASKERS for q in asked)]
    assert len(cells) >= 3, cells  # the correctness cell, the timed ratio and the sweep at least
    fixed = [c for c in cells if all({q["key"] for q in first[c]} <= {q["key"] for q in o[c]} for o in others)]
    assert not fixed, f"cells whose every question is the same at every seed: {fixed}"


def test_the_timed_trace_has_a_drawn_twin_and_the_sweep_a_drawn_record(plans):
    first, *_ = plans
    sweeps = [q for asked in first.values() for q in asked if q["asker"] == "day54.checks.ask_sweep"]
    assert [q["args"][2] is None for q in sweeps].count(False) == len(sweeps) // 2  # each rescaled one drawn
    timed = [q for asked in first.values() for q in asked if q["asker"] == "day54.checks.ask_trace"]
    shapes = [tuple(q["args"][1:4]) for q in timed]
    assert (16, 2, 64 << 20) in shapes and any(n not in (16, 256) and w == 64 << 20 for n, _, w in shapes)
