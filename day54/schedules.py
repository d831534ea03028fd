"""Schedules: plain functions of a context (CupyContext or RecordingContext).

These are the references that `python -m day54` measures. In the notebooks
students write their own schedule with the same signature; `pipelined` is the
exercise's answer, withheld from students' code while grading
(labcore.answers.reference).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from labcore.answers import reference
from labcore.kit.schedules import COMPONENTS as COMPONENTS
from labcore.kit.schedules import chunk
from labcore.kit.schedules import duplex as duplex
from labcore.kit.schedules import naive as naive
from labcore.pipeline.context import LEGACY

Schedule = Callable[[Any], None]


@reference
def pipelined(ctx: Any) -> None:
    """Chunk k on buffer pair (and stream) k % n_buffers; stream order protects each pair."""
    for k in range(ctx.n_chunks):
        chunk(ctx, k, k % ctx.n_buffers)


# Pitfalls, shown rather than told. Each one is the pipelined schedule with one mistake, so each is withheld
# while grading like the reference itself (with as many streams as buffers, the last one *is* the reference).


@reference
def pitfall_legacy_launch(ctx: Any) -> None:
    """One launch on the legacy default stream, mid-loop: it drains and blocks every worker stream."""
    middle = ctx.n_chunks // 2
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair, stream=LEGACY if k == middle else None)
        ctx.copy_out(k, pair)


@reference
def pitfall_sync_in_loop(ctx: Any) -> None:
    """A device-wide synchronize left in the loop: no chunk can overlap its neighbour."""
    for k in range(ctx.n_chunks):
        chunk(ctx, k, k % ctx.n_buffers)
        ctx.synchronize()


@reference
def pitfall_more_streams_than_buffers(ctx: Any) -> None:
    """Chunk k on stream k % n_streams but pair k % n_buffers: a pair's next tenant can race its last."""
    for k in range(ctx.n_chunks):
        pair, stream = k % ctx.n_buffers, k % ctx.n_streams
        ctx.copy_in(k, pair, stream=stream)
        ctx.launch(k, pair, stream=stream)
        ctx.copy_out(k, pair, stream=stream)


PITFALLS: dict[str, Schedule] = {
    "legacy-launch": pitfall_legacy_launch,
    "sync-in-loop": pitfall_sync_in_loop,
    "more-streams-than-buffers": pitfall_more_streams_than_buffers,
}
