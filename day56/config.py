"""What one run measures, and the typed key of each timed pass."""

from __future__ import annotations

import dataclasses
import re
import secrets
from typing import Any

from labcore.errors import UsageError
from labcore.kit.cli import validate_counts
from labcore.kit.keys import ChunkKey
from labcore.pipeline.kernel import DEFAULT_FMAS
from labcore.sizes import format_size

MiB = 1 << 20
NAMES = ("streams", "graph", "duplex")  # the pipeline stream by stream, the same captured as a graph, the link probe


class PassKey(ChunkKey):
    """One timed pass: 'streams', 'graph' or 'duplex' at a chunk count. Its string form, 'graph n=16', names the
    NVTX range in nsys exports and the pass in a results record; `parse` is the one place that reads it back."""

    NAMES = NAMES


def host_range(what: str, key: PassKey, *, warmup: bool = False) -> str:
    """The name of a host-side NVTX range: 'enqueue streams n=16', 'launch graph n=16', 'instantiate graph n=16'."""
    return f"{'warmup ' if warmup else ''}{what} {key}"


HOST_WHATS = ("enqueue", "launch", "capture", "instantiate", "update", "recapture")
_HOST_FORM = re.compile(rf"^(?P<what>{'|'.join(HOST_WHATS)}) (?P<key>.+)$")


def parse_host_range(text: str) -> tuple[str, PassKey] | None:
    """'launch graph n=16' -> ('launch', PassKey('graph', 16)); None for a warm-up or anything else."""
    match = _HOST_FORM.match(text)
    key = PassKey.parse(match["key"]) if match else None
    return (match["what"], key) if key else None


@dataclasses.dataclass
class Config:
    """What one run measures: the pipeline at several chunk counts of one array, stream by stream and as a graph."""

    total_bytes: int = 1 << 30
    chunks: list[int] = dataclasses.field(default_factory=lambda: [16, 64, 256])
    buffers: int = 3
    fmas: int = DEFAULT_FMAS
    repeats: int = 5
    warmup: int = 1
    seed: int = dataclasses.field(default_factory=lambda: secrets.randbelow(2**31))
    pitfalls: bool = True
    main: int | None = None  # the chunk count of --window, if given

    @property
    def main_chunks(self) -> int:
        """The chunk count the timelines, the duplex floor and the pitfalls are measured at: --window's if given,
        else 16 if asked, else the fewest."""
        if self.main in self.chunks:
            return self.main
        return 16 if 16 in self.chunks else min(self.chunks)

    def window(self, n_chunks: int) -> int:
        return self.total_bytes // n_chunks

    def validate(self) -> None:
        """UsageError for a configuration no run can honour."""
        if not self.chunks:
            raise UsageError("--chunks: give at least one chunk count, e.g. 16,64,256")
        if self.total_bytes <= 0 or self.total_bytes % 4:
            raise UsageError(f"--total {format_size(self.total_bytes)} must be a positive multiple of 4 bytes")
        for n in self.chunks:
            if n < 1:
                raise UsageError(f"--chunks {n}: a chunk count is at least 1")
            if self.total_bytes % n or (self.total_bytes // n) % 4:
                raise UsageError(
                    f"--chunks {n} does not cut --total {format_size(self.total_bytes)} into whole float32 windows; "
                    f"pick a count that divides it, e.g. 16, 64 or 256"
                )
        if self.buffers < 2:
            raise UsageError(f"--buffers {self.buffers}: a pipeline needs at least 2 buffer pairs")
        validate_counts(self.fmas, self.repeats)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
