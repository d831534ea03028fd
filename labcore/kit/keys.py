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
from typing import ClassVar, TypeVar

from labcore.sizes import format_size, parse_size

K = TypeVar("K", bound="_Key")


class _Key:
    """What every key shares: its string form matches `_FORM`, and `parse` is the one place that reads it back."""

    _FORM: ClassVar[re.Pattern[str]]

    @classmethod
    def parse(cls: type[K], text: str) -> K | None:
        """The key whose string form `text` is; None if it is not one."""
        match = cls._FORM.match(text)
        return None if match is None else cls._read(match)

    @classmethod
    def _read(cls: type[K], match: re.Match[str]) -> K | None:
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class PassKey(_Key):
    """One timed pass: its name ('naive', 'pipelined', 'h2d', 'pitfall sync-in-loop', ...), window and depth.

    Its string form, 'pipelined w=64MiB b=2', names the NVTX range in nsys exports and the pass in a results
    record; `parse` is the one place that reads it back.
    """

    name: str
    window_bytes: int
    buffers: int

    _FORM: ClassVar[re.Pattern[str]] = re.compile(r"^(?P<name>.+) w=(?P<window>\d+[KMG]iB|\d+B) b=(?P<buffers>\d+)$")

    def __str__(self) -> str:
        return f"{self.name} w={self.window} b={self.buffers}"

    @classmethod
    def _read(cls, match: re.Match[str]) -> PassKey:
        """'pipelined w=64MiB b=2' -> PassKey('pipelined', 67108864, 2)."""
        return cls(match["name"], parse_size(match["window"]), int(match["buffers"]))

    @property
    def window(self) -> str:
        """The window part of the key, '64MiB'."""
        return format_size(self.window_bytes)


@dataclasses.dataclass(frozen=True)
class ChunkKey(_Key):
    """One timed pass at a chunk count: 'graph n=16'. A lesson subclasses it to list its pass names (NAMES)."""

    name: str
    n_chunks: int

    NAMES: ClassVar[tuple[str, ...]] = ()
    _FORM: ClassVar[re.Pattern[str]] = re.compile(r"^(?P<name>[a-z]+) n=(?P<n>\d+)$")

    def __str__(self) -> str:
        return f"{self.name} n={self.n_chunks}"

    @classmethod
    def _read(cls, match: re.Match[str]) -> ChunkKey | None:
        """'graph n=16' -> cls('graph', 16); None for a name not among the lesson's NAMES."""
        return cls(match["name"], int(match["n"])) if match["name"] in cls.NAMES else None
