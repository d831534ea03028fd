"""Would replaying a schedule as one CUDA graph bring it closer to the link floor than issuing it stream by stream?

    python benchmarks/graph_replay.py [--rounds 4] [--candidates 16x6,32x4,8x6,8x8,4x8]

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
import statistics
from collections.abc import Callable

import cupy as cp

from day54 import schedules
from day54.context import CupyContext, HostArrays
from day54.verify import check_bit_exact
from labcore.timing import time_pass

MiB = 1 << 20
TOTAL = 1 << 30


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
    host = HostArrays(TOTAL)
    host.fill_random(54)
    link = CupyContext(host, 64 * MiB, 2, 512)
    host.poison()
    schedules.naive(link.with_buffers(1))
    link.synchronize()
    expected = host.h_out.copy()
    best = CupyContext(host, 16 * MiB, 6, 512)
    candidates: dict[str, Callable[[], None]] = {"streams 16 MiB x 6 (as the check)": lambda: schedules.pipelined(best)}
    for text in args.candidates.split(","):
        w, b = (int(x) for x in text.split("x"))
        try:
            candidates[f"graph {w} MiB x {b}"] = captured(CupyContext(host, w * MiB, b, 512), schedules.pipelined)
        except Exception as exc:  # a capture the driver refuses is a finding too
            print(f"graph {w} MiB x {b}: capture failed: {type(exc).__name__}: {exc}")
    try:
        candidates["graph duplex probe 64 MiB"] = captured(CupyContext(host, 64 * MiB, 2, 512), schedules.duplex)
    except Exception as exc:
        print(f"graph duplex probe: capture failed: {type(exc).__name__}: {exc}")
    for name, fn in candidates.items():
        if "probe" in name:
            continue
        host.poison()
        fn()
        cp.cuda.Device().synchronize()
        check = check_bit_exact(name, host.h_out, expected, 4 * MiB // 4)
        assert check.ok, (name, check.detail)
    print("every pipeline bit-identical to naive")
    timed = dict(params={}, domain="graph-replay", repeats=args.repeats, after=host.poison)
    ratios: dict[str, list[float]] = {name: [] for name in candidates}
    for r in range(args.rounds):
        for name, fn in candidates.items():
            floor = time_pass(lambda: schedules.duplex(link), key="duplex", name="duplex", **timed).median_ms
            mine = time_pass(fn, key=name, name=name, **timed).median_ms
            ratios[name].append(mine / floor)
            print(f"round {r}: {name:<36} {mine:7.3f} ms / floor {floor:7.3f} ms = {mine / floor:.3f}", flush=True)
    print("median over rounds of (candidate / link floor of the same round)")
    for name, found in ratios.items():
        print(f"  {name:<36} {statistics.median(found):.3f}x  ({', '.join(f'{x:.3f}' for x in found)})")


if __name__ == "__main__":
    main()
