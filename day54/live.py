"""The day-54 lab, live: correctness first, then the timed passes, into one results record."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

from day54 import DOMAIN, LESSON, pitfalls, schedules
from day54.config import Config, MiB, PassKey
from labcore.device import available_host_bytes, cupy_or_none, device_facts, free_device_bytes
from labcore.errors import UsageError
from labcore.gpulock import gpu_turn, warn_if_shared
from labcore.nvrtc import require_nvrtc
from labcore.pipeline.context import CupyContext, HostArrays
from labcore.pipeline.verify import check_bit_exact, check_closed_form
from labcore.progress import progress
from labcore.record import Record
from labcore.sizes import format_size
from labcore.timing import OpTracer, time_pass


def check_memory(cfg: Config) -> None:
    """Refuse, before allocating, a run that cannot fit in host or device memory."""
    # pinned input and output, the naive reference, and pageable input and output for that pitfall
    host_need = (5 if cfg.pitfalls else 3) * cfg.total_bytes
    host_free = available_host_bytes()
    if host_free is not None and host_need > host_free:
        raise UsageError(
            f"--total {format_size(cfg.total_bytes)} needs {host_need / 2**30:.1f} GiB of host memory "
            f"(input, output, reference, pitfalls); {host_free / 2**30:.1f} GiB is available"
        )
    device_need = 2 * max([*cfg.buffers, 2]) * max(cfg.all_windows) + 64 * MiB
    device_free = free_device_bytes()
    if device_need > device_free:
        raise UsageError(
            f"windows up to {format_size(max(cfg.all_windows))} with {max(cfg.buffers)} buffer pairs "
            f"need {device_need / 2**30:.2f} GiB of device memory; {device_free / 2**30:.2f} GiB is free"
        )


def run_schedule(ctx: Any, schedule: Any) -> None:
    """Run one schedule to completion, untimed (in a turn all the same: it would disturb a neighbour's timing)."""
    with gpu_turn():
        schedule(ctx)
        ctx.synchronize()


def trace_pass(ctx: Any, schedule: Any, key: PassKey) -> list:
    """One extra run with events around every operation, for the timeline."""
    ctx.tracer = OpTracer()
    try:
        with gpu_turn():
            ctx.tracer.begin()
            schedule(ctx)
            return ctx.tracer.ops(str(key))
    finally:
        ctx.tracer = None


def _steps(cfg: Config) -> int:
    per_window = 3 + 1 + len(cfg.buffers) * 2
    return len(cfg.all_windows) * per_window + 3 + len(cfg.buffers) + (5 if cfg.pitfalls else 0)


def run_live(cfg: Config, student: Any = None) -> Record:
    """Measure everything the lesson discusses on the live GPU; correctness before timing.

    `student`, a schedule, is checked bit for bit and timed as pass 'student' at every window and depth.
    """
    cfg.validate()
    check_memory(cfg)
    cp = cupy_or_none()
    record = Record(lesson=LESSON, mode="live", source="live", device=device_facts(), config=cfg.as_dict())
    print(f"{LESSON}: kernels compile with {require_nvrtc()}", file=sys.stderr, flush=True)
    warn_if_shared()
    with progress(_steps(cfg), LESSON) as bar:
        host = HostArrays(cfg.total_bytes)
        host.fill_random(cfg.seed)
        reference = np.empty_like(host.h_out)
        for window in cfg.all_windows:
            ctx = CupyContext(host, window, max([*cfg.buffers, 2]), cfg.fmas)
            for step in _measure_window(cfg, ctx, window, record, reference, student):
                bar.update(step)
            del ctx
            cp.get_default_memory_pool().free_all_blocks()
    return record


def _measure_window(
    cfg: Config, ctx: Any, window: int, record: Record, reference: np.ndarray, student: Any = None
) -> Iterator[str]:
    """Correctness, then timings, for one window. Yields a label after each step."""
    host, chunk = ctx.host, ctx.chunk_elems
    if not record.checks:  # the first window sets the reference every other output must match
        host.poison()
        run_schedule(ctx.with_buffers(1), schedules.naive)
        record.checks.append(check_closed_form(host.h_in, host.h_out, cfg.fmas, chunk))
        np.copyto(reference, host.h_out)
        yield "closed form"
    checked = [("pipelined", schedules.pipelined)] + ([("student", student)] if student else [])
    for b in cfg.buffers:
        for label, schedule in checked:
            host.poison()
            run_schedule(ctx.with_buffers(b), schedule)
            name = f"{PassKey(label, window, b)} vs naive"
            record.checks.append(check_bit_exact(name, host.h_out, reference, chunk))
        yield f"check {format_size(window)} b={b}"
    if not all(c.ok for c in record.checks):
        return
    timed = dict(domain=DOMAIN, repeats=cfg.repeats, warmup=cfg.warmup)
    one = ctx.with_buffers(1)
    for name, schedule in schedules.COMPONENTS.items():
        moved = None if name == "kernel" else cfg.total_bytes
        record.passes.append(
            time_pass(
                lambda s=schedule: s(one),
                key=PassKey(name, window, 1),
                name=name,
                params={"window_bytes": window, "buffers": 1},
                bytes_moved=moved,
                **timed,
            )
        )
        yield f"{name} {format_size(window)}"
    runs = [("naive", schedules.naive, 1)] + [("pipelined", schedules.pipelined, b) for b in cfg.buffers]
    runs += [("student", student, b) for b in cfg.buffers] if student else []
    for name, schedule, b in runs:
        view = ctx.with_buffers(b)
        key = PassKey(name, window, b)
        record.passes.append(
            time_pass(
                lambda s=schedule, v=view: s(v),
                key=key,
                name=name,
                params={"window_bytes": window, "buffers": b},
                bytes_moved=2 * cfg.total_bytes,
                **timed,
            )
        )
        if window == cfg.window_bytes:
            record.trace.extend(trace_pass(view, schedule, key))
        yield f"{name} {format_size(window)} b={b}"
    if window == cfg.window_bytes:
        two = ctx.with_buffers(2)
        record.passes.append(
            time_pass(
                lambda: schedules.duplex(two),
                key=PassKey("duplex", window, 2),
                name="duplex",
                params={"window_bytes": window, "buffers": 2},
                bytes_moved=2 * cfg.total_bytes,
                **timed,
            )
        )
        yield "duplex link"
        if cfg.pitfalls:
            yield from pitfalls.measure(cfg, ctx, reference, record, trace_pass)
