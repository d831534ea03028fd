"""Wrong day-54 schedules that the tests hand to the recording fake, the GPU and the grader's checks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def off_by_one(ctx: Any) -> None:
    """The pipelined buffer rotation, but chunk k+1's input is copied in for chunk k: chunk k's output holds chunk
    k+1's input (the last chunk wraps to chunk 0's)."""
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in((k + 1) % ctx.n_chunks, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)


def skipping(chunk: int) -> Callable[[Any], None]:
    """Naive on buffer pair 0, except that `chunk` is never copied in, run or copied out."""

    def schedule(ctx: Any) -> None:
        for k in range(ctx.n_chunks):
            if k != chunk:
                ctx.copy_in(k, 0)
                ctx.launch(k, 0)
                ctx.copy_out(k, 0)

    return schedule
