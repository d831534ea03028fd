"""Day 57's check in the student's own kernel (judged on day57/public.json, the reference withheld) and graded (the
reference itself, at cases drawn per grading run)."""

from __future__ import annotations

import pytest

from day57 import checks, model
from labcore import answers


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


def test_the_drawn_cases_vary_and_hold_one_run(tmp_path):
    """Five cases from the grading run's seed (the role's): one run among them, both ways advised; the planner and
    the checker of one run draw the same, another run draws others."""
    drawn = {}
    for seed in (1, 2):
        with answers.acting(answers.Role.plan(tmp_path / f"plan{seed}.jsonl", seed)):
            drawn[seed] = checks.bytes_moved_cases()
        with answers.acting(answers.Role.judge(tmp_path / f"answers{seed}.jsonl", seed)):
            assert checks.bytes_moved_cases() == drawn[seed]
        assert len(drawn[seed]) == 5 and any(runs == 1 for _, runs, _ in drawn[seed])
        assert sum(advised and runs >= 2 for _, runs, advised in drawn[seed]) >= 2
        assert sum(not advised for *_, advised in drawn[seed]) >= 2
    assert drawn[1] != drawn[2]


@pytest.mark.parametrize(("answer", "passes"), [(right, True), (lambda total, runs, advised: 2 * total * runs, False)])
def test_graded_the_check_asks_everything_then_judges_what_was_filed(tmp_path, answer, passes):
    """Collecting, the check asks the visible and the drawn cases and judges nothing; the checker of the same run
    (its seed) then judges the answers filed, with the model as the reference."""
    filed = tmp_path / "answers.jsonl"
    with answers.acting(answers.Role.collect(filed, 7)):
        checks.check_bytes_moved(answer, cases=checks.VISIBLE_BYTES_MOVED)  # never raises: it only asks
    assert len(filed.read_text().splitlines()) == len(checks.VISIBLE_BYTES_MOVED) + 5
    with answers.acting(answers.Role.judge(filed, 7)):
        if passes:
            checks.check_bytes_moved(answers.Answer("bytes_moved"), cases=checks.VISIBLE_BYTES_MOVED)
        else:
            with pytest.raises(AssertionError, match="the model"):
                checks.check_bytes_moved(answers.Answer("bytes_moved"), cases=checks.VISIBLE_BYTES_MOVED)


def test_the_model_counts_the_bytes():
    assert model.bytes_moved(1 << 30, 3, True) == 4 << 30 and model.bytes_moved(1 << 30, 3, False) == 6 << 30
    assert model.bytes_moved(1 << 30, 1, True) == model.bytes_moved(1 << 30, 1, False)
