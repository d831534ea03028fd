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


def rotating(n_chunks_of: Callable[[Any], int]) -> Callable[[Any], None]:
    """The pipelined rotation written out (not the package's), over the first n_chunks_of(ctx) chunks only."""

    def schedule(ctx: Any) -> None:
        for k in range(n_chunks_of(ctx)):
            pair = k % ctx.n_buffers
            ctx.copy_in(k, pair)
            ctx.launch(k, pair)
            ctx.copy_out(k, pair)

    return schedule


def one_stream(ctx: Any) -> None:
    """The pipelined rotation with every operation on stream 0: correct, and as slow as naive."""
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair, stream=0)
        ctx.launch(k, pair, stream=0)
        ctx.copy_out(k, pair, stream=0)


def waits_every(n: int) -> Callable[[Any], None]:
    """The pipelined rotation, with the host waiting on a stream after every n-th chunk: correct, slower."""

    def schedule(ctx: Any) -> None:
        for k in range(ctx.n_chunks):
            pair = k % ctx.n_buffers
            ctx.copy_in(k, pair)
            ctx.launch(k, pair)
            ctx.copy_out(k, pair)
            if k % n == n - 1:
                ctx.stream_synchronize(pair)

    return schedule


def lazy_after(calls: int) -> Callable[[Any], None]:
    """Right for its first `calls` calls, then it skips the last chunk."""
    made: list[int] = []
    return rotating(lambda ctx: ctx.n_chunks if made.append(1) or len(made) <= calls else ctx.n_chunks - 1)
