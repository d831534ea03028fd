"""The memory check a live run makes before allocating anything.

A lesson computes what it needs (its own arithmetic: which arrays, how many buffer pairs) and calls

    require_memory(host_need, device_need, host_what="--total 1GiB needs ...", device_what="windows up to ...")

which refuses, as one UsageError line, a run that cannot fit in host or device memory.
"""

from __future__ import annotations

from labcore.device import available_host_bytes, free_device_bytes
from labcore.errors import UsageError


def require_host(need: int, what: str) -> None:
    """UsageError '<what> <need> GiB of host memory...; <free> GiB is available' when `need` bytes do not fit."""
    free = available_host_bytes()
    if free is not None and need > free:
        raise UsageError(what.format(need=f"{need / 2**30:.1f}") + f"; {free / 2**30:.1f} GiB is available")


def require_device(need: int, what: str) -> None:
    """UsageError '<what>; <free> GiB is free' when `need` bytes do not fit on the device."""
    free = free_device_bytes()
    if need > free:
        raise UsageError(what.format(need=f"{need / 2**30:.2f}") + f"; {free / 2**30:.2f} GiB is free")


def require_memory(host_need: int, device_need: int, *, host_what: str, device_what: str) -> None:
    """Both checks; `host_what` and `device_what` say what the bytes are for, with '{need}' for the GiB needed."""
    require_host(host_need, host_what)
    require_device(device_need, device_what)
