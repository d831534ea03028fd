"""Typed pass keys: the name of every timed pass, in a results record and as an NVTX range in nsys exports.

A lesson whose passes run at a window and a depth uses `PassKey` ('pipelined w=64MiB b=2'); one that runs at chunk
counts uses `ChunkKey` ('graph n=16'), subclassed to name its passes:

    class PassKey(ChunkKey):
        NAMES = ("streams", "graph", "duplex")

`parse` is the one place that reads a key back; it returns None for text that is not a key.
"""

from __future__ import annotations

import dataclasses
import re
from typing import ClassVar

from labcore.sizes import format_size, parse_size


@dataclasses.dataclass(frozen=True)
class PassKey:
    """One timed pass: its name ('naive', 'pipelined', 'h2d', 'pitfall sync-in-loop', ...), window and depth.

    Its string form, 'pipelined w=64MiB b=2', names the NVTX range in nsys exports and the pass in a results
    record; `parse` is the one place that reads it back.
    """

    name: str
    window_bytes: int
    buffers: int

    _FORM: ClassVar[re.Pattern[str]] = re.compile(r"^(?P<name>.+) w=(?P<window>\d+[KMG]iB|\d+B) b=(?P<buffers>\d+)$")

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


@dataclasses.dataclass(frozen=True)
class ChunkKey:
    """One timed pass at a chunk count: 'graph n=16'. A lesson subclasses it to list its pass names (NAMES)."""

    name: str
    n_chunks: int

    NAMES: ClassVar[tuple[str, ...]] = ()
    _FORM: ClassVar[re.Pattern[str]] = re.compile(r"^(?P<name>[a-z]+) n=(?P<n>\d+)$")

    def __str__(self) -> str:
        return f"{self.name} n={self.n_chunks}"

    @classmethod
    def parse(cls, text: str) -> ChunkKey | None:
        """'graph n=16' -> cls('graph', 16); None if it is not a pass key of the lesson's NAMES."""
        match = cls._FORM.match(text)
        if not match or match["name"] not in cls.NAMES:
            return None
        return cls(match["name"], int(match["n"]))
