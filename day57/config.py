"""What one run measures, and the typed key of each timed pass."""

from __future__ import annotations

import dataclasses
import secrets
from typing import Any

from labcore.errors import UsageError
from labcore.kit.cli import validate_counts, validate_windows
from labcore.kit.keys import ChunkKey
from labcore.pipeline.kernel import DEFAULT_FMAS

# the pinned pipeline (day 54), the link probe, then the managed passes: first touch by page faults, the pipeline
# with prefetches in place of its copies, and the same with advice (input read-mostly, output preferring the host)
PASSES = ("pipeline", "duplex", "faults", "prefetch", "advised")
MANAGED = PASSES[2:]


class PassKey(ChunkKey):
    """'prefetch n=16': the NVTX range of a timed pass and its key in the results record."""

    NAMES = PASSES


@dataclasses.dataclass
class Config:
    """The job (day 54's: 1 GiB of float32, 512 FMAs an element) cut into windows on `buffers` streams."""

    total_bytes: int = 1 << 30
    window_bytes: int = 64 << 20
    buffers: int = 3
    fmas: int = DEFAULT_FMAS
    repeats: int = 5
    warmup: int = 1
    seed: int = dataclasses.field(default_factory=lambda: secrets.randbelow(2**31))

    @property
    def n_chunks(self) -> int:
        return self.total_bytes // self.window_bytes

    def key(self, name: str) -> PassKey:
        return PassKey(name, self.n_chunks)

    def validate(self) -> None:
        """UsageError for a configuration no run can honour."""
        validate_windows(self.total_bytes, [self.window_bytes])
        if self.buffers < 2:
            raise UsageError(f"--buffers {self.buffers}: at least 2 streams (the duplex probe needs two)")
        validate_counts(self.fmas, self.repeats)

    def as_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "n_chunks": self.n_chunks}
