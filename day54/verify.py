"""Correctness before timing: naive against the float64 closed form, every other schedule bit for bit against naive."""

from __future__ import annotations

import numpy as np

from day54.kernel import closed_form, tolerance
from labcore.record import Check


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
    bad = bad_chunks(out, reference, chunk_elems)
    if bad.size:
        return Check(
            name,
            False,
            f"{bad.size} of {out.size // chunk_elems} chunks differ from naive; first bad chunk {int(bad[0])}",
            first_bad_chunk=int(bad[0]),
        )
    return Check(name, True, f"all {out.size // chunk_elems} chunks bit-identical to naive")
