"""The cost model of allocation inside a chunked pipeline: what each way of allocating should cost, from the stage
times and the allocation calls' own costs measured in the same run.

Per-chunk stage times are whole-pass times divided by the chunk count (labcore.pipeline.stages). A call's cost is
for one pair's two buffers (the input and output windows), as `python -m day55` probes them.
"""

from __future__ import annotations

import dataclasses

from labcore.answers import reference
from labcore.pipeline.recording import RecordingContext
from labcore.pipeline.simulate import Rates, simulate
from labcore.pipeline.stages import Stages


@dataclasses.dataclass(frozen=True)
class CallCosts:
    """What one pair's allocation calls cost the host, ms: cudaMalloc, cudaFree (device idle), a cudaMallocAsync
    the pool serves from memory it holds, and one that must grow the pool."""

    malloc_ms: float
    free_ms: float
    async_ms: float
    grow_ms: float

    @classmethod
    def from_dict(cls, data: dict[str, float]) -> CallCosts:
        return cls(*(float(data[f.name]) for f in dataclasses.fields(cls)))


@reference
def per_chunk_malloc_ms(stages: Stages, malloc_ms: float, free_ms: float) -> float:
    """cudaMalloc / cudaFree per chunk: each cudaFree waits for the whole device, so no chunk overlaps another and
    every chunk pays its whole trip plus both calls, whatever the streams."""
    return stages.n_chunks * (sum(stages.per_chunk()) + malloc_ms + free_ms)


def rates(stages: Stages, calls: CallCosts, *, keeps_pool: bool, duplex_stretch: float = 1.0) -> Rates:
    """The simulator's rates for one window: the stages per chunk and the calls' costs."""
    h, k, d = stages.per_chunk()
    return Rates(
        h,
        k,
        d,
        duplex_stretch,
        malloc_ms=calls.malloc_ms,
        free_ms=calls.free_ms,
        async_ms=calls.async_ms,
        grow_ms=calls.grow_ms,
        keeps_pool=keeps_pool,
    )


def simulated_ms(schedule, stages: Stages, calls: CallCosts, buffers: int, *, keeps_pool: bool) -> float:
    """A schedule's simulated pass time (ms) on a context that starts without buffers."""
    ctx = RecordingContext(stages.n_chunks, buffers, allocated=False)
    schedule(ctx)
    ops = simulate(ctx, rates(stages, calls, keeps_pool=keeps_pool))
    return max(o.end_ns for o in ops) / 1e6 if ops else 0.0
