"""Day 55 on the GPU: the CuPy context's allocation calls, the pool's release threshold, the live run, the CLI and
the graded checks, live. Marked gpu: they skip where CuPy sees no device."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from day55 import checks, live, pool, schedules
from day55.config import UINT64_MAX, Config
from labcore.pipeline.context import CupyContext, HostArrays
from labcore.pipeline.verify import check_bit_exact

pytestmark = pytest.mark.gpu
MiB = 1 << 20
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def host():
    arrays = HostArrays(64 * MiB)
    arrays.fill_random(55)
    return arrays


def _reference(host: HostArrays, window: int) -> np.ndarray:
    ctx = CupyContext(host, window, 1, 512, allocated=False)
    host.poison()
    assert live.run_schedule(ctx, schedules.naive) == []
    return host.h_out.copy()


@pytest.mark.parametrize("name", ["once", "malloc", "async", "async-keep", "cupy", "async-sync"])
def test_every_way_of_allocating_is_bit_exact_and_frees_what_it_allocates(host, name):
    window = 4 * MiB
    reference = _reference(host, window)
    ctx = CupyContext(host, window, 2, 512, allocated=False, allocator=live.allocator(name))
    host.poison()
    with pool.release_threshold(live.threshold_for(name)):
        left = live.run_schedule(ctx, schedules.for_variant(name))
    assert left == []
    assert check_bit_exact(name, host.h_out, reference, ctx.chunk_elems).ok
    assert all(d is None for d in ctx.d_in + ctx.d_out)


def test_a_schedule_that_leaks_is_cleaned_up_and_named(host):
    ctx = CupyContext(host, 4 * MiB, 2, 512, allocated=False)

    def leaks(c):
        c.malloc_async(0, 1)
        c.copy_in(0, 1)

    assert live.run_schedule(ctx, leaks) == [1]
    assert ctx.d_in[1] is None


def test_the_release_threshold_decides_what_the_pool_keeps_at_a_synchronize():
    import cupy as cp

    runtime, stream = cp.cuda.runtime, cp.cuda.Stream(non_blocking=False)
    for value, keeps in ((0, False), (UINT64_MAX, True)):
        with pool.release_threshold(value):
            assert pool.threshold() == value
            ptr = runtime.mallocAsync(16 * MiB, stream.ptr)
            runtime.freeAsync(ptr, stream.ptr)
            stream.synchronize()
            held = pool.reserved_bytes()
            assert (held >= 16 * MiB) is keeps, (value, held)
    assert pool.threshold() == 0  # put back as it was


def test_the_call_probe_measures_every_call():
    costs = live.probe_calls(4 * MiB, 3)
    assert set(costs) == {"malloc_ms", "free_ms", "async_ms", "grow_ms"} and all(v > 0 for v in costs.values())


def test_a_small_live_run_is_checked_timed_and_traced():
    cfg = Config(total_bytes=256 * MiB, window_bytes=16 * MiB, windows=[16 * MiB], repeats=2, probes=3)
    record = live.run_live(cfg)
    assert record.checks and all(c.ok for c in record.checks), [c for c in record.checks if not c.ok]
    names = {p.name for p in record.passes}
    assert names >= {"h2d", "kernel", "d2h", "naive", *cfg.variants}
    assert record.trace and record.extra[live.PROBE]["16MiB"]
    keep = record.extra[live.RESERVED]["async-keep w=16MiB b=2"]
    assert keep >= 2 * 2 * 16 * MiB  # the raised threshold kept every pair's buffers


def test_the_cli_runs_live_and_writes_a_record_and_plots(tmp_path):
    out = tmp_path / "r.json"
    run = subprocess.run(
        [sys.executable, "-m", "day55", "--total", "256MiB", "--window", "16MiB", "--windows", "16MiB",
         "--repeats", "2", "--json", str(out), "--plot", str(tmp_path / "plots")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("day55: live on ")
    assert json.loads(out.read_text())["lesson"] == "day55"
    assert len(list((tmp_path / "plots").glob("*.png"))) == 3


def my_stream_ordered(ctx):
    """A student's answer (the checks refuse the lesson's own)."""
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.malloc_async(k, pair)
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)
        ctx.free_async(k, pair)


def test_the_graded_checks_pass_a_correct_answer_live(capsys):
    checks.check_stream_ordered_correct(my_stream_ordered, buffers=2)
    checks.check_stream_ordered_time(my_stream_ordered, buffers=2, rounds=1)
    out = capsys.readouterr().out
    assert "live and bit-exact" in out and "x allocating once" in out


def test_the_timing_check_fails_a_schedule_that_waits_every_chunk_live():
    def waiting(ctx):
        for k in range(ctx.n_chunks):
            pair = k % ctx.n_buffers
            ctx.malloc_async(k, pair)
            ctx.copy_in(k, pair)
            ctx.launch(k, pair)
            ctx.copy_out(k, pair)
            ctx.free_async(k, pair)
            ctx.synchronize()

    with pytest.raises(AssertionError, match=r"x the .* ms of allocating once"):
        checks.check_stream_ordered_time(waiting, buffers=2, rounds=1)
