"""How steady is "yours over the link floor"? The challenge's measurement, repeated, with and without poisoning.

    python day54/benchmarks/challenge_noise.py [--rounds 5] [--runs 3]

For each candidate: `--runs` rounds of the challenge's procedure (rounds of the duplex probe then the candidate,
3 timed repeats each, the verdict the median of the rounds' ratios), once with the host output poisoned (NaN)
before the candidate's repeats only, as a verifying check must, and once before both the probe's and the
candidate's, so that both start from the same state of the host's caches.
"""

from __future__ import annotations

import argparse
import statistics

from challenge_sweep import lookahead  # day54/benchmarks/, beside this script

from day54 import schedules
from labcore.pipeline.context import CupyContext, HostArrays
from labcore.timing import time_pass

MiB = 1 << 20
TOTAL = 1 << 30


CANDIDATES = [
    ("pipelined 32MiB b=6", schedules.pipelined, 32, 6),
    ("pipelined 32MiB b=8", schedules.pipelined, 32, 8),
    ("lookahead 32MiB b=8", lookahead, 32, 8),
    ("pipelined 64MiB b=3", schedules.pipelined, 64, 3),
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    host = HostArrays(TOTAL)
    host.fill_random(54)
    link = CupyContext(host, 64 * MiB, 2, 512)
    timed = dict(params={}, domain="noise", repeats=3)
    for poison_both in (False, True):
        print(f"poisoned before: {'both' if poison_both else 'the candidate only'}")
        for label, fn, window, depth in CANDIDATES:
            ctx = CupyContext(host, window * MiB, depth, 512)
            verdicts = []
            for _ in range(args.runs):
                ratios = []
                for _ in range(args.rounds):
                    floor = time_pass(
                        lambda: schedules.duplex(link),
                        key="duplex",
                        name="duplex",
                        before=host.poison if poison_both else None,
                        **timed,
                    ).median_ms
                    mine = time_pass(lambda f=fn, c=ctx: f(c), key=label, name=label, before=host.poison, **timed)
                    ratios.append(mine.median_ms / floor)
                verdicts.append(statistics.median(ratios))
            print(f"  {label:<22} verdicts {', '.join(f'{v:.3f}' for v in verdicts)}", flush=True)
            del ctx


if __name__ == "__main__":
    main()
