"""The day-54 checks on a real GPU: live correctness, live timing against the reference, verified timed runs."""

from __future__ import annotations

import pytest

from day54 import checks
from day54.tests.wrong_schedules import lazy_after, off_by_one, one_stream, rotating
from labcore import answers
from labcore.pipeline.context import Context, CupyContext, HostArrays
from labcore.pipeline.verify import check_bit_exact

pytestmark = pytest.mark.gpu


my_pipelined = rotating(lambda ctx: ctx.n_chunks)


def test_a_correct_schedule_passes_live(capsys):
    """Right at every live case, fast enough against naive and the reference of the same run."""
    checks.check_schedule_correct(my_pipelined)
    checks.check_pipelined_ratio(my_pipelined)
    out = capsys.readouterr().out
    assert "live on fresh random input" in out and "verified every round" in out


def test_a_wrong_schedule_fails_live():
    """Off by one chunk: caught by the ordering rules before the GPU runs it."""
    with pytest.raises(AssertionError, match="first bad chunk 0"):
        checks.check_schedule_correct(off_by_one)


def test_one_stream_is_too_slow_live():
    """Correct, but one stream: naive's time, far above both bars."""
    with pytest.raises(AssertionError, match=r"pipelined/naive = 0\.9\d\d|pipelined/naive = 1\.0"):
        checks.check_pipelined_ratio(one_stream)


def test_a_schedule_that_does_less_after_its_first_calls_fails():
    """Checks judge recorded traces (two recordings per configuration must agree); doing less later is caught, by
    the correctness check and by the timed one, which records the schedule afresh at its own drawn count."""
    with pytest.raises(AssertionError, match="is never copied out"):
        checks.check_schedule_correct(lazy_after(2))
    with pytest.raises(AssertionError, match=r"its time does not count: .* is never copied out"):
        checks.check_pipelined_ratio(lazy_after(2))


def test_live_correctness_at_drawn_windows(tmp_path, capsys):
    """Three grading seeds' live cases (windows of whole 4 KiB pages, rarely a power of two) run and verify."""
    for seed in (1, 2, 3):
        with answers.acting(answers.Role.collect(tmp_path / f"{seed}.jsonl", seed)):
            cases = checks.live_cases("correct")
        for case in cases:
            checks._live_correct(checks.traced(my_pipelined, case.n_chunks, case.buffers, case.window))
    checks.check_schedule_correct(my_pipelined)
    assert "live on fresh random input at 1x" in capsys.readouterr().out


def test_a_schedule_behind_the_facade_runs_on_the_gpu():
    """The Context facade day54.student hands a schedule forwards to the real CupyContext: bit-exact output."""
    host = HostArrays(7 * (1 << 20))
    host.fill_random(5)
    ctx = CupyContext(host, 1 << 20, 3, 512)
    expected = ctx.expected_output()
    host.poison()
    my_pipelined(Context(ctx))
    ctx.synchronize()
    check = check_bit_exact("facade", host.device_view(host.h_out), expected, ctx.chunk_elems)
    assert check.ok, check.detail
