"""The measure loop's steps, the same in every pipeline lesson: a lesson's live run calls them in its own order.

    record = live_record(LESSON, cfg.as_dict())           # the NVRTC line and the shared-GPU warning
    host, reference = seeded_host(cfg.total_bytes, cfg.seed)

    run_schedule(ctx, schedule)                     # untimed, to completion, in a GPU turn (checks read the output)
    first_reference(ctx.with_buffers(1), naive, fmas, record, reference)   # naive against the closed form, once
    record.passes.extend(time_components(one, total_bytes, timed, components))  # each stage alone, at one window
    record.passes.append(time_keyed(lambda: pipelined(view), key, 2 * total_bytes, timed))
    record.trace.extend(trace_pass(view, pipelined, key))   # one extra run with events, for the timeline

`timed` is time_pass's shared keywords: dict(domain=DOMAIN, repeats=cfg.repeats, warmup=cfg.warmup).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from labcore.device import device_facts
from labcore.gpulock import gpu_turn, warn_if_shared
from labcore.kit.keys import PassKey
from labcore.nvrtc import require_nvrtc
from labcore.pipeline.context import HostArrays
from labcore.pipeline.verify import check_closed_form
from labcore.record import PassTimes, Record
from labcore.timing import OpTracer, time_pass

Schedule = Callable[[Any], None]


def live_record(lesson: str, config: dict[str, Any]) -> Record:
    """A live run's empty record, after the line that says which NVRTC compiles the kernels and a warning when
    another process shares the GPU."""
    record = Record(lesson=lesson, mode="live", source="live", device=device_facts(), config=config)
    print(f"{lesson}: kernels compile with {require_nvrtc()}", file=sys.stderr, flush=True)
    warn_if_shared()
    return record


def seeded_host(total_bytes: int, seed: int) -> tuple[HostArrays, np.ndarray]:
    """Pinned host input (random from `seed`) and output, and a host array for the reference output."""
    host = HostArrays(total_bytes)
    host.fill_random(seed)
    return host, np.empty_like(host.h_out)


def run_schedule(ctx: Any, schedule: Schedule, then: Callable[[], Any] | None = None) -> Any:
    """Run one schedule to completion, untimed (in a turn all the same: it would disturb a neighbour's timing);
    `then`'s value, called inside the same turn, is returned."""
    with gpu_turn():
        schedule(ctx)
        ctx.synchronize()
        return then() if then else None


def trace_pass(ctx: Any, schedule: Schedule, key: object) -> list:
    """One extra run with events around every operation, for the timeline."""
    ctx.tracer = OpTracer()
    try:
        with gpu_turn():
            ctx.tracer.begin()
            schedule(ctx)
            return ctx.tracer.ops(str(key))
    finally:
        ctx.tracer = None


def first_reference(one: Any, naive: Schedule, fmas: int, record: Record, reference: np.ndarray) -> Iterator[str]:
    """Naive on one buffer pair against the float64 closed form; its output becomes the reference every later
    output must match. Runs only for the first window (while the record has no check yet)."""
    if record.checks:
        return
    host = one.host
    host.poison()
    run_schedule(one, naive)
    record.checks.append(check_closed_form(host.h_in, host.h_out, fmas, one.chunk_elems))
    np.copyto(reference, host.h_out)
    yield "closed form"


def time_keyed(
    fn: Callable[[], Any], key: PassKey, bytes_moved: int | None, timed: Mapping[str, Any], **extra: Any
) -> PassTimes:
    """time_pass of a pass at a window and depth: its name and params from the key (and `params` added if given)."""
    params = {"window_bytes": key.window_bytes, "buffers": key.buffers, **extra.pop("params", {})}
    return time_pass(fn, key=key, name=key.name, params=params, bytes_moved=bytes_moved, **timed, **extra)


def time_components(
    one: Any, total_bytes: int, timed: Mapping[str, Any], components: Mapping[str, Schedule]
) -> Iterator[PassTimes]:
    """Each stage alone ('h2d', 'kernel', 'd2h') on one buffer pair at one window, in order: the copies move the
    total once, the kernel moves nothing."""
    window = one.window_bytes
    for name, schedule in components.items():
        moved = None if name == "kernel" else total_bytes
        yield time_keyed(lambda s=schedule: s(one), PassKey(name, window, 1), moved, timed)
