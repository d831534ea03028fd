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


@dataclasses.dataclass(frozen=True)
class PassKey:
    """One timed pass: its name ('naive', 'pipelined', 'h2d', 'pitfall sync-in-loop', ...), window and depth.

    Its string form, 'pipelined w=64MiB b=2', names the NVTX range in nsys exports and the pass in a
    results record; `parse` is the one place that reads it back.
    """

    name: str
    window_bytes: int
    buffers: int

    _FORM = re.compile(r"^(?P<name>.+) w=(?P<window>\d+[KMG]iB|\d+B) b=(?P<buffers>\d+)$")

    def __str__(self) -> str:
        return f"{self.name} w={format_size(self.window_bytes)} b={self.buffers}"

    @classmethod
    def parse(cls, text: str) -> PassKey | None:
        """'pipelined w=64MiB b=2' -> PassKey('pipelined', 67108864, 2); None if it is not a pass key."""
        match = cls._FORM.match(text)
        if not match:
            return None
        return cls(match["name"], parse_size(match["window"]), int(match["buffers"]))

    @property
    def window(self) -> str:
        """The window part of the key, '64MiB'."""
        return format_size(self.window_bytes)


@dataclasses.dataclass
class Config:
    """What one run measures."""

    total_bytes: int = 1 << 30
    window_bytes: int = 64 * MiB
    windows: list[int] = dataclasses.field(default_factory=lambda: [4 * MiB, 64 * MiB, 256 * MiB])
    buffers: list[int] = dataclasses.field(default_factory=lambda: [2, 3])
    fmas: int = DEFAULT_FMAS
    repeats: int = 5
    warmup: int = 1
    seed: int = dataclasses.field(default_factory=lambda: secrets.randbelow(2**31))
    pitfalls: bool = True

    @property
    def all_windows(self) -> list[int]:
        """The sweep's windows and the main one, smallest first."""
        return sorted(set(self.windows) | {self.window_bytes})

    def validate(self) -> None:
        """UsageError for a configuration no run can honour."""
        for window in self.all_windows:
            if window <= 0 or window % 4:
                raise UsageError(f"--window {format_size(window)} must be a positive multiple of 4 bytes (float32)")
            if window > self.total_bytes:
                raise UsageError(f"--window {format_size(window)} exceeds --total {format_size(self.total_bytes)}")
            if self.total_bytes % window:
                raise UsageError(
                    f"--window {format_size(window)} does not divide --total "
                    f"{format_size(self.total_bytes)}; pick a window that divides it, e.g. 64MiB"
                )
        if any(b < 1 for b in self.buffers) or not self.buffers:
            raise UsageError(f"--buffers {','.join(map(str, self.buffers))}: each depth must be at least 1")
        if self.fmas < 0:
            raise UsageError(f"--fmas {self.fmas} must be 0 or more")
        if self.repeats < 1:
            raise UsageError(f"--repeats {self.repeats} must be at least 1")

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
