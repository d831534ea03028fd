"""The CuPy context: pinned host arrays, device buffer pairs and streams, which every schedule runs against.

A schedule is a plain function of a context. It asks the context to copy chunk
k in to buffer pair s, launch the kernel on pair s, and copy chunk k out of
pair s; by default each pair has its own stream, and an explicit `stream`
index (or LEGACY, the legacy default stream) overrides that, which is how the
pitfalls are written. The same schedules run against RecordingContext.

A student's schedule is never handed a context itself but a `Context`: the
context interface and nothing else, the same class with the same attributes
whether the calls behind it go to the GPU (the student's own recorded run) or
are recorded for grading (labcore.pipeline.trace), so a schedule cannot tell the two
apart by type, module or attributes. Trace recording builds its second
recording on a genuine CupyContext instance with stand-in device state
(`CupyContext.recorder`), so even a schedule that reaches behind the facade
finds the class a real run has.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from labcore.device import cupy_or_none
from labcore.gpulock import gpu_share
from labcore.pipeline.kernel import launch_fma_chain
from labcore.pipeline.verify import verify_and_poison

LEGACY = -1  # stream index meaning the legacy default stream
HOST = -2  # where a blocking allocation call runs: the host thread, which every later enqueue waits for
_H2D, _D2H = 1, 2  # cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost
INTERFACE = ("n_chunks", "n_buffers", "n_streams", "window_bytes")
ALLOCATIONS = ("malloc", "free", "malloc_async", "free_async")  # a pair's two device buffers, inside the loop
CALLS = ("copy_in", "launch", "copy_out", "synchronize", "stream_synchronize", *ALLOCATIONS)


class NotAFixedSchedule(AssertionError):
    """The schedule is not a fixed sequence of context operations (an AssertionError: a check fails on it)."""


def _integer(call: str, label: str, value: Any) -> int:
    """An integer argument (NumPy's included), else the message a student can act on."""
    if isinstance(value, bool):
        raise NotAFixedSchedule(f"{call}: the {label} is {value!r}; chunks, pairs and streams are integers")
    try:
        return operator.index(value)
    except TypeError:
        raise NotAFixedSchedule(f"{call}: the {label} is {value!r}; chunks, pairs and streams are integers") from None


def _backend(ctx: Context) -> Any:
    return object.__getattribute__(ctx, "_backend")


class Context:
    """What a student's schedule is handed, live or recorded: n_chunks, n_buffers, n_streams, window_bytes,
    copy_in / launch / copy_out (k, pair, stream=None), synchronize() and stream_synchronize(stream), and, for
    lessons that allocate inside the loop, malloc / free (k, pair) and malloc_async / free_async (k, pair,
    stream=None): a pair's two device buffers (its input and output windows), k only labelling the call.

    Anything else (the host arrays, the streams, setting an attribute) is refused the same way everywhere: a
    graded schedule is the fixed sequence of calls it makes, and the grader replays that sequence.
    """

    __slots__ = ("_backend",)

    def __init__(self, backend: Any) -> None:
        object.__setattr__(self, "_backend", backend)

    def __getattribute__(self, name: str) -> Any:
        if name in INTERFACE:
            return getattr(_backend(self), name)
        if name in CALLS or (name.startswith("__") and name.endswith("__") and name != "__slots__"):
            return object.__getattribute__(self, name)
        raise NotAFixedSchedule(
            f"your schedule uses ctx.{name}, which schedules cannot: a schedule is the fixed sequence of "
            f"ctx.copy_in / ctx.launch / ctx.copy_out / ctx.synchronize / ctx.stream_synchronize calls it makes, "
            f"given only ctx.{', ctx.'.join(INTERFACE)}"
        )

    def __setattr__(self, name: str, value: Any) -> None:
        raise NotAFixedSchedule(f"your schedule sets ctx.{name}; a schedule only enqueues operations")

    def __delattr__(self, name: str) -> None:
        raise NotAFixedSchedule(f"your schedule deletes ctx.{name}; a schedule only enqueues operations")

    def __repr__(self) -> str:
        shape = [getattr(self, name) for name in INTERFACE]
        return "<pipeline context: {} chunks, {} buffer pairs, {} streams, {}-byte windows>".format(*shape)

    def _op(self, call: str, k: Any, pair: Any, stream: Any) -> None:
        values = [_integer(call, "chunk", k), _integer(call, "pair", pair)]
        getattr(_backend(self), call)(*values, stream=None if stream is None else _integer(call, "stream", stream))

    def copy_in(self, k: int, pair: int, stream: int | None = None) -> None:
        """Copy host chunk k into d_in[pair] (on the pair's stream, or `stream`)."""
        Context._op(self, "copy_in", k, pair, stream)

    def launch(self, k: int, pair: int, stream: int | None = None) -> None:
        """The kernel from d_in[pair] to d_out[pair] (k only labels it)."""
        Context._op(self, "launch", k, pair, stream)

    def copy_out(self, k: int, pair: int, stream: int | None = None) -> None:
        """Copy d_out[pair] into host chunk k."""
        Context._op(self, "copy_out", k, pair, stream)

    def synchronize(self) -> None:
        """The host waits for every stream."""
        _backend(self).synchronize()

    def stream_synchronize(self, stream: int) -> None:
        """The host waits for one stream."""
        _backend(self).stream_synchronize(_integer("stream_synchronize", "stream", stream))

    def malloc(self, k: int, pair: int) -> None:
        """cudaMalloc of pair's input and output buffers (k labels the call): the host blocks until it returns."""
        _backend(self).malloc(_integer("malloc", "chunk", k), _integer("malloc", "pair", pair))

    def free(self, k: int, pair: int) -> None:
        """cudaFree of pair's buffers: it waits for the whole device first (an implicit cudaDeviceSynchronize)."""
        _backend(self).free(_integer("free", "chunk", k), _integer("free", "pair", pair))

    def malloc_async(self, k: int, pair: int, stream: int | None = None) -> None:
        """cudaMallocAsync of pair's buffers, stream-ordered on the pair's stream (or `stream`)."""
        Context._op(self, "malloc_async", k, pair, stream)

    def free_async(self, k: int, pair: int, stream: int | None = None) -> None:
        """cudaFreeAsync of pair's buffers, stream-ordered on the pair's stream (or `stream`): the memory returns
        to the pool once the stream reaches the free, so every use must be ordered before it."""
        Context._op(self, "free_async", k, pair, stream)


class HostArrays:
    """The 'input' and 'output' host arrays a run shares across windows and depths."""

    def __init__(self, total_bytes: int, *, pinned: bool = True) -> None:
        import cupyx  # CuPy is optional: only a live run gets here

        n = total_bytes // 4
        alloc = cupyx.empty_pinned if pinned else np.empty
        with gpu_share():  # pinning a GiB is not timed, but it would disturb a neighbour's timed pass
            self.h_in: np.ndarray = alloc(n, dtype=np.float32)
            self.h_out: np.ndarray = alloc(n, dtype=np.float32)
        self.pinned = pinned

    def fill_random(self, seed: int) -> None:
        """Fresh uniform [0, 1) input from a seeded generator, drawn on the GPU (NumPy takes a third of a second
        per GiB, which every graded submission would pay several times)."""
        cp = cupy_or_none()
        with gpu_share():  # a GiB drawn on the GPU and copied across the link: never while a pass is timed
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
    """Real work on the GPU: n_buffers device pairs of window_bytes, and n_streams blocking streams.

    With allocated=False the pairs start without memory, and the schedule allocates and frees them (malloc, free,
    malloc_async, free_async). `allocator` says what serves those calls: "cuda", the runtime's cudaMalloc /
    cudaFree and cudaMallocAsync / cudaFreeAsync on the device's default memory pool; or "cupy", CuPy's own memory
    pool for every one of them (cupy.empty under the stream, and dropping the array to free it), which is what a
    CuPy program that allocates in its loop gets.
    """

    def __init__(
        self,
        host: HostArrays,
        window_bytes: int,
        n_buffers: int,
        fmas: int,
        *,
        n_streams: int | None = None,
        allocated: bool = True,
        allocator: str = "cuda",
    ) -> None:
        cp = cupy_or_none()
        if cp is None:
            raise RuntimeError("CupyContext needs a GPU")
        if allocator not in ("cuda", "cupy"):
            raise ValueError(f"allocator {allocator!r}: 'cuda' (the runtime's calls) or 'cupy' (CuPy's pool)")
        self._cp = cp
        self.host = host
        self.h_in, self.h_out = host.h_in, host.h_out
        self.window_bytes = window_bytes
        self.chunk_elems = window_bytes // 4
        self.n_chunks = self.h_in.size // self.chunk_elems
        self.n_buffers = n_buffers
        self.fmas = fmas
        self.allocator = allocator
        if allocated:
            with gpu_share():
                self.d_in = [cp.empty(self.chunk_elems, dtype=cp.float32) for _ in range(n_buffers)]
                self.d_out = [cp.empty(self.chunk_elems, dtype=cp.float32) for _ in range(n_buffers)]
        else:
            self.d_in, self.d_out = [None] * n_buffers, [None] * n_buffers
        self._owned: dict[int, tuple[int, int]] = {}  # pair -> the (input, output) pointers the runtime gave it
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
        """The CuPy stream an operation on `pair` goes to (IndexError for a stream the context does not have)."""
        index = pair if stream is None else stream
        if index == LEGACY:
            return self._cp.cuda.Stream.null
        if not 0 <= index < self.n_streams:  # a negative index would pick another stream from the end of the list
            raise IndexError(f"stream {index} does not exist; this context has streams 0..{self.n_streams - 1}")
        return self.streams[index]

    def _host_ptr(self, array: np.ndarray, k: int) -> int:
        return array.ctypes.data + k * self.window_bytes

    def _run(self, op: str, k: int, pair: int, stream: int | None) -> None:
        target = self.stream(pair, stream)
        if self.tracer is None:
            self._enqueue(op, k, pair, target)
        else:
            index = pair if stream is None else stream
            nbytes = 0 if op == "kernel" else self.window_bytes
            self.tracer.around(op, k, target, index, nbytes, pair, lambda: self._enqueue(op, k, pair, target))

    def _enqueue(self, op: str, k: int, pair: int, s: Any) -> None:
        """Chunk k's operation (h2d, kernel or d2h) on buffer pair `pair`, enqueued on the CuPy stream s."""
        if op == "kernel":
            launch_fma_chain(self.d_in[pair], self.d_out[pair], self.chunk_elems, self.fmas, s)
        elif op == "h2d":
            host = self._host_ptr(self.h_in, k)
            self._cp.cuda.runtime.memcpyAsync(self.d_in[pair].data.ptr, host, self.window_bytes, _H2D, s.ptr)
        else:
            host = self._host_ptr(self.h_out, k)
            self._cp.cuda.runtime.memcpyAsync(host, self.d_out[pair].data.ptr, self.window_bytes, _D2H, s.ptr)

    def copy_in(self, k: int, pair: int, stream: int | None = None) -> None:
        """Enqueue cudaMemcpyAsync of host chunk k into d_in[pair]."""
        self._run("h2d", k, pair, stream)

    def launch(self, k: int, pair: int, stream: int | None = None) -> None:
        """Enqueue the FMA kernel from d_in[pair] to d_out[pair] (k only labels the trace)."""
        self._run("kernel", k, pair, stream)

    def copy_out(self, k: int, pair: int, stream: int | None = None) -> None:
        """Enqueue cudaMemcpyAsync of d_out[pair] into host chunk k."""
        self._run("d2h", k, pair, stream)

    def synchronize(self) -> None:
        """cudaDeviceSynchronize: the host waits for every stream."""
        self._cp.cuda.Device().synchronize()

    def stream_synchronize(self, stream: int) -> None:
        """The host waits for one stream."""
        self.stream(0, stream).synchronize()

    # -- allocation inside the loop (allocated=False) ---------------------------------------------------------------
    def _allocation(self, kind: str, k: int, pair: int, stream: int | None) -> Any:
        """Report an allocation call to the tracer; the CuPy stream it goes to (None: a blocking call)."""
        if not 0 <= pair < self.n_buffers:
            raise IndexError(f"{kind}: pair {pair} does not exist; this context has pairs 0..{self.n_buffers - 1}")
        target = self.stream(pair, stream) if kind.endswith("_async") else None
        index = (pair if stream is None else stream) if target is not None else HOST
        allocation = getattr(self.tracer, "allocation", None)
        if allocation is not None:
            allocation(kind, k, pair, index)
        return target

    def _wrap(self, ptr: int) -> Any:
        """A CuPy array over device memory this context owns (the runtime's pointer; freed by the schedule)."""
        cp = self._cp
        memory = cp.cuda.UnownedMemory(ptr, self.window_bytes, self, cp.cuda.Device().id)
        return cp.ndarray((self.chunk_elems,), cp.float32, cp.cuda.MemoryPointer(memory, 0))

    def _taken(self, kind: str, k: int, pair: int) -> None:
        if self.d_in[pair] is not None:
            raise RuntimeError(f"{kind} of chunk {k}: pair {pair} is still allocated (its buffers would leak)")

    def _held(self, kind: str, k: int, pair: int) -> None:
        if self.d_in[pair] is None:
            raise RuntimeError(f"{kind} of chunk {k}: pair {pair} holds no allocation")

    def _keep(self, pair: int, d_in: Any, d_out: Any, pointers: tuple[int, int] | None) -> None:
        self.d_in[pair], self.d_out[pair] = d_in, d_out
        if pointers is None:
            self._owned.pop(pair, None)
        else:
            self._owned[pair] = pointers

    def malloc(self, k: int, pair: int) -> None:
        """cudaMalloc of the pair's two buffers (CuPy's pool: cupy.empty on the current stream)."""
        self._allocation("malloc", k, pair, None)
        if isinstance(self._cp, _StandIn):  # a recording (CupyContext.recorder): no device behind it
            return
        self._taken("malloc", k, pair)
        if self.allocator == "cupy":
            cp = self._cp
            self._keep(pair, cp.empty(self.chunk_elems, cp.float32), cp.empty(self.chunk_elems, cp.float32), None)
            return
        runtime = self._cp.cuda.runtime
        pointers = (runtime.malloc(self.window_bytes), runtime.malloc(self.window_bytes))
        self._keep(pair, *map(self._wrap, pointers), pointers)

    def free(self, k: int, pair: int) -> None:
        """cudaFree of the pair's two buffers, which first waits for the whole device."""
        self._allocation("free", k, pair, None)
        if isinstance(self._cp, _StandIn):  # a recording (CupyContext.recorder): no device behind it
            return
        self._held("free", k, pair)
        if self.allocator == "cupy":  # CuPy's pool takes the memory back for reuse; nothing waits
            self._keep(pair, None, None, None)
            return
        for ptr in self._owned[pair]:
            self._cp.cuda.runtime.free(ptr)
        self._keep(pair, None, None, None)

    def malloc_async(self, k: int, pair: int, stream: int | None = None) -> None:
        """cudaMallocAsync of the pair's buffers on its stream (or `stream`), from the device's default pool."""
        target = self._allocation("malloc_async", k, pair, stream)
        if isinstance(self._cp, _StandIn):  # a recording (CupyContext.recorder): no device behind it
            return
        self._taken("malloc_async", k, pair)
        if self.allocator == "cupy":  # CuPy's pool keeps a free list per stream: the stream current at the call
            cp = self._cp
            with target:
                d_in, d_out = cp.empty(self.chunk_elems, cp.float32), cp.empty(self.chunk_elems, cp.float32)
            self._keep(pair, d_in, d_out, None)
            return
        runtime = self._cp.cuda.runtime
        pointers = tuple(runtime.mallocAsync(self.window_bytes, target.ptr) for _ in range(2))
        self._keep(pair, *map(self._wrap, pointers), pointers)

    def free_async(self, k: int, pair: int, stream: int | None = None) -> None:
        """cudaFreeAsync of the pair's buffers on its stream (or `stream`): back to the pool when the stream gets
        there."""
        target = self._allocation("free_async", k, pair, stream)
        if isinstance(self._cp, _StandIn):  # a recording (CupyContext.recorder): no device behind it
            return
        self._held("free_async", k, pair)
        if self.allocator == "cupy":  # the arrays go back to CuPy's pool, on the stream they were allocated on
            self._keep(pair, None, None, None)
            return
        for ptr in self._owned[pair]:
            self._cp.cuda.runtime.freeAsync(ptr, target.ptr)
        self._keep(pair, None, None, None)

    def release_all(self) -> list[int]:
        """Free what a schedule left allocated (after the device is idle); the pairs it left, for a message."""
        left = [pair for pair in range(self.n_buffers) if self.d_in[pair] is not None]
        self._cp.cuda.Device().synchronize()
        for pair in left:
            if self.allocator == "cuda" and pair in self._owned:
                for ptr in self._owned[pair]:
                    self._cp.cuda.runtime.free(ptr)
            self._keep(pair, None, None, None)
        return left

    @classmethod
    def recorder(cls, n_chunks: int, n_buffers: int, n_streams: int, window_bytes: int, tracer: Any) -> CupyContext:
        """A genuine CupyContext whose device state is stand-ins and whose every call goes to `tracer` (as
        tracer.around(op, chunk, stream, index, nbytes, pair, enqueue), tracer.sync(), tracer.stream_sync(index)),
        not to a GPU: the second of the two recordings a graded trace needs (labcore.pipeline.trace.record).
        Allocation calls go to tracer.allocation(kind, chunk, pair, index) and allocate nothing."""
        ctx = object.__new__(cls)
        stand_in = _StandIn(tracer)
        ctx.__dict__.update(
            _cp=stand_in,
            host=stand_in,
            h_in=stand_in,
            h_out=stand_in,
            window_bytes=window_bytes,
            chunk_elems=window_bytes // 4,
            n_chunks=n_chunks,
            n_buffers=n_buffers,
            fmas=512,
            d_in=[stand_in] * n_buffers,
            d_out=[stand_in] * n_buffers,
            streams=[_StandInStream(i, tracer) for i in range(n_streams)],
            n_streams=n_streams,
            tracer=tracer,
            allocator="cuda",
            _owned={},
        )
        return ctx


class _StandIn:
    """CuPy, the device and host memory as far as a recording CupyContext reaches them: waits go to the tracer."""

    def __init__(self, tracer: Any) -> None:
        self.cuda = self
        self.Stream = self
        self.null = _StandInStream(LEGACY, tracer)
        self._tracer = tracer

    def Device(self) -> _StandIn:
        return self

    def synchronize(self) -> None:
        self._tracer.sync()


class _StandInStream:
    def __init__(self, index: int, tracer: Any) -> None:
        self.index, self._tracer = index, tracer

    def synchronize(self) -> None:
        self._tracer.stream_sync(self.index)
