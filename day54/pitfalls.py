"""The lesson's pitfalls, measured rather than told: each is the pipelined pass with one mistake."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from day54 import DOMAIN, schedules
from day54.config import PassKey
from labcore import answers
from labcore.gpulock import gpu_turn
from labcore.pipeline.context import CupyContext, HostArrays
from labcore.pipeline.verify import check_bit_exact
from labcore.record import Record
from labcore.timing import time_pass

PAGEABLE = "pageable"
ENQUEUE = "timing-the-enqueue"  # no pass of its own: the host clock read around the correct pipeline's loop
GPU_VISIBLE = ("legacy-launch", "sync-in-loop", "more-streams-than-buffers", PAGEABLE)
NAMES = (*GPU_VISIBLE, ENQUEUE)  # the lesson's order
LETTERS = "ABCDE"
DEPTH = 2


def pass_key(name: str, window_bytes: int) -> PassKey:
    """'pitfall sync-in-loop w=64MiB b=2'."""
    return PassKey(f"pitfall {name}", window_bytes, DEPTH)


@answers.reference(recordable=False)
def pitfall_key() -> dict[str, str]:
    """The answer to "name the pitfall": which pitfall each unlabelled timeline A-E shows (a fixed shuffle)."""
    return {
        "A": "sync-in-loop",
        "B": ENQUEUE,
        "C": PAGEABLE,
        "D": "more-streams-than-buffers",
        "E": "legacy-launch",
    }


def normalized(name: str) -> str:
    """A pitfall's name as the lesson spells it, whatever the case and separators: 'Sync_in loop' -> 'sync-in-loop'."""
    return re.sub(r"[\s_-]+", "-", name.strip().lower()).strip("-")


def _verdict(name: str, key: PassKey, out: np.ndarray, reference: np.ndarray, chunk_elems: int) -> dict[str, Any]:
    check = check_bit_exact(name, out, reference, chunk_elems)
    return {
        "name": name,
        "key": str(key),
        "ok": check.ok,
        "detail": check.detail,
        "first_bad_chunk": check.first_bad_chunk,
    }


def measure(
    cfg: Any, ctx: Any, reference: np.ndarray, record: Record, trace_pass: Callable[[Any, Any, PassKey], list]
) -> Iterator[str]:
    """Time each pitfall, trace one more run of it for its timeline, and check its output against naive.

    Verdicts go to record.extra['pitfalls'], the traces to record.trace (`trace_pass` is the live run's).
    """
    found: list[dict[str, Any]] = []
    timed = dict(domain=DOMAIN, repeats=cfg.repeats, warmup=cfg.warmup, bytes_moved=2 * cfg.total_bytes)
    cases: list[tuple[str, Any, Any]] = [
        ("legacy-launch", schedules.pitfall_legacy_launch, ctx.with_buffers(DEPTH)),
        ("sync-in-loop", schedules.pitfall_sync_in_loop, ctx.with_buffers(DEPTH)),
        (
            "more-streams-than-buffers",
            schedules.pitfall_more_streams_than_buffers,
            ctx.with_buffers(DEPTH, n_streams=DEPTH + 1),
        ),
    ]
    pageable = HostArrays(cfg.total_bytes, pinned=False)
    np.copyto(pageable.h_in, ctx.host.h_in)
    cases.append((PAGEABLE, schedules.pipelined, CupyContext(pageable, ctx.window_bytes, DEPTH, cfg.fmas)))
    for name, schedule, view in cases:
        key = pass_key(name, ctx.window_bytes)
        view.host.poison()
        with gpu_turn():
            schedule(view)
            view.synchronize()
        found.append(_verdict(name, key, view.host.h_out, reference, view.chunk_elems))
        record.passes.append(
            time_pass(
                lambda s=schedule, v=view: s(v),
                key=key,
                name=f"pitfall {name}",
                params={"window_bytes": ctx.window_bytes, "buffers": DEPTH},
                **timed,
            )
        )
        record.trace.extend(trace_pass(view, schedule, key))
        yield f"pitfall {name}"
    record.extra["pitfalls"] = found
    record.extra["enqueue_ms"] = enqueue_times(ctx.with_buffers(DEPTH), cfg.repeats)
    yield "pitfall enqueue"


def enqueue_times(ctx: Any, repeats: int) -> list[float]:
    """Host clock around the pipelined loop alone: what you get if you forget to synchronize."""
    times = []
    with gpu_turn():
        for _ in range(repeats):
            ctx.synchronize()
            t0 = time.perf_counter()
            schedules.pipelined(ctx)
            times.append((time.perf_counter() - t0) * 1e3)
            ctx.synchronize()
    return times
