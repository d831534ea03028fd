"""What one run measures, and the typed key of each timed pass."""

from __future__ import annotations

import dataclasses
import re
import secrets
from typing import Any

from labcore.errors import UsageError
from labcore.pipeline.kernel import DEFAULT_FMAS
from labcore.sizes import format_size, parse_size

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


@dataclasses.dataclass(frozen=True)
class PassKey:
    """One timed pass: its name (a VARIANTS key, a component, 'naive'), window and buffer pairs.

    Its string form, 'async w=64MiB b=2', names the NVTX range in nsys exports and the pass in a results record;
    `parse` is the one place that reads it back.
    """

    name: str
    window_bytes: int
    buffers: int

    _FORM = re.compile(r"^(?P<name>\S+) w=(?P<window>\d+[KMG]iB|\d+B) b=(?P<buffers>\d+)$")

    def __str__(self) -> str:
        return f"{self.name} w={format_size(self.window_bytes)} b={self.buffers}"

    @classmethod
    def parse(cls, text: str) -> PassKey | None:
        """'async w=64MiB b=2' -> PassKey('async', 67108864, 2); None if it is not a pass key."""
        match = cls._FORM.match(text)
        if not match:
            return None
        return cls(match["name"], parse_size(match["window"]), int(match["buffers"]))


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
        if self.total_bytes <= 0:
            raise UsageError(f"--total {format_size(self.total_bytes)}: the array needs a size, e.g. 1GiB")
        for window in self.all_windows:
            if window <= 0 or window % 4:
                raise UsageError(f"--window {format_size(window)} must be a positive multiple of 4 bytes (float32)")
            if window > self.total_bytes or self.total_bytes % window:
                raise UsageError(
                    f"--window {format_size(window)} does not divide --total {format_size(self.total_bytes)}; "
                    "pick a window that divides it, e.g. 64MiB"
                )
        if self.buffers < 1:
            raise UsageError(f"--buffers {self.buffers}: at least 1 buffer pair")
        if self.fmas < 0:
            raise UsageError(f"--fmas {self.fmas} must be 0 or more")
        if self.repeats < 1:
            raise UsageError(f"--repeats {self.repeats} must be at least 1")
        unknown = [name for name in self.variants if name not in VARIANTS]
        if unknown or "once" not in self.variants:
            raise UsageError(f"variants {unknown or self.variants}: choose from {', '.join(VARIANTS)}, 'once' included")

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
