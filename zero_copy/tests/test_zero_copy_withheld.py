"""Zero-copy's break-even model is withheld in the grading sandbox's library (grader.bundle.sandbox_library).
tests/test_sandbox.py calls every withheld reference of every lesson and checks each raises."""

from __future__ import annotations

from grader.bundle import sandbox_library
from grader.runner import REPO


def test_the_lessons_answers_are_withheld(tmp_path):
    assert "zero_copy.model.crossover_reads" in sandbox_library(REPO, tmp_path)
