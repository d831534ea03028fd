"""The student's own kernel judges against public data only (labcore.public): each lesson's public.json is what its
references give now, no check there calls a reference, and a check whose key is withheld checks what it can and
says the rest is decided when graded."""

from __future__ import annotations

import json
import math

import pytest

from day54 import checks as day54_checks
from day54 import pitfalls
from day55 import checks as day55_checks
from day56 import checks as day56_checks
from labcore import answers, public
from labcore.checking import verdict
from labcore.lessons import names
from labcore.pending import PendingGPU, pending_message
from zero_copy import checks as zero_copy_checks


@pytest.mark.parametrize("lesson", names())
def test_each_public_file_is_what_the_references_give_now(lesson):
    """A stale or hand-edited public.json fails: regenerate it with `python -m labcore.public`."""
    computed = public.computed_values(lesson)
    shipped = public.shipped_values(lesson)
    assert json.loads(public.text(computed)) == shipped, f"{lesson}/public.json is stale: run python -m labcore.public"
    assert public.public_file(lesson).read_text() == public.text(computed)


@pytest.fixture
def no_references(monkeypatch):
    """Every reference the public files name raises, as in the student bundle: a check that calls one fails."""

    def withheld(*args, **kwargs):
        raise answers.ReferenceWithheld("a reference")

    for lesson in names():
        public.computed_values(lesson)  # registered
        for found in public._REGISTRY.get(lesson, {}).values():
            monkeypatch.setattr(found, "reference", withheld)
    monkeypatch.setattr(pitfalls, "pitfall_key", withheld)
    monkeypatch.setattr(day55_checks, "pitfall_key", withheld)
    monkeypatch.setattr(day56_checks, "pitfall_key", withheld)


def test_a_right_prediction_passes_without_the_model(no_references, capsys):
    shipped = {json.dumps(case): value for case, value in public.shipped_values("day54")["prediction"]}
    day54_checks.check_prediction(lambda h, k, d, n, b, link: shipped[json.dumps([h, k, d, n, b, link])])
    assert "3 cases within 1% of the model" in capsys.readouterr().out


def test_a_wrong_prediction_fails_on_the_public_values(no_references):
    with pytest.raises(AssertionError, match=r"you predict 44\.000 ms, the model 23\.478 ms"):
        day54_checks.check_prediction(lambda h, k, d, n, b, link: 44.0)


def test_a_case_that_is_not_public_is_left_to_grading(no_references):
    with pytest.raises(AssertionError, match="not one of the visible cases of 'prediction'; such a case is checked"):
        day54_checks.check_prediction(lambda h, k, d, n, b, link: 1.0, cases=[(1.0, 2.0, 3.0, 4, 2, None)])


def test_day55_and_day56_arithmetic_pass_and_fail_on_public_values(no_references):
    day56_checks.check_break_even(lambda o, e, la: math.ceil(o / (e - la)) if e > la else math.inf)
    with pytest.raises(AssertionError, match="you give 3 launches, the model 2"):
        day56_checks.check_break_even(lambda o, e, la: math.ceil(o / (e - la)) + 1 if e > la else math.inf)
    with pytest.raises(AssertionError, match=r"the model 46\.580 ms"):
        day55_checks.check_malloc_prediction(lambda h2d, kernel, d2h, n, malloc_ms, free_ms: 1.0)


def test_zero_copy_break_even_on_public_links_and_the_shipped_record(no_references, capsys):
    record = zero_copy_checks.replay.load_profile()
    zero_copy_checks.check_break_even(lambda link, hbm: hbm / (hbm - link) if hbm > link else math.inf, record)
    assert "4 (L, H) pairs match the model; on the record's L = 55.1" in capsys.readouterr().out
    with pytest.raises(AssertionError, match=r"H = 4076\.84 GB/s: you give r\* = 2, the model 1\.0137"):
        zero_copy_checks.check_break_even(lambda link, hbm: 2.0, record)


@pytest.mark.parametrize(
    "check, answer",
    [
        (
            day54_checks.check_pitfall_names,
            {
                "A": "pageable",
                "B": "legacy-launch",
                "C": "sync-in-loop",
                "D": "timing the enqueue",
                "E": "more-streams-than-buffers",
            },
        ),
        (day55_checks.check_pitfalls, dict.fromkeys("ABCDE", "race")),
        (
            day56_checks.check_pitfalls,
            {"sync": "waits", "host_read": "error", "new_input": "new", "gpu_time": "faster"},
        ),
    ],
)
def test_a_withheld_key_is_decided_when_graded(no_references, capsys, check, answer):
    """Valid answers (right or not) are not judged against a key the student's copy does not hold: it says so."""
    check(answer)
    assert "whether each is right is decided when your notebook is graded" in capsys.readouterr().out


def test_an_answer_that_is_no_option_still_fails_in_the_students_kernel(no_references):
    with pytest.raises(AssertionError, match="is not one of the five pitfalls"):
        day54_checks.check_pitfall_names(dict.fromkeys("ABCDE", "slow"))
    with pytest.raises(AssertionError, match="more than once, and each pitfall is one timeline"):
        day54_checks.check_pitfall_names(dict.fromkeys("ABCDE", "pageable"))
    with pytest.raises(AssertionError, match="is not one of error, waits, ignored"):
        day56_checks.check_pitfalls({"sync": "maybe"})


def test_pending_is_one_line_without_a_cross_or_a_fix():
    lines = verdict(PendingGPU(pending_message("timing needs the GPU")), "", "check_x")
    assert len(lines) == 1 and "pending a GPU: timing needs the GPU" in lines[0]
    assert "✗" not in lines[0] and "fix" not in lines[0] and "next" not in lines[0]
