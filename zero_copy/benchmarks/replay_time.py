"""The offline command's time: `python -m zero_copy` replaying the shipped profile, as a process, a few rounds.

    python zero_copy/benchmarks/replay_time.py [--rounds N] [--target-s S]

Prints each round's wall and CPU seconds (the process and its children) and the median's ratio to the target (5 s:
a reader without a GPU gets the tables within it on a quiet machine).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def one_round() -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "zero_copy"], cwd=ROOT, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--target-s", type=float, default=5.0)
    args = parser.parse_args()
    walls = []
    for n in range(args.rounds):
        wall, cpu = one_round()
        walls.append(wall)
        print(f"round {n + 1}: {wall:.2f} s wall, {cpu:.2f} s CPU", flush=True)
    median = statistics.median(walls)
    print(f"median {median:.2f} s wall: {median / args.target_s:.2f}x the {args.target_s:g} s target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
