"""The day-57 corpus (corpus.py), quickly, in the student's own kernel: each answer through the test cell's check on
the visible and public cases. The whole corpus is graded end to end, sandbox and all, by tests/test_corpus.py."""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat
import pytest

from day57 import checks
from day57.tests import corpus
from labcore import answers

NOTEBOOK = Path(__file__).resolve().parents[1] / "solutions" / "day57.ipynb"


def cases_asked(region: str) -> list:
    """The cases the graded cell's check asks in its visible part or its hidden one, as the solutions notebook says."""
    cell = next(c for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.get("id") == corpus.FAILS_ONLY_HIDDEN[0])
    visible, hidden = cell.source.split("### BEGIN HIDDEN TESTS")
    text = hidden.split("### END HIDDEN TESTS")[0] if region == "hidden" else visible
    call = next(n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.keyword) and n.arg == "cases")
    return eval(compile(ast.Expression(call.value), str(NOTEBOOK), "eval"), {"__builtins__": {}})


PASSES_HERE = {"UNUSUAL": True, "NO_ADVICE": False, "INPUT_ONCE_EVEN_FOR_NO_RUN": False, "PUBLIC_ONLY": True}


@pytest.mark.parametrize(("name", "passes"), PASSES_HERE.items())
def test_each_answer_in_the_students_kernel(name, passes, no_references):
    """Right answers pass; wrong ones fail; the public-only one passes here and is caught only when graded."""
    space: dict = {}
    exec(getattr(corpus, name), space)  # the student's cell, as the notebook would run it
    if passes:
        checks.check_bytes_moved(space["bytes_moved"], cases=checks.VISIBLE_BYTES_MOVED)
    else:
        with pytest.raises(AssertionError, match="the model"):
            checks.check_bytes_moved(space["bytes_moved"], cases=checks.VISIBLE_BYTES_MOVED)


def test_calling_the_model_is_refused_in_the_students_kernel():
    space: dict = {}
    exec(corpus.CALLS_THE_MODEL, space)
    with pytest.raises(AssertionError, match="calls model from the package"):
        checks.check_bytes_moved(space["bytes_moved"])


def test_graded_only_the_hidden_cases_catch_the_zero_run_answer(tmp_path):
    """FAILS_ONLY_HIDDEN: graded, the visible cell's cases and the drawn ones pass it; the hidden ones fail it."""
    test, edits = corpus.FAILS_ONLY_HIDDEN
    assert test in corpus.POINTS
    space: dict = {}
    exec(edits["bytes_moved"], space)
    for name, passes in (("visible", True), ("hidden", False)):
        cases = cases_asked(name)
        filed = tmp_path / f"{name}.jsonl"
        with answers.acting(answers.Role.collect(filed, 3)):
            checks.check_bytes_moved(space["bytes_moved"], cases=cases)
        with answers.acting(answers.Role.judge(filed, 3)):
            if passes:
                checks.check_bytes_moved(answers.Answer("bytes_moved"), cases=cases)
            else:
                with pytest.raises(AssertionError, match="0 run"):
                    checks.check_bytes_moved(answers.Answer("bytes_moved"), cases=cases)
