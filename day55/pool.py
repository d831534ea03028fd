"""The device's default memory pool (what cudaMallocAsync draws from) and its release threshold, on the GPU.

The threshold is how many bytes of freed memory the pool may keep at a synchronize (device, stream or event)
before it gives the rest back to the driver: 0 by default, so every synchronize empties it and the next
allocations must grow it again; UINT64_MAX keeps everything.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from labcore.device import cupy_or_none

RELEASE_THRESHOLD = 4  # cudaMemPoolAttrReleaseThreshold
RESERVED_CURRENT = 5  # cudaMemPoolAttrReservedMemCurrent: bytes the pool holds from the driver now
USED_CURRENT = 7  # cudaMemPoolAttrUsedMemCurrent: bytes of it allocated now


def _runtime() -> Any:
    cp = cupy_or_none()
    if cp is None:
        raise RuntimeError("the memory pool needs a GPU")
    return cp.cuda.runtime


def default_pool() -> int:
    """The current device's default memory pool (cudaDeviceGetDefaultMemPool)."""
    runtime = _runtime()
    return runtime.deviceGetDefaultMemPool(runtime.getDevice())


def attribute(name: int) -> int:
    return int(_runtime().memPoolGetAttribute(default_pool(), getattr(_runtime(), _NAMES[name], name)))


_NAMES = {
    RELEASE_THRESHOLD: "cudaMemPoolAttrReleaseThreshold",
    RESERVED_CURRENT: "cudaMemPoolAttrReservedMemCurrent",
    USED_CURRENT: "cudaMemPoolAttrUsedMemCurrent",
}


def threshold() -> int:
    """The pool's release threshold now, in bytes."""
    return attribute(RELEASE_THRESHOLD)


def reserved_bytes() -> int:
    """Bytes the pool holds from the driver now (allocated or free in the pool)."""
    return attribute(RESERVED_CURRENT)


def set_threshold(value: int) -> None:
    runtime = _runtime()
    runtime.memPoolSetAttribute(default_pool(), getattr(runtime, _NAMES[RELEASE_THRESHOLD], RELEASE_THRESHOLD), value)


def trim() -> None:
    """Give every free byte of the pool back to the driver (cudaMemPoolTrimTo 0), once the device is idle."""
    cupy_or_none().cuda.Device().synchronize()
    _runtime().memPoolTrimTo(default_pool(), 0)


@contextlib.contextmanager
def release_threshold(value: int) -> Iterator[None]:
    """The pool's threshold at `value` inside, starting empty; the threshold it had, and an empty pool, after."""
    before = threshold()
    trim()
    set_threshold(value)
    try:
        yield
    finally:
        set_threshold(before)
        trim()
