"""The stage times of a chunked copy-in, kernel, copy-out pipeline: what its cost model and simulator read."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Stages:
    """Component pass times of one window, and how the data was cut."""

    h2d_ms: float
    kernel_ms: float
    d2h_ms: float
    n_chunks: int

    @property
    def sum_ms(self) -> float:
        """What one stream pays: every stage in turn (the naive bound)."""
        return self.h2d_ms + self.kernel_ms + self.d2h_ms

    @property
    def max_ms(self) -> float:
        """The slowest stage: the floor no amount of overlap goes below."""
        return max(self.h2d_ms, self.kernel_ms, self.d2h_ms)

    @property
    def slowest(self) -> str:
        """Name of the slowest stage."""
        times = {"h2d": self.h2d_ms, "kernel": self.kernel_ms, "d2h": self.d2h_ms}
        return max(times, key=times.__getitem__)

    def per_chunk(self) -> tuple[float, float, float]:
        """One chunk's copy-in, kernel and copy-out times."""
        n = self.n_chunks
        return self.h2d_ms / n, self.kernel_ms / n, self.d2h_ms / n

    @property
    def edges_ms(self) -> float:
        """Fill and drain: one chunk's stages other than the slowest, which nothing overlaps."""
        one = self.per_chunk()
        return sum(one) - max(one)
