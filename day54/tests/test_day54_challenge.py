"""The optional day-54 challenge, offline: correct first, then yours over the course's best, both simulated.

What a wrong or gaming answer would try: an empty schedule (nothing to time), a racy one with more streams than
pairs (fast and wrong), the lesson's settings (correct, 1.12x the course's best), settings outside the rules, a
schedule that serializes. Each must fail with a message saying what was expected and what was seen. The live
procedure's rounds (`checks.challenge_rounds`) are tested on injected timings, with no GPU.
"""

from __future__ import annotations

import itertools

import pytest

from day54 import checks
from day54.config import MiB
from labcore import answers, checking

offline = pytest.mark.skipif(checks.gpu_available(), reason="offline verdicts (simulated on the H200 profile)")


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


BEST_CHECK = "day54 challenge: yours / the course's best"
FLOOR_CHECK = "day54 challenge: yours / the link floor"


def met(capsys) -> float:
    """Yours over the course's best, as the check recorded it, when it said the challenge was met."""
    assert "challenge met, at most 1.03x the course's best: " in capsys.readouterr().out
    best, floor = checking.drain()[-2:]
    assert (best.check, floor.check, best.source, best.threshold) == (BEST_CHECK, FLOOR_CHECK, "simulated", 1.03)
    assert floor.ranked and not best.ranked and floor.value > best.value  # the floor lies under the course's best
    return best.value


@offline
def test_the_course_best_meets_the_challenge_offline(capsys):
    assert checks.check_challenge(pipelined, BEST) is None  # a value shown by the cell would be partial credit
    assert met(capsys) == pytest.approx(1.0)  # simulated alike: the same schedule at the same settings


@offline
def test_extra_streams_are_the_students_to_use(capsys):
    checks.check_challenge(split_directions, {"window": 16 * MiB, "buffers": 4, "streams": 8})
    assert met(capsys) <= checks.CHALLENGE_FACTOR


@offline
@pytest.mark.parametrize(
    ("schedule", "settings", "message"),
    [
        (pipelined, {"window": 64 * MiB, "buffers": 2}, r"1\.1\d\dx the course's best(?s:.*)at most 1\.03x"),
        (naive, BEST, r"(1\.9|2\.0)\d\dx the course's best"),
        (racy, {"window": 32 * MiB, "buffers": 2, "streams": 3}, r"counts only a correct schedule.*unordered|race"),
        (empty, BEST, r"counts only a correct schedule.*never copied"),
    ],
)
def test_slow_or_wrong_schedules_miss_it(schedule, settings, message):
    with pytest.raises(AssertionError, match=message):
        checks.check_challenge(schedule, settings)


@offline
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


@offline
def test_an_unwritten_stub_is_not_answered_yet():
    def stub(ctx):
        raise NotImplementedError

    with pytest.raises(answers.AnswerRaised, match="not answered yet"):
        checks.check_challenge(stub, BEST)


@offline
def test_collecting_files_the_answers_and_judges_nothing(tmp_path, monkeypatch, capsys):
    """In the sandbox bad settings are filed as data too (the checker says what is wrong), and nothing raises."""
    ghost = answers.Answer("my_fastest")
    bad, good = tmp_path / "bad.jsonl", tmp_path / "good.jsonl"
    monkeypatch.setattr(answers, "role", answers.Role.collect(bad))
    checks.check_challenge(pipelined, {"window": 3})
    monkeypatch.setattr(answers, "role", answers.Role.collect(good))
    checks.check_challenge(pipelined, BEST)
    assert bad.is_file() and good.is_file()
    monkeypatch.setattr(answers, "role", answers.Role.judge(bad, "0"))
    with pytest.raises(AssertionError, match="'buffers' is None"):
        checks.check_challenge(ghost, answers.Answer("MY_CHALLENGE"))
    monkeypatch.setattr(answers, "role", answers.Role.judge(good, "0"))
    checks.check_challenge(ghost, answers.Answer("MY_CHALLENGE"))
    assert met(capsys) <= checks.CHALLENGE_FACTOR


@pytest.mark.parametrize(
    ("ratios", "decided"),
    [
        ([1.09, 1.10, 1.09, 1.10, 1.09], True),  # 64 MiB x 2 as measured on the H200: a clear miss after five rounds
        ([1.036, 1.037, 1.04, 1.036, 1.038], True),  # a steady near miss, every round past 1.03 by 0.5% or more
        ([0.99, 1.01, 1.0, 1.014, 1.0], True),  # a copy of the course's best, its measured band 0.990-1.014
        ([1.09, 1.10, 1.09, 1.10], False),  # too few rounds, however clear
        ([1.036, 1.029, 1.04, 1.04, 1.04], False),  # one round on the other side: all of them are needed
        ([1.032, 1.04, 1.04, 1.04, 1.04], False),  # one round too close to the line
        ([0.98, 1.026, 1.0, 1.0, 1.0], False),  # a pass whose worst round is within 0.5% of the line
    ],
)
def test_the_rounds_stop_early_only_when_every_round_is_clearly_on_one_side(ratios, decided):
    assert checks.challenge_decided(ratios) is decided


# -- the live rounds on injected timings (checks.challenge_rounds: the GPU's timer is the seam) ----------------


class Timer:
    """Times for the rounds: the course's best, yours as a factor of it round by round, the probe; every run logged."""

    def __init__(self, factors, best_ms=24.0, floor_ms=22.5):
        self.factors, self.best_ms, self.floor_ms = itertools.cycle(factors), best_ms, floor_ms
        self.runs: list[tuple[str, bool, bool]] = []

    def __call__(self, name: str, first: bool, verified: bool) -> float:
        self.runs.append((name, first, verified))
        if name == "yours":
            return self.best_ms * next(self.factors)
        return self.best_ms if name == "best" else self.floor_ms


def verdict(timer: Timer) -> tuple[checks.ChallengeTiming, checking.Result, checking.Result]:
    found = checks.challenge_rounds(timer)
    return (found, *checks.challenge_results(found, checks.COURSE_BEST))


def test_a_copy_of_the_course_best_passes_in_six_rounds_verified_first_and_last():
    timer = Timer([0.99, 1.01, 1.0, 1.014, 1.005])  # the band a copy measured in on the H200; median of 6: 1.0025
    found, best, floor = verdict(timer)
    assert best.passed and best.value == pytest.approx(1.0025) and best.noise == checks.CHALLENGE_NOISE
    assert floor.value == pytest.approx(1.0025 * 24.0 / 22.5) and floor.reference == pytest.approx(24.0 / 22.5)
    rounds = [timer.runs[i : i + 3] for i in range(0, len(timer.runs), 3)]
    assert len(rounds) == checks.CHALLENGE_EARLY_ROUNDS + 1  # decided after five, one more verified round ends it
    assert [[name for name, *_ in r] for r in rounds] == [["best", "yours", "floor"]] * len(rounds)
    assert [r[0][2] for r in rounds] == [True, False, False, False, False, True]  # verified: the first and the last
    assert [r[0][1] for r in rounds] == [True] + [False] * 5  # warm-ups: the first round's
    assert "6 rounds" in found.how and found.source == "live"


def test_two_buffers_of_64_mib_fail():
    """64 MiB x 2 measured 1.09-1.10 of the course's best on the H200."""
    _found, best, floor = verdict(Timer([1.09, 1.10, 1.095]))
    assert not best.passed and best.value == pytest.approx(1.095)
    assert f"{best.value:.3f}x the course's best (noise +-1.4%)" in checks.challenge_words(best, floor)


def test_a_schedule_at_the_bar_takes_every_round_and_no_more_gpu_time_than_before():
    """Undecided rounds all run: CHALLENGE_ROUNDS rounds of three runs, two warm-ups and four verifies, fewer passes
    over the link than the 15 rounds of two runs, two warm-ups and two verifies of the check this replaced."""
    timer = Timer([1.02, 1.04, 1.03, 1.025, 1.035])
    _found, best, _ = verdict(timer)
    assert len(timer.runs) == 3 * checks.CHALLENGE_ROUNDS
    warmups = sum(first and name != "floor" for name, first, _ in timer.runs)  # best's and yours, not the probe's
    verifies = sum(verified and name != "floor" for name, _, verified in timer.runs)  # the probe's is not verified
    assert (warmups, verifies) == (2, 4)
    assert len(timer.runs) + warmups + verifies <= 15 * 2 + 2 + 2
    assert best.value == pytest.approx(1.03) and best.passed  # the median of the rounds, at the bar: met


def test_the_verdict_is_the_median_of_the_rounds_so_one_slow_round_does_not_fail_it():
    _found, best, _ = verdict(Timer([1.0, 1.0, 1.25, 1.0, 1.0, 1.0, 1.02, 1.0, 1.0, 1.0]))
    assert best.passed and best.value == pytest.approx(1.0)


def test_the_results_travel_as_data_and_the_sentence_is_theirs():
    """What the check records comes back from a test cell's outputs as the same results; the words quote them."""
    _, best, floor = verdict(Timer([1.012]))
    back = checking.results_in(checking.outputs([best, floor]))
    assert back == [best, floor]
    words = checks.challenge_words(*back)
    assert words.startswith("1.012x the course's best (noise +-1.4%), 1.079x the link floor (the course's best 1.067x)")
    assert checks.COURSE_BEST.describe() in words


@pytest.mark.parametrize(
    ("worst", "stops"),
    [
        ([0.90], True),  # a clear pass: one round
        ([0.99], False),  # a pass inside the noise: more rounds
        ([0.99, 0.98], False),  # never before three
        ([0.98, 0.985, 0.975], True),  # three rounds agreeing, 1.5% inside the bar: decided
        ([0.995, 0.996, 0.994], False),  # 0.5% inside: within three times the least noise assumed, measured again
        ([1.011, 1.03, 0.98], False),  # 1.062x against the 1.05x bar (the live class's one false miss), noisy
        ([0.96, 1.04, 0.97, 1.03, 0.99], False),  # straddling the bar: more rounds, up to the limit
        ([1.30, 1.28, 1.31], True),  # a serialized schedule: three rounds, no more
    ],
)
def test_the_ratio_check_stops_once_decided(worst, stops):
    assert checks.ratio_decided(worst, len(worst)) is stops


def test_the_noise_of_a_ratio_is_the_standard_error_of_its_median():
    rounds = tuple((45.0, 25.0, mine) for mine in (25.0, 25.5, 24.5, 25.25, 24.75))
    timing = checks.Timing(45.0, 25.0, 25.0, "live", rounds=rounds)
    assert timing.noise(1) == pytest.approx(1.2533 * 1.4826 * 0.01 / 5**0.5, rel=1e-3)
    assert checks.Timing(45.0, 25.0, 25.0, "live", rounds=rounds[:2]).noise(1) is None
