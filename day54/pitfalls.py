"""The lesson's pitfalls, measured rather than told: each is the pipelined pass with one mistake."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from day54 import DOMAIN, schedules
from day54.config import PassKey
from day54.context import CupyContext, HostArrays
from day54.verify import check_bit_exact
from labcore.record import Record
from labcore.timing import time_pass

PAGEABLE = "pageable"
DEPTH = 2


def pitfall_key(name: str, window_bytes: int) -> PassKey:
    """'pitfall sync-in-loop w=64MiB b=2'."""
    return PassKey(f"pitfall {name}", window_bytes, DEPTH)


def _verdict(name: str, key: PassKey, out: np.ndarray, reference: np.ndarray, chunk_elems: int) -> dict[str, Any]:
    check = check_bit_exact(name, out, reference, chunk_elems)
    return {
        "name": name,
        "key": str(key),
        "ok": check.ok,
        "detail": check.detail,
        "first_bad_chunk": check.first_bad_chunk,
    }


def measure(cfg: Any, ctx: Any, reference: np.ndarray, record: Record) -> Iterator[str]:
    """Time each pitfall and check its output against naive; results go to record.extra['pitfalls']."""
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
        key = pitfall_key(name, ctx.window_bytes)
        view.host.poison()
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
        yield f"pitfall {name}"
    record.extra["pitfalls"] = found
    record.extra["enqueue_ms"] = enqueue_times(ctx.with_buffers(DEPTH), cfg.repeats)
    yield "pitfall enqueue"


def enqueue_times(ctx: Any, repeats: int) -> list[float]:
    """Host clock around the pipelined loop alone: what you get if you forget to synchronize."""
    times = []
    for _ in range(repeats):
        ctx.synchronize()
        t0 = time.perf_counter()
        schedules.pipelined(ctx)
        times.append((time.perf_counter() - t0) * 1e3)
        ctx.synchronize()
    return times
