"""Day 56's checks in the student's own kernel: judged on day56/public.json with every reference withheld
(labcore.public), and the pitfall key left to grading."""

from __future__ import annotations

import math

import pytest

from day56 import checks


@pytest.fixture
def no_key(withhold, no_references):
    withhold(checks, "pitfall_key")


def test_the_break_even_passes_and_fails_on_the_public_values(no_key):
    checks.check_break_even(lambda o, e, la: math.ceil(o / (e - la)) if e > la else math.inf)
    checks.check_break_even(lambda o, e, la: math.ceil(o / (e - la)) if e > la else math.inf, cases=[(3.0, 1.0, 0.25)])
    with pytest.raises(AssertionError, match="you give 3 launches, the model 2"):
        checks.check_break_even(lambda o, e, la: math.ceil(o / (e - la)) + 1 if e > la else math.inf)


def test_valid_answers_are_decided_when_graded_and_no_option_fails(no_key, capsys):
    checks.check_pitfalls({"sync": "waits", "host_read": "error", "new_input": "new", "gpu_time": "faster"})
    assert "whether each is right is decided when your notebook is graded" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="is not one of error, waits, ignored"):
        checks.check_pitfalls({"sync": "maybe"})
