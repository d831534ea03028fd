"""Day 56 on a GPU: capture, launch, update and the pitfalls as CUDA answers them, the live run end to end, and
the checks live. Every test here needs CuPy and a device (marker gpu)."""

from __future__ import annotations

import math
import re
import secrets

import pytest

from day56 import checks, graph, report, schedules
from day56.__main__ import main
from day56.config import Config
from day56.live import run_live
from labcore.pipeline.context import CupyContext, HostArrays
from labcore.pipeline.verify import bit_exact_check

pytestmark = pytest.mark.gpu
MiB = 1 << 20


def _context(total: int = 64 * MiB, n_chunks: int = 16, buffers: int = 3):
    host = HostArrays(total)
    host.fill_random(secrets.randbelow(2**31))
    ctx = CupyContext(host, total // n_chunks, buffers, 512)
    expected = ctx.expected_output()
    host.poison()
    return host, ctx, expected


def test_a_captured_pipeline_launches_as_one_graph_and_is_bit_exact():
    host, ctx, expected = _context()
    captured = graph.capture(graph.capturable(ctx), schedules.pipelined)
    exec_, instantiate_ms = graph.instantiate(captured)
    graph.launch(exec_)
    ctx.synchronize()
    check = bit_exact_check("graph", host.verify_and_poison(expected, ctx.chunk_elems), ctx.n_chunks)
    graph.destroy_exec(exec_)
    captured.destroy()
    assert check.ok, check.detail
    assert instantiate_ms > 0 and captured.nodes is not None and captured.nodes >= 3 * ctx.n_chunks


def test_an_update_moves_the_graph_to_new_arrays_without_instantiating():
    host, ctx, expected = _context()
    other, fresh, expected_other = _context()
    captured = graph.capture(graph.capturable(ctx), schedules.pipelined)
    exec_, _ = graph.instantiate(captured)
    again = graph.capture(graph.capturable(fresh), schedules.pipelined)
    assert graph.update(exec_, again) > 0
    graph.launch(exec_)
    ctx.synchronize()
    new = bit_exact_check("updated", other.verify_and_poison(expected_other, fresh.chunk_elems), fresh.n_chunks)
    old = host.verify_and_poison(expected, ctx.chunk_elems)
    graph.destroy_exec(exec_)
    captured.destroy()
    again.destroy()
    assert new.ok, new.detail
    assert old.size == ctx.n_chunks  # the first arrays were not written: the graph points at the new ones


def test_an_update_to_another_shape_is_refused():
    _, ctx, _ = _context()
    _, fewer, _ = _context(n_chunks=8)
    captured = graph.capture(graph.capturable(ctx), schedules.pipelined)
    exec_, _ = graph.instantiate(captured)
    other = graph.capture(graph.capturable(fewer), schedules.pipelined)
    with pytest.raises(graph.UpdateRefused, match="cuGraphExecUpdate"):
        graph.update(exec_, other)
    graph.destroy_exec(exec_)
    captured.destroy()
    other.destroy()


@pytest.mark.parametrize("schedule", [schedules.pitfall_sync_in_capture, schedules.waits_at_the_end])
def test_a_synchronizing_call_invalidates_the_capture(schedule):
    host, ctx, expected = _context()
    with pytest.raises(graph.CaptureFailed) as failed:
        graph.capture(graph.capturable(ctx), schedule)
    assert failed.value.error and failed.value.ended, failed.value  # what CUDA said: the report prints it
    ctx.synchronize()  # the device works again: the capture is over
    schedules.pipelined(ctx)
    ctx.synchronize()
    assert bit_exact_check("after", host.verify_and_poison(expected, ctx.chunk_elems), ctx.n_chunks).ok


def test_a_host_read_inside_the_capture_sees_the_poison():
    host, ctx, expected = _context()
    seen, captured = graph.read_inside_capture(graph.capturable(ctx), schedules.pipelined, 0)
    exec_, _ = graph.instantiate(captured)
    graph.launch(exec_)
    ctx.synchronize()
    assert math.isnan(seen) and float(host.h_out[0]) == float(expected[0].get())
    graph.destroy_exec(exec_)
    captured.destroy()


def test_the_live_run_is_correct_and_reports(tmp_path):
    record = run_live(Config(total_bytes=256 * MiB, chunks=[16, 64], repeats=2))
    assert record.checks and all(c.ok for c in record.checks), [c for c in record.checks if not c.ok]
    assert report.chunk_counts(record) == [16, 64] and record.extra["pitfalls"]["sync-in-capture"]["refused"]
    assert record.extra["pitfalls"]["stale-pointers"]["unwritten_chunks"] == 16
    assert "Predictions" in report.render(record)


def test_python_m_day56_live_writes_its_record_and_plots(tmp_path, capsys):
    assert (
        main(
            [
                "--total",
                "256MiB",
                "--windows",
                "16MiB",
                "--repeats",
                "2",
                "--json",
                str(tmp_path / "r.json"),
                "--plot",
                str(tmp_path),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert out.startswith("day56: live on ") and (tmp_path / "day56_host.png").is_file()


def test_the_checks_live_pass_the_pipeline_and_time_it(capsys):
    def mine(ctx):
        for k in range(ctx.n_chunks):
            pair = k % ctx.n_buffers
            ctx.copy_in(k, pair)
            ctx.launch(k, pair)
            ctx.copy_out(k, pair)

    checks.check_capture_safe(mine)
    checks.check_capture_timed(mine)
    said = capsys.readouterr().out
    assert re.search(r"live, medians of \d+ rounds? of 5 runs, the graph's output verified", said), said


def test_the_timed_check_fails_a_serial_schedule_on_the_floor():
    def serial(ctx):
        for k in range(ctx.n_chunks):
            ctx.copy_in(k, 0)
            ctx.launch(k, 0)
            ctx.copy_out(k, 0)

    with pytest.raises(AssertionError, match="the link floor"):
        checks.check_capture_timed(serial)
