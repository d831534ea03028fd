"""The day-54 checks on a real GPU: live correctness, live timing against the reference, verified timed runs."""

from __future__ import annotations

import pytest

from day54 import checks

from wrong_schedules import off_by_one

pytestmark = pytest.mark.gpu


def my_pipelined(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)


def one_stream(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair, stream=0)
        ctx.launch(k, pair, stream=0)
        ctx.copy_out(k, pair, stream=0)


def lazy_when_timed():
    """A schedule right for its first two calls, then it skips the last chunk."""
    calls = []

    def schedule(ctx):
        calls.append(1)
        last = ctx.n_chunks if len(calls) <= 2 else ctx.n_chunks - 1
        for k in range(last):
            pair = k % ctx.n_buffers
            ctx.copy_in(k, pair)
            ctx.launch(k, pair)
            ctx.copy_out(k, pair)

    return schedule


def test_a_correct_schedule_passes_live(capsys):
    """Right at every live case, fast enough against naive and the reference of the same run."""
    checks.check_schedule_correct(my_pipelined)
    checks.check_pipelined_ratio(my_pipelined)
    out = capsys.readouterr().out
    assert "live on fresh random input" in out and "every timed output verified" in out


def test_a_wrong_schedule_fails_live():
    """Off by one chunk: caught by the ordering rules before the GPU runs it."""
    with pytest.raises(AssertionError, match="first bad chunk 0"):
        checks.check_schedule_correct(off_by_one)


def test_one_stream_is_too_slow_live():
    """Correct, but one stream: naive's time, far above both bars."""
    with pytest.raises(AssertionError, match=r"pipelined/naive = 0\.9\d\d|pipelined/naive = 1\.0"):
        checks.check_pipelined_ratio(one_stream)


def test_a_schedule_that_does_less_after_its_first_calls_fails():
    """Checks judge recorded traces (two recordings per configuration must agree); doing less later is caught,
    and what is timed is a replay of what was recorded, each timed output verified."""
    with pytest.raises(AssertionError, match="is never copied out"):
        checks.check_schedule_correct(lazy_when_timed())
    checks.check_pipelined_ratio(lazy_when_timed())  # its first recording is right, and that is what is timed
