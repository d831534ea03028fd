"""Could a schedule with cross-stream events get closer to the link floor than any stream-ordered one?

    python day54/benchmarks/direction_streams.py [--rounds 3] [--windows 4,8,16] [--buffers 2,3,4]

The lesson's schedules order work only by streams: each buffer pair's copy in, kernel and copy out on one stream,
so the copies in of several pairs can be ready at once and share the link. Here every copy in goes on one stream
and every copy out on another, in chunk order as in the duplex probe, and each pair's kernel on its own stream;
events carry the dependencies (copy in -> kernel -> copy out, and a pair's reuse). Each candidate's output is
checked bit for bit against naive, then timed against the duplex probe round by round (as the challenge does),
beside the course's best stream-ordered pipeline.
"""

from __future__ import annotations

import argparse

import cupy as cp
from floor_rounds import Bench  # day54/benchmarks/, beside this script

from day54 import schedules
from labcore.pipeline.context import CupyContext
from labcore.pipeline.kernel import launch_fma_chain


class DirectionStreams:
    """All copies in on one stream, all copies out on another, kernels per pair; events between them."""

    def __init__(self, ctx: CupyContext) -> None:
        self.ctx = ctx
        self.s_in = cp.cuda.Stream(non_blocking=False)
        self.s_out = cp.cuda.Stream(non_blocking=False)
        self.s_kernel = [cp.cuda.Stream(non_blocking=False) for _ in range(ctx.n_buffers)]

    def __call__(self) -> None:
        ctx, rt = self.ctx, cp.cuda.runtime
        b, w = ctx.n_buffers, ctx.window_bytes
        kernel_done: list = [None] * b  # pair p's last kernel: d_in[p] is free again once it ran
        out_done: list = [None] * b  # pair p's last copy out: d_out[p] is free again once it ran
        for k in range(ctx.n_chunks):
            p = k % b
            if kernel_done[p] is not None:
                self.s_in.wait_event(kernel_done[p])
            rt.memcpyAsync(ctx.d_in[p].data.ptr, ctx.h_in.ctypes.data + k * w, w, 1, self.s_in.ptr)
            copied = self.s_in.record()
            stream = self.s_kernel[p]
            stream.wait_event(copied)
            if out_done[p] is not None:
                stream.wait_event(out_done[p])
            launch_fma_chain(ctx.d_in[p], ctx.d_out[p], ctx.chunk_elems, ctx.fmas, stream)
            kernel_done[p] = stream.record()
            self.s_out.wait_event(kernel_done[p])
            rt.memcpyAsync(ctx.h_out.ctypes.data + k * w, ctx.d_out[p].data.ptr, w, 2, self.s_out.ptr)
            out_done[p] = self.s_out.record()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--windows", default="4,8,16")
    parser.add_argument("--buffers", default="2,3,4")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    bench = Bench(args.rounds, args.repeats)
    best = bench.context(16, 6)
    candidates = {"stream-ordered pipelined 16 MiB x 6": lambda: schedules.pipelined(best)}
    for w in (int(x) for x in args.windows.split(",")):
        for b in (int(x) for x in args.buffers.split(",")):
            candidates[f"direction streams {w} MiB x {b}"] = DirectionStreams(bench.context(w, b))
    bench.bit_exact(candidates)
    bench.against_floor(candidates, "direction")


if __name__ == "__main__":
    main()
