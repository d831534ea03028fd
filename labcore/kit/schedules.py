"""The schedules every pipeline lesson measures as yardsticks, plain functions of a context (labcore.pipeline's
CupyContext or the recording fake): naive (the reference output), each stage alone, and the duplex link probe.

A lesson's schedules module imports them (`from labcore.kit.schedules import COMPONENTS, chunk, duplex, naive`) and
writes only its own with `chunk` (one chunk's copy in, kernel and copy out on a pair): the pipeline its exercise
asks for (withheld from students' code, labcore.answers.reference: a lesson package's reference bodies are replaced
in the bundle, the kit's would not be), its pitfalls, its ways of allocating.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Schedule = Callable[[Any], None]


def chunk(ctx: Any, k: int, pair: int) -> None:
    """Chunk k through buffer pair `pair` on that pair's stream: copy in, kernel, copy out."""
    ctx.copy_in(k, pair)
    ctx.launch(k, pair)
    ctx.copy_out(k, pair)


def naive(ctx: Any) -> None:
    """One stream, one buffer pair: copy in, kernel, copy out, chunk after chunk (the reference output)."""
    for k in range(ctx.n_chunks):
        chunk(ctx, k, 0)


def h2d_only(ctx: Any) -> None:
    """Component pass: every chunk's copy in, nothing else."""
    for k in range(ctx.n_chunks):
        ctx.copy_in(k, 0)


def kernel_only(ctx: Any) -> None:
    """Component pass: one kernel per chunk on resident data."""
    for k in range(ctx.n_chunks):
        ctx.launch(k, 0)


def d2h_only(ctx: Any) -> None:
    """Component pass: every chunk's copy out, nothing else."""
    for k in range(ctx.n_chunks):
        ctx.copy_out(k, 0)


COMPONENTS: dict[str, Schedule] = {"h2d": h2d_only, "kernel": kernel_only, "d2h": d2h_only}


def duplex(ctx: Any) -> None:
    """Link probe: all copies in on stream 0 while all copies out run on stream 1 (needs 2 pairs).

    Its time is the link floor: the least time in which a pipeline can move the input in and the output out
    together. Output content is meaningless here.
    """
    for k in range(ctx.n_chunks):
        ctx.copy_in(k, 0, stream=0)
        ctx.copy_out(k, 1, stream=1)
