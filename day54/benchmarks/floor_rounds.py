"""What the link-floor benchmarks share (direction_streams, floor_gap, graph_replay; imported from beside them).

`Bench(rounds, repeats)` holds fresh 1 GiB pinned input and output, the challenge's duplex probe (64 MiB copies)
and naive's output; `bit_exact(candidates)` checks each candidate's output against it; `against_floor(candidates)`
times the probe and then each candidate, round after round, as the challenge check does, prints every round and
the medians over rounds of candidate / floor of the same round. Nothing is asserted about the times.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable

import cupy as cp

from day54 import schedules
from labcore.pipeline.context import CupyContext, HostArrays
from labcore.pipeline.verify import check_bit_exact
from labcore.timing import time_pass

MiB = 1 << 20
TOTAL = 1 << 30
FMAS = 512  # the lesson's kernel


class Bench:
    def __init__(self, rounds: int, repeats: int) -> None:
        self.rounds, self.repeats = rounds, repeats
        self.host = HostArrays(TOTAL)
        self.host.fill_random(54)
        self.link = CupyContext(self.host, 64 * MiB, 2, FMAS)
        self.host.poison()
        schedules.naive(self.link.with_buffers(1))
        self.link.synchronize()
        self.expected = self.host.h_out.copy()

    def context(self, window_mib: int, buffers: int, fmas: int = FMAS) -> CupyContext:
        return CupyContext(self.host, window_mib * MiB, buffers, fmas)

    def bit_exact(self, candidates: dict[str, Callable[[], None]], skip: Iterable[str] = ()) -> None:
        """Every candidate not in `skip` leaves naive's output, bit for bit (AssertionError otherwise)."""
        for name, fn in candidates.items():
            if name in set(skip):
                continue
            self.host.poison()
            fn()
            cp.cuda.Device().synchronize()
            check = check_bit_exact(name, self.host.h_out, self.expected, 4 * MiB // 4)
            assert check.ok, (name, check.detail)
        print("every checked candidate bit-identical to naive")

    def against_floor(self, candidates: dict[str, Callable[[], None]], domain: str) -> None:
        timed = dict(params={}, domain=domain, repeats=self.repeats, after=self.host.poison)
        ratios: dict[str, list[float]] = {name: [] for name in candidates}
        width = max(map(len, candidates))
        for r in range(self.rounds):
            for name, fn in candidates.items():
                floor = time_pass(lambda: schedules.duplex(self.link), key="duplex", name="duplex", **timed).median_ms
                mine = time_pass(fn, key=name, name=name, **timed).median_ms
                ratios[name].append(mine / floor)
                print(f"round {r}: {name:<{width}} {mine:7.3f} ms / floor {floor:7.3f} ms = {mine / floor:.3f}")
        print("median over rounds of (candidate / link floor of the same round)")
        for name, found in ratios.items():
            print(f"  {name:<{width}} {statistics.median(found):.3f}x  ({', '.join(f'{x:.3f}' for x in found)})")
