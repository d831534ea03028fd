"""Would replaying a schedule as one CUDA graph bring it closer to the link floor than issuing it stream by stream?

    python day54/benchmarks/graph_replay.py [--rounds 4] [--candidates 16x6,32x4,8x6,8x8,4x8]

The checker replays a student's recorded schedule operation by operation on blocking streams. Here the pipelined
schedule is also captured once (stream capture on non-blocking streams forked from one origin stream) and each
timed run is one graph launch on the legacy default stream, which the timing's events bracket. Every graph's output
is checked bit for bit against naive first. Each round times the challenge's link floor (the duplex probe, 64 MiB
copies, as the check issues it) and then each candidate, as the check does; the duplex probe captured as a graph is
a candidate too, so a graph's own gain on plain copies shows. Medians over rounds of candidate / floor are printed;
nothing is asserted.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import cupy as cp
from floor_rounds import Bench  # day54/benchmarks/, beside this script

from day54 import schedules
from labcore.pipeline.context import CupyContext


def captured(ctx: CupyContext, schedule: Callable[[CupyContext], None]) -> Callable[[], None]:
    """`schedule` on ctx captured into one graph (its streams made non-blocking and forked from an origin)."""
    ctx.streams = [cp.cuda.Stream(non_blocking=True) for _ in ctx.streams]
    origin = cp.cuda.Stream(non_blocking=True)
    origin.begin_capture()
    forked = origin.record()
    for stream in ctx.streams:
        stream.wait_event(forked)
    schedule(ctx)
    for stream in ctx.streams:
        origin.wait_event(stream.record())
    graph = origin.end_capture()
    return lambda: graph.launch(cp.cuda.Stream.null)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--candidates", default="16x6,32x4,8x6,8x8,4x8")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    bench = Bench(args.rounds, args.repeats)
    best = bench.context(16, 6)
    candidates: dict[str, Callable[[], None]] = {"streams 16 MiB x 6 (as the check)": lambda: schedules.pipelined(best)}
    wanted = [
        (f"graph {w} MiB x {b}", w, b, schedules.pipelined)
        for w, b in (map(int, text.split("x")) for text in args.candidates.split(","))
    ]
    for name, w, b, schedule in [*wanted, ("graph duplex probe 64 MiB", 64, 2, schedules.duplex)]:
        try:
            candidates[name] = captured(bench.context(w, b), schedule)
        except Exception as exc:  # a capture the driver refuses is a finding too
            print(f"{name}: capture failed: {type(exc).__name__}: {exc}")
    bench.bit_exact(candidates, skip=[n for n in candidates if "probe" in n])
    bench.against_floor(candidates, "graph-replay")


if __name__ == "__main__":
    main()
