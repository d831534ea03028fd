"""Day 55's checks in the student's own kernel: judged on day55/public.json with every reference withheld
(labcore.public), and the pitfall key left to grading."""

from __future__ import annotations

import pytest

from day55 import checks


@pytest.fixture
def no_key(withhold, no_references):
    withhold(checks, "pitfall_key")


def test_a_wrong_malloc_prediction_fails_on_the_public_values(no_key):
    with pytest.raises(AssertionError, match=r"the model 46\.580 ms"):
        checks.check_malloc_prediction(lambda h2d, kernel, d2h, n, malloc_ms, free_ms: 1.0)


def test_valid_verdicts_are_decided_when_graded_and_no_option_fails(no_key, capsys):
    checks.check_pitfalls(dict.fromkeys("ABCDE", "race"))
    assert "whether each is right is decided when your notebook is graded" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="is not one of correct"):
        checks.check_pitfalls(dict.fromkeys("ABCDE", "fine"))
