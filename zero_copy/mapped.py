"""Mapped pinned host memory: what the device says about mapping, allocate or register, the device pointer, free last.

Two calls make host memory that a kernel can load from: cudaHostAlloc with
cudaHostAllocMapped (new pages) and cudaHostRegister with cudaHostRegisterMapped
(an existing NumPy buffer). Either way the address a kernel uses comes from
cudaHostGetDevicePointer, always asked for, never assumed equal to the host
address. CuPy 14 lacks that call, so this module speaks to the runtime through
NVIDIA's cuda-bindings and hands CuPy only the device pointer, wrapped as an
ndarray that does not own it.

A MappedBuffer is freed (or unregistered) only after the streams that use it
have finished: declare each with `use(stream)`; the legacy default stream,
which waits for all blocking streams, is always waited for too. Views taken
from a buffer (`h`, `d`) must not outlive it.

MappingSupport holds the device attributes that decide how (and whether)
zero-copy works on this machine, and what the lesson does about each answer.
"""

from __future__ import annotations

import ctypes
import dataclasses
import math
import mmap
from typing import Any

import numpy as np

from labcore.device import DeviceFacts, cupy_or_none
from labcore.errors import UsageError
from labcore.gpulock import gpu_share
from labcore.sizes import format_size

_LIVE: dict[int, MappedBuffer] = {}  # host pointer -> open buffer: the host pinned bookkeeping


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

        return (
            f"canMapHostMemory={flag(self.can_map_host_memory)} integrated={flag(self.integrated)} "
            f"canUseHostPointerForRegisteredMem={flag(self.can_use_host_pointer_for_registered_mem)} "
            f"pageableMemoryAccess={flag(self.pageable_memory_access)} "
            f"hostRegisterReadOnly={flag(self.host_register_read_only)} "
            f"cudaDeviceMapHost={flag(self.device_map_host)}"
        )

    def notes(self) -> list[str]:
        """What each answer means for this run."""
        notes = [
            "integrated GPU: host and device share DRAM, so a mapped load is a local load and zero-copy is "
            "often the right default; the 'link' rates below are memory-system rates"
            if self.integrated
            else "discrete GPU: every mapped load crosses the link (PCIe here), so L, not H, bounds zero-copy",
        ]
        ptr = (
            "device pointer = host pointer for registered memory here"
            if self.registered_pointers_equal
            else "device pointer differs from the host pointer for registered memory here"
            if self.registered_pointers_equal is False
            else ""
        )
        notes.append(
            "device pointers come from cudaHostGetDevicePointer, never assumed "
            f"(canUseHostPointerForRegisteredMem={int(self.can_use_host_pointer_for_registered_mem)}"
            f"{'; ' + ptr if ptr else ''})"
        )
        notes.append(
            "registered inputs are marked cudaHostRegisterReadOnly"
            if self.host_register_read_only
            else "the device cannot mark registered memory read-only; inputs are registered writable"
        )
        if self.pageable_memory_access:
            notes.append(
                "the GPU can also read pageable memory (pageableMemoryAccess=1), but through the OS's "
                "page tables; the lesson still pins and maps, which is what runs at link speed"
            )
        return notes

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MappingSupport:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def require_mapping(facts: DeviceFacts) -> None:
    """UsageError when the device cannot map host memory: nothing in this lesson can run there."""
    if not facts.can_map_host_memory:
        raise UsageError(
            f"{facts.name} cannot map host memory (canMapHostMemory=0), so no kernel can load "
            f"from pinned host memory; replay the recorded profile instead: "
            f"python -m zero_copy --from-profile zero_copy/profiles/h200"
        )


class CudaCallError(RuntimeError):
    """A CUDA runtime call failed for a reason the user did not cause."""

    def __init__(self, call: str, error: Any, text: str) -> None:
        super().__init__(f"{call} failed: {getattr(error, 'name', error)}: {text}")
        self.error = error


def cudart() -> Any:
    """NVIDIA's cuda-bindings runtime module; UsageError naming the extra to install when it is missing."""
    try:
        from cuda.bindings import runtime  # optional: the cuda12/cuda13 extras install it, offline readers need not
    except ImportError:
        raise UsageError(
            "zero-copy needs NVIDIA's cuda-bindings for cudaHostGetDevicePointer (CuPy 14 lacks it); "
            "install the extra that matches your CuPy: pip install '.[cuda13]' or '.[cuda12]'"
        ) from None
    return runtime


def call(name: str, result: tuple[Any, ...]) -> Any:
    """Unpack a cuda-bindings result tuple; CudaCallError when its error code is not cudaSuccess."""
    rt = cudart()
    error, *values = result
    if error != rt.cudaError_t.cudaSuccess:
        _, text = rt.cudaGetErrorString(error)
        raise CudaCallError(name, error, text.decode() if isinstance(text, bytes) else str(text))
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def _cupy() -> Any:
    cp = cupy_or_none()
    if cp is None:
        raise RuntimeError("mapped memory needs a GPU; check labcore.device.gpu_available() first")
    return cp


def _host_view(host_ptr: int, nbytes: int, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    raw = (ctypes.c_uint8 * nbytes).from_address(host_ptr)
    return np.frombuffer(raw, dtype=np.uint8).view(dtype).reshape(shape)


def _device_view(device_ptr: int, nbytes: int, shape: tuple[int, ...], dtype: np.dtype, owner: Any) -> Any:
    cp = _cupy()
    memory = cp.cuda.UnownedMemory(device_ptr, nbytes, owner, cp.cuda.Device().id)
    return cp.ndarray(shape, dtype=dtype, memptr=cp.cuda.MemoryPointer(memory, 0))


class MappedBuffer:
    """Pinned host memory a kernel reaches over the link: `h` (NumPy view), `d` (CuPy view), freed after its streams."""

    def __init__(
        self,
        host_ptr: int,
        nbytes: int,
        shape: tuple[int, ...],
        dtype: np.dtype,
        *,
        how: str,
        flags: int,
        owner: np.ndarray | None = None,
    ) -> None:
        self.host_ptr = host_ptr
        self.nbytes = nbytes
        self.how = how  # "cudaHostAlloc" or "cudaHostRegister"
        self.flags = flags
        self.closed = False
        self._owner = owner
        self._streams: list[Any] = []
        _LIVE[host_ptr] = self
        try:
            self.device_ptr = int(call("cudaHostGetDevicePointer", cudart().cudaHostGetDevicePointer(host_ptr, 0)))
            self._h = owner if owner is not None else _host_view(host_ptr, nbytes, shape, dtype)
            self._d = _device_view(self.device_ptr, nbytes, shape, dtype, self)
        except BaseException:
            self._release()
            raise

    @property
    def h(self) -> np.ndarray:
        """The host's view (NumPy); each element access is a fresh load, as through a volatile pointer."""
        self._require_open()
        return self._h

    @property
    def d(self) -> Any:
        """The device's view (a CuPy ndarray at the device pointer; CuPy does not own it)."""
        self._require_open()
        return self._d

    @property
    def pointers_equal(self) -> bool:
        """Whether the device pointer the runtime gave equals the host pointer."""
        return self.device_ptr == self.host_ptr

    def use(self, stream: Any) -> Any:
        """Declare that work on `stream` touches this buffer; close() waits for it. Returns the stream."""
        if all(stream is not s for s in self._streams):
            self._streams.append(stream)
        return stream

    def settle(self) -> None:
        """Wait for the streams that use the buffer and forget them (a kept buffer's next user declares its own)."""
        self._require_open()
        self._wait_for_streams()
        self._streams = []

    def close(self) -> None:
        """Wait for the streams that use the buffer, then free or unregister it; a second call does nothing."""
        if self.closed:
            return
        self._wait_for_streams()
        self._release()

    def _wait_for_streams(self) -> None:
        cp = _cupy()
        for stream in [*self._streams, cp.cuda.Stream.null]:
            finished = cp.cuda.Event(disable_timing=True)
            finished.record(stream)
            finished.synchronize()

    def _release(self) -> None:
        rt = cudart()
        try:
            if self.how == "cudaHostRegister":
                call("cudaHostUnregister", rt.cudaHostUnregister(self.host_ptr))
            else:
                call("cudaFreeHost", rt.cudaFreeHost(self.host_ptr))
        finally:
            self.closed = True
            self._h = self._d = self._owner = None
            self._streams = []
            _LIVE.pop(self.host_ptr, None)

    def _require_open(self) -> None:
        if self.closed:
            raise RuntimeError(f"this {format_size(self.nbytes)} mapped buffer was closed; its views are gone")

    def __enter__(self) -> MappedBuffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"host 0x{self.host_ptr:x} device 0x{self.device_ptr:x}"
        return f"<MappedBuffer {format_size(self.nbytes)} via {self.how}, {state}>"


def _nbytes(shape: tuple[int, ...], dtype: np.dtype) -> int:
    return math.prod(shape) * dtype.itemsize


def alloc_mapped(shape: int | tuple[int, ...], dtype: Any = np.uint8, *, write_combined: bool = False) -> MappedBuffer:
    """New pinned pages mapped for the device (cudaHostAllocMapped, optionally write-combined)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    dtype = np.dtype(dtype)
    nbytes = _nbytes(shape, dtype)
    if nbytes <= 0:
        raise ValueError(f"alloc_mapped needs a positive size, got shape {shape}")
    rt = cudart()
    flags = rt.cudaHostAllocMapped | (rt.cudaHostAllocWriteCombined if write_combined else 0)
    try:
        with gpu_share():  # pinning is not timed here, but it would disturb a neighbour's timed pass
            host_ptr = int(call("cudaHostAlloc", rt.cudaHostAlloc(nbytes, flags)))
    except CudaCallError as exc:
        if exc.error == rt.cudaError_t.cudaErrorMemoryAllocation:
            raise UsageError(
                f"cudaHostAlloc could not pin {format_size(nbytes)} of host memory "
                f"({nbytes / 2**30:.2f} GiB); ask for less"
            ) from None
        raise
    return MappedBuffer(host_ptr, nbytes, shape, dtype, how="cudaHostAlloc", flags=flags)


def register_mapped(array: np.ndarray, *, read_only: bool = False) -> MappedBuffer:
    """Pin and map an existing C-contiguous NumPy array in place (cudaHostRegisterMapped [| ReadOnly])."""
    if not array.flags.c_contiguous or array.nbytes == 0:
        raise ValueError("register_mapped needs a non-empty C-contiguous array")
    rt = cudart()
    flags = rt.cudaHostRegisterMapped | (rt.cudaHostRegisterReadOnly if read_only else 0)
    try:
        with gpu_share():
            call("cudaHostRegister", rt.cudaHostRegister(array.ctypes.data, array.nbytes, flags))
    except CudaCallError as exc:
        if exc.error == rt.cudaError_t.cudaErrorMemoryAllocation:
            raise UsageError(f"cudaHostRegister could not pin {format_size(array.nbytes)}; ask for less") from None
        raise
    return MappedBuffer(
        array.ctypes.data, array.nbytes, array.shape, array.dtype, how="cudaHostRegister", flags=flags, owner=array
    )


def page_aligned_empty(shape: int | tuple[int, ...], dtype: Any = np.uint8) -> np.ndarray:
    """An ordinary (pageable) NumPy array that starts on a page boundary, as a producer library might hand over."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    dtype = np.dtype(dtype)
    nbytes = _nbytes(shape, dtype)
    raw = np.empty(nbytes + mmap.PAGESIZE, dtype=np.uint8)
    start = -raw.ctypes.data % mmap.PAGESIZE
    return raw[start : start + nbytes].view(dtype).reshape(shape)


def live_buffers() -> list[MappedBuffer]:
    """Mapped buffers allocated or registered by this process and not yet closed."""
    return list(_LIVE.values())


def driver_memory_type(host_ptr: int) -> str:
    """What the driver says an address is now: 'cudaMemoryTypeHost' while pinned, 'cudaMemoryTypeUnregistered' after."""
    attributes = call("cudaPointerGetAttributes", cudart().cudaPointerGetAttributes(host_ptr))
    return attributes.type.name


def host_register_read_only_supported(device: int = 0) -> bool:
    """cudaDevAttrHostRegisterReadOnlySupported: may registered memory be marked device-read-only."""
    rt = cudart()
    attr = rt.cudaDeviceAttr.cudaDevAttrHostRegisterReadOnlySupported
    return bool(call("cudaDeviceGetAttribute", rt.cudaDeviceGetAttribute(attr, device)))


def device_map_host_flag() -> bool:
    """Whether the current context carries cudaDeviceMapHost (implicit for runtime-created contexts)."""
    rt = cudart()
    return bool(call("cudaGetDeviceFlags", rt.cudaGetDeviceFlags()) & rt.cudaDeviceMapHost)


def read_support(facts: DeviceFacts, device: int = 0) -> MappingSupport:
    """The facts plus what only cuda-bindings can ask: read-only registration and the context's flags."""
    return MappingSupport(
        can_map_host_memory=facts.can_map_host_memory,
        integrated=facts.integrated,
        can_use_host_pointer_for_registered_mem=facts.can_use_host_pointer_for_registered_mem,
        pageable_memory_access=facts.pageable_memory_access,
        host_register_read_only=host_register_read_only_supported(device),
        device_map_host=device_map_host_flag(),
    )
