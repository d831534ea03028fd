"""The configurations the day-54 checks record a schedule at: drawn per grading run from the grading seed, every
draw covering the edge cases, the same in the sandbox and the checker, fresh in a student's own kernel."""

from __future__ import annotations

import pytest

from day54 import checks
from labcore import answers

MiB, KiB = 1 << 20, 1 << 10


@pytest.fixture
def grading(monkeypatch, tmp_path):
    """Set the process up as a grading run of a given seed (the sandbox's role: draws only, nothing judged)."""

    def seeded(seed: int, role: str = "collect") -> None:
        monkeypatch.setattr(answers, "role", answers.Role(role, tmp_path / "answers.jsonl", str(seed)))

    return seeded


def test_every_draw_covers_the_edges(grading):
    """300 grading seeds: each draw has 1 chunk, an odd count, a count its buffers do not divide, many chunks,
    2, 3 and 4+ buffers, a window of at most 4 MiB and one of 256 MiB, all windows whole pages in range."""
    seen = set()
    for seed in range(300):
        grading(seed)
        cases = checks.drawn_cases("correct")
        counts = [c.n_chunks for c in cases]
        depths = {c.buffers for c in cases}
        windows = [c.window for c in cases]
        assert len(cases) == checks.CASES and 1 in counts
        assert any(n % 2 and n > 1 for n in counts) and any(n >= 100 for n in counts)
        assert any(c.n_chunks > c.buffers and c.n_chunks % c.buffers for c in cases)
        assert {2, 3} <= depths and max(depths) >= 4 and depths <= set(range(2, 7))
        assert min(windows) <= 4 * MiB and 256 * MiB in windows
        assert all(4 * KiB <= w <= 256 * MiB and w % (4 * KiB) == 0 for w in windows)
        live = checks.live_cases("correct")
        assert 1 in [c.n_chunks for c in live] and all(c.n_chunks * c.window <= 256 * MiB for c in live)
        seen.add(tuple(cases))
    assert len(seen) == 300  # no two grading runs judged at the same configurations


def test_the_sandbox_and_the_checker_draw_the_same(grading):
    """Both roles of one grading run ask the same questions; another run draws others."""
    grading(11, "collect")
    sandbox = (checks.drawn_cases("correct"), checks.live_cases("correct"), checks.drawn_cases("reuse 2", buffers=2))
    grading(11, "judge")
    checker = (checks.drawn_cases("correct"), checks.live_cases("correct"), checks.drawn_cases("reuse 2", buffers=2))
    grading(12, "judge")
    assert sandbox == checker and checks.drawn_cases("correct") != checker[0]


def test_a_students_own_kernel_draws_fresh_each_run():
    """No grading seed: every call draws anew (the visible tests see other configurations each run)."""
    assert not answers.grading()
    draws = {tuple(checks.drawn_cases("correct")) for _ in range(20)}
    assert len(draws) == 20


def special_cased(known: set[tuple[int, int, int]]):
    """Correct at exactly the `known` (chunks, buffers, window) configurations, racing at every other."""

    def schedule(ctx):
        good = (ctx.n_chunks, ctx.n_buffers, ctx.window_bytes) in known
        for k in range(ctx.n_chunks):
            pair = k % ctx.n_buffers
            stream = pair if good else (k // ctx.n_buffers) % ctx.n_buffers
            ctx.copy_in(k, pair, stream=stream)
            ctx.launch(k, pair, stream=stream)
            ctx.copy_out(k, pair, stream=stream)

    return schedule


def test_a_schedule_fitted_to_one_runs_configurations_fails_the_next(grading, monkeypatch):
    """Correct at every configuration one grading run drew (as if read from that run): the next run catches it."""
    grading(1)
    last = {(c.n_chunks, c.buffers, c.window) for c in checks.drawn_cases("correct") + checks.live_cases("correct")}
    last.add((16, 2, 64 * MiB))  # the cell's own configuration, which it names
    monkeypatch.setattr(answers, "role", answers.OWN)  # judged now in a student's kernel: fresh draws
    schedule = special_cased(last)
    with pytest.raises(AssertionError, match="race on d_in"):
        checks.check_schedule_correct(schedule)


def test_the_package_holds_no_configuration_list():
    """What the checks record at is computed from the seed: no module-level list of chunk counts to read."""
    constants = {name: value for name, value in vars(checks).items() if isinstance(value, (tuple, list, set))}
    numbers = {
        name: value for name, value in constants.items() if value and all(isinstance(v, (int, tuple)) for v in value)
    }
    assert not numbers, f"configuration-like constants in day54.checks: {sorted(numbers)}"
