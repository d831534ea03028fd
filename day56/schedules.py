"""The schedules day 56 captures: plain functions of a context (labcore.pipeline's CupyContext or the recording fake).

Naive and the duplex probe are the kit's (labcore.kit.schedules). The pipeline day 56 captures is its own: it is the
answer to day 56's exercise 2 (a schedule a capture can hold), so it is withheld from students' code like day 54's
(labcore.answers.reference: a lesson package's reference bodies are replaced in the bundle, the kit's would not be),
and so are the pitfalls, which are it with one mistake: in the student edition the live run captures the student's
own schedule (day56.notebook.measure).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from labcore.answers import reference
from labcore.kit.schedules import chunk
from labcore.kit.schedules import duplex as duplex
from labcore.kit.schedules import naive as naive

Schedule = Callable[[Any], None]


@reference
def pipelined(ctx: Any) -> None:
    """Chunk k on buffer pair (and stream) k % n_buffers: stream order protects each pair; no wait anywhere, so
    the same calls run stream by stream or captured into a graph."""
    for k in range(ctx.n_chunks):
        chunk(ctx, k, k % ctx.n_buffers)


# The two pitfalls of capture, shown live (day56.live) and judged on the recording fake (day56.checks).


@reference
def pitfall_sync_in_capture(ctx: Any) -> None:
    """The pipeline with the host waiting for stream 0 halfway: fine stream by stream, fatal to a capture."""
    for k in range(ctx.n_chunks):
        chunk(ctx, k, k % ctx.n_buffers)
        if k == ctx.n_chunks // 2:
            ctx.stream_synchronize(0)


@reference
def waits_at_the_end(ctx: Any) -> None:
    """The pipeline with the habit of day 54's timing loops, a synchronize after the loop: right stream by stream,
    and a capture refuses it all the same (it is inside the captured function)."""
    pipelined(ctx)
    ctx.synchronize()
