"""Where a stream-ordered pipeline's time over the link floor goes, on a quiet link.

    python benchmarks/floor_gap.py [--rounds 4] [--windows 8,16,32] [--buffers 6]

Each round times, back to back against the lesson's duplex probe (64 MiB copies, the challenge's link floor):
the same probe at each window (what smaller copies cost by themselves), the pipelined schedule at each window with
the lesson's 512-FMA kernel, and with a 1-FMA kernel (what the kernel's own time adds, mostly the last chunk's);
and, outside the lesson's API, pipelines whose last window is cut into 4 MiB pieces (what a shorter tail would win).
The medians over rounds of each candidate / the floor of its round are printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics

import cupy as cp

from day54 import schedules
from day54.context import CupyContext, HostArrays
from day54.verify import check_bit_exact
from labcore.timing import time_pass

MiB = 1 << 20
TOTAL = 1 << 30


def tail_cut(big: CupyContext, small: CupyContext) -> None:
    """The pipelined schedule over all but the last big window, then that window in small pieces on their own pairs
    and streams (disjoint buffers and output: no ordering between the two is needed)."""
    per = big.window_bytes // small.window_bytes
    for k in range(big.n_chunks - 1):
        pair = k % big.n_buffers
        big.copy_in(k, pair)
        big.launch(k, pair)
        big.copy_out(k, pair)
    for j, k in enumerate(range((big.n_chunks - 1) * per, small.n_chunks)):
        pair = j % small.n_buffers
        small.copy_in(k, pair)
        small.launch(k, pair)
        small.copy_out(k, pair)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--windows", default="8,16,32")
    parser.add_argument("--buffers", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    host = HostArrays(TOTAL)
    host.fill_random(54)
    link = CupyContext(host, 64 * MiB, 2, 512)
    candidates = {}
    for w in (int(x) * MiB for x in args.windows.split(",")):
        probe = CupyContext(host, w, 2, 512)
        candidates[f"duplex probe, {w // MiB} MiB copies"] = lambda c=probe: schedules.duplex(c)
        for fmas in (512, 1):
            ctx = CupyContext(host, w, args.buffers, fmas)
            candidates[f"pipelined {w // MiB} MiB x {args.buffers}, {fmas} FMA"] = lambda c=ctx: schedules.pipelined(c)
        if w > 4 * MiB:
            big, small = CupyContext(host, w, args.buffers, 512), CupyContext(host, 4 * MiB, 4, 512)
            candidates[f"{w // MiB} MiB x {args.buffers}, last in 4 MiB"] = lambda b=big, s=small: tail_cut(b, s)
    host.poison()
    schedules.naive(link.with_buffers(1))
    link.synchronize()
    expected = host.h_out.copy()
    for name, fn in candidates.items():
        if (name.startswith("pipelined") and name.endswith(" 1 FMA")) or name.startswith("duplex"):
            continue
        host.poison()
        fn()
        cp.cuda.Device().synchronize()
        check = check_bit_exact(name, host.h_out, expected, 4 * MiB // 4)
        assert check.ok, (name, check.detail)
    print("every 512-FMA candidate bit-identical to naive")
    timed = dict(params={}, domain="floor-gap", repeats=args.repeats, after=host.poison)
    ratios: dict[str, list[float]] = {name: [] for name in candidates}
    for r in range(args.rounds):
        for name, fn in candidates.items():
            floor = time_pass(lambda: schedules.duplex(link), key="duplex", name="duplex", **timed).median_ms
            mine = time_pass(fn, key=name, name=name, **timed).median_ms
            ratios[name].append(mine / floor)
            print(f"round {r}: {name:<36} {mine:7.3f} ms / floor {floor:7.3f} ms = {mine / floor:.3f}", flush=True)
    cp.cuda.Device().synchronize()
    print("median over rounds of (candidate / link floor of the same round)")
    for name, found in ratios.items():
        print(f"  {name:<36} {statistics.median(found):.3f}x  ({', '.join(f'{x:.3f}' for x in found)})")


if __name__ == "__main__":
    main()
