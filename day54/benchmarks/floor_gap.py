"""Where a stream-ordered pipeline's time over the link floor goes, on a quiet link.

    python day54/benchmarks/floor_gap.py [--rounds 4] [--windows 8,16,32] [--buffers 6]

Each round times, back to back against the lesson's duplex probe (64 MiB copies, the challenge's link floor):
the same probe at each window (what smaller copies cost by themselves), the pipelined schedule at each window with
the lesson's 512-FMA kernel, and with a 1-FMA kernel (what the kernel's own time adds, mostly the last chunk's);
and, outside the lesson's API, pipelines whose last window, first window or both are cut into 4 MiB pieces (what a
shorter tail, a shorter fill or both would win).
The medians over rounds of each candidate / the floor of its round are printed; nothing is asserted.
"""

from __future__ import annotations

import argparse

from floor_rounds import Bench, MiB  # day54/benchmarks/, beside this script

from day54 import schedules
from labcore.pipeline.context import CupyContext


def cut(big: CupyContext, small: CupyContext, *, head: bool, tail: bool) -> None:
    """The pipelined schedule over the big windows, with the first (head) and/or last (tail) big window done in
    small pieces on the small context's own pairs and streams (disjoint buffers and output: nothing orders the
    pieces against the big windows; the head's and the tail's pieces share pairs on their pairs' streams)."""
    per = big.window_bytes // small.window_bytes

    def pieces(ks: range) -> None:
        for j, k in enumerate(ks):
            pair = j % small.n_buffers
            small.copy_in(k, pair)
            small.launch(k, pair)
            small.copy_out(k, pair)

    if head:
        pieces(range(per))
    for k in range(1 if head else 0, big.n_chunks - 1 if tail else big.n_chunks):
        pair = k % big.n_buffers
        big.copy_in(k, pair)
        big.launch(k, pair)
        big.copy_out(k, pair)
    if tail:
        pieces(range((big.n_chunks - 1) * per, small.n_chunks))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--windows", default="8,16,32")
    parser.add_argument("--buffers", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    bench = Bench(args.rounds, args.repeats)
    candidates, unchecked = {}, []
    for w in (int(x) for x in args.windows.split(",")):
        probe = bench.context(w, 2)
        name = f"duplex probe, {w} MiB copies"
        candidates[name] = lambda c=probe: schedules.duplex(c)
        unchecked.append(name)
        for fmas in (512, 1):
            ctx = bench.context(w, args.buffers, fmas)
            name = f"pipelined {w} MiB x {args.buffers}, {fmas} FMA"
            candidates[name] = lambda c=ctx: schedules.pipelined(c)
            if fmas != 512:
                unchecked.append(name)  # another kernel, another output
        if w * MiB > 4 * MiB:
            big, small = bench.context(w, args.buffers), bench.context(4, 4)
            for label, head, tail in (("last", False, True), ("first", True, False), ("first and last", True, True)):
                candidates[f"{w} MiB x {args.buffers}, {label} in 4 MiB"] = lambda b=big, s=small, h=head, t=tail: cut(
                    b, s, head=h, tail=t
                )
    bench.bit_exact(candidates, skip=unchecked)
    bench.against_floor(candidates, "floor-gap")


if __name__ == "__main__":
    main()
