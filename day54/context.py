"""The CuPy context: pinned host arrays, device buffer pairs and streams, which every schedule runs against.

A schedule is a plain function of a context. It asks the context to copy chunk
k in to buffer pair s, launch the kernel on pair s, and copy chunk k out of
pair s; by default each pair has its own stream, and an explicit `stream`
index (or LEGACY, the legacy default stream) overrides that, which is how the
pitfalls are written. The same schedules run against RecordingContext.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from day54.kernel import launch_fma_chain
from day54.verify import verify_and_poison
from labcore.device import cupy_or_none

LEGACY = -1  # stream index meaning the legacy default stream
_H2D, _D2H = 1, 2  # cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost


class HostArrays:
    """The 'input' and 'output' host arrays a run shares across windows and depths."""

    def __init__(self, total_bytes: int, *, pinned: bool = True) -> None:
        import cupyx  # CuPy is optional: only a live run gets here

        n = total_bytes // 4
        alloc = cupyx.empty_pinned if pinned else np.empty
        self.h_in: np.ndarray = alloc(n, dtype=np.float32)
        self.h_out: np.ndarray = alloc(n, dtype=np.float32)
        self.pinned = pinned

    def fill_random(self, seed: int) -> None:
        """Fresh uniform [0, 1) input from a seeded generator, drawn on the GPU (NumPy takes a third of a second
        per GiB, which every graded submission would pay several times)."""
        cp = cupy_or_none()
        cp.random.default_rng(seed).random(self.h_in.size, dtype=cp.float32).get(out=self.h_in)

    def device_view(self, array: np.ndarray) -> Any:
        """One of the pinned arrays as a CuPy array that kernels read and write in place, across the link (pinned
        memory is mapped into the GPU's address space under unified addressing, at the same address)."""
        cp = cupy_or_none()
        memory = cp.cuda.UnownedMemory(array.ctypes.data, array.nbytes, self, cp.cuda.Device().id)
        return cp.ndarray(array.shape, array.dtype, cp.cuda.MemoryPointer(memory, 0))

    def poison(self) -> None:
        """NaN the output so a chunk nobody wrote cannot pass a check: written by the GPU across the link when the
        array is pinned (about 20 ms a GiB on the H200, against 160 ms for the CPU), and finished on return."""
        if not self.pinned:
            self.h_out.fill(np.nan)
            return
        self.device_view(self.h_out).fill(np.nan)
        cupy_or_none().cuda.Device().synchronize()

    def verify_and_poison(self, expected: Any, chunk_elems: int) -> np.ndarray:
        """The chunks of the output that differ from `expected` (on the device), then NaN everywhere, in one pass
        on the GPU (pinned arrays only); finished on return."""
        return verify_and_poison(self.device_view(self.h_out), expected, chunk_elems)


class CupyContext:
    """Real work on the GPU: n_buffers device pairs of window_bytes, and n_streams blocking streams."""

    def __init__(
        self, host: HostArrays, window_bytes: int, n_buffers: int, fmas: int, *, n_streams: int | None = None
    ) -> None:
        cp = cupy_or_none()
        if cp is None:
            raise RuntimeError("CupyContext needs a GPU")
        self._cp = cp
        self.host = host
        self.h_in, self.h_out = host.h_in, host.h_out
        self.window_bytes = window_bytes
        self.chunk_elems = window_bytes // 4
        self.n_chunks = self.h_in.size // self.chunk_elems
        self.n_buffers = n_buffers
        self.fmas = fmas
        self.d_in = [cp.empty(self.chunk_elems, dtype=cp.float32) for _ in range(n_buffers)]
        self.d_out = [cp.empty(self.chunk_elems, dtype=cp.float32) for _ in range(n_buffers)]
        # Blocking streams: they synchronize with the legacy default stream, which the timing relies on.
        self.streams = [cp.cuda.Stream(non_blocking=False) for _ in range(n_streams or n_buffers)]
        self.n_streams = len(self.streams)
        self.tracer: Any = None

    def expected_output(self) -> Any:
        """Naive's output for the host's input, made in device memory: the input copied over once and one kernel
        launch across the whole array (each element's FMA chain is the same however the array is chunked)."""
        cp = self._cp
        with cp.cuda.Stream.null:
            d_in = cp.asarray(self.h_in)
            expected = cp.empty_like(d_in)
            launch_fma_chain(d_in, expected, d_in.size, self.fmas, cp.cuda.Stream.null)
            del d_in
            cp.cuda.Device().synchronize()
        return expected

    def with_buffers(self, n_buffers: int, n_streams: int | None = None) -> CupyContext:
        """A view that uses only the first n_buffers pairs (and as many streams), sharing memory."""
        view = object.__new__(CupyContext)
        view.__dict__.update(self.__dict__)
        view.n_buffers = n_buffers
        view.d_in, view.d_out = self.d_in[:n_buffers], self.d_out[:n_buffers]
        n_streams = n_streams or n_buffers
        extra = [self._cp.cuda.Stream(non_blocking=False) for _ in range(n_streams - len(self.streams))]
        view.streams = (self.streams + extra)[:n_streams]
        view.n_streams = n_streams
        return view

    def stream(self, pair: int, stream: int | None) -> Any:
        """The CuPy stream an operation on `pair` goes to."""
        index = pair if stream is None else stream
        return self._cp.cuda.Stream.null if index == LEGACY else self.streams[index]

    def _host_ptr(self, array: np.ndarray, k: int) -> int:
        return array.ctypes.data + k * self.window_bytes

    def _run(self, op: str, k: int, pair: int, stream: int | None, enqueue: Any) -> None:
        target = self.stream(pair, stream)
        if self.tracer is None:
            enqueue(target)
        else:
            index = pair if stream is None else stream
            nbytes = 0 if op == "kernel" else self.window_bytes
            self.tracer.around(op, k, target, index, nbytes, pair, lambda: enqueue(target))

    def copy_in(self, k: int, pair: int, stream: int | None = None) -> None:
        """Enqueue cudaMemcpyAsync of host chunk k into d_in[pair]."""
        self._run(
            "h2d",
            k,
            pair,
            stream,
            lambda s: self._cp.cuda.runtime.memcpyAsync(
                self.d_in[pair].data.ptr, self._host_ptr(self.h_in, k), self.window_bytes, _H2D, s.ptr
            ),
        )

    def launch(self, k: int, pair: int, stream: int | None = None) -> None:
        """Enqueue the FMA kernel from d_in[pair] to d_out[pair] (k only labels the trace)."""
        self._run(
            "kernel",
            k,
            pair,
            stream,
            lambda s: launch_fma_chain(self.d_in[pair], self.d_out[pair], self.chunk_elems, self.fmas, s),
        )

    def copy_out(self, k: int, pair: int, stream: int | None = None) -> None:
        """Enqueue cudaMemcpyAsync of d_out[pair] into host chunk k."""
        self._run(
            "d2h",
            k,
            pair,
            stream,
            lambda s: self._cp.cuda.runtime.memcpyAsync(
                self._host_ptr(self.h_out, k), self.d_out[pair].data.ptr, self.window_bytes, _D2H, s.ptr
            ),
        )

    def synchronize(self) -> None:
        """cudaDeviceSynchronize: the host waits for every stream."""
        self._cp.cuda.Device().synchronize()

    def stream_synchronize(self, stream: int) -> None:
        """The host waits for one stream."""
        self.stream(0, stream).synchronize()
