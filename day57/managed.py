"""Managed memory with the pipeline context's interface, and the schedules day 57 runs against it.

`ManagedContext` holds the input and output in one cudaMallocManaged allocation each (CuPy's malloc_managed): one
address that the host and the GPU both use, the driver moving 4 KiB-2 MiB pages to whoever touches them. It offers
what labcore.pipeline's CupyContext offers, so day 54's pipelined schedule runs on it unchanged: `copy_in(k, s)`
is cudaMemPrefetchAsync of input chunk k to the GPU on stream s, `launch(k, s)` the same kernel on chunk k where it
lies, `copy_out(k, s)` cudaMemPrefetchAsync of output chunk k to the host. Prefetch and advice go through
cuda-bindings (CUDA 13 takes a cudaMemLocation where CUDA 12 took a device number; both are spoken here).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from labcore.device import cupy_or_none
from labcore.kit.schedules import chunk
from labcore.pipeline.kernel import launch_fma_chain

CPU = -1  # cudaCpuDeviceId: the host as a prefetch destination
PAGE_FLOATS = 1024  # one float32 in every 4 KiB page: what the host reads to touch a page


def _runtime() -> Any:
    from cuda.bindings import runtime  # optional, like CuPy: only a live run gets here

    return runtime


def _checked(result: Any, what: str) -> None:
    error = result[0] if isinstance(result, tuple) else result
    if int(error) != 0:
        raise RuntimeError(f"{what} failed: {getattr(error, 'name', error)}")


def _takes_location() -> bool:
    """CUDA 13's signatures (a cudaMemLocation and flags) or CUDA 12's (a device number)."""
    import cuda.bindings

    return int(cuda.bindings.__version__.split(".")[0]) >= 13


def _location(rt: Any, device: int) -> Any:
    loc = rt.cudaMemLocation()
    kinds = rt.cudaMemLocationType
    loc.type = kinds.cudaMemLocationTypeHost if device == CPU else kinds.cudaMemLocationTypeDevice
    loc.id = 0 if device == CPU else device
    return loc


def prefetch(ptr: int, nbytes: int, device: int, stream_ptr: int) -> None:
    """cudaMemPrefetchAsync of [ptr, ptr + nbytes) to `device` (CPU: the host) on a stream."""
    rt = _runtime()
    if _takes_location():
        done = rt.cudaMemPrefetchAsync(ptr, nbytes, _location(rt, device), 0, stream_ptr)
    else:
        done = rt.cudaMemPrefetchAsync(ptr, nbytes, device, stream_ptr)
    _checked(done, f"cudaMemPrefetchAsync to {'the host' if device == CPU else f'GPU {device}'}")


def advise(ptr: int, nbytes: int, advice: str, device: int) -> None:
    """cudaMemAdvise(ptr, nbytes, cudaMemAdvise<advice>, device): 'SetReadMostly', 'SetPreferredLocation', ..."""
    rt = _runtime()
    value = getattr(rt.cudaMemoryAdvise, f"cudaMemAdvise{advice}")
    where = _location(rt, device) if _takes_location() else device
    _checked(rt.cudaMemAdvise(ptr, nbytes, value, where), f"cudaMemAdvise {advice}")


class ManagedContext:
    """The job's input and output in managed memory, n_buffers blocking streams, the pipeline's interface."""

    def __init__(self, total_bytes: int, window_bytes: int, n_buffers: int, fmas: int) -> None:
        cp = cupy_or_none()
        self._cp, self.fmas, self.window_bytes = cp, fmas, window_bytes
        self.device = cp.cuda.Device().id
        self.total_bytes, self.chunk_elems = total_bytes, window_bytes // 4
        self.n_chunks, self.n_buffers = total_bytes // window_bytes, n_buffers
        n = total_bytes // 4
        self._memory = [cp.cuda.malloc_managed(total_bytes) for _ in range(2)]
        self.d_in, self.d_out = (cp.ndarray((n,), cp.float32, m) for m in self._memory)
        self.h_in, self.h_out = (np.ctypeslib.as_array((ctypes.c_float * n).from_address(m.ptr)) for m in self._memory)
        self.streams = [cp.cuda.Stream(non_blocking=False) for _ in range(n_buffers)]
        self.n_streams = n_buffers

    def _chunk(self, array: Any, k: int) -> Any:
        return array[k * self.chunk_elems : (k + 1) * self.chunk_elems]

    def _ptr(self, array: Any, k: int) -> int:
        return array.data.ptr + k * self.window_bytes

    def stream(self, pair: int, stream: int | None) -> Any:
        return self.streams[pair if stream is None else stream]

    def copy_in(self, k: int, pair: int, stream: int | None = None) -> None:
        """Input chunk k to the GPU ahead of its kernel (cudaMemPrefetchAsync on the pair's stream)."""
        prefetch(self._ptr(self.d_in, k), self.window_bytes, self.device, self.stream(pair, stream).ptr)

    def launch(self, k: int, pair: int, stream: int | None = None) -> None:
        """The kernel on chunk k, wherever its pages are: a page on the host faults and migrates on first touch."""
        d_in, d_out = self._chunk(self.d_in, k), self._chunk(self.d_out, k)
        launch_fma_chain(d_in, d_out, self.chunk_elems, self.fmas, self.stream(pair, stream))

    def copy_out(self, k: int, pair: int, stream: int | None = None) -> None:
        """Output chunk k back to the host behind its kernel (cudaMemPrefetchAsync to the CPU)."""
        prefetch(self._ptr(self.d_out, k), self.window_bytes, CPU, self.stream(pair, stream).ptr)

    def synchronize(self) -> None:
        self._cp.cuda.Device().synchronize()

    def touch_out(self) -> float:
        """The host reads one float of every page of the output: a page still on the GPU faults back."""
        return float(self.h_out[::PAGE_FLOATS].sum())

    def place(self, input_on: int, output_on: int) -> None:
        """Untimed: both arrays moved whole (to a GPU number or CPU), and the device idle."""
        null = self._cp.cuda.Stream.null.ptr
        prefetch(self.d_in.data.ptr, self.total_bytes, input_on, null)
        prefetch(self.d_out.data.ptr, self.total_bytes, output_on, null)
        self.synchronize()

    def advise(self, on: bool) -> None:
        """Day 57's advice, set or unset: the input read-mostly (a GPU read leaves the host's copy in place), the
        output preferring the host and mapped for the GPU (its kernel writes across the link, nothing migrates)."""
        how = "Set" if on else "Unset"
        advise(self.d_in.data.ptr, self.total_bytes, f"{how}ReadMostly", self.device)
        advise(self.d_out.data.ptr, self.total_bytes, f"{how}PreferredLocation", CPU)
        advise(self.d_out.data.ptr, self.total_bytes, f"{how}AccessedBy", self.device)


def pipelined(ctx: Any) -> None:
    """Day 54's pipeline: chunk k on pair and stream k % n_buffers (copies on the pinned context, prefetches on the
    managed one)."""
    for k in range(ctx.n_chunks):
        chunk(ctx, k, k % ctx.n_buffers)


def faulting(ctx: ManagedContext) -> None:
    """No prefetch at all: every kernel on one stream, its input faulting over page by page, then the host reads the
    output, faulting it back."""
    for k in range(ctx.n_chunks):
        ctx.launch(k, 0)
    ctx.synchronize()
    ctx.touch_out()


def advised(ctx: ManagedContext) -> None:
    """With the advice set: the pipeline's prefetches of the input (a read-mostly copy already on the GPU stays
    there) and its kernels writing straight into the host's output; nothing to bring back."""
    for k in range(ctx.n_chunks):
        s = k % ctx.n_buffers
        ctx.copy_in(k, s)
        ctx.launch(k, s)
