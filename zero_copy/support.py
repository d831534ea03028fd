"""What the device says about mapping host memory, and what the lesson does about each answer."""

from __future__ import annotations

import dataclasses
from typing import Any

from labcore.device import DeviceFacts
from labcore.errors import UsageError


@dataclasses.dataclass
class MappingSupport:
    """The device attributes that decide how (and whether) zero-copy works here."""

    can_map_host_memory: bool
    integrated: bool
    can_use_host_pointer_for_registered_mem: bool
    pageable_memory_access: bool
    host_register_read_only: bool
    device_map_host: bool
    registered_pointers_equal: bool | None = None  # observed once a buffer is registered

    def line(self) -> str:
        """The attributes on one line, as the CUDA names spell them."""
        def flag(value: bool | None) -> str:
            return "?" if value is None else str(int(value))
        return (f"canMapHostMemory={flag(self.can_map_host_memory)} integrated={flag(self.integrated)} "
                f"canUseHostPointerForRegisteredMem={flag(self.can_use_host_pointer_for_registered_mem)} "
                f"pageableMemoryAccess={flag(self.pageable_memory_access)} "
                f"hostRegisterReadOnly={flag(self.host_register_read_only)} "
                f"cudaDeviceMapHost={flag(self.device_map_host)}")

    def notes(self) -> list[str]:
        """What each answer means for this run."""
        notes = [
            "integrated GPU: host and device share DRAM, so a mapped load is a local load and zero-copy is "
            "often the right default; the 'link' rates below are memory-system rates"
            if self.integrated else
            "discrete GPU: every mapped load crosses the link (PCIe here), so L, not H, bounds zero-copy",
        ]
        ptr = ("device pointer = host pointer for registered memory here" if self.registered_pointers_equal
               else "device pointer differs from the host pointer for registered memory here"
               if self.registered_pointers_equal is False else "")
        notes.append("device pointers come from cudaHostGetDevicePointer, never assumed "
                     f"(canUseHostPointerForRegisteredMem={int(self.can_use_host_pointer_for_registered_mem)}"
                     f"{'; ' + ptr if ptr else ''})")
        notes.append("registered inputs are marked cudaHostRegisterReadOnly" if self.host_register_read_only
                     else "the device cannot mark registered memory read-only; inputs are registered writable")
        if self.pageable_memory_access:
            notes.append("the GPU can also read pageable memory (pageableMemoryAccess=1), but through the OS's "
                         "page tables; the lesson still pins and maps, which is what runs at link speed")
        return notes

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MappingSupport:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def require_mapping(facts: DeviceFacts) -> None:
    """UsageError when the device cannot map host memory: nothing in this lesson can run there."""
    if not facts.can_map_host_memory:
        raise UsageError(f"{facts.name} cannot map host memory (canMapHostMemory=0), so no kernel can load "
                         f"from pinned host memory; replay the recorded profile instead: "
                         f"python -m zero_copy --from-profile profiles/h200/zero_copy")


def read_support(facts: DeviceFacts, device: int = 0) -> MappingSupport:
    """The facts plus what only cuda-bindings can ask: read-only registration and the context's flags."""
    from zero_copy.mapped import device_map_host_flag, host_register_read_only_supported

    return MappingSupport(
        can_map_host_memory=facts.can_map_host_memory,
        integrated=facts.integrated,
        can_use_host_pointer_for_registered_mem=facts.can_use_host_pointer_for_registered_mem,
        pageable_memory_access=facts.pageable_memory_access,
        host_register_read_only=host_register_read_only_supported(device),
        device_map_host=device_map_host_flag(),
    )
