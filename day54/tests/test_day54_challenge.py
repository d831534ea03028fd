"""The optional day-54 challenge, offline: correct first, then simulated time over the recorded link floor.

What a wrong or gaming answer would try: an empty schedule (nothing to time), a racy one with more streams than
pairs (fast and wrong), the lesson's settings (correct, 1.15x), settings outside the rules, a schedule that
serializes. Each must fail with a message saying what was expected and what was seen.
"""

from __future__ import annotations

import re

import pytest

from day54 import checks
from day54.config import MiB
from labcore import answers

pytestmark = pytest.mark.skipif(checks.gpu_available(), reason="offline verdicts (simulated on the H200 profile)")


def pipelined(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)


def naive(ctx):
    for k in range(ctx.n_chunks):
        ctx.copy_in(k, 0)
        ctx.launch(k, 0)
        ctx.copy_out(k, 0)


def racy(ctx):
    """Chunk k on stream k % n_streams but pair k % n_buffers: as fast as can be, and a race."""
    for k in range(ctx.n_chunks):
        pair, stream = k % ctx.n_buffers, k % ctx.n_streams
        ctx.copy_in(k, pair, stream=stream)
        ctx.launch(k, pair, stream=stream)
        ctx.copy_out(k, pair, stream=stream)


def split_directions(ctx):
    """Correct with two streams per pair: copies in on stream pair, kernel and copy out on the same stream."""
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair, stream=pair)
        ctx.launch(k, pair, stream=pair)
        ctx.copy_out(k, pair, stream=pair)


def empty(ctx):
    pass


BEST = {"window": 16 * MiB, "buffers": 6, "streams": 6}


def met(capsys) -> float:
    """The ratio the check printed when the challenge was met."""
    found = re.search(r"challenge met: .*, (\d\.\d{3})x the link floor", capsys.readouterr().out)
    assert found, "the check did not say the challenge was met"
    return float(found.group(1))


def test_the_course_best_meets_the_challenge_offline(capsys):
    assert checks.check_challenge(pipelined, BEST) is None  # a value shown by the cell would be partial credit
    assert 1.0 <= met(capsys) <= checks.CHALLENGE_FACTOR


def test_extra_streams_are_the_students_to_use(capsys):
    checks.check_challenge(split_directions, {"window": 16 * MiB, "buffers": 4, "streams": 8})
    assert met(capsys) <= checks.CHALLENGE_FACTOR


@pytest.mark.parametrize(
    ("schedule", "settings", "message"),
    [
        (pipelined, {"window": 64 * MiB, "buffers": 2}, r"1\.1\d\dx the link floor .* at most 1\.05x"),
        (naive, BEST, r"(1\.9|2\.0)\d\dx the link floor"),
        (racy, {"window": 32 * MiB, "buffers": 2, "streams": 3}, r"counts only a correct schedule.*unordered|race"),
        (empty, BEST, r"counts only a correct schedule.*never copied"),
    ],
)
def test_slow_or_wrong_schedules_miss_it(schedule, settings, message):
    with pytest.raises(AssertionError, match=message):
        checks.check_challenge(schedule, settings)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (None, r"should be a dict like .* not NoneType"),
        ([32 * MiB, 4], r"should be a dict like .* not list"),
        ({"window": 3 * MiB, "buffers": 2}, r"window 3145728 bytes: choose a power of two from 1 MiB to 256 MiB"),
        ({"window": 512 * MiB, "buffers": 2}, r"choose a power of two"),
        ({"window": 32 * MiB}, r"'buffers' is None; expected a whole number"),
        ({"window": 32 * MiB, "buffers": 9}, r"buffers 9: choose 1\.\.8"),
        ({"window": 32 * MiB, "buffers": 4, "streams": 2}, r"streams 2: choose 4\.\.16"),
        ({"window": 32.0 * MiB, "buffers": 4}, r"'window' is 33554432\.0; expected a whole number"),
        ({"window": 32 * MiB, "buffers": True}, r"'buffers' is True"),
        ({"window": 32 * MiB, "buffers": 4, "depth": 3}, r"unknown keys \['depth'\]"),
    ],
)
def test_settings_outside_the_rules_say_what_is_wrong(settings, message):
    with pytest.raises(AssertionError, match=message):
        checks.check_challenge(pipelined, settings)


def test_an_unwritten_stub_is_not_answered_yet():
    def stub(ctx):
        raise NotImplementedError

    with pytest.raises(answers.AnswerRaised, match="not answered yet"):
        checks.check_challenge(stub, BEST)


def test_collecting_files_the_answers_and_judges_nothing(tmp_path, monkeypatch, capsys):
    """In the sandbox bad settings are filed as data too (the checker says what is wrong), and nothing raises."""
    ghost = answers.Answer("my_fastest")
    bad, good = tmp_path / "bad.jsonl", tmp_path / "good.jsonl"
    monkeypatch.setenv("LABCORE_ANSWERS", f"collect:{bad}")
    checks.check_challenge(pipelined, {"window": 3})
    monkeypatch.setenv("LABCORE_ANSWERS", f"collect:{good}")
    checks.check_challenge(pipelined, BEST)
    assert bad.is_file() and good.is_file()
    monkeypatch.setenv("LABCORE_ANSWERS", f"judge:{bad}")
    with pytest.raises(AssertionError, match="'buffers' is None"):
        checks.check_challenge(ghost, answers.Answer("MY_CHALLENGE"))
    monkeypatch.setenv("LABCORE_ANSWERS", f"judge:{good}")
    checks.check_challenge(ghost, answers.Answer("MY_CHALLENGE"))
    assert met(capsys) <= checks.CHALLENGE_FACTOR


@pytest.mark.parametrize(
    ("ratios", "decided"),
    [
        ([1.16, 1.17, 1.15, 1.16, 1.18], True),  # the lesson's settings: a clear miss after five rounds
        ([1.057, 1.058, 1.056, 1.056, 1.059], True),  # a steady near miss, every round past 1.05 by 0.5% or more
        ([1.02, 1.03, 1.01, 1.02, 1.02], True),  # a steady pass
        ([1.16, 1.17, 1.15, 1.16], False),  # too few rounds, however clear
        ([1.057, 1.049, 1.06, 1.06, 1.06], False),  # one round on the other side: all of them are needed
        ([1.052, 1.058, 1.06, 1.06, 1.06], False),  # one round too close to the line
        ([0.98, 1.045, 1.0, 1.0, 1.0], False),  # a pass whose worst round is within 0.5% of the line
    ],
)
def test_the_rounds_stop_early_only_when_every_round_is_clearly_on_one_side(ratios, decided):
    assert checks._challenge_decided(ratios) is decided
