"""Which schedules come closest to the link floor? Every candidate timed against the duplex probe in one run.

    python day54/benchmarks/challenge_sweep.py [--rounds 3] [--windows 8,16,32,64] [--buffers 3,4,6]

Prints, per round, the link floor (duplex probe at 64 MiB, 2 streams) and each candidate's median over the
floor measured in that same round; every candidate's output is checked bit for bit against naive first.
"""

from __future__ import annotations

import argparse
import statistics

from day54 import schedules
from labcore.pipeline.context import CupyContext, HostArrays
from labcore.pipeline.verify import check_bit_exact
from labcore.timing import time_pass

MiB = 1 << 20
TOTAL = 1 << 30


def lookahead(ctx) -> None:
    """Chunk k + 1's copy in is enqueued before chunk k's kernel and copy out (pair = stream = k % B)."""
    n, b = ctx.n_chunks, ctx.n_buffers
    ctx.copy_in(0, 0)
    for k in range(n):
        if k + 1 < n:
            ctx.copy_in(k + 1, (k + 1) % b)
        ctx.launch(k, k % b)
        ctx.copy_out(k, k % b)


CANDIDATES = {"pipelined": schedules.pipelined, "lookahead": lookahead}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--windows", default="8,16,32,64")
    parser.add_argument("--buffers", default="3,4,6")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    windows = [int(w) * MiB for w in args.windows.split(",")]
    depths = [int(b) for b in args.buffers.split(",")]
    host = HostArrays(TOTAL)
    host.fill_random(54)
    contexts = {w: CupyContext(host, w, max([*depths, 2]), 512) for w in [*windows, 64 * MiB]}
    host.poison()
    schedules.naive(contexts[64 * MiB].with_buffers(1))
    contexts[64 * MiB].synchronize()
    expected = host.h_out.copy()
    for w in windows:
        for b in depths:
            for name, fn in CANDIDATES.items():
                view = contexts[w].with_buffers(b)
                host.poison()
                fn(view)
                view.synchronize()
                check = check_bit_exact(name, host.h_out, expected, view.chunk_elems)
                assert check.ok, (name, w, b, check.detail)
    print("all candidates bit-identical to naive")
    timed = dict(params={}, domain="challenge", repeats=args.repeats)
    rows: dict[str, list[float]] = {}
    for r in range(args.rounds):
        two = contexts[64 * MiB].with_buffers(2)
        floor = time_pass(lambda t=two: schedules.duplex(t), key="duplex", name="duplex", **timed).median_ms
        line = [f"round {r}: link floor {floor:.3f} ms"]
        for w in windows:
            for b in depths:
                for name, fn in CANDIDATES.items():
                    view = contexts[w].with_buffers(b)
                    ms = time_pass(lambda f=fn, v=view: f(v), key=name, name=name, **timed).median_ms
                    label = f"{name} w={w // MiB}MiB b={b}"
                    rows.setdefault(label, []).append(ms / floor)
                    line.append(f"  {label:<28} {ms:8.3f} ms  {ms / floor:.3f}x")
        print("\n".join(line), flush=True)
    print("\nmedian over rounds of (candidate / link floor of the same round), best first")
    for label, ratios in sorted(rows.items(), key=lambda kv: statistics.median(kv[1])):
        print(f"  {label:<28} {statistics.median(ratios):.3f}x  (rounds: {', '.join(f'{x:.3f}' for x in ratios)})")


if __name__ == "__main__":
    main()
