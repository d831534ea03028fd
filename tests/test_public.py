"""The student's own kernel judges against public data only (labcore.public): each lesson's public.json is what its
references give now, and a check pending a GPU says so in one line. Each lesson's tests/test_public_<lesson>.py
shows its checks pass and fail on the public values with every reference withheld."""

from __future__ import annotations

import json

import pytest

from labcore import public
from labcore.checking import verdict
from labcore.lessons import names
from labcore.pending import PendingGPU, pending_message


@pytest.mark.parametrize("lesson", names())
def test_each_public_file_is_what_the_references_give_now(lesson):
    """A stale or hand-edited public.json fails: regenerate it with `python -m labcore.public`."""
    computed = public.computed_values(lesson)
    shipped = public.shipped_values(lesson)
    assert json.loads(public.text(computed)) == shipped, f"{lesson}/public.json is stale: run python -m labcore.public"
    assert public.public_file(lesson).read_text() == public.text(computed)


def test_pending_is_one_line_without_a_cross_or_a_fix():
    lines = verdict(PendingGPU(pending_message("timing needs the GPU")), "", "check_x")
    assert len(lines) == 1 and "pending a GPU: timing needs the GPU" in lines[0]
    assert "✗" not in lines[0] and "fix" not in lines[0] and "next" not in lines[0]


def _unlisted(case):
    """A case no public file answers: a visible one of numbers with its first one changed (None for other shapes)."""
    if not isinstance(case, list) or not all(isinstance(x, int | float) for x in case):
        return None
    first, *rest = case
    return [first * 2 + 1, *rest]


@pytest.mark.parametrize("lesson", names())
def test_the_instructors_checkout_answers_every_case_and_the_bundle_only_the_visible_ones(lesson, withhold):
    """A solutions notebook's hidden cases run in the instructors' own kernel against the references; in the bundle
    (the reference withheld) such a case is left to grading in one line, and a visible one still answers."""
    public.computed_values(lesson)
    tried = 0
    for found in public._REGISTRY.get(lesson, {}).values():
        visible = found.cases[0]
        if (case := _unlisted(visible)) is None:
            continue
        tried += 1
        assert not found.has(case)
        assert found.want(case) == found.reference(case) and found.known(case) == found.reference(case)
        withhold(found, "reference")
        with pytest.raises(AssertionError, match="not one of the visible cases"):
            found.want(case)
        assert found.known(case) is None
        assert found.want(visible) == found.shipped(visible)
    assert tried, f"{lesson}: no public expectation of numbers to try"
