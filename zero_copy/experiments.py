"""The dense experiments: link and HBM probes, streaming, break-even, access shape, mapped SAXPY, re-reads, and
day 54's job through mapped memory both ways.

Each one checks its output bit for bit against NumPy before it times anything,
and stores its plan (the record keys, with the model's time beside each) in
`record.extra[<name>]`. Kernels that read mapped memory get the buffer's
device view; the same kernels read HBM when given a CuPy array.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from functools import partial
from typing import Any

import numpy as np
import nvtx

from labcore.gpulock import gpu_turn
from labcore.pipeline.context import Context, CupyContext
from labcore.pipeline.kernel import DEFAULT_FMAS, launch_fma_chain
from labcore.pipeline.verify import bit_exact_check, verify_and_poison
from zero_copy import DOMAIN, model
from zero_copy.config import HBM_PROBE_BYTES, PROBE_BYTES, as_json
from zero_copy.harness import Lab
from zero_copy.kernel import launch_fma_chain_vec, launch_load_words, launch_reread, launch_saxpy
from zero_copy.mapped import MappedBuffer, MappingSupport, alloc_mapped, page_aligned_empty, register_mapped
from zero_copy.verify import closed_form_check, compare, expected_reread, fill_small_ints, poison

SCATTER_STRIDE = 0x9E3779B1  # odd, so i -> i*stride mod 2^k is a permutation that scatters each warp
NEAR_SHIFT_VEC = 32  # one warp's worth of float4: a re-read lands on a neighbouring warp's lines
SAXPY_A = 2.5


def _cupy() -> Any:
    import cupy  # optional: only a live run reaches here, and offline readers need not install CuPy

    return cupy


def _runtime() -> Any:
    return _cupy().cuda.runtime


def far_shift(n_vec: int, reads: int) -> int:
    """A shift (in float4, a multiple of 32) that puts a vector's `reads` loads a whole buffer apart in time."""
    return 0 if reads == 1 else max(32, n_vec // reads // 32 * 32)


def run_probes(lab: Lab) -> model.Rates:
    """Measure L (pinned copies each way) and H (a device-to-device copy), the model's inputs."""
    cp, rt = lab.cp, _runtime()
    plan = model.plan_probes()
    h2d_row, d2h_row, hbm_row = plan["rows"]
    with alloc_mapped(PROBE_BYTES) as h_buf:
        stream = h_buf.use(lab.stream())
        d_buf = cp.empty(PROBE_BYTES, dtype=np.uint8)
        h2d = lab.time(
            partial(rt.memcpyAsync, d_buf.data.ptr, h_buf.host_ptr, PROBE_BYTES, rt.memcpyHostToDevice, stream.ptr),
            h2d_row,
            name="probe",
        )
        d2h = lab.time(
            partial(rt.memcpyAsync, h_buf.host_ptr, d_buf.data.ptr, PROBE_BYTES, rt.memcpyDeviceToHost, stream.ptr),
            d2h_row,
            name="probe",
        )
    d_src = cp.zeros(HBM_PROBE_BYTES, dtype=np.uint8)
    d_dst = cp.empty_like(d_src)
    hbm = lab.time(
        partial(rt.memcpyAsync, d_dst.data.ptr, d_src.data.ptr, HBM_PROBE_BYTES, rt.memcpyDeviceToDevice, stream.ptr),
        hbm_row,
        name="probe",
    )
    rates = model.Rates(h2d.gbps(), d2h.gbps(), hbm.gbps())
    lab.record.extra["probes"] = {**as_json(plan), "rates": dataclasses.asdict(rates)}
    return rates


def _copy_then_kernel(h_ptr: int, d_in: Any, d_out: Any, nbytes: int, reads: int, shift: int, stream: Any) -> None:
    rt = _runtime()
    rt.memcpyAsync(d_in.data.ptr, h_ptr, nbytes, rt.memcpyHostToDevice, stream.ptr)
    launch_reread(d_in, d_out, nbytes // 16, reads, shift, stream)


def _pipeline(h_ptr: int, d_in: Any, d_out: Any, nbytes: int, chunk: int, streams: list[Any]) -> None:
    """Chunk k: copy in, then kernel, on stream k % n; each chunk has its own device range, so nothing races."""
    rt = _runtime()
    for k, offset in enumerate(range(0, nbytes, chunk)):
        size, stream = min(chunk, nbytes - offset), streams[k % len(streams)]
        rt.memcpyAsync(d_in.data.ptr + offset, h_ptr + offset, size, rt.memcpyHostToDevice, stream.ptr)
        lo, hi = offset // 4, (offset + size) // 4
        launch_reread(d_in[lo:hi], d_out[lo:hi], size // 16, 1, 0, stream)


def run_streaming(lab: Lab, rates: model.Rates, support: MappingSupport) -> None:
    """Read B once: zero-copy (plain and write-combined) vs copy then kernel vs the chunked pipeline."""
    cfg, cp = lab.config, lab.cp
    plan = model.plan_streaming(cfg, rates)
    nbytes, n = cfg.stream_bytes, cfg.stream_bytes // 4
    with alloc_mapped(n, np.float32) as h_in, alloc_mapped(n, np.float32, write_combined=True) as h_wc:
        lab.progress("filling the streaming input")
        fill_small_ints(h_in.h, cfg.seed)
        np.copyto(h_wc.h, h_in.h)  # sequential CPU writes are what write-combined pages are for
        streams = [lab.stream() for _ in range(cfg.n_streams)]
        for stream in streams:
            h_in.use(stream)
            h_wc.use(stream)
        d_in, d_out = cp.empty(n, dtype=np.float32), cp.empty(n, dtype=np.float32)
        enqueue = {
            "zero-copy": partial(launch_reread, h_in.d, d_out, n // 4, 1, 0, streams[0]),
            "zero-copy-wc": partial(launch_reread, h_wc.d, d_out, n // 4, 1, 0, streams[0]),
            "copy-then-kernel": partial(_copy_then_kernel, h_in.host_ptr, d_in, d_out, nbytes, 1, 0, streams[0]),
            "pipeline": partial(_pipeline, h_in.host_ptr, d_in, d_out, nbytes, cfg.chunk_bytes, streams),
        }
        for row in plan["rows"]:
            fn = enqueue[row.key.path]
            lab.check_run(f"streaming {row.key.path}", fn, d_out, h_in.h)
            lab.time(fn, row, name="streaming")
    lab.record.extra["streaming"] = as_json(plan)


def run_breakeven(lab: Lab, rates: model.Rates, support: MappingSupport) -> None:
    """Each r: a kernel reads every byte r times, from mapped memory or after one copy to HBM."""
    cfg, cp = lab.config, lab.cp
    plan = model.plan_breakeven(cfg, rates)
    nbytes, n = cfg.buffer_bytes, cfg.buffer_bytes // 4
    with alloc_mapped(n, np.float32) as h_in:
        fill_small_ints(h_in.h, cfg.seed + 1)
        stream = h_in.use(lab.stream())
        d_in, d_out = cp.empty(n, dtype=np.float32), cp.empty(n, dtype=np.float32)
        for row in plan["rows"]:
            reads = row["reads"]
            shift = row["shift_vec"] = far_shift(n // 4, reads)
            lab.progress(f"reference for r={reads}")
            expected = expected_reread(h_in.h, reads, 4 * shift)
            paths = (
                ("zero-copy", partial(launch_reread, h_in.d, d_out, n // 4, reads, shift, stream)),
                ("copy", partial(_copy_then_kernel, h_in.host_ptr, d_in, d_out, nbytes, reads, shift, stream)),
            )
            for path, fn in paths:
                lab.check_run(f"breakeven {path} r={reads}", fn, d_out, expected)
                lab.time(
                    fn,
                    row["zero_copy" if path == "zero-copy" else "copy"],
                    name=f"breakeven {path}",
                    params={"reads": reads, "shift_vec": shift},
                )
    if plan["crossover_model"] == float("inf"):
        plan["crossover_model"] = None
    lab.record.extra["breakeven"] = as_json(plan)


def run_access(lab: Lab, rates: model.Rates, support: MappingSupport) -> None:
    """4-byte loads over the link, coalesced vs scattered; achieved GB/s counts the useful bytes."""
    cfg, cp = lab.config, lab.cp
    plan = model.plan_access(cfg, rates)
    n_words = cfg.buffer_bytes // 4
    with alloc_mapped(n_words, np.uint32) as h_in:
        h_in.h[:] = np.random.default_rng(cfg.seed + 2).integers(0, 2**32, size=n_words, dtype=np.uint32)
        stream = h_in.use(lab.stream())
        d_out = cp.empty(n_words, dtype=np.uint32)
        for i, row in enumerate(plan["rows"]):
            stride = 1 if row.key.path == "coalesced" else SCATTER_STRIDE
            row = plan["rows"][i] = row.with_params(stride=stride)
            index = (np.arange(n_words, dtype=np.uint64) * np.uint64(stride)) & np.uint64(n_words - 1)
            fn = partial(launch_load_words, h_in.d, d_out, n_words, stride, stream)
            lab.check_run(f"access {row.key.path}", fn, d_out, h_in.h[index])
            lab.time(fn, row, name="access")
    lab.record.extra["access"] = as_json(plan)


def _saxpy_sync(x_ptr: int, y_ptr: int, out_ptr: int, d_x: Any, d_y: Any, d_out: Any, nbytes: int) -> None:
    """cudaMemcpy in (the host waits for each), kernel, cudaMemcpy out: nothing overlaps."""
    rt = _runtime()
    rt.memcpy(d_x.data.ptr, x_ptr, nbytes, rt.memcpyHostToDevice)
    rt.memcpy(d_y.data.ptr, y_ptr, nbytes, rt.memcpyHostToDevice)
    launch_saxpy(d_x, d_y, d_out, SAXPY_A, nbytes // 4, _cupy().cuda.Stream.null)
    rt.memcpy(out_ptr, d_out.data.ptr, nbytes, rt.memcpyDeviceToHost)


def _saxpy_async(
    x_ptr: int, y_ptr: int, out_ptr: int, d_x: Any, d_y: Any, d_out: Any, nbytes: int, chunk: int, streams: list[Any]
) -> None:
    """Chunk k on stream k % n: copy x and y in, kernel, copy out; chunks overlap across streams."""
    rt = _runtime()
    for k, offset in enumerate(range(0, nbytes, chunk)):
        size, stream = min(chunk, nbytes - offset), streams[k % len(streams)]
        for h_ptr, d_arr in ((x_ptr, d_x), (y_ptr, d_y)):
            rt.memcpyAsync(d_arr.data.ptr + offset, h_ptr + offset, size, rt.memcpyHostToDevice, stream.ptr)
        lo, hi = offset // 4, (offset + size) // 4
        launch_saxpy(d_x[lo:hi], d_y[lo:hi], d_out[lo:hi], SAXPY_A, size // 4, stream)
        rt.memcpyAsync(out_ptr + offset, d_out.data.ptr + offset, size, rt.memcpyDeviceToHost, stream.ptr)


def run_saxpy(lab: Lab, rates: model.Rates, support: MappingSupport) -> None:
    """a·x + y with x, y registered from NumPy and the result in mapped memory, against two copy schedules."""
    cfg, cp = lab.config, lab.cp
    plan = model.plan_saxpy(cfg, rates)
    nbytes, n = cfg.saxpy_bytes, cfg.saxpy_bytes // 4
    rng = np.random.default_rng(cfg.seed + 3)
    h_x, h_y = page_aligned_empty(n, np.float32), page_aligned_empty(n, np.float32)
    rng.random(out=h_x, dtype=np.float32)
    rng.random(out=h_y, dtype=np.float32)
    expected = np.float32(SAXPY_A) * h_x + h_y
    lab.progress("registering x and y")
    with contextlib.ExitStack() as registered:
        with gpu_turn():  # the registration is timed: a neighbour pinning or copying at once would slow it
            t0 = time.perf_counter()
            x = registered.enter_context(register_mapped(h_x, read_only=support.host_register_read_only))
            y = registered.enter_context(register_mapped(h_y, read_only=support.host_register_read_only))
            plan["register_ms"] = (time.perf_counter() - t0) * 1e3
        plan["read_only"] = support.host_register_read_only
        support.registered_pointers_equal = x.pointers_equal and y.pointers_equal
        with alloc_mapped(n, np.float32) as out:
            streams = [lab.stream() for _ in range(cfg.n_streams)]
            for stream in streams:
                for buf in (x, y, out):
                    buf.use(stream)
            d_x, d_y, d_out = (cp.empty(n, dtype=np.float32) for _ in range(3))
            enqueue = {
                "mapped": partial(launch_saxpy, x.d, y.d, out.d, SAXPY_A, n, streams[0]),
                "sync-copies": partial(_saxpy_sync, x.host_ptr, y.host_ptr, out.host_ptr, d_x, d_y, d_out, nbytes),
                "async-copies": partial(
                    _saxpy_async,
                    x.host_ptr,
                    y.host_ptr,
                    out.host_ptr,
                    d_x,
                    d_y,
                    d_out,
                    nbytes,
                    cfg.chunk_bytes,
                    streams,
                ),
            }
            for row in plan["rows"]:
                fn = enqueue[row.key.path]
                _check_saxpy(lab, row.key.path, fn, out.h, expected)
                lab.time(fn, row, name="saxpy")
    lab.record.extra["saxpy"] = as_json(plan)


def _check_saxpy(lab: Lab, path: str, fn: Any, h_out: np.ndarray, expected: np.ndarray) -> None:
    """The result lands in host memory: poison it there, run once, compare."""
    h_out.fill(np.nan)
    with gpu_turn():  # untimed, but it would disturb a neighbour's timed pass
        lab.sync()
        fn()
        lab.sync()
    lab.check(f"saxpy {path}", *compare(h_out, expected))


def run_reread(lab: Lab, rates: model.Rates, support: MappingSupport) -> None:
    """The failure mode: a loop that re-reads its input k times, from mapped memory and from HBM."""
    cfg, cp = lab.config, lab.cp
    plan = model.plan_reread(cfg, rates)
    nbytes, n, k = cfg.buffer_bytes, cfg.buffer_bytes // 4, cfg.reread_k
    with alloc_mapped(n, np.float32) as h_in:
        fill_small_ints(h_in.h, cfg.seed + 4)
        stream = h_in.use(lab.stream())
        d_in, d_out = cp.empty(n, dtype=np.float32), cp.empty(n, dtype=np.float32)
        rt = _runtime()
        with gpu_turn():
            rt.memcpy(d_in.data.ptr, h_in.host_ptr, nbytes, rt.memcpyHostToDevice)
        references: dict[int, np.ndarray] = {}
        for i, row in enumerate(plan["rows"]):
            spacing, memory = row.params["spacing"], row.params["memory"]
            shift = far_shift(n // 4, k) if spacing == "far" else NEAR_SHIFT_VEC
            row = plan["rows"][i] = row.with_params(shift_vec=shift)
            if shift not in references:
                lab.progress(f"reference for {spacing} re-reads")
                references[shift] = expected_reread(h_in.h, k, 4 * shift)
            source = h_in.d if memory == "mapped" else d_in
            fn = partial(launch_reread, source, d_out, n // 4, k, shift, stream)
            lab.check_run(f"reread {spacing} {memory}", fn, d_out, references[shift])
            lab.time(fn, row, name="reread")
    lab.record.extra["reread"] = as_json(plan)


# -- day 54's job through mapped memory both ways -----------------------------------------------------------------


@dataclasses.dataclass
class _HostPair:
    """Mapped input and output as a CupyContext's host arrays (it reads `h_in` and `h_out`, nothing else)."""

    h_in: np.ndarray
    h_out: np.ndarray


def pipeline_order(n_chunks: int, n_buffers: int) -> list[tuple[int, int]]:
    """(chunk, buffer pair) in the order day 54's double-buffered pipeline enqueues them: chunk k on pair
    k mod n_buffers, whose own stream orders the uses of the pair by one chunk and the next."""
    return [(k, k % n_buffers) for k in range(n_chunks)]


def pipelined(ctx: Any) -> None:
    """Day 54's double-buffered pipeline, written out here (a lesson imports no other lesson): each chunk copied in,
    computed and copied out on its pair (`pipeline_order`) and that pair's stream.

    It runs this lesson's measurement on a CupyContext (or, in tests, the recording fake), never on the `Context`
    that day 54 hands a student's schedule: writing that schedule is day 54's exercise.
    """
    if isinstance(ctx, Context):
        raise TypeError(
            "zero_copy.experiments.pipelined is the zero-copy lesson's measurement, not an answer to day 54's "
            "exercise: write your own schedule"
        )
    for k, pair in pipeline_order(ctx.n_chunks, ctx.n_buffers):
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)


def _duplex(d_in: Any, d_out: Any, h_in_ptr: int, h_out_ptr: int, nbytes: int, up: Any, down: Any) -> None:
    """The link floor: one copy of B in on `up` while one copy of B out runs on `down`."""
    rt = _runtime()
    rt.memcpyAsync(d_in.data.ptr, h_in_ptr, nbytes, rt.memcpyHostToDevice, up.ptr)
    rt.memcpyAsync(h_out_ptr, d_out.data.ptr, nbytes, rt.memcpyDeviceToHost, down.ptr)


def _fill_uniform(h_out: np.ndarray, seed: int) -> None:
    """Uniform [0, 1) floats like day 54's input, drawn on the GPU (NumPy takes a third of a second per GiB)."""
    cp = _cupy()
    cp.random.default_rng(seed).random(h_out.size, dtype=cp.float32).get(out=h_out)


def _check_both_ways(lab: Lab, label: str, fn: Any, h_out: MappedBuffer, expected: Any, chunk_elems: int) -> None:
    """Poison the mapped output, run once, and compare it on the GPU with day 54's naive output, bit for bit, chunk
    by chunk (the first bad chunk is named); the pass leaves the output poisoned."""
    with gpu_turn():  # untimed, but it would disturb a neighbour's timed pass
        poison(h_out.d)
        lab.sync()
        with nvtx.annotate(f"check both_ways {label}", domain=DOMAIN):
            fn()
            lab.sync()
        bad = verify_and_poison(h_out.d, expected, chunk_elems)
    lab.record.checks.append(bit_exact_check(f"both_ways {label}", bad, h_out.nbytes // 4 // chunk_elems))


def run_both_ways(lab: Lab, rates: model.Rates, support: MappingSupport) -> None:
    """Day 54's job with mapped input and output (the kernel's own loads and stores cross the link) at each grid,
    against day 54's pipeline and the duplex link floor, timed in alternating rounds; every output first checked
    bit for bit against day 54's naive one, which is checked against the float64 closed form."""
    cfg, cp, rt = lab.config, lab.cp, _runtime()
    sm_count = int(cp.cuda.Device().attributes["MultiProcessorCount"])
    plan = model.plan_both_ways(cfg, rates, sm_count)
    nbytes, n, chunk_elems = cfg.both_bytes, cfg.both_bytes // 4, cfg.both_chunk_bytes // 4
    with alloc_mapped(n, np.float32) as h_in, alloc_mapped(n, np.float32) as h_out:
        lab.progress("filling day 54's input")
        _fill_uniform(h_in.h, cfg.seed + 5)
        ctx = CupyContext(_HostPair(h_in.h, h_out.h), cfg.both_chunk_bytes, cfg.both_buffers, DEFAULT_FMAS)
        streams = [*ctx.streams, *(lab.stream() for _ in range(2 - ctx.n_streams))]
        for stream in streams:
            h_in.use(stream)
            h_out.use(stream)
        d_in, d_out = cp.empty(n, dtype=np.float32), cp.empty(n, dtype=np.float32)
        lab.progress("day 54's naive output and its closed form")
        with gpu_turn():
            rt.memcpy(d_in.data.ptr, h_in.host_ptr, nbytes, rt.memcpyHostToDevice)
            expected = cp.empty_like(d_in)  # day 54's naive output: the whole input through its kernel, one launch
            launch_fma_chain(d_in, expected, n, DEFAULT_FMAS, cp.cuda.Stream.null)
            lab.sync()
            lab.check(
                "both_ways naive vs float64 closed form",
                *closed_form_check(d_in, expected, DEFAULT_FMAS, chunk_elems),
            )
        passes = []
        for row in plan["rows"]:
            path = row.key.path
            if path == "mapped":
                blocks = row.params["blocks"]
                fn = partial(launch_fma_chain_vec, h_in.d, h_out.d, n // 4, DEFAULT_FMAS, blocks, streams[0])
                _check_both_ways(lab, f"mapped blocks={blocks}", fn, h_out, expected, chunk_elems)
            elif path == "pipeline":
                fn = partial(pipelined, ctx)
                _check_both_ways(lab, "pipeline", fn, h_out, expected, chunk_elems)
            else:
                fn = partial(_duplex, d_in, d_out, h_in.host_ptr, h_out.host_ptr, nbytes, streams[0], streams[1])
            passes.append((fn, row))
        lab.time_rounds(passes, name="both_ways")
    lab.record.extra["both_ways"] = as_json(plan)
