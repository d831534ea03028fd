"""The day-56 lab, live: correctness first, then the timed passes, host clocks and one-off costs, into one record.

At every chunk count (16, 64 and 256 chunks of the 1 GiB array: 64, 16 and 4 MiB windows) the pipeline runs
stream by stream and captured as one graph. Both outputs are compared bit for bit with naive's before any clock is
read. Then, for each: the GPU time (CUDA events on the legacy default stream, as day 54 times), and the host time
of what the host does per pass (time.perf_counter around the enqueue loop, or around the one graph launch), each
inside an NVTX range of the host domain so that a profile holds them too. The graph's one-off costs (capture,
instantiate) are timed once; the update for a new input (new host arrays, new device buffers: every pointer
changes) is captured again, applied with cuGraphExecUpdate and checked bit for bit on the new input.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import nvtx

from day56 import DOMAIN, HOST_DOMAIN, LESSON, graph, schedules
from day56.config import Config, MiB, PassKey, host_range
from day56.report import HOST, PITFALLS
from labcore.device import cupy_or_none
from labcore.gpulock import gpu_turn
from labcore.kit.measure import live_record, trace_pass
from labcore.kit.memory import require_memory
from labcore.pipeline.context import CupyContext, HostArrays
from labcore.pipeline.verify import bit_exact_check, check_closed_form
from labcore.progress import progress
from labcore.record import Record
from labcore.timing import time_pass


def check_memory(cfg: Config) -> None:
    """Refuse, before allocating, a run that cannot fit: two pinned inputs and outputs (the update's new input),
    the naive output of each on the device, and the buffer pairs."""
    require_memory(
        4 * cfg.total_bytes + cfg.total_bytes,  # and the closed form's copy of the reference
        3 * cfg.total_bytes + 4 * cfg.buffers * cfg.window(min(cfg.chunks)) + 64 * MiB,
        host_what="--total needs {need} GiB of host memory (two inputs and outputs, a reference)",
        device_what="the run needs {need} GiB of device memory",
    )


def _verified(name: str, host: HostArrays, expected: Any, ctx: Any, record: Record) -> bool:
    """The host output against naive's, bit for bit on the GPU (then poisoned for the next run), as a Check."""
    check = bit_exact_check(name, host.verify_and_poison(expected, ctx.chunk_elems), ctx.n_chunks)
    record.checks.append(check)
    return check.ok


def _host_timed(what: str, key: PassKey, times: list[float], warmup: int, fn: Callable[[], Any]) -> Callable[[], None]:
    """fn, each call inside a host-domain NVTX range and its host time (ms) appended to times; the first `warmup`
    calls (time_pass's warm-ups) are named and kept apart so that times holds the timed repeats only."""
    calls = [0]

    def timed() -> None:
        warm = calls[0] < warmup
        calls[0] += 1
        with nvtx.annotate(host_range(what, key, warmup=warm), domain=HOST_DOMAIN):
            t0 = time.perf_counter()
            fn()
            took = (time.perf_counter() - t0) * 1e3
        if not warm:
            times.append(took)

    return timed


def _once(what: str, key: PassKey, fn: Callable[[], Any]) -> tuple[Any, float]:
    """A one-off host step inside its NVTX range: its value and host time (ms)."""
    with nvtx.annotate(host_range(what, key), domain=HOST_DOMAIN):
        t0 = time.perf_counter()
        value = fn()
        return value, (time.perf_counter() - t0) * 1e3


def run_live(cfg: Config) -> Record:
    """Measure everything the lesson discusses on the live GPU; correctness before timing."""
    cfg.validate()
    check_memory(cfg)
    cp = cupy_or_none()
    record = live_record(LESSON, cfg.as_dict())
    record.extra[HOST] = {}
    steps = len(cfg.chunks) * 4 + 2
    with progress(steps, LESSON) as bar:
        host, other = HostArrays(cfg.total_bytes), HostArrays(cfg.total_bytes)
        host.fill_random(cfg.seed)
        other.fill_random(cfg.seed + 1)
        first = CupyContext(host, cfg.window(cfg.main_chunks), cfg.buffers, cfg.fmas)
        with gpu_turn():
            expected = first.expected_output()
            expected_other = CupyContext(other, first.window_bytes, 1, cfg.fmas).expected_output()
            host.poison()
            other.poison()
        record.checks.append(check_closed_form(host.h_in, expected.get(), cfg.fmas, first.chunk_elems))
        bar.update("closed form")
        if not record.checks[0].ok:
            return record
        for n in cfg.chunks:
            ctx = first if n == cfg.main_chunks else CupyContext(host, cfg.window(n), cfg.buffers, cfg.fmas)
            for step in _measure(cfg, n, ctx, host, other, expected, expected_other, record):
                bar.update(step)
            del ctx
            cp.get_default_memory_pool().free_all_blocks()
            if not all(c.ok for c in record.checks):
                break
        bar.update("done")
    return record


def _captured(
    ctx: CupyContext, host: HostArrays, expected: Any, record: Record, n: int
) -> tuple[Any, int, dict] | None:
    """The pipeline run stream by stream, then captured, instantiated and launched once, each output checked
    against naive's: the captured graph, its executable and the one-off host times (ms); None when a check failed."""
    streams, graphed = PassKey("streams", n), PassKey("graph", n)
    with gpu_turn():
        schedules.pipelined(ctx)
        ctx.synchronize()
    if not _verified(f"{streams} vs naive", host, expected, ctx, record):
        return None
    gctx = graph.capturable(ctx)
    with gpu_turn():
        captured, _ = _once("capture", graphed, lambda: graph.capture(gctx, schedules.pipelined))
        exec_, _ = _once("instantiate", graphed, lambda: graph.instantiate(captured))
        exec_, instantiate_ms = exec_
        t0 = time.perf_counter()
        graph.launch(exec_)
        first_launch_ms = (time.perf_counter() - t0) * 1e3
        cp = cupy_or_none()
        cp.cuda.Device().synchronize()
    if not _verified(f"{graphed} vs naive", host, expected, ctx, record):
        return None
    once = {
        "capture_ms": captured.capture_ms,
        "instantiate_ms": instantiate_ms,
        "first_launch_ms": first_launch_ms,
        "nodes": captured.nodes,
    }
    return captured, exec_, once


def _time_both(cfg: Config, n: int, ctx: CupyContext, exec_: int, record: Record, timed: dict) -> Iterator[str]:
    """The GPU time of the pipeline stream by stream and as one graph launch, and the host's time of each (into
    record.extra[HOST][n]'s enqueue_ms and launch_ms)."""
    streams, graphed = PassKey("streams", n), PassKey("graph", n)
    facts = record.extra[HOST].setdefault(str(n), {})
    enqueue_ms, launch_ms = facts.setdefault("enqueue_ms", []), facts.setdefault("launch_ms", [])
    params = {"n_chunks": n, "window_bytes": ctx.window_bytes, "buffers": cfg.buffers}
    enqueue = _host_timed("enqueue", streams, enqueue_ms, cfg.warmup, lambda: schedules.pipelined(ctx))
    record.passes.append(time_pass(enqueue, key=streams, name="streams", params=params, **timed))
    yield f"streams n={n}"
    launch = _host_timed("launch", graphed, launch_ms, cfg.warmup, lambda: graph.launch(exec_))
    record.passes.append(time_pass(launch, key=graphed, name="graph", params=params, **timed))
    yield f"graph n={n}"


def _measure(
    cfg: Config,
    n: int,
    ctx: CupyContext,
    host: HostArrays,
    other: HostArrays,
    expected: Any,
    expected_other: Any,
    record: Record,
) -> Iterator[str]:
    """Correctness, then timings, then the update, at n chunks. Yields a label after each step."""
    made = _captured(ctx, host, expected, record, n)
    if made is None:
        return
    captured, exec_, once = made
    yield f"check n={n}"
    timed = dict(domain=DOMAIN, repeats=cfg.repeats, warmup=cfg.warmup, bytes_moved=2 * cfg.total_bytes)
    record.extra[HOST][str(n)] = {}
    yield from _time_both(cfg, n, ctx, exec_, record, timed)
    facts = record.extra[HOST][str(n)]
    facts.update(once)
    updated, fresh = _update(cfg, n, exec_, other, expected_other, record, PassKey("graph", n))
    facts.update(updated)  # from here on exec_ runs on fresh's buffers and other's arrays: fresh stays alive
    if n == cfg.main_chunks:
        streams = PassKey("streams", n)
        record.trace.extend(trace_pass(ctx, schedules.pipelined, streams))  # a graph's nodes carry no events
        two = ctx.with_buffers(2)
        record.passes.append(
            time_pass(
                lambda: schedules.duplex(two),
                key=PassKey("duplex", n),
                name="duplex",
                params={"n_chunks": n, "window_bytes": ctx.window_bytes, "buffers": 2},
                **timed,
            )
        )
        if cfg.pitfalls:
            record.extra[PITFALLS] = _pitfalls(ctx, host, other, exec_, expected, record)
    graph.destroy_exec(exec_)
    captured.destroy()
    del fresh
    yield f"update n={n}"


def _update(
    cfg: Config, n: int, exec_: int, other: HostArrays, expected_other: Any, record: Record, key: PassKey
) -> tuple[dict[str, Any], CupyContext]:
    """The graph made to run on a new input without instantiating again: the pipeline captured on new host arrays
    and new device buffers, cuGraphExecUpdate into the executable graph, one launch checked bit for bit. Then the
    same captured graph instantiated from scratch, for the comparison. Returns the host times (ms), and the new
    context, whose device buffers the updated graph now uses (the caller keeps it until the graph is destroyed)."""
    fresh = CupyContext(other, cfg.window(n), cfg.buffers, cfg.fmas)
    gfresh = graph.capturable(fresh)
    with gpu_turn():
        recaptured, _ = _once("recapture", key, lambda: graph.capture(gfresh, schedules.pipelined))
        update_ms, _ = _once("update", key, lambda: graph.update(exec_, recaptured))
        graph.launch(exec_)
        cupy_or_none().cuda.Device().synchronize()
    _verified(f"{key} updated for a new input vs naive", other, expected_other, fresh, record)
    with gpu_turn():
        again, reinstantiate_ms = graph.instantiate(recaptured)
        graph.destroy_exec(again)
    recaptured.destroy()
    times = {"recapture_ms": recaptured.capture_ms, "update_ms": update_ms, "reinstantiate_ms": reinstantiate_ms}
    return times, fresh


def _value(x: float) -> str:
    return repr(float(x))


def _pitfalls(
    ctx: CupyContext, host: HostArrays, other: HostArrays, exec_: int, expected: Any, record: Record
) -> dict[str, Any]:
    """The capture pitfalls, run and reported as they happen on this GPU (nothing here is assumed)."""
    found: dict[str, Any] = {}
    # 1. a synchronizing call inside the capture
    synchronizing = {
        "sync-in-capture": schedules.pitfall_sync_in_capture,
        "wait-at-the-end": schedules.waits_at_the_end,
    }
    for name, schedule in synchronizing.items():
        try:
            with gpu_turn():
                made = graph.capture(graph.capturable(ctx), schedule)
            made.destroy()
            found[name] = {"refused": False, "error": None, "ended": None}
        except graph.CaptureFailed as exc:
            found[name] = {"refused": True, "error": exc.error, "ended": exc.ended}
        cupy_or_none().cuda.Device().synchronize()  # the device is usable again after an invalidated capture
    # 2. a host read inside the capture, of an output poisoned just before (the duplex probe wrote it last)
    gctx = graph.capturable(ctx)
    with gpu_turn():
        host.poison()
        seen, captured = graph.read_inside_capture(gctx, schedules.pipelined, 0)
        read_exec, _ = graph.instantiate(captured)
        graph.launch(read_exec)
        cupy_or_none().cuda.Device().synchronize()
    after = float(host.h_out[0])
    want = float(expected[0].get())
    found["host-read-in-capture"] = {"inside": _value(seen), "after_launch": _value(after), "expected": _value(want)}
    _verified("graph with a host read inside its capture vs naive", host, expected, ctx, record)
    graph.destroy_exec(read_exec)
    captured.destroy()
    # 3. a new input without an update: the graph still holds the old pointers (exec_ was updated to `other`'s,
    # so here the stale input is the first one: the graph writes other's output, and host's stays poisoned)
    with gpu_turn():
        graph.launch(exec_)
        cupy_or_none().cuda.Device().synchronize()
    bad = host.verify_and_poison(expected, ctx.chunk_elems)
    other.poison()
    found["stale-pointers"] = {"unwritten_chunks": int(bad.size), "n_chunks": ctx.n_chunks}
    return found
