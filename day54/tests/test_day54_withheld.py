"""Day 54's references are withheld in the grading sandbox's library (grader.bundle.sandbox_library): the pipelined
schedule, the pitfall that with as many streams as buffers is that schedule, and the cost model's bound.
tests/test_sandbox.py calls every withheld reference of every lesson and checks each raises."""

from __future__ import annotations

from grader.bundle import sandbox_library
from grader.runner import REPO


def test_the_lessons_answers_are_withheld(tmp_path):
    withheld = sandbox_library(REPO, tmp_path)
    assert {
        "day54.schedules.pipelined",
        "day54.schedules.pitfall_more_streams_than_buffers",  # with streams == buffers, the reference
        "day54.model.predict",
    } <= set(withheld)
