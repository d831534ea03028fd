"""Time the day-54 schedules through CuPy and through CUDA C++ on one GPU, and compare (README.md beside this file).

The C++ side is day54/benchmarks/double_buffer.cu, built here with nvcc and run as a
subprocess; the CuPy side is the day54 package timed by labcore.timing. Both
run the same kernel source, the same schedules and the same event timing. The
sides alternate within each round so that drift (clocks, temperature) reaches
both, and each row's median is over every repeat of every round.

Run from the repo root: python3 day54/benchmarks/cupy_vs_cpp.py --out day54/profiles/h200/cupy_vs_cpp.txt
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SOURCE = Path(__file__).resolve().parent / "double_buffer.cu"
TARGET_RATIO = 1.03
NVTX_DOMAIN = "cupy_vs_cpp"
SEED = 54

Key = tuple[int, str, int]  # (window_bytes, schedule, buffers); naive has buffers 1
Times = dict[Key, list[float]]

# The day54 and labcore packages live in the repo root, which is not on sys.path when
# this file runs as a script; they are imported inside the functions that need them.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def progress(message: str) -> None:
    """One progress line on stderr."""
    print(f"cupy_vs_cpp: {message}", file=sys.stderr, flush=True)


def _sizes(text: str, option: str = "--windows") -> list[int]:
    """argparse type: a comma-separated list of sizes such as 4MiB,64MiB."""
    from labcore.errors import UsageError
    from labcore.sizes import parse_sizes

    try:
        sizes = parse_sizes(text, option=option)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    if not sizes:
        raise argparse.ArgumentTypeError(f"{option}: no sizes given")
    return sizes


def _size(text: str) -> int:
    """argparse type: one size such as 1GiB."""
    sizes = _sizes(text, option="--total")
    if len(sizes) != 1:
        raise argparse.ArgumentTypeError(f"--total {text!r} is one size, not a list")
    return sizes[0]


def _counts(text: str) -> list[int]:
    """argparse type: a comma-separated list of positive integers such as 2,3."""
    try:
        counts = [int(part) for part in text.split(",")]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of whole numbers") from exc
    if min(counts) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: counts must be at least 1")
    return counts


def _default_nvcc() -> str:
    """nvcc on PATH, else the toolkit's usual place."""
    return shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(
        prog="cupy_vs_cpp.py",
        description="Compare the day-54 naive and pipelined schedules timed through CuPy with the same "
        "schedules in CUDA C++ (day54/benchmarks/double_buffer.cu), interleaved on one GPU.",
    )
    parser.add_argument("--total", type=_size, default="1GiB", help="host array size (default 1GiB)")
    parser.add_argument(
        "--windows",
        type=_sizes,
        default="4MiB,64MiB,256MiB",
        help="chunk sizes, each dividing --total (default 4MiB,64MiB,256MiB)",
    )
    parser.add_argument(
        "--buffers", type=_counts, default="2,3", help="buffer pairs of the pipelined schedule (default 2,3)"
    )
    parser.add_argument("--fmas", type=int, default=512, help="chained FMAs per element (default 512)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats per pass and round (default 5)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of both sides (default 3)")
    parser.add_argument(
        "--build-dir",
        type=Path,
        default=ROOT / "build",
        help="where the C++ program is built (default build/ in the repo root)",
    )
    parser.add_argument("--nvcc", default=_default_nvcc(), help="the nvcc to build with (default: nvcc on PATH)")
    parser.add_argument("--out", type=Path, help="also write the printed report to this file")
    return parser.parse_args(argv)


def check_args(args: argparse.Namespace) -> None:
    """Reject sizes and counts the two sides cannot both run."""
    from labcore.errors import UsageError
    from labcore.sizes import format_size

    if args.total <= 0 or args.total % 4:
        raise UsageError(f"--total {args.total} must be a positive multiple of 4 bytes")
    for window in args.windows:
        if window <= 0 or window % 4 or args.total % window:
            raise UsageError(
                f"window {format_size(window)} must be a multiple of 4 bytes "
                f"that divides --total {format_size(args.total)}"
            )
    if args.fmas < 0 or args.repeats < 1 or args.rounds < 1:
        raise UsageError("--fmas must be at least 0, --repeats and --rounds at least 1")


def check_tools(nvcc: str) -> None:
    """Exit 2 (through UsageError) unless CuPy sees a GPU and nvcc exists."""
    from labcore.device import cupy_or_none
    from labcore.errors import UsageError

    if cupy_or_none() is None:
        raise UsageError("no CUDA GPU visible to CuPy (CuPy missing or no device); this benchmark needs both")
    if shutil.which(nvcc) is None:
        raise UsageError(f"nvcc not found ({nvcc}); put the CUDA toolkit on PATH or pass --nvcc")


def build(nvcc: str, build_dir: Path) -> Path:
    """Compile double_buffer.cu with -arch=native, falling back to -arch=sm_90."""
    build_dir.mkdir(parents=True, exist_ok=True)
    binary = build_dir / "double_buffer"
    for arch in ("native", "sm_90"):
        cmd = [nvcc, "-O3", "-std=c++17", f"-arch={arch}", "-o", str(binary), str(SOURCE)]
        progress("building: " + " ".join(cmd))
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode == 0:
            return binary
        progress(f"nvcc -arch={arch} failed:\n{done.stderr.strip()}")
    raise RuntimeError("could not build day54/benchmarks/double_buffer.cu (nvcc output above)")


def run_cpp(binary: Path, args: argparse.Namespace) -> Times:
    """Run the C++ program once over every window; its stderr passes through."""
    cmd = [
        str(binary),
        "--total",
        str(args.total),
        "--fmas",
        str(args.fmas),
        "--windows",
        ",".join(map(str, args.windows)),
        "--buffers",
        ",".join(map(str, args.buffers)),
        "--repeats",
        str(args.repeats),
    ]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{binary} exited with status {done.returncode} (its message is above)")
    times: Times = {}
    for line in done.stdout.splitlines():
        if line.strip():
            record = json.loads(line)
            key = (int(record["window_bytes"]), str(record["schedule"]), int(record["buffers"]))
            times[key] = [float(t) for t in record["times_ms"]]
    return times


def _time_cupy(fn: Callable[[], Any], key: Key, repeats: int) -> list[float]:
    """labcore.timing.time_pass on one CuPy pass: one warm-up, then `repeats` timed runs."""
    from labcore.sizes import format_size
    from labcore.timing import time_pass

    window, schedule, buffers = key
    label = f"cupy {schedule} w={format_size(window)} b={buffers}"
    params = {"window_bytes": window, "buffers": buffers}
    return time_pass(fn, key=label, name=schedule, params=params, domain=NVTX_DOMAIN, repeats=repeats).times_ms


def measure_cupy(host: Any, args: argparse.Namespace) -> Times:
    """Time naive and each pipelined depth per window through the day54 package."""
    from day54.schedules import naive, pipelined
    from labcore.pipeline.context import CupyContext
    from labcore.sizes import format_size

    times: Times = {}
    for window in args.windows:
        progress(f"CuPy window {format_size(window)}")
        ctx = CupyContext(host, window, max(args.buffers), args.fmas)
        times[(window, "naive", 1)] = _time_cupy(functools.partial(naive, ctx), (window, "naive", 1), args.repeats)
        for buffers in args.buffers:
            key = (window, "pipelined", buffers)
            times[key] = _time_cupy(functools.partial(pipelined, ctx.with_buffers(buffers)), key, args.repeats)
        del ctx
    return times


def expected_keys(args: argparse.Namespace) -> list[Key]:
    """Every (window, schedule, buffers) row, in table order."""
    rows: list[Key] = []
    for window in args.windows:
        rows.append((window, "naive", 1))
        rows.extend((window, "pipelined", b) for b in args.buffers)
    return rows


def _merge(into: Times, new: Times) -> None:
    """Append one round's repeats to the running lists."""
    for key, values in new.items():
        into.setdefault(key, []).extend(values)


def run_rounds(binary: Path, args: argparse.Namespace) -> tuple[Times, Times]:
    """Alternate the two sides for args.rounds rounds; return (CuPy times, C++ times)."""
    from labcore.pipeline.context import HostArrays

    host = HostArrays(args.total)
    host.fill_random(SEED)
    cupy_times: Times = {}
    cpp_times: Times = {}
    for r in range(args.rounds):
        order = ("C++", "CuPy") if r % 2 == 0 else ("CuPy", "C++")
        for side in order:
            progress(f"round {r + 1}/{args.rounds}: {side}")
            if side == "C++":
                _merge(cpp_times, run_cpp(binary, args))
            else:
                _merge(cupy_times, measure_cupy(host, args))
    return cupy_times, cpp_times


def report(summary: str, args: argparse.Namespace, cupy_times: Times, cpp_times: Times) -> str:
    """The printed text: GPU line, settings, table of medians and ratios, verdict line."""
    from labcore.sizes import format_size

    lines = [
        summary,
        f"total {format_size(args.total)}, fmas {args.fmas}, {args.rounds} rounds x {args.repeats} repeats "
        f"per side; medians over all repeats, in ms",
        f"{'window':>8}  {'schedule':<9}  {'buffers':>7}  {'CuPy ms':>9}  {'C++ ms':>9}  {'CuPy/C++':>8}",
    ]
    ratios = []
    for key in expected_keys(args):
        if key not in cupy_times or key not in cpp_times:
            raise RuntimeError(f"no timings for {key} from {'CuPy' if key not in cupy_times else 'C++'}")
        window, schedule, buffers = key
        cupy_ms, cpp_ms = statistics.median(cupy_times[key]), statistics.median(cpp_times[key])
        ratios.append(cupy_ms / cpp_ms)
        lines.append(
            f"{format_size(window):>8}  {schedule:<9}  {buffers:>7}  {cupy_ms:>9.3f}  {cpp_ms:>9.3f}  "
            f"{ratios[-1]:>8.3f}"
        )
    worst = max(ratios)
    verdict = "held" if worst <= TARGET_RATIO else "failed"
    lines.append(f"max ratio {worst:.3f} (target <= {TARGET_RATIO:.2f}): {verdict}")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Check, build, measure both sides interleaved, print (and maybe write) the comparison."""
    from labcore.device import device_facts

    args = parse_args(argv)
    check_args(args)
    check_tools(args.nvcc)
    try:
        binary = build(args.nvcc, args.build_dir)
        summary = device_facts().summary()
        cupy_times, cpp_times = run_rounds(binary, args)
        text = report(summary, args, cupy_times, cpp_times)
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
        progress(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    from labcore.errors import run_cli

    sys.exit(run_cli(main))
