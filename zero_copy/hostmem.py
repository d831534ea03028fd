"""How much host memory this run may pin, checked before anything is pinned.

Pinned pages cannot be reclaimed by the OS, so a table larger than what is free
does not fail gracefully: the machine swaps or the OOM killer picks a process.
The figure that binds is MemAvailable, and the cgroup's limit where a container
sets one. RLIMIT_MEMLOCK is reported but not enforced: CUDA's driver pins pages
itself, outside the mlock accounting that this limit bounds.
"""

from __future__ import annotations

import dataclasses
import resource
from pathlib import Path

from labcore.device import available_host_bytes
from labcore.errors import UsageError
from labcore.sizes import format_size
from zero_copy.config import Config, pinned_needs

GIB = 1 << 30
MIN_RESERVE = 2 * GIB  # left for the OS and the NumPy references the checks build


@dataclasses.dataclass(frozen=True)
class HostMemory:
    """What the OS says about host memory, read once before pinning."""

    available_bytes: int | None
    cgroup_free_bytes: int | None
    memlock_bytes: int | None

    @property
    def limit_bytes(self) -> int | None:
        """The smaller of MemAvailable and the cgroup's free memory, when either is known."""
        known = [b for b in (self.available_bytes, self.cgroup_free_bytes) if b is not None]
        return min(known) if known else None

    @property
    def reserve_bytes(self) -> int:
        limit = self.limit_bytes or 0
        return max(MIN_RESERVE, limit // 8)

    @property
    def pinnable_bytes(self) -> int | None:
        """What may be pinned after the reserve, or None when the OS does not say."""
        limit = self.limit_bytes
        return None if limit is None else max(0, limit - self.reserve_bytes)

    def describe(self) -> str:
        parts = []
        if self.available_bytes is not None:
            parts.append(f"MemAvailable {self.available_bytes / GIB:.1f} GiB")
        if self.cgroup_free_bytes is not None:
            parts.append(f"cgroup free {self.cgroup_free_bytes / GIB:.1f} GiB")
        if self.memlock_bytes is not None:
            parts.append(f"RLIMIT_MEMLOCK {self.memlock_bytes / GIB:.1f} GiB (does not bound CUDA pinning)")
        return ", ".join(parts) or "the OS does not say"


def _cgroup_free_bytes(root: Path = Path("/sys/fs/cgroup")) -> int | None:
    try:
        limit = (root / "memory.max").read_text().strip()
        current = int((root / "memory.current").read_text().strip())
    except (OSError, ValueError):
        return None
    return None if limit == "max" else max(0, int(limit) - current)


def _memlock_bytes() -> int | None:
    soft, _hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def read_host_memory() -> HostMemory:
    """MemAvailable, the cgroup's free memory and RLIMIT_MEMLOCK, as they are now."""
    return HostMemory(available_host_bytes(), _cgroup_free_bytes(), _memlock_bytes())


def check_host_memory(cfg: Config, host: HostMemory) -> None:
    """UsageError, with the numbers, when an experiment would pin more than the host can spare."""
    pinnable = host.pinnable_bytes
    if pinnable is None:
        return
    for name, need, option in sorted(pinned_needs(cfg), key=lambda item: -item[1]):
        if need <= pinnable:
            continue
        hint = _smaller(cfg, name, option, pinnable)
        raise UsageError(
            f"the {name} experiment would pin {need / GIB:.2f} GiB of host memory but only "
            f"{pinnable / GIB:.2f} GiB may be pinned here ({host.describe()}, less "
            f"{host.reserve_bytes / GIB:.1f} GiB kept for the OS and the checks); {hint}"
        )


def _smaller(cfg: Config, name: str, option: str, pinnable: int) -> str:
    if name == "gather":
        room = max(0, pinnable - cfg.batch_bytes) // cfg.row_bytes * cfg.row_bytes
        return f"use {option} at most {format_size(room)}" if room else "use fewer --rows"
    share = {"streaming": 2, "saxpy": 3, "both_ways": 2}.get(name, 1)
    return f"use a smaller {option} (at most {format_size(pinnable // share // (1 << 20) << 20)})"
