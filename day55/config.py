"""What one run measures, and the typed key of each timed pass."""

from __future__ import annotations

import dataclasses
import secrets
from typing import Any

from labcore.errors import UsageError
from labcore.kit.cli import validate_counts, validate_windows
from labcore.kit.keys import PassKey as PassKey
from labcore.pipeline.kernel import DEFAULT_FMAS

MiB = 1 << 20
UINT64_MAX = 2**64 - 1  # the release threshold that keeps every freed byte in the pool

# The ways the lesson allocates each chunk's buffers, in the order the report shows them: pass name -> what it is.
VARIANTS = {
    "once": "allocated once (cudaMalloc before the loop, cudaFree after): day 54's pipeline",
    "malloc": "cudaMalloc / cudaFree per chunk",
    "async": "cudaMallocAsync / cudaFreeAsync per chunk on its stream, release threshold 0 (the default)",
    "async-keep": "cudaMallocAsync / cudaFreeAsync per chunk on its stream, release threshold UINT64_MAX",
    "cupy": "cupy.empty per chunk: CuPy's own memory pool, warm",
    "cupy-cold": "cupy.empty per chunk, CuPy's pool emptied before every repeat",
    "async-sync": "stream-ordered per chunk, the host waiting after every round, threshold 0",
    "async-sync-keep": "stream-ordered per chunk, the host waiting after every round, threshold UINT64_MAX",
}
COMPONENTS = ("h2d", "kernel", "d2h")  # each stage alone, on buffers allocated once (the simulator's rates)


@dataclasses.dataclass
class Config:
    """What one run measures."""

    total_bytes: int = 1 << 30
    window_bytes: int = 64 * MiB
    windows: list[int] = dataclasses.field(default_factory=lambda: [4 * MiB, 64 * MiB])
    buffers: int = 2
    fmas: int = DEFAULT_FMAS
    repeats: int = 5
    warmup: int = 1
    seed: int = dataclasses.field(default_factory=lambda: secrets.randbelow(2**31))
    probes: int = 20  # timed calls of each allocation kind, for the simulator's call costs
    variants: list[str] = dataclasses.field(default_factory=lambda: list(VARIANTS))  # the ways of allocating to time

    @property
    def all_windows(self) -> list[int]:
        """The sweep's windows and the main one, smallest first."""
        return sorted(set(self.windows) | {self.window_bytes})

    def validate(self) -> None:
        """UsageError for a configuration no run can honour."""
        validate_windows(self.total_bytes, self.all_windows)
        if self.buffers < 1:
            raise UsageError(f"--buffers {self.buffers}: at least 1 buffer pair")
        validate_counts(self.fmas, self.repeats)
        unknown = [name for name in self.variants if name not in VARIANTS]
        if unknown or "once" not in self.variants:
            raise UsageError(f"variants {unknown or self.variants}: choose from {', '.join(VARIANTS)}, 'once' included")

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
