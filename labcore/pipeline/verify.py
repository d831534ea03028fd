"""Correctness before timing: naive against the float64 closed form, every other schedule bit for bit against naive."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from labcore.device import cupy_or_none
from labcore.pipeline.kernel import closed_form, tolerance
from labcore.record import Check

NAN_BITS = 0x7FC00000  # the float32 NaN that poison writes


def bad_chunks(out: np.ndarray, reference: np.ndarray, chunk_elems: int) -> np.ndarray:
    """Indices of chunks where `out` differs from `reference` in any bit (NaN poison included). NumPy or CuPy
    arrays alike (NumPy's functions hand CuPy arrays to CuPy): the checker compares on the GPU."""
    differ = out.view(np.uint32).reshape(-1, chunk_elems) != reference.view(np.uint32).reshape(-1, chunk_elems)
    return np.flatnonzero(differ.any(axis=1))


def check_closed_form(h_in: np.ndarray, h_out: np.ndarray, fmas: int, chunk_elems: int) -> Check:
    """Naive output against the float64 closed form, chunk by chunk."""
    tol = tolerance(fmas)
    worst = 0.0
    for k in range(h_in.size // chunk_elems):
        part = slice(k * chunk_elems, (k + 1) * chunk_elems)
        error = np.abs(h_out[part].astype(np.float64) - closed_form(h_in[part], fmas))
        err = float(np.max(error)) if np.all(np.isfinite(error)) else float("inf")
        if err > tol:
            return Check(
                "naive vs float64 closed form",
                False,
                f"chunk {k}: max error {err:.3g} > tolerance {tol:.3g}",
                first_bad_chunk=k,
            )
        worst = max(worst, err)
    return Check("naive vs float64 closed form", True, f"max error {worst:.3g} <= tolerance {tol:.3g}")


def check_bit_exact(name: str, out: np.ndarray, reference: np.ndarray, chunk_elems: int) -> Check:
    """A schedule's output against naive's, bit for bit."""
    return bit_exact_check(name, bad_chunks(out, reference, chunk_elems), out.size // chunk_elems)


@functools.cache
def _verify_and_poison_kernel() -> Any:
    cp = cupy_or_none()
    return cp.ElementwiseKernel(
        "uint32 expected, int64 chunk_elems",
        "uint32 out, raw int32 bad",
        f"if (out != expected) bad[i / chunk_elems] = 1; out = {NAN_BITS}u;",
        "day54_verify_and_poison",
    )


def verify_and_poison(out: Any, reference: Any, chunk_elems: int) -> np.ndarray:
    """On the GPU, in one pass: which chunks of `out` differ from `reference` in any bit, and then NaN in every
    element of `out`, ready for the next run. With `out` in pinned host memory the pass reads and writes across
    the link at once (about as long as the poison alone), where comparing then poisoning took two passes."""
    cp = cupy_or_none()
    n_chunks = out.size // chunk_elems
    bad = cp.zeros(n_chunks, dtype=cp.int32)
    _verify_and_poison_kernel()(reference.view(cp.uint32), chunk_elems, out.view(cp.uint32), bad)
    return cp.flatnonzero(bad).get()


def bit_exact_check(name: str, bad: np.ndarray, n_chunks: int) -> Check:
    """The Check for a list of differing chunks (from verify_and_poison)."""
    if bad.size:
        return Check(
            name,
            False,
            f"{bad.size} of {n_chunks} chunks differ from naive; first bad chunk {int(bad[0])}",
            first_bad_chunk=int(bad[0]),
        )
    return Check(name, True, f"all {n_chunks} chunks bit-identical to naive")
