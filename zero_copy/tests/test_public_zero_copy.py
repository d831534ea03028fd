"""The zero-copy break-even in the student's own kernel: judged on zero_copy/public.json (the visible links and
the shipped record's L and H) with every reference withheld (labcore.public)."""

from __future__ import annotations

import math

import pytest

from zero_copy import checks, replay


def test_the_break_even_passes_and_fails_on_the_public_values(no_references, capsys):
    record = replay.load_profile()
    checks.check_break_even(lambda link, hbm: hbm / (hbm - link) if hbm > link else math.inf, record)
    assert "4 (L, H) pairs match the model; on the record's L = 55.1" in capsys.readouterr().out
    with pytest.raises(AssertionError, match=r"H = 4076\.84 GB/s: you give r\* = 2, the model 1\.0137"):
        checks.check_break_even(lambda link, hbm: 2.0, record)
