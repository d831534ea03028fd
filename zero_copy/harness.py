"""The live experiments' harness: the config, the record they fill, streams, timed passes and checks."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import nvtx

from labcore.device import cupy_or_none
from labcore.gpulock import gpu_turn
from labcore.record import Check, PassTimes, Record
from labcore.timing import time_pass
from zero_copy import DOMAIN
from zero_copy.config import Config, Planned
from zero_copy.verify import compare, poison


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

    def time(
        self,
        fn: Callable[[], Any],
        row: Planned,
        *,
        name: str,
        params: dict[str, Any] | None = None,
        before: Callable[[], Any] | None = None,
        repeats: int | None = None,
        warmup: int | None = None,
    ) -> PassTimes:
        """Time `fn` with legacy-stream events in NVTX ranges named by the row's key; add it to the record."""
        key = str(row.key)
        self.progress(key)
        found = time_pass(
            fn,
            key=key,
            name=name,
            params={**row.params, **(params or {})},
            domain=DOMAIN,
            repeats=self.config.repeats if repeats is None else repeats,
            warmup=self.config.warmup if warmup is None else warmup,
            bytes_moved=row.nbytes,
            before=before,
        )
        self.record.passes.append(found)
        return found

    def time_rounds(self, passes: list[tuple[Callable[[], Any], Planned]], *, name: str) -> list[PassTimes]:
        """Time several passes in alternating rounds, one run of each per round (their warm-ups in the first):
        the link's rate drifts by a few percent over seconds, and passes timed side by side drift together, so
        their ratios hold where back-to-back blocks of repeats would not. Each run is one NVTX range named by its
        row's key, as `time` names them; the passes go into the record in the order given."""
        found: dict[str, PassTimes] = {}
        for round_no in range(self.config.repeats):
            for fn, row in passes:
                key = str(row.key)
                if round_no == 0:
                    self.progress(key)
                one = time_pass(
                    fn,
                    key=key,
                    name=name,
                    params=row.params,
                    domain=DOMAIN,
                    repeats=1,
                    warmup=self.config.warmup if round_no == 0 else 0,
                    bytes_moved=row.nbytes,
                )
                if key in found:
                    found[key].times_ms += one.times_ms
                    found[key].host_ms += one.host_ms
                else:
                    found[key] = one
        for timed in found.values():
            timed.params["timing"] = "alternating rounds"
        self.record.passes.extend(found.values())
        return list(found.values())

    def host_time(self, fn: Callable[[], Any], row: Planned, *, name: str) -> PassTimes:
        """Time host-only work (no GPU) with the host clock, same warm-up and repeats."""
        key = str(row.key)
        self.progress(key)
        times_ms = []
        with gpu_turn():  # a neighbour's copies would contend for the host memory this reads
            for _ in range(self.config.warmup):
                fn()
            for _ in range(self.config.repeats):
                with nvtx.annotate(key, domain=DOMAIN):
                    t0 = time.perf_counter()
                    fn()
                    times_ms.append((time.perf_counter() - t0) * 1e3)
        found = PassTimes(
            key=key,
            name=name,
            params={**row.params, "clock": "host"},
            times_ms=times_ms,
            host_ms=list(times_ms),
            bytes_moved=row.nbytes,
        )
        self.record.passes.append(found)
        return found

    def check(self, name: str, ok: bool, detail: str) -> bool:
        """Record a correctness verdict."""
        self.record.checks.append(Check(name=name, ok=bool(ok), detail=detail))
        return bool(ok)

    def check_run(self, name: str, fn: Callable[[], Any], d_out: Any, expected: np.ndarray) -> bool:
        """Poison d_out, run fn once, and compare the result with `expected` bit for bit."""
        with gpu_turn():  # untimed, but it would disturb a neighbour's timed pass
            poison(d_out)
            self.sync()
            with nvtx.annotate(f"check {name}", domain=DOMAIN):
                fn()
                self.sync()
        return self.check(name, *compare(self.cp.asnumpy(d_out), expected))
