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
        validate_windows(self.total_bytes, self.all_windows)
        if any(b < 1 for b in self.buffers) or not self.buffers:
            raise UsageError(f"--buffers {','.join(map(str, self.buffers))}: each depth must be at least 1")
        validate_counts(self.fmas, self.repeats)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
