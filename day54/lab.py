"""The day-54 lab, live: correctness first, then the timed passes, into one results record."""

from __future__ import annotations

import dataclasses
import secrets
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
from tqdm import tqdm

from day54 import pitfalls, schedules
from day54.kernel import DEFAULT_FMAS, closed_form, tolerance
from labcore.device import available_host_bytes, cupy_or_none, device_facts, free_device_bytes
from labcore.errors import UsageError
from labcore.record import Check, Record
from labcore.sizes import format_size
from labcore.timing import OpTracer, time_pass

LESSON = "day54"
MiB = 1 << 20


@dataclasses.dataclass
class Config:
    """What one run measures."""

    total_bytes: int = 1 << 30
    window_bytes: int = 64 * MiB
    windows: list[int] = dataclasses.field(default_factory=lambda: [4 * MiB, 64 * MiB, 256 * MiB])
    buffers: list[int] = dataclasses.field(default_factory=lambda: [2, 3])
    fmas: int = DEFAULT_FMAS
    repeats: int = 5
    warmup: int = 1
    seed: int = dataclasses.field(default_factory=lambda: secrets.randbelow(2**31))
    pitfalls: bool = True

    @property
    def all_windows(self) -> list[int]:
        """The sweep's windows and the main one, smallest first."""
        return sorted(set(self.windows) | {self.window_bytes})

    def validate(self) -> None:
        """UsageError for a configuration no run can honour."""
        for window in self.all_windows:
            if window <= 0 or window % 4:
                raise UsageError(f"--window {format_size(window)} must be a positive multiple of 4 bytes (float32)")
            if window > self.total_bytes:
                raise UsageError(f"--window {format_size(window)} exceeds --total {format_size(self.total_bytes)}")
            if self.total_bytes % window:
                raise UsageError(f"--window {format_size(window)} does not divide --total "
                                 f"{format_size(self.total_bytes)}; pick a window that divides it, e.g. 64MiB")
        if any(b < 1 for b in self.buffers) or not self.buffers:
            raise UsageError(f"--buffers {','.join(map(str, self.buffers))}: each depth must be at least 1")
        if self.fmas < 0:
            raise UsageError(f"--fmas {self.fmas} must be 0 or more")
        if self.repeats < 1:
            raise UsageError(f"--repeats {self.repeats} must be at least 1")

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def pass_key(name: str, window_bytes: int, buffers: int) -> str:
    """The pass's name in the record and its NVTX range, e.g. 'pipelined w=64MiB b=2'."""
    return f"{name} w={format_size(window_bytes)} b={buffers}"


def check_memory(cfg: Config) -> None:
    """Refuse, before allocating, a run that cannot fit in host or device memory."""
    # pinned input and output, the naive reference, and pageable input and output for that pitfall
    host_need = (5 if cfg.pitfalls else 3) * cfg.total_bytes
    host_free = available_host_bytes()
    if host_free is not None and host_need > host_free:
        raise UsageError(f"--total {format_size(cfg.total_bytes)} needs {host_need / 2**30:.1f} GiB of host memory "
                         f"(input, output, reference, pitfalls); {host_free / 2**30:.1f} GiB is available")
    device_need = 2 * max([*cfg.buffers, 2]) * max(cfg.all_windows) + 64 * MiB
    device_free = free_device_bytes()
    if device_need > device_free:
        raise UsageError(f"windows up to {format_size(max(cfg.all_windows))} with {max(cfg.buffers)} buffer pairs "
                         f"need {device_need / 2**30:.2f} GiB of device memory; {device_free / 2**30:.2f} GiB is free")


def bad_chunks(out: np.ndarray, reference: np.ndarray, chunk_elems: int) -> np.ndarray:
    """Indices of chunks where `out` differs from `reference` in any bit (NaN poison included)."""
    differ = out.view(np.uint32).reshape(-1, chunk_elems) != reference.view(np.uint32).reshape(-1, chunk_elems)
    return np.flatnonzero(differ.any(axis=1))


def check_closed_form(h_in: np.ndarray, h_out: np.ndarray, fmas: int, chunk_elems: int) -> Check:
    """Naive output against the float64 closed form, chunk by chunk."""
    tol = tolerance(fmas)
    worst = 0.0
    for k in range(h_in.size // chunk_elems):
        part = slice(k * chunk_elems, (k + 1) * chunk_elems)
        error = np.abs(h_out[part].astype(np.float64) - closed_form(h_in[part], fmas))
        err = float(np.max(error)) if np.all(np.isfinite(error)) else float("inf")
        if err > tol:
            return Check("naive vs float64 closed form", False,
                         f"chunk {k}: max error {err:.3g} > tolerance {tol:.3g}", first_bad_chunk=k)
        worst = max(worst, err)
    return Check("naive vs float64 closed form", True, f"max error {worst:.3g} <= tolerance {tol:.3g}")


def check_bit_exact(name: str, out: np.ndarray, reference: np.ndarray, chunk_elems: int) -> Check:
    """A schedule's output against naive's, bit for bit."""
    bad = bad_chunks(out, reference, chunk_elems)
    if bad.size:
        return Check(name, False, f"{bad.size} of {out.size // chunk_elems} chunks differ from naive; "
                     f"first bad chunk {int(bad[0])}", first_bad_chunk=int(bad[0]))
    return Check(name, True, f"all {out.size // chunk_elems} chunks bit-identical to naive")


def run_schedule(ctx: Any, schedule: Any) -> None:
    """Run one schedule to completion, untimed."""
    schedule(ctx)
    ctx.synchronize()


def trace_pass(ctx: Any, schedule: Any, key: str) -> list:
    """One extra run with events around every operation, for the timeline."""
    ctx.tracer = OpTracer()
    try:
        ctx.tracer.begin()
        schedule(ctx)
        return ctx.tracer.ops(key)
    finally:
        ctx.tracer = None


def _steps(cfg: Config) -> int:
    per_window = 3 + 1 + len(cfg.buffers) * 2
    return len(cfg.all_windows) * per_window + 3 + len(cfg.buffers) + (5 if cfg.pitfalls else 0)


def run_live(cfg: Config, student: Any = None) -> Record:
    """Measure everything the lesson discusses on the live GPU; correctness before timing.

    `student`, a schedule, is checked bit for bit and timed as pass 'student' at every window and depth.
    """
    from day54.context import CupyContext, HostArrays

    cfg.validate()
    check_memory(cfg)
    cp = cupy_or_none()
    record = Record(lesson=LESSON, mode="live", source="live", device=device_facts(), config=cfg.as_dict())
    with tqdm(total=_steps(cfg), desc="day54", unit="step", file=sys.stderr, leave=False) as bar:
        host = HostArrays(cfg.total_bytes)
        host.fill_random(cfg.seed)
        reference = np.empty_like(host.h_out)
        for window in cfg.all_windows:
            ctx = CupyContext(host, window, max([*cfg.buffers, 2]), cfg.fmas)
            for step in _measure_window(cfg, ctx, window, record, reference, student):
                bar.set_postfix_str(step)
                bar.update()
            del ctx
            cp.get_default_memory_pool().free_all_blocks()
    return record


def _measure_window(cfg: Config, ctx: Any, window: int, record: Record, reference: np.ndarray,
                    student: Any = None) -> Iterator[str]:
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
            name = f"{label} w={format_size(window)} b={b} vs naive"
            record.checks.append(check_bit_exact(name, host.h_out, reference, chunk))
        yield f"check {format_size(window)} b={b}"
    if not all(c.ok for c in record.checks):
        return
    timed = dict(domain=LESSON, repeats=cfg.repeats, warmup=cfg.warmup)
    one = ctx.with_buffers(1)
    for name, schedule in schedules.COMPONENTS.items():
        moved = None if name == "kernel" else cfg.total_bytes
        record.passes.append(time_pass(lambda s=schedule: s(one), key=pass_key(name, window, 1), name=name,
                                       params={"window_bytes": window, "buffers": 1}, bytes_moved=moved, **timed))
        yield f"{name} {format_size(window)}"
    runs = [("naive", schedules.naive, 1)] + [("pipelined", schedules.pipelined, b) for b in cfg.buffers]
    runs += [("student", student, b) for b in cfg.buffers] if student else []
    for name, schedule, b in runs:
        view = ctx.with_buffers(b)
        key = pass_key(name, window, b)
        record.passes.append(time_pass(lambda s=schedule, v=view: s(v), key=key, name=name,
                                       params={"window_bytes": window, "buffers": b},
                                       bytes_moved=2 * cfg.total_bytes, **timed))
        if window == cfg.window_bytes:
            record.trace.extend(trace_pass(view, schedule, key))
        yield f"{name} {format_size(window)} b={b}"
    if window == cfg.window_bytes:
        two = ctx.with_buffers(2)
        record.passes.append(time_pass(lambda: schedules.duplex(two), key=pass_key("duplex", window, 2),
                                       name="duplex", params={"window_bytes": window, "buffers": 2},
                                       bytes_moved=2 * cfg.total_bytes, **timed))
        yield "duplex link"
        if cfg.pitfalls:
            yield from pitfalls.measure(cfg, ctx, reference, record, f"w={format_size(window)} b=2")
