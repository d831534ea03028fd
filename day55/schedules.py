"""Schedules: plain functions of a context whose buffer pairs start unallocated (labcore.pipeline: a CupyContext or
RecordingContext made with allocated=False).

Each is day 54's pipeline (chunk k on pair k % n_buffers, on that pair's stream) with the pair's two device
buffers allocated one way or another. `stream_ordered` is exercise 2's answer, withheld from students' code while
grading (labcore.answers.reference); so is every schedule built on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from labcore.answers import reference
from labcore.kit.schedules import COMPONENTS as COMPONENTS
from labcore.kit.schedules import chunk

Schedule = Callable[[Any], None]


def naive(ctx: Any) -> None:
    """One stream, one buffer pair, allocated once: the reference every output is compared with."""
    ctx.malloc(0, 0)
    for k in range(ctx.n_chunks):
        chunk(ctx, k, 0)
    ctx.free(ctx.n_chunks - 1, 0)


def once(ctx: Any) -> None:
    """Day 54's pipeline: every pair allocated before the loop and freed after it."""
    used = min(ctx.n_buffers, ctx.n_chunks)
    for pair in range(used):
        ctx.malloc(pair, pair)
    for k in range(ctx.n_chunks):
        chunk(ctx, k, k % ctx.n_buffers)
    for pair in range(used):
        ctx.free(ctx.n_chunks - 1, pair)


def per_chunk_malloc(ctx: Any) -> None:
    """cudaMalloc and cudaFree around every chunk: each cudaFree waits for the whole device."""
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.malloc(k, pair)
        chunk(ctx, k, pair)
        ctx.free(k, pair)


@reference
def stream_ordered(ctx: Any) -> None:
    """cudaMallocAsync and cudaFreeAsync around every chunk, on the chunk's own stream: stream order keeps the
    allocation before the copy in and the free after the copy out, and nothing waits on the host."""
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.malloc_async(k, pair)
        chunk(ctx, k, pair)
        ctx.free_async(k, pair)


@reference
def stream_ordered_waiting(ctx: Any) -> None:
    """The stream-ordered schedule with the host waiting for the device after every round of pairs (as a loop that
    reads each round's results would): with the release threshold at 0 every wait hands the pool's memory back."""
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.malloc_async(k, pair)
        chunk(ctx, k, pair)
        ctx.free_async(k, pair)
        if pair == ctx.n_buffers - 1 or k == ctx.n_chunks - 1:
            ctx.synchronize()


@reference
def pitfall_free_on_other_stream(ctx: Any) -> None:
    """The free of chunk k on the next pair's stream: nothing orders it after chunk k's copy out, so the pool may
    hand the memory to another allocation while the copy still reads it (a race the recording fake names)."""
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.malloc_async(k, pair)
        chunk(ctx, k, pair)
        ctx.free_async(k, pair, stream=(pair + 1) % ctx.n_streams)


def for_variant(name: str) -> Schedule:
    """The schedule a measured variant runs (config.VARIANTS)."""
    if name == "once":
        return once
    if name == "malloc":
        return per_chunk_malloc
    if name.startswith("async-sync"):
        return stream_ordered_waiting
    return stream_ordered  # async, async-keep, cupy, cupy-cold: what differs is the allocator and its pool
