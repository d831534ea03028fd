"""The arithmetic of a graph's one-off cost: when it pays for itself.

A graph costs once what a stream-by-stream pass does not: the capture (the schedule's calls, recorded) and the
instantiate (the driver turning the recorded graph into an executable one). Each launch then saves the difference
between enqueueing every operation from the host and one launch call. The break-even is the number of launches
after which the savings have paid the one-off cost.
"""

from __future__ import annotations

import math

from labcore.answers import reference


@reference
def break_even_launches(one_off_ms: float, enqueue_ms: float, launch_ms: float) -> float:
    """The fewest launches whose host savings (enqueue_ms - launch_ms each) cover one_off_ms; inf when a launch
    saves nothing."""
    saving = enqueue_ms - launch_ms
    if saving <= 0:
        return math.inf
    return float(math.ceil(one_off_ms / saving))


def per_chunk_us(ms: float, n_chunks: int) -> float:
    """A host time per chunk of the pass, in microseconds."""
    return ms * 1e3 / n_chunks
