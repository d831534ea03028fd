"""Day 57's check in the student's own kernel (judged on day57/public.json, the reference withheld) and graded (the
reference itself, at cases drawn per grading run)."""

from __future__ import annotations

import pytest

from day57 import checks, model


def right(total, runs, advised):
    return 0 if runs == 0 else total * (runs + 1 if advised else 2 * runs)


def test_the_right_answer_passes_on_the_public_values(no_references):
    checks.check_bytes_moved(right, cases=checks.VISIBLE_BYTES_MOVED)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda total, runs, advised: 2 * total * runs, r"with the advice: you give 4294967296 bytes, the model 3221"),
        (
            lambda total, runs, advised: total * (runs + 1) if advised else 2 * total * runs,
            r"64 MiB, 0 run\(s\), with the advice: you give 67108864 bytes, the model 0",
        ),
        (lambda total, runs, advised: True, "not a number"),
    ],
)
def test_wrong_answers_fail_with_what_they_gave(no_references, wrong, message):
    with pytest.raises(AssertionError, match=message):
        checks.check_bytes_moved(wrong, cases=checks.VISIBLE_BYTES_MOVED)


def test_the_drawn_cases_vary_and_hold_one_run(monkeypatch):
    """Five cases from the grading run's seed: one run among them, both ways advised, different seeds differ."""
    drawn = {}
    for seed in (1, 2):
        monkeypatch.setattr(checks.answers, "fresh_seed", lambda name, seed=seed: hash((name, seed)) & 0x7FFFFFFF)
        drawn[seed] = checks.bytes_moved_cases()
        assert len(drawn[seed]) == 5 and any(runs == 1 for _, runs, _ in drawn[seed])
        assert sum(advised and runs >= 2 for _, runs, advised in drawn[seed]) >= 2
        assert sum(not advised for *_, advised in drawn[seed]) >= 2
    assert drawn[1] != drawn[2]


def test_the_model_counts_the_bytes():
    assert model.bytes_moved(1 << 30, 3, True) == 4 << 30 and model.bytes_moved(1 << 30, 3, False) == 6 << 30
    assert model.bytes_moved(1 << 30, 1, True) == model.bytes_moved(1 << 30, 1, False)
