"""Two students measuring on one GPU at once get the ratios one student gets alone, because they take turns.

    python day54/benchmarks/two_students.py [--rounds 10]

Each student is a process that times day54's core measurement, the naive pass and the pipelined one (the
lesson's main window, 2 buffer pairs, `labcore.timing.time_pass`: one warm-up, then the lesson's repeats), in
`--rounds` rounds, and reports the median of the rounds' pipelined/naive ratios. Three runs:

1. alone: one student;
2. together, lock on: two students started at the same instant, taking turns per timed pass (labcore.gpulock);
3. together, lock off: the same with LABCORE_GPU_LOCK=off, so their passes overlap on the GPU.

It prints one row per student of each run (ratio, its spread over the rounds, the medians in ms, the seconds
it waited for its turns), what each student said on stderr (its waiting lines, counted, and the warning about
other processes on the GPU), then whether the lock kept the ratios within 3% of the lone student's.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from day54 import schedules
from day54.config import Config
from labcore.device import device_facts, gpu_available
from labcore.gpulock import SWITCH_ENV, gpu_turn, turn_stats, warn_if_shared
from labcore.pipeline.context import CupyContext, HostArrays
from labcore.sizes import format_size
from labcore.timing import time_pass

RUNS = (("alone", 1, "on"), ("together, lock on", 2, "on"), ("together, lock off", 2, "off"))
STUDENTS = "AB"
CLAIM = 0.03  # the lock's promise here: each student's ratio within 3% of the lone student's
SETUP_TIMEOUT_S = 180


def student(name: str, ready: Path, go: Path, rounds: int) -> None:
    """One student: set up, say ready, wait for the start, time the rounds, print one JSON line."""
    cfg = Config()
    host = HostArrays(cfg.total_bytes)
    host.fill_random(54)
    ctx = CupyContext(host, cfg.window_bytes, 2, cfg.fmas)
    with gpu_turn():  # with the lock on, this first turn also makes us known as one who takes turns
        schedules.naive(ctx.with_buffers(1))  # compiles the kernel and touches every buffer before the start
        ctx.synchronize()
    setup = turn_stats()
    ready.touch()
    while not go.exists():
        time.sleep(0.005)
    started = time.perf_counter()
    warn_if_shared()
    timed = dict(params={}, domain="two_students", repeats=cfg.repeats, warmup=cfg.warmup)
    naive_ms, pipelined_ms, ratios = [], [], []
    for _ in range(rounds):
        naive = time_pass(lambda: schedules.naive(ctx.with_buffers(1)), key=f"{name} naive", name="naive", **timed)
        pipelined = time_pass(lambda: schedules.pipelined(ctx), key=f"{name} pipelined", name="pipelined", **timed)
        naive_ms.append(naive.median_ms)
        pipelined_ms.append(pipelined.median_ms)
        ratios.append(pipelined.median_ms / naive.median_ms)
    stats = turn_stats()
    found = {
        "ratios": ratios,
        "naive_ms": statistics.median(naive_ms),
        "pipelined_ms": statistics.median(pipelined_ms),
        "waited_s": stats.waited_s - setup.waited_s,  # from the start on, like the wall time
        "waits": stats.waits - setup.waits,
        "turns": stats.turns - setup.turns,
        "wall_s": time.perf_counter() - started,
    }
    print(json.dumps(found), flush=True)


def run(label: str, n_students: int, lock: str, rounds: int, scratch: Path) -> list[dict]:
    """Start the students, release them together once all are set up, and collect their results."""
    env = {**os.environ, SWITCH_ENV: lock}
    go = scratch / f"go {label}"
    procs = []
    for name in STUDENTS[:n_students]:
        ready = scratch / f"ready {label} {name}"
        args = [sys.executable, __file__, "--student", name, "--ready", str(ready), "--go", str(go)]
        args += ["--rounds", str(rounds)]
        procs.append((name, ready, subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)))
    deadline = time.monotonic() + SETUP_TIMEOUT_S
    while not all(ready.exists() for _, ready, _ in procs):
        if any(p.poll() is not None for _, _, p in procs) or time.monotonic() > deadline:
            for name, _, p in procs:
                p.kill()
                print(f"{label}: student {name} failed to start:\n{p.communicate()[1].decode()}", file=sys.stderr)
            sys.exit(1)
        time.sleep(0.01)
    go.touch()
    results = []
    for name, _, p in procs:
        out, err = p.communicate()
        if p.returncode != 0:
            print(f"{label}: student {name} failed:\n{err.decode()}", file=sys.stderr)
            sys.exit(1)
        found = json.loads(out.decode().strip().splitlines()[-1])
        found.update(run=label, student=name, stderr=collections.Counter(err.decode().splitlines()))
        results.append(found)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--student", help=argparse.SUPPRESS)
    parser.add_argument("--ready", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--go", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.student:
        student(args.student, args.ready, args.go, args.rounds)
        return
    if not gpu_available():
        print("two_students: needs a GPU (none here)", file=sys.stderr)
        sys.exit(2)
    cfg = Config()
    print(f"two_students: live on {device_facts().summary()}")
    print(
        f"pipelined ({format_size(cfg.window_bytes)}, 2 buffer pairs) / naive over {format_size(cfg.total_bytes)}, "
        f"{args.rounds} rounds of {cfg.warmup} warm-up + {cfg.repeats} repeats each; ratio: median of the rounds",
        flush=True,
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="two_students-") as scratch:
        for label, n_students, lock in RUNS:
            print(f"... {label}", file=sys.stderr, flush=True)
            rows += run(label, n_students, lock, args.rounds, Path(scratch))
    print()
    print(
        f"{'run':<20} {'student':<8} {'ratio':>6} {'spread':>13} {'naive ms':>9} {'pipelined ms':>13} "
        f"{'waited s':>9} {'waits':>6} {'wall s':>7}"
    )
    for r in rows:
        ratio = statistics.median(r["ratios"])
        spread = f"{min(r['ratios']):.3f}..{max(r['ratios']):.3f}"
        print(
            f"{r['run']:<20} {r['student']:<8} {ratio:>6.3f} {spread:>13} {r['naive_ms']:>9.2f} "
            f"{r['pipelined_ms']:>13.2f} {r['waited_s']:>9.1f} {r['waits']:>6} {r['wall_s']:>7.1f}"
        )
    print()
    for r in rows:
        for line, count in r["stderr"].items():
            print(f"{r['run']}, {r['student']} said{f' {count}x' if count > 1 else ''}: {line}")
    alone = statistics.median(rows[0]["ratios"])
    off = {
        label: max(abs(statistics.median(r["ratios"]) / alone - 1) for r in rows if r["run"] == label)
        for label, _, _ in RUNS[1:]
    }
    held = off["together, lock on"] <= CLAIM
    print(
        f"\nlargest difference from the lone student's ratio {alone:.3f}: lock on {off['together, lock on']:.1%}, "
        f"lock off {off['together, lock off']:.1%}; two students with the lock get the lone ratio within "
        f"{CLAIM:.0%}: {'held' if held else 'failed'}"
    )
    sys.exit(0 if held else 1)


if __name__ == "__main__":
    main()
