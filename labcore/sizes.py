"""Byte sizes as people write them: 64MiB, 1GiB, 4096 (bytes), 0.5GiB."""

from __future__ import annotations

import re

from labcore.errors import UsageError

_UNITS = {
    "": 1,
    "b": 1,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "k": 1 << 10,
    "m": 1 << 20,
    "g": 1 << 30,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(text: str, *, option: str = "size") -> int:
    """Parse '64MiB' (binary), '64MB' (decimal) or a plain byte count."""
    match = _SIZE.match(str(text))
    unit = match.group(2).lower() if match else None
    if not match or unit not in _UNITS:
        raise UsageError(f"{option} {text!r} is not a size; write e.g. 64MiB, 1GiB or a byte count")
    nbytes = float(match.group(1)) * _UNITS[unit]
    if nbytes != int(nbytes):
        raise UsageError(f"{option} {text!r} is not a whole number of bytes")
    return int(nbytes)


def parse_sizes(text: str, *, option: str = "sizes") -> list[int]:
    """Parse a comma-separated list of sizes."""
    return [parse_size(part, option=option) for part in str(text).split(",") if part.strip()]


def format_size(nbytes: int) -> str:
    """Format a byte count the way the options take it (64MiB, 1GiB, 1000B)."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{nbytes // scale}{unit}"
    return f"{nbytes}B"
