"""The day-57 corpus (corpus.py), quickly, in the student's own kernel: each answer through the test cell's check on
the visible and public cases. The whole corpus is graded end to end, sandbox and all, by tests/test_corpus.py."""

from __future__ import annotations

import pytest

from day57 import checks
from day57.tests import corpus

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
