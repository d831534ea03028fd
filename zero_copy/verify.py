"""Correctness before timing: outputs against references bit for bit, poison first, and the references themselves.

Every experiment poisons its output, runs once, and compares what came back
with a NumPy reference; only then is it timed. The inputs are small whole
numbers stored as float32, so sums of a few of them are exact and a kernel's
result equals its reference in every bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from labcore.pipeline.kernel import closed_form, tolerance


def poison(array: Any) -> None:
    """NaN (floats) or all ones (integers), so a value nobody wrote cannot pass a check."""
    array.fill(np.nan if array.dtype.kind == "f" else np.iinfo(array.dtype).max)


def compare(got: np.ndarray, expected: np.ndarray) -> tuple[bool, str]:
    """(ok, detail): bit-exact equality, or the first differing element."""
    if got.shape != expected.shape:
        return False, f"shape {got.shape}, expected {expected.shape}"
    got_bits, want_bits = _bits(got).reshape(-1), _bits(expected).reshape(-1)
    if np.array_equal(got_bits, want_bits):
        return True, f"bit-exact, {got.size:,} values"
    first = int(np.flatnonzero(got_bits != want_bits)[0])
    bad = int(np.count_nonzero(got_bits != want_bits))
    return False, (
        f"{bad:,} of {got.size:,} values differ; first at flat index {first}: "
        f"got {got.reshape(-1)[first]!r}, expected {expected.reshape(-1)[first]!r}"
    )


def _bits(array: np.ndarray) -> np.ndarray:
    return array.view(f"u{array.dtype.itemsize}") if array.dtype.kind == "f" else array


def fill_small_ints(h_out: np.ndarray, seed: int) -> None:
    """Random whole numbers 0..255 as float32: sums of a few stay exact, so references match bit for bit."""
    rng = np.random.default_rng(seed)
    step = 1 << 26
    flat = h_out.reshape(-1)
    for start in range(0, flat.size, step):
        part = flat[start : start + step]
        part[:] = rng.integers(0, 256, size=part.size, dtype=np.uint8)


def expected_reread(h_in: np.ndarray, reads: int, shift: int) -> np.ndarray:
    """out[i] = sum over j < reads of in[(i + j*shift) mod n], summed in the kernel's order (float32)."""
    n = h_in.size
    acc = np.zeros_like(h_in)
    for j in range(reads):
        s = (j * shift) % n
        acc[: n - s] += h_in[s:]
        if s:
            acc[n - s :] += h_in[:s]
    return acc


def closed_form_check(x: Any, out: Any, fmas: int, chunk_elems: int) -> tuple[bool, str]:
    """(ok, detail): every output of day 54's FMA chain within the float32 chain's error bound of the float64
    closed form, chunk by chunk, the first chunk past it named. NumPy or CuPy arrays alike (on the device for the
    1 GiB runs: one chunk's float64 temporaries at a time)."""
    tol = tolerance(fmas)
    worst = 0.0
    for k in range(out.size // chunk_elems):
        part = slice(k * chunk_elems, (k + 1) * chunk_elems)
        err = float(abs(out[part].astype(np.float64) - closed_form(x[part], fmas)).max())
        if not err <= tol:  # NaN (a value nobody wrote) fails too
            return False, f"chunk {k}: max error {err:.3g} > tolerance {tol:.3g}"
        worst = max(worst, err)
    return True, f"max error {worst:.3g} <= tolerance {tol:.3g}, {out.size:,} values"


def mix32(index: np.ndarray, seed: int) -> np.ndarray:
    """The fill kernel's hash in NumPy: splitmix64's finaliser of (index + seed), low 32 bits."""
    x = index.astype(np.uint64) + np.uint64(seed)
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x.astype(np.uint32)


def round_ok(result: dict[str, Any]) -> bool:
    """A mailbox round passed: payload exact, read while the stream was busy, and the kernel finished because
    the host released it."""
    return bool(result["payload_ok"] and result["running_when_read"] and result["acked"] and not result["timed_out"])
