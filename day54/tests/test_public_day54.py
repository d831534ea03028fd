"""Day 54's checks in the student's own kernel: judged on day54/public.json with every reference withheld
(labcore.public), and the pitfall key left to grading."""

from __future__ import annotations

import json

import pytest

from day54 import checks, pitfalls
from labcore import public


@pytest.fixture
def no_key(withhold, no_references):
    withhold(pitfalls, "pitfall_key")


def test_a_right_prediction_passes_without_the_model(no_key, capsys):
    shipped = {json.dumps(case): value for case, value in public.shipped_values("day54")["prediction"]}
    checks.check_prediction(lambda h, k, d, n, b, link: shipped[json.dumps([h, k, d, n, b, link])])
    assert "3 cases within 1% of the model" in capsys.readouterr().out


def test_a_wrong_prediction_fails_on_the_public_values(no_key):
    with pytest.raises(AssertionError, match=r"you predict 44\.000 ms, the model 23\.478 ms"):
        checks.check_prediction(lambda h, k, d, n, b, link: 44.0)


def test_a_case_that_is_not_public_is_left_to_grading(no_key):
    with pytest.raises(AssertionError, match="not one of the visible cases of 'prediction'; such a case is checked"):
        checks.check_prediction(lambda h, k, d, n, b, link: 1.0, cases=[(1.0, 2.0, 3.0, 4, 2, None)])


def test_valid_pitfall_names_are_decided_when_graded(no_key, capsys):
    names = ["pageable", "legacy-launch", "sync-in-loop", "timing the enqueue", "more-streams-than-buffers"]
    checks.check_pitfall_names(dict(zip("ABCDE", names, strict=True)))
    assert "whether each is right is decided when your notebook is graded" in capsys.readouterr().out


def test_pitfall_names_that_are_no_option_or_twice_fail_in_the_students_kernel(no_key):
    with pytest.raises(AssertionError, match="is not one of the five pitfalls"):
        checks.check_pitfall_names(dict.fromkeys("ABCDE", "slow"))
    with pytest.raises(AssertionError, match="more than once, and each pitfall is one timeline"):
        checks.check_pitfall_names(dict.fromkeys("ABCDE", "pageable"))
