"""day54 on a real GPU: correctness, poisoning, overlap. Skipped without a GPU."""

from __future__ import annotations

import numpy as np
import pytest

from day54 import schedules
from day54.config import Config
from day54.live import run_live
from day54.tests.wrong_schedules import off_by_one, skipping
from labcore.device import cupy_or_none
from labcore.pipeline.context import CupyContext, HostArrays
from labcore.pipeline.verify import NAN_BITS, check_bit_exact, check_closed_form

pytestmark = pytest.mark.gpu
MiB = 1 << 20


@pytest.fixture(scope="module")
def host():

    arrays = HostArrays(64 * MiB)
    arrays.fill_random(seed=1234)
    return arrays


def _run(host, schedule, window=4 * MiB, buffers=1, fmas=512):

    ctx = CupyContext(host, window, buffers, fmas)
    host.poison()
    schedule(ctx)
    ctx.synchronize()
    return ctx


def test_naive_matches_closed_form(host):
    """Naive output is within the float32 bound of the float64 closed form, every chunk."""
    ctx = _run(host, schedules.naive)
    check = check_closed_form(host.h_in, host.h_out, 512, ctx.chunk_elems)
    assert check.ok, check.detail


@pytest.mark.parametrize("depth", [2, 3])
def test_pipelined_bit_exact(host, depth):
    """Pipelined output equals naive bit for bit at 2 and 3 buffer pairs."""
    ctx = _run(host, schedules.naive)
    reference = host.h_out.copy()
    _run(host, schedules.pipelined, buffers=depth)
    check = check_bit_exact("pipelined", host.h_out, reference, ctx.chunk_elems)
    assert check.ok, check.detail


def test_poison_names_first_unwritten_chunk(host):
    """A schedule that skips chunk 5 leaves poison there, and the check names chunk 5."""
    ctx = _run(host, schedules.naive)
    reference = host.h_out.copy()
    _run(host, skipping(5))
    assert np.isnan(host.h_out[5 * ctx.chunk_elems])
    check = check_bit_exact("skips five", host.h_out, reference, ctx.chunk_elems)
    assert not check.ok and check.first_bad_chunk == 5


def test_verify_and_poison_finds_what_the_compare_finds_and_poisons_all(host):
    """The one-pass verify-and-poison names the same bad chunks as the two-pass compare, then leaves NaN
    everywhere; on a right output it finds none."""
    cp = cupy_or_none()
    ctx = _run(host, schedules.naive)
    expected = cp.asarray(host.h_out)
    assert host.verify_and_poison(expected, ctx.chunk_elems).size == 0
    assert np.all(host.h_out.view(np.uint32) == NAN_BITS)
    _run(host, skipping(5))
    host.h_out[9 * ctx.chunk_elems + 17] += 1.0  # one wrong value in chunk 9
    compared = check_bit_exact("two wrong", host.h_out, expected.get(), ctx.chunk_elems)
    found = host.verify_and_poison(expected, ctx.chunk_elems)
    assert list(found) == [5, 9] and not compared.ok and compared.first_bad_chunk == 5
    assert np.all(host.h_out.view(np.uint32) == NAN_BITS)


def test_wrong_offset_is_caught(host):
    """Copying chunk k+1's input into chunk k's slot fails the closed-form check at chunk 0."""
    ctx = _run(host, off_by_one)
    check = check_closed_form(host.h_in, host.h_out, 512, ctx.chunk_elems)
    assert not check.ok and check.first_bad_chunk == 0


def test_pipelined_overlaps():
    """In one run, 2-buffer pipelined at 16 chunks takes under 0.8 of naive (copy engines overlap)."""
    cfg = Config(
        total_bytes=256 * MiB, window_bytes=16 * MiB, windows=[16 * MiB], buffers=[2], repeats=3, pitfalls=False
    )
    record = run_live(cfg)
    naive = record.pass_times("naive w=16MiB b=1").median_ms
    pipelined = record.pass_times("pipelined w=16MiB b=2").median_ms
    assert all(c.ok for c in record.checks)
    assert pipelined / naive < 0.8, (pipelined, naive)


def test_trace_shows_overlap():
    """The event trace of the pipelined pass has a copy in running while a copy out runs."""
    cfg = Config(
        total_bytes=256 * MiB, window_bytes=16 * MiB, windows=[16 * MiB], buffers=[2], repeats=1, pitfalls=False
    )
    record = run_live(cfg)
    ops = record.ops("pipelined w=16MiB b=2")
    ins = [o for o in ops if o.op == "h2d"]
    outs = [o for o in ops if o.op == "d2h"]
    assert any(i.start_ns < o.end_ns and o.start_ns < i.end_ns and i.chunk != o.chunk for i in ins for o in outs)
    cupy_or_none().get_default_memory_pool().free_all_blocks()


def test_pitfalls_are_measured_and_slower():
    """Sync-in-loop and pageable memory are slower than the correct pipeline; the enqueue alone looks fast."""
    cfg = Config(total_bytes=256 * MiB, window_bytes=16 * MiB, windows=[16 * MiB], buffers=[2], repeats=3)
    record = run_live(cfg)
    good = record.pass_times("pipelined w=16MiB b=2").median_ms
    by_name = {p["name"]: p for p in record.extra["pitfalls"]}
    assert set(by_name) == {"legacy-launch", "sync-in-loop", "more-streams-than-buffers", "pageable"}
    assert by_name["sync-in-loop"]["ok"] and by_name["pageable"]["ok"] and by_name["legacy-launch"]["ok"]
    assert record.pass_times("pitfall sync-in-loop w=16MiB b=2").median_ms > 1.2 * good
    assert record.pass_times("pitfall pageable w=16MiB b=2").median_ms > 1.2 * good
    assert sorted(record.extra["enqueue_ms"])[1] < 0.5 * good
