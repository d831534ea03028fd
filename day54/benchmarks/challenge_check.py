"""The challenge check's own verdict on candidate schedules, and what the duplex probe does from repeat to repeat.

    python day54/benchmarks/challenge_check.py [--runs 2] [--windows 8,16,32] [--buffers 3,4,6,8] [--probe-rounds 7]
                                         [--schedules pipelined,lookahead] [--part both|verdicts|probe]

Part 1 calls the check's live procedure (`day54.checks._challenge_live`: fresh input, rounds of the course's best,
the candidate and the duplex probe, the first and the last round's outputs verified) `--runs` times per candidate
and prints each verdict (over the course's best) and its ratio over the link floor. Part 2 times the probe and
the course's best schedule round after round, with the output poisoned before each repeat on the GPU, on the CPU,
or not at all, and prints every repeat, so a drifting probe shows as what it is.
"""

from __future__ import annotations

import argparse
import os
import statistics

import numpy as np
from challenge_sweep import CANDIDATES  # day54/benchmarks/, beside this script

from day54 import checks, schedules
from labcore.pipeline.context import CupyContext, HostArrays
from labcore.timing import time_pass

MiB = 1 << 20
TOTAL = 1 << 30
PROBE_REPEATS = 5  # part 2's runs per pass


def verdicts(args: argparse.Namespace) -> None:
    windows = [int(w) * MiB for w in args.windows.split(",")]
    depths = [int(b) for b in args.buffers.split(",")]
    queues = os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS")
    print(
        f"part 1: the check's verdict (at most {checks.CHALLENGE_ROUNDS} rounds of one run each, "
        f"CUDA_DEVICE_MAX_CONNECTIONS={queues})"
    )
    rows = []
    for w in windows:
        for b in depths:
            for name in args.schedules.split(","):
                fn = CANDIDATES[name]
                recorded = checks.traced(fn, TOTAL // w, b, w, b)
                found = [checks._challenge_live(recorded, checks.CHALLENGE_ROUNDS) for _ in range(args.runs)]
                label = f"{name} w={w // MiB}MiB b={b}"
                text = ", ".join(
                    f"{f.over_best:.3f} best, {f.over_floor:.3f} floor ({f.mine_ms:.2f}/{f.link_floor_ms:.2f})"
                    for f in found
                )
                print(f"  {label:<26} {text}", flush=True)
                rows.append((max(f.over_floor for f in found), label))
    print("worst verdict per candidate, best first")
    for worst, label in sorted(rows)[:12]:
        print(f"  {label:<26} {worst:.3f}x")


def probe(args: argparse.Namespace) -> None:
    host = HostArrays(TOTAL)
    host.fill_random(54)
    link = CupyContext(host, checks.LINK_WINDOW, 2, 512)
    best = CupyContext(host, 32 * MiB, 6, 512)

    def cpu_poison() -> None:
        host.h_out.fill(np.nan)

    poisons = {"gpu": host.poison, "cpu": cpu_poison, "none": None}
    print(f"\npart 2: probe and pipelined 32 MiB x 6, {args.probe_rounds} rounds, per repeat (ms)")
    for mode, before in poisons.items():
        timed = dict(params={}, domain="probe", repeats=PROBE_REPEATS, before=before)
        ratios, floors, mines = [], [], []
        for r in range(args.probe_rounds):
            floor = time_pass(lambda: schedules.duplex(link), key="duplex", name="duplex", **timed)
            mine = time_pass(lambda: schedules.pipelined(best), key="best", name="best", **timed)
            ratios.append(mine.median_ms / floor.median_ms)
            floors += floor.times_ms
            mines += mine.times_ms
            print(
                f"  poison={mode:<4} round {r}: probe {' '.join(f'{t:.2f}' for t in floor.times_ms)} | "
                f"best {' '.join(f'{t:.2f}' for t in mine.times_ms)} | ratio {ratios[-1]:.3f}",
                flush=True,
            )
        print(
            f"  poison={mode:<4} verdict {statistics.median(ratios):.3f}; probe min/median/max "
            f"{min(floors):.2f}/{statistics.median(floors):.2f}/{max(floors):.2f}, best "
            f"{min(mines):.2f}/{statistics.median(mines):.2f}/{max(mines):.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--windows", default="8,16,32")
    parser.add_argument("--buffers", default="3,4,6,8")
    parser.add_argument("--probe-rounds", type=int, default=7)
    parser.add_argument("--schedules", default="pipelined,lookahead")
    parser.add_argument("--part", choices=("both", "verdicts", "probe"), default="both")
    args = parser.parse_args()
    if args.part in ("both", "probe"):
        probe(args)
    if args.part in ("both", "verdicts"):
        verdicts(args)


if __name__ == "__main__":
    main()
