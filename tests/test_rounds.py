"""Decide, then stop (labcore.checking.rounds_decided): timed rounds stop once the median of each round's number,
as a fraction of its bar, lies clearly on one side of it, judged against the rounds' own noise."""

from __future__ import annotations

import pytest

from labcore.checking import rounds_decided


@pytest.mark.parametrize(
    ("fractions", "stops"),
    [
        ([0.90], False),  # without a first-round margin one round decides nothing
        ([0.97, 0.975, 0.965], True),  # three rounds agreeing 3% inside the bar
        ([1.05, 1.06, 1.04], True),  # and 5% outside it: a miss decided
        ([1.011, 0.95, 1.04], False),  # the day-55 miss of a right answer on an H100 (1.112x of a 1.10 bar) among noise
        ([0.999, 1.001, 0.998], False),  # on the bar: never decided, judged on all rounds at the limit
        ([0.98, 0.99], False),  # fewer rounds than asked
    ],
)
def test_rounds_stop_once_the_noise_cannot_flip_the_verdict(fractions, stops):
    assert rounds_decided(fractions) is stops


def test_a_first_round_margin_decides_a_clear_pass_alone():
    assert rounds_decided([0.90], first_margin=1.025) and not rounds_decided([0.99], first_margin=1.025)
