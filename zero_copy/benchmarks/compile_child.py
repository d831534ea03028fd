"""What compiling a student's CUDA in a child costs (labcore.nvrtc): the mailbox exercise's kernel with the reference
publish step, compiled to PTX by NVRTC in this process and in the compile server's child, alternately, each
source new (no cache), in a few rounds; wall and CPU seconds per compile (CPU of this process, the server and its
children), and the server's start once.

    python zero_copy/benchmarks/compile_child.py [--compiles 15] [--rounds 3]

No GPU needed. The checker compiles a submission's publish step once offline and twice live (its PTX, then the
cubin that runs).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

import psutil

from labcore import nvrtc, ptx
from zero_copy import mailbox
from zero_copy.kernel import compile_options

PUBLISH = """__device__ void publish(volatile int* box, int round) {
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) box[MB_PAYLOAD + w] = round * 1000003 + w;
    __threadfence_system();
    box[MB_FLAG] = round;
}
"""
OPTIONS = (*compile_options(), "-lineinfo")


def _cpu() -> float:
    """CPU seconds of this process, the compile server and the children it waited for."""
    mine = resource.getrusage(resource.RUSAGE_SELF)
    total = mine.ru_utime + mine.ru_stime
    server = nvrtc._SERVER._child
    if server is not None and server.poll() is None:
        times = psutil.Process(server.pid).cpu_times()
        total += times.user + times.system + times.children_user + times.children_system
    return total


def _source(n: int) -> str:
    return mailbox.mailbox_source(PUBLISH + f"// compile {n}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compiles", type=int, default=15, help="compiles of each kind a round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"{ptx.nvrtc_version()}, CPU only; each compile a new source of {len(_source(0)):,} characters")
    ptx.compile_ptx(_source(-1), OPTIONS)  # NVRTC loaded here too
    wall, cpu = time.perf_counter(), _cpu()
    nvrtc.compile_ptx_limited(_source(-2), OPTIONS)
    print(f"server start and its first compile: {time.perf_counter() - wall:.2f} s wall, {_cpu() - cpu:.2f} s CPU")
    kinds = {"in-process": ptx.compile_ptx, "child": nvrtc.compile_ptx_limited}
    n = 0
    for round_no in range(args.rounds):
        walls: dict[str, list[float]] = {k: [] for k in kinds}
        cpus: dict[str, list[float]] = {k: [] for k in kinds}
        for _ in range(args.compiles):
            for kind, compile_ in kinds.items():
                n += 1
                wall, cpu = time.perf_counter(), _cpu()
                compile_(_source(n), OPTIONS)
                walls[kind].append(time.perf_counter() - wall)
                cpus[kind].append(_cpu() - cpu)
        w = {k: statistics.median(v) for k, v in walls.items()}
        c = {k: statistics.median(v) for k, v in cpus.items()}
        print(
            f"round {round_no + 1}: median per compile, in-process {w['in-process'] * 1e3:.0f} ms wall "
            f"{c['in-process'] * 1e3:.0f} ms CPU; child {w['child'] * 1e3:.0f} ms wall {c['child'] * 1e3:.0f} ms CPU; "
            f"child / in-process: wall {w['child'] / w['in-process']:.2f}, CPU {c['child'] / c['in-process']:.2f}"
        )


if __name__ == "__main__":
    main()
