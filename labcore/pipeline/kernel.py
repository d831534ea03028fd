"""The FMA-chain kernel (a CuPy RawKernel) and its float64 closed form."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

KERNEL_PATH = Path(__file__).with_name("kernels") / "fma_chain.cu"
DEFAULT_FMAS = 512
THREADS_PER_BLOCK = 256
# a = 1 - 2**-10 and b = 2**-10 are exact in float32, and b / (1 - a) = 1, so the
# chain contracts every input towards 1 and never overflows, whatever `fmas` is.
FMA_A = np.float32(1.0 - 2.0**-10)
FMA_B = np.float32(2.0**-10)


@functools.cache
def fma_kernel() -> Any:
    """Compile the kernel once per process (CuPy caches the binary on disk too)."""
    import cupy  # CuPy is optional: only a live run gets here

    return cupy.RawKernel(KERNEL_PATH.read_text(), "fma_chain")


def launch_fma_chain(d_in: Any, d_out: Any, n_elems: int, fmas: int, stream: Any) -> None:
    """Enqueue the kernel over n_elems floats on `stream`."""
    blocks = (n_elems + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK
    fma_kernel()(
        (blocks,), (THREADS_PER_BLOCK,), (d_in, d_out, np.int64(n_elems), np.int32(fmas), FMA_A, FMA_B), stream=stream
    )


def closed_form(x: np.ndarray, fmas: int) -> np.ndarray:
    """What `fmas` chained x*a+b steps give, in float64: a^n x + b (1 - a^n) / (1 - a)."""
    a, b = float(FMA_A), float(FMA_B)
    a_n = a**fmas
    return a_n * x.astype(np.float64) + b * (1.0 - a_n) / (1.0 - a)


def tolerance(fmas: int) -> float:
    """Absolute error bound of the float32 chain: one rounding of at most 2^-24 of |x| <= 1 per step."""
    return (fmas + 1) * 2.0**-24 + 2.0**-24
