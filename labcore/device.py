"""Facts about the GPU (or its absence), read once and printed on a mode line."""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import subprocess
from typing import Any

from labcore.errors import UsageError


@functools.cache
def cupy_or_none() -> Any:
    """CuPy if it imports and sees a GPU, else None (the replay mode)."""
    try:
        import cupy  # CuPy is an optional extra: without it every command replays
    except Exception:  # not installed, or a broken CUDA install: both mean no live GPU
        return None
    try:
        return cupy if cupy.cuda.is_available() else None
    except Exception:
        return None


def gpu_available() -> bool:
    """True when CuPy is installed and a CUDA device answers."""
    return cupy_or_none() is not None


def gpu_count() -> int:
    """The GPUs this process sees (CUDA_VISIBLE_DEVICES respected); 0 without CuPy or a GPU."""
    cupy = cupy_or_none()
    return 0 if cupy is None else int(cupy.cuda.runtime.getDeviceCount())


DEVICE_ENV = "LABCORE_DEVICE"  # the GPU a notebook's live runs use on a machine of several (default 0)


def pick_device(index: int | str | None = None) -> int:
    """Make GPU `index` (default: $LABCORE_DEVICE, else 0) the CUDA device of this process's live runs; its index.
    Call only when gpu_available(). UsageError, naming what there is, for a GPU this machine does not have."""
    source = "--device"
    if index is None:
        index, source = os.environ.get(DEVICE_ENV, "0"), DEVICE_ENV
    try:
        number = int(index)
    except ValueError:
        raise UsageError(f"{source} {index!r}: not a GPU index (0, 1, ...)") from None
    cp = cupy_or_none()
    if cp is None:  # no GPU to pick (a replay, or a test standing in for the device)
        return number
    count = gpu_count()
    if not 0 <= number < count:
        there = "GPU 0" if count == 1 else f"GPUs 0 to {count - 1}"
        raise UsageError(f"{source} {number}: this machine has {there} (CUDA_VISIBLE_DEVICES counts)")
    cp.cuda.Device(number).use()
    return number


def current_device() -> int:
    """The CUDA device live runs use now (0 without a GPU)."""
    cp = cupy_or_none()
    return cp.cuda.Device().id if cp is not None else 0


@dataclasses.dataclass
class DeviceFacts:
    """What the lessons need to know about the device they measured on."""

    name: str
    compute_capability: str | None = None
    async_engine_count: int | None = None
    can_map_host_memory: bool | None = None
    integrated: bool | None = None
    can_use_host_pointer_for_registered_mem: bool | None = None
    pageable_memory_access: bool | None = None
    total_memory_bytes: int | None = None
    pcie_gen: int | None = None
    pcie_gen_max: int | None = None
    pcie_width: int | None = None
    driver: str | None = None
    cuda_runtime: str | None = None
    driver_cuda: str | None = None
    cupy: str | None = None

    def link_text(self) -> str:
        """'PCIe Gen5 x16' or 'PCIe unknown'."""
        if self.pcie_gen is None or self.pcie_width is None:
            return "PCIe link unknown"
        top = f" (max Gen{self.pcie_gen_max})" if self.pcie_gen_max and self.pcie_gen_max != self.pcie_gen else ""
        return f"PCIe Gen{self.pcie_gen} x{self.pcie_width}{top}"

    def summary(self) -> str:
        """One line for a mode line: name, copy engines, link (what is known of them)."""
        if self.compute_capability is None:
            return f"{self.name} (no device facts recorded)"
        return (
            f"{self.name} (sm_{self.compute_capability.replace('.', '')}, "
            f"asyncEngineCount={self.async_engine_count}, {self.link_text()})"
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DeviceFacts:
        """Rebuild from a results record, ignoring fields this version does not know."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def _bus_id(cp: Any, device: int) -> str:
    """The device's PCI bus id, which nvidia-smi's -i takes whatever CUDA_VISIBLE_DEVICES renumbered; else '0'."""
    try:
        return str(cp.cuda.Device(device).pci_bus_id)
    except Exception:  # a driver that will not say: nvidia-smi's first GPU, as before
        return "0"


def _nvidia_smi(fields: str, which: str = "0") -> list[str] | None:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run(
            [exe, f"--query-gpu={fields}", "--format=csv,noheader,nounits", "-i", which],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return [part.strip() for part in out.strip().split(",")]


def _int_or_none(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _version(code: int) -> str:
    return f"{code // 1000}.{code % 1000 // 10}"


def device_facts(device: int | None = None) -> DeviceFacts:
    """Read the live device's facts (default: the current device); call only when gpu_available()."""
    cp = cupy_or_none()
    if cp is None:
        raise RuntimeError("device_facts() needs a GPU; check gpu_available() first")
    device = current_device() if device is None else device
    props = cp.cuda.runtime.getDeviceProperties(device)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    fields = "pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,driver_version"
    smi = _nvidia_smi(fields, _bus_id(cp, device))
    if smi is None and "CUDA_VISIBLE_DEVICES" not in os.environ:  # nvidia-smi did not take the bus id: its index
        smi = _nvidia_smi(fields, str(device))
    smi = smi or [None] * 4
    return DeviceFacts(
        name=name,
        compute_capability=f"{props['major']}.{props['minor']}",
        async_engine_count=int(props.get("asyncEngineCount", 0)),
        can_map_host_memory=bool(props.get("canMapHostMemory", 0)),
        integrated=bool(props.get("integrated", 0)),
        can_use_host_pointer_for_registered_mem=bool(props.get("canUseHostPointerForRegisteredMem", 0)),
        pageable_memory_access=bool(props.get("pageableMemoryAccess", 0)),
        total_memory_bytes=int(props["totalGlobalMem"]),
        pcie_gen=_int_or_none(smi[0]),
        pcie_gen_max=_int_or_none(smi[1]),
        pcie_width=_int_or_none(smi[2]),
        driver=smi[3],
        cuda_runtime=_version(cp.cuda.runtime.runtimeGetVersion()),
        driver_cuda=_version(cp.cuda.runtime.driverGetVersion()),
        cupy=cp.__version__,
    )


def free_device_bytes() -> int:
    """Free device memory now, as cudaMemGetInfo reports it."""
    cp = cupy_or_none()
    if cp is None:
        raise RuntimeError("free_device_bytes() needs a GPU")
    free, _total = cp.cuda.runtime.memGetInfo()
    return int(free)


def available_host_bytes() -> int | None:
    """MemAvailable from /proc/meminfo, or None where the OS does not say."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None
