"""The day-54 lab, live: correctness first, then the timed passes, into one results record."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from day54 import DOMAIN, LESSON, pitfalls, schedules
from day54.config import Config, MiB, PassKey
from labcore.device import cupy_or_none
from labcore.kit.measure import (
    first_reference,
    live_record,
    run_schedule,
    seeded_host,
    time_components,
    time_keyed,
    trace_pass,
)
from labcore.kit.memory import require_memory
from labcore.pipeline.context import CupyContext
from labcore.pipeline.verify import check_bit_exact
from labcore.progress import progress
from labcore.record import Record
from labcore.sizes import format_size


def check_memory(cfg: Config) -> None:
    """Refuse, before allocating, a run that cannot fit in host or device memory."""
    # pinned input and output, the naive reference, and pageable input and output for that pitfall
    require_memory(
        (5 if cfg.pitfalls else 3) * cfg.total_bytes,
        2 * max([*cfg.buffers, 2]) * max(cfg.all_windows) + 64 * MiB,
        host_what=f"--total {format_size(cfg.total_bytes)} needs {{need}} GiB of host memory "
        "(input, output, reference, pitfalls)",
        device_what=f"windows up to {format_size(max(cfg.all_windows))} with {max(cfg.buffers)} buffer pairs "
        "need {need} GiB of device memory",
    )


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
    record = live_record(LESSON, cfg.as_dict())
    with progress(_steps(cfg), LESSON) as bar:
        host, reference = seeded_host(cfg.total_bytes, cfg.seed)
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
    yield from first_reference(ctx.with_buffers(1), schedules.naive, cfg.fmas, record, reference)
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
    for times in time_components(ctx.with_buffers(1), cfg.total_bytes, timed, schedules.COMPONENTS):
        record.passes.append(times)
        yield f"{times.name} {format_size(window)}"
    runs = [("naive", schedules.naive, 1)] + [("pipelined", schedules.pipelined, b) for b in cfg.buffers]
    runs += [("student", student, b) for b in cfg.buffers] if student else []
    for name, schedule, b in runs:
        view, key = ctx.with_buffers(b), PassKey(name, window, b)
        record.passes.append(time_keyed(lambda s=schedule, v=view: s(v), key, 2 * cfg.total_bytes, timed))
        if window == cfg.window_bytes:
            record.trace.extend(trace_pass(view, schedule, key))
        yield f"{name} {format_size(window)} b={b}"
    if window == cfg.window_bytes:
        two, duplex = ctx.with_buffers(2), PassKey("duplex", window, 2)
        record.passes.append(time_keyed(lambda: schedules.duplex(two), duplex, 2 * cfg.total_bytes, timed))
        yield "duplex link"
        if cfg.pitfalls:
            yield from pitfalls.measure(cfg, ctx, reference, record, trace_pass)
