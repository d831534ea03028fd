"""What every experiment shares: the config, the record it fills, streams, checks and timing."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from labcore.device import cupy_or_none
from labcore.record import Check, PassTimes, Record
from zero_copy import DOMAIN
from zero_copy.config import Config, Planned


@dataclasses.dataclass
class Lab:
    """The live run's state; each experiment adds passes, checks and its `extra` section to `record`."""

    config: Config
    record: Record
    progress: Callable[[str], None] = lambda message: None

    @property
    def cp(self) -> Any:
        cp = cupy_or_none()
        if cp is None:
            raise RuntimeError("the live experiments need a GPU")
        return cp

    def stream(self) -> Any:
        """A blocking worker stream: the legacy-stream events of the timing wait for it."""
        return self.cp.cuda.Stream(non_blocking=False)

    def sync(self) -> None:
        self.cp.cuda.Device().synchronize()

    def time(self, fn: Callable[[], Any], row: Planned, *, name: str, params: dict[str, Any] | None = None,
             before: Callable[[], Any] | None = None, repeats: int | None = None,
             warmup: int | None = None) -> PassTimes:
        """Time `fn` with legacy-stream events in NVTX ranges named by the row's key; add it to the record."""
        from labcore.timing import time_pass

        key = str(row.key)
        self.progress(key)
        found = time_pass(fn, key=key, name=name, params={**row.params, **(params or {})}, domain=DOMAIN,
                          repeats=self.config.repeats if repeats is None else repeats,
                          warmup=self.config.warmup if warmup is None else warmup,
                          bytes_moved=row.nbytes, before=before)
        self.record.passes.append(found)
        return found

    def host_time(self, fn: Callable[[], Any], row: Planned, *, name: str) -> PassTimes:
        """Time host-only work (no GPU) with the host clock, same warm-up and repeats."""
        import nvtx

        key = str(row.key)
        self.progress(key)
        for _ in range(self.config.warmup):
            fn()
        times_ms = []
        for _ in range(self.config.repeats):
            with nvtx.annotate(key, domain=DOMAIN):
                t0 = time.perf_counter()
                fn()
                times_ms.append((time.perf_counter() - t0) * 1e3)
        found = PassTimes(key=key, name=name, params={**row.params, "clock": "host"}, times_ms=times_ms,
                          host_ms=list(times_ms), bytes_moved=row.nbytes)
        self.record.passes.append(found)
        return found

    def check(self, name: str, ok: bool, detail: str) -> bool:
        """Record a correctness verdict."""
        self.record.checks.append(Check(name=name, ok=bool(ok), detail=detail))
        return bool(ok)

    def check_run(self, name: str, fn: Callable[[], Any], d_out: Any, expected: np.ndarray) -> bool:
        """Poison d_out, run fn once, and compare the result with `expected` bit for bit."""
        import nvtx

        poison(d_out)
        self.sync()
        with nvtx.annotate(f"check {name}", domain=DOMAIN):
            fn()
            self.sync()
        return self.check(name, *compare(self.cp.asnumpy(d_out), expected))


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
    return False, (f"{bad:,} of {got.size:,} values differ; first at flat index {first}: "
                   f"got {got.reshape(-1)[first]!r}, expected {expected.reshape(-1)[first]!r}")


def _bits(array: np.ndarray) -> np.ndarray:
    return array.view(f"u{array.dtype.itemsize}") if array.dtype.kind == "f" else array


def fill_small_ints(h_out: np.ndarray, seed: int) -> None:
    """Random whole numbers 0..255 as float32: sums of a few stay exact, so references match bit for bit."""
    rng = np.random.default_rng(seed)
    step = 1 << 26
    flat = h_out.reshape(-1)
    for start in range(0, flat.size, step):
        part = flat[start:start + step]
        part[:] = rng.integers(0, 256, size=part.size, dtype=np.uint8)


def expected_reread(h_in: np.ndarray, reads: int, shift: int) -> np.ndarray:
    """out[i] = sum over j < reads of in[(i + j*shift) mod n], summed in the kernel's order (float32)."""
    n = h_in.size
    acc = np.zeros_like(h_in)
    for j in range(reads):
        s = (j * shift) % n
        acc[:n - s] += h_in[s:]
        if s:
            acc[n - s:] += h_in[:s]
    return acc
