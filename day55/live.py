"""The day-55 lab, live: correctness first, then the timed passes and the allocation calls' costs, into one results
record."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from day55 import DOMAIN, LESSON, pool, schedules
from day55.config import COMPONENTS, UINT64_MAX, Config, MiB, PassKey
from labcore import answers
from labcore.device import cupy_or_none
from labcore.gpulock import gpu_turn
from labcore.kit.measure import first_reference, live_record, seeded_host, time_components, time_keyed, trace_pass
from labcore.kit.measure import run_schedule as kit_run_schedule
from labcore.kit.memory import require_memory
from labcore.pipeline.context import CupyContext, HostArrays
from labcore.pipeline.recording import RecordingContext
from labcore.pipeline.verify import check_bit_exact
from labcore.progress import progress
from labcore.record import Check, Record
from labcore.sizes import format_size

PROBE = "alloc_probe"  # record.extra: window -> the allocation calls' costs (model.CallCosts's fields)
RESERVED = "pool_reserved"  # record.extra: pass key -> bytes the default pool held after the pass's last sync
CUPY_HELD = "cupy_pool_held"  # record.extra: pass key -> bytes CuPy's pool held after the pass, beyond before it
THRESHOLDS = "thresholds"  # record.extra: pass key -> the release threshold the pass ran at
RACE = "free_on_other_stream"  # record.extra: the recording fake's problems with the free on the other stream


def check_memory(cfg: Config) -> None:
    """Refuse, before allocating, a run that cannot fit in host or device memory."""
    # pinned input and output, the reference; on the device the buffers allocated once for the components, the
    # schedules' own and CuPy's pool of them, the closed-form check
    require_memory(
        3 * cfg.total_bytes,
        2 * (max(cfg.buffers, 2) + 2 * cfg.buffers) * max(cfg.all_windows) + 2 * cfg.total_bytes + 64 * MiB,
        host_what=f"--total {format_size(cfg.total_bytes)} needs {{need}} GiB of host memory",
        device_what=f"windows up to {format_size(max(cfg.all_windows))} with {cfg.buffers} buffer pairs need "
        "{need} GiB of device memory",
    )


def allocator(name: str) -> str:
    """Which allocator serves a variant's calls: CuPy's pool for the cupy ones, else the runtime's."""
    return "cupy" if name.startswith("cupy") else "cuda"


def threshold_for(name: str) -> int:
    """The default pool's release threshold a variant runs at: raised for the -keep ones, else 0 (the default)."""
    return UINT64_MAX if name.endswith("-keep") else 0


def run_schedule(ctx: CupyContext, schedule: Any) -> list[int]:
    """Run one schedule to completion on a context that starts without buffers, untimed; the pairs it left
    allocated (freed here)."""
    return kit_run_schedule(ctx, schedule, then=ctx.release_all)


def _median_ms(calls: Callable[[], float], count: int) -> float:
    return statistics.median(calls() for _ in range(count))


def probe_calls(window: int, count: int) -> dict[str, float]:
    """What one pair's allocation calls cost the host (ms, medians of `count`): cudaMalloc and cudaFree of two
    windows with the device idle, and two cudaMallocAsync calls the pool serves warm or must grow for."""
    cp = cupy_or_none()
    runtime, stream = cp.cuda.runtime, cp.cuda.Stream(non_blocking=False)

    def clocked(fn: Callable[[], Any]) -> tuple[float, Any]:
        t0 = time.perf_counter()
        value = fn()
        return (time.perf_counter() - t0) * 1e3, value

    def blocking() -> tuple[float, float]:
        took, ptrs = clocked(lambda: [runtime.malloc(window) for _ in range(2)])
        cp.cuda.Device().synchronize()
        freed, _ = clocked(lambda: [runtime.free(p) for p in ptrs])
        return took, freed

    def stream_ordered() -> float:
        took, ptrs = clocked(lambda: [runtime.mallocAsync(window, stream.ptr) for _ in range(2)])
        for p in ptrs:
            runtime.freeAsync(p, stream.ptr)
        stream.synchronize()  # at threshold 0 this empties the pool again
        return took

    with gpu_turn():
        pairs = [blocking() for _ in range(count)]
        with pool.release_threshold(UINT64_MAX):
            stream_ordered()  # the pool now holds two windows
            warm = _median_ms(stream_ordered, count)
        with pool.release_threshold(0):
            grow = _median_ms(stream_ordered, count)
    return {
        "malloc_ms": statistics.median(p[0] for p in pairs),
        "free_ms": statistics.median(p[1] for p in pairs),
        "async_ms": warm,
        "grow_ms": grow,
    }


def _steps(cfg: Config) -> int:
    return len(cfg.all_windows) * (2 * len(cfg.variants) + len(COMPONENTS) + 2) + 1


def race_shown(n_chunks: int = 16, buffers: int = 2) -> list[str]:
    """What the recording fake says of the free on the other stream (the lesson's pitfall), kept in the record so
    that every edition of the notebook can show it."""
    fake = RecordingContext(n_chunks, buffers, allocated=False)
    schedules.pitfall_free_on_other_stream(fake)
    return [f"chunk {p.chunk}: {p.message}" for p in fake.problems()]


def run_live(cfg: Config, student: Any = None) -> Record:
    """Measure everything the lesson discusses on the live GPU; correctness before timing.

    `student`, a schedule, is checked bit for bit and timed as pass 'student' (threshold 0) at every window."""
    cfg.validate()
    check_memory(cfg)
    cp = cupy_or_none()
    record = live_record(LESSON, cfg.as_dict())
    record.extra.update({PROBE: {}, RESERVED: {}, CUPY_HELD: {}, THRESHOLDS: {}})
    if not answers.withheld(schedules.pitfall_free_on_other_stream):  # a variant of exercise 2's answer
        record.extra[RACE] = race_shown()
    with progress(_steps(cfg), LESSON) as bar:
        host, reference = seeded_host(cfg.total_bytes, cfg.seed)
        for window in cfg.all_windows:
            for step in _measure_window(cfg, host, window, record, reference, student):
                bar.update(step)
            cp.get_default_memory_pool().free_all_blocks()
    return record


def _contexts(cfg: Config, host: HostArrays, window: int) -> dict[str, CupyContext]:
    """Buffers allocated once (the components), and two contexts that start without buffers: the runtime's calls
    and CuPy's pool."""
    b = cfg.buffers
    return {
        "allocated": CupyContext(host, window, max(b, 2), cfg.fmas),
        "cuda": CupyContext(host, window, b, cfg.fmas, allocated=False),
        "cupy": CupyContext(host, window, b, cfg.fmas, allocated=False, allocator="cupy"),
    }


def _checked(
    name: str, ctx: CupyContext, schedule: Any, key: PassKey, reference: np.ndarray, threshold: int
) -> list[Check]:
    host = ctx.host
    host.poison()
    with pool.release_threshold(threshold):
        left = run_schedule(ctx, schedule)
    checks = [check_bit_exact(f"{key} vs naive", host.h_out, reference, ctx.chunk_elems)]
    if left:
        checks.append(Check(f"{key} frees what it allocates", False, f"pairs {left} were left allocated"))
    return checks


def _measure_window(
    cfg: Config, host: HostArrays, window: int, record: Record, reference: np.ndarray, student: Any = None
) -> Iterator[str]:
    """Correctness, then timings, for one window. Yields a label after each step."""
    cp = cupy_or_none()
    ctx = _contexts(cfg, host, window)
    yield from first_reference(ctx["cuda"].with_buffers(1), schedules.naive, cfg.fmas, record, reference)
    b = cfg.buffers
    runs = [(name, schedules.for_variant(name)) for name in cfg.variants] + ([("student", student)] if student else [])
    for name, schedule in runs:
        context = ctx[allocator(name)]
        record.checks.extend(
            _checked(name, context, schedule, PassKey(name, window, b), reference, threshold_for(name))
        )
        yield f"check {name} {format_size(window)}"
    if not all(c.ok for c in record.checks):
        return
    timed = dict(domain=DOMAIN, repeats=cfg.repeats, warmup=cfg.warmup)
    for times in time_components(ctx["allocated"].with_buffers(1), cfg.total_bytes, timed, schedules.COMPONENTS):
        record.passes.append(times)
        yield f"{times.name} {format_size(window)}"
    naive_ctx = ctx["cuda"].with_buffers(1)
    naive = PassKey("naive", window, 1)
    record.passes.append(time_keyed(lambda: schedules.naive(naive_ctx), naive, 2 * cfg.total_bytes, timed))
    yield f"naive {format_size(window)}"
    cupy_pool = cp.get_default_memory_pool()
    for name, schedule in runs:
        context, key, threshold = ctx[allocator(name)], PassKey(name, window, b), threshold_for(name)
        cupy_pool.free_all_blocks()
        baseline = cupy_pool.total_bytes()  # the buffers allocated once for the components, held throughout
        with pool.release_threshold(threshold):
            record.passes.append(
                time_keyed(
                    lambda s=schedule, c=context: s(c),
                    key,
                    2 * cfg.total_bytes,
                    timed,
                    params={"threshold": threshold},
                    before=cupy_pool.free_all_blocks if name == "cupy-cold" else None,
                )
            )
            record.extra[RESERVED][str(key)] = pool.reserved_bytes()
            record.extra[CUPY_HELD][str(key)] = cupy_pool.total_bytes() - baseline
            record.extra[THRESHOLDS][str(key)] = threshold
            if window == cfg.window_bytes:
                record.trace.extend(trace_pass(context, schedule, key))
        cupy_pool.free_all_blocks()
        yield f"{name} {format_size(window)}"
    record.extra[PROBE][format_size(window)] = probe_calls(window, cfg.probes)
    yield f"calls {format_size(window)}"
