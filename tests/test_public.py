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
