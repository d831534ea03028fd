"""The lesson's kernels (kernels/zero_copy.cu, one CuPy RawModule) and how each is launched."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from labcore.answers import reference
from labcore.pipeline.kernel import FMA_A, FMA_B
from zero_copy.config import VECTOR_BYTES

KERNEL_PATH = Path(__file__).with_name("kernels") / "zero_copy.cu"
THREADS = 256
FILL_BLOCKS = 4096

# The mailbox: int32 words in mapped memory. The kernel gets the same numbers as -D options.
MAILBOX = {
    "FLAG": 0,
    "RELEASE": 1,
    "ACK": 2,
    "TIMED_OUT": 3,
    "PAYLOAD": 4,
    "PAYLOAD_WORDS": 4,
    "T_PUBLISH": 8,
    "T_RELEASED": 10,
}
MAILBOX_WORDS = 16
PUBLISH_THREADS = 32  # publish_and_wait runs one block of these; thread 0 of block 0 publishes


def compile_options() -> tuple[str, ...]:
    """NVRTC options: the mailbox layout as MB_* macros."""
    return tuple(f"-DMB_{name}={value}" for name, value in MAILBOX.items())


@functools.cache
def module() -> Any:
    """Compile the kernels once per process (CuPy also caches the binary on disk)."""
    import cupy  # optional: only a live run compiles, and offline readers need not install CuPy

    return cupy.RawModule(code=KERNEL_PATH.read_text(), options=compile_options())


def _blocks(n_threads: int) -> int:
    return max(1, (n_threads + THREADS - 1) // THREADS)


def launch_reread(d_in: Any, d_out: Any, n_vec: int, reads: int, shift_vec: int, stream: Any) -> None:
    """out[i] = sum of `reads` float4 loads, `shift_vec` vectors apart (modulo n_vec)."""
    module().get_function("reread")(
        (_blocks(n_vec),),
        (THREADS,),
        (d_in, d_out, np.int64(n_vec), np.int32(reads), np.int64(shift_vec)),
        stream=stream,
    )


def launch_load_words(d_in: Any, d_out: Any, n_words: int, stride: int, stream: Any) -> None:
    """out[i] = in[(i * stride) mod n_words]; n_words a power of two."""
    module().get_function("load_words")(
        (_blocks(n_words),), (THREADS,), (d_in, d_out, np.int64(n_words), np.uint64(stride)), stream=stream
    )


@reference
def gather_grid(n_rows: int) -> tuple[int, int]:
    """(threads per block, blocks) for gather_rows: one whole warp per row and no block without a row.

    The gather exercise's launch configuration, withheld from students' code while grading.
    """
    return THREADS, _blocks(32 * n_rows)


def launch_gather_rows(d_table: Any, d_ids: Any, n_ids: int, row_bytes: int, d_out: Any, stream: Any) -> None:
    """One warp per id: copy row ids[w] of the table into row w of out."""
    gather_rows_with(d_table, d_ids, n_ids, row_bytes, d_out, *gather_grid(n_ids), stream)


def gather_rows_with(
    d_table: Any, d_ids: Any, n_ids: int, row_bytes: int, d_out: Any, threads: int, blocks: int, stream: Any
) -> None:
    """Launch gather_rows with a grid of the caller's choosing (launch_gather_rows picks its own)."""
    module().get_function("gather_rows")(
        (int(blocks),),
        (int(threads),),
        (d_table, d_ids, np.int32(n_ids), np.int32(row_bytes // VECTOR_BYTES), d_out),
        stream=stream,
    )


def launch_fill_words(d_out: Any, n_words: int, seed: int, stream: Any) -> None:
    """Fill n_words uint32 with the hash of (i + seed) that zero_copy.verify.mix32 computes on the CPU."""
    module().get_function("fill_words")(
        (min(FILL_BLOCKS, _blocks(n_words)),), (THREADS,), (d_out, np.int64(n_words), np.uint64(seed)), stream=stream
    )


def launch_publish_and_wait(d_box: Any, round_no: int, timeout_ns: int, stream: Any, kernel: Any = None) -> None:
    """One thread: payload, system fence, flag, then spin until the host releases it. `kernel` is another
    compiled kernel of the same signature (the mailbox exercise's); by default the lesson's publish_and_wait."""
    if kernel is None:
        kernel = module().get_function("publish_and_wait")
    kernel((1,), (PUBLISH_THREADS,), (d_box, np.int32(round_no), np.int64(timeout_ns)), stream=stream)


def launch_saxpy(d_x: Any, d_y: Any, d_out: Any, a: float, n_floats: int, stream: Any) -> None:
    """out = a*x + y over n_floats (a multiple of 4)."""
    n_vec = n_floats // 4
    module().get_function("saxpy")(
        (_blocks(n_vec),), (THREADS,), (d_x, d_y, d_out, np.float32(a), np.int64(n_vec)), stream=stream
    )


def launch_fma_chain_vec(d_in: Any, d_out: Any, n_vec: int, fmas: int, blocks: int, stream: Any) -> None:
    """Day 54's FMA chain over n_vec float4 with `blocks` blocks striding the whole array (any grid gives the same
    bits: each float's chain is the same whoever runs it)."""
    module().get_function("fma_chain_vec")(
        (int(blocks),), (THREADS,), (d_in, d_out, np.int64(n_vec), np.int32(fmas), FMA_A, FMA_B), stream=stream
    )
