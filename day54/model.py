"""The cost model of a chunked copy-in, kernel, copy-out pipeline.

All inputs are whole-pass times (every chunk through one stage) measured in the
same run; per-chunk stage times are those divided by the chunk count.
"""

from __future__ import annotations

import dataclasses
import math

from labcore.answers import reference
from labcore.pipeline.stages import Stages


@dataclasses.dataclass(frozen=True)
class Prediction:
    """The model's three lower bounds for a pipelined pass and which one binds."""

    fill_drain_ms: float
    chain_ms: float
    link_floor_ms: float | None
    bound_ms: float
    binding: str

    def explain(self) -> str:
        """One line: the three bounds and the one that sets the prediction."""
        link = "n/a" if self.link_floor_ms is None else f"{self.link_floor_ms:.2f}"
        return (
            f"fill+drain {self.fill_drain_ms:.2f}, per-stream chain {self.chain_ms:.2f}, "
            f"link floor {link} ms: {self.binding} binds at {self.bound_ms:.2f} ms"
        )


@reference
def fill_drain_ms(stages: Stages) -> float:
    """Unlimited buffers, no contention: one chunk's whole trip plus N-1 steps of the slowest stage."""
    return stages.max_ms + stages.edges_ms


@reference
def chain_ms(stages: Stages, n_buffers: int) -> float:
    """The longest stream: it starts after the copies in ahead of it, then runs its chunks' trips in order.

    Stream j gets chunks j, j+B, ... and cannot start its first copy in before
    the j copies in ahead of it went through the one H2D engine. Each of its
    chunks is a serial copy in, kernel, copy out. This is why two buffers miss
    the max floor when the copies dominate: only B such chains run side by side.
    """
    h_c = stages.per_chunk()[0]
    trip = sum(stages.per_chunk())
    return max(
        j * h_c + math.ceil((stages.n_chunks - j) / n_buffers) * trip for j in range(min(n_buffers, stages.n_chunks))
    )


@reference
def predict(stages: Stages, n_buffers: int, link_floor_ms: float | None = None) -> Prediction:
    """The pipelined time the model expects: the largest of its lower bounds.

    link_floor_ms is the measured time to move the whole input in while the
    whole output moves out (the duplex probe): a pipeline moves the same bytes
    over the same link, so it cannot beat that.
    """
    terms = {"fill+drain": fill_drain_ms(stages), "per-stream chain": chain_ms(stages, n_buffers)}
    if link_floor_ms is not None:
        terms["link floor"] = link_floor_ms
    binding = max(terms, key=terms.__getitem__)
    return Prediction(terms["fill+drain"], terms["per-stream chain"], terms.get("link floor"), terms[binding], binding)
