"""Does the challenge's bar hold on this GPU? The check itself, run again and again on three answers.

    python day54/benchmarks/challenge_bar.py [--runs 20] [--solution-runs 5] [--notebook PATH]

Calls `day54.checks.check_challenge` as a student's kernel does (correct first, then the live rounds: the course's
best, the answer and the link's probe, one run each a round, outputs verified) on

1. the solutions notebook's `my_fastest` and `MY_CHALLENGE`, read from the notebook's cells: `--solution-runs`
   times, each must pass;
2. a copy of the course's best (the plain pipeline written here, at `checks.COURSE_BEST`): `--runs` times, each
   must pass;
3. the same copy at 64 MiB x 2: `--runs` times, each must fail.

Prints every run's ratios (over the course's best, over the link floor), rounds and seconds in the live rounds,
then per answer the band of its ratios beside the bar and the noise the check states, and exits 1 when any
verdict is not the expected one. Needs a GPU.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from day54 import checks
from day54.config import MiB
from labcore import checking
from labcore.device import gpu_available

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ("solutions/day54/day54.ipynb", "day54/solutions/day54.ipynb")  # before and after lessons move


def copy_of_best(ctx: Any) -> None:
    """The course's best schedule, written out as a student would: the plain pipeline."""
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)


def solution(path: Path) -> tuple[Any, dict[str, int]]:
    """my_fastest and MY_CHALLENGE from the solutions notebook's cell that defines them."""
    cells = json.loads(path.read_text())["cells"]
    source = next(
        "".join(c["source"]) for c in cells if c["cell_type"] == "code" and "def my_fastest" in "".join(c["source"])
    )
    namespace: dict[str, Any] = {"MiB": MiB}
    exec(compile(source, f"{path}:my_fastest", "exec"), namespace)  # the course's own notebook, not a student's
    return namespace["my_fastest"], namespace["MY_CHALLENGE"]


def timed_live() -> list[float]:
    """Wrap the check's live rounds to count their seconds (what a student's challenge costs the GPU)."""
    seconds: list[float] = []
    live = checks._challenge_live

    def counted(recorded: Any, rounds: int) -> Any:
        start = time.perf_counter()
        try:
            return live(recorded, rounds)
        finally:
            seconds.append(time.perf_counter() - start)

    checks._challenge_live = counted
    return seconds


def one_run(schedule: Any, settings: dict[str, int], seconds: list[float]) -> tuple[bool, checking.Result, Any]:
    """One check: its verdict, its two results (read as data, not from its sentence) and its live seconds."""
    checking.drain()
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # its sentence; the numbers come as data
            checks.check_challenge(schedule, settings)
        passed = True
    except AssertionError:
        passed = False
    best, floor = checking.drain()[-2:]
    return passed, best, (floor, seconds[-1] if seconds else float("nan"))


def trial(label: str, schedule: Any, settings: dict[str, int], runs: int, expect: bool, seconds: list) -> bool:
    print(f"{label}: {settings}, {runs} runs, each expected to {'pass' if expect else 'fail'}", flush=True)
    verdicts, over_best, over_floor = [], [], []
    for n in range(1, runs + 1):
        passed, best, (floor, took) = one_run(schedule, settings, seconds)
        counted = re.search(r"medians of (\d+) rounds", best.detail)
        rounds = counted.group(1) if counted else "?"
        verdicts.append(passed)
        over_best.append(best.value)
        over_floor.append(floor.value)
        print(
            f"  run {n:>2}: {best.value:.3f}x the course's best, {floor.value:.3f}x the link floor (the course's best "
            f"{floor.reference:.3f}x), {rounds} rounds, {took:.2f} s live: {'passed' if passed else 'failed'}",
            flush=True,
        )
    ok = all(v == expect for v in verdicts)
    print(
        f"  {label}: {sum(verdicts)} of {runs} passed ({'as expected' if ok else 'NOT as expected'}); over the "
        f"course's best {min(over_best):.3f}-{max(over_best):.3f} (median {statistics.median(over_best):.3f}), "
        f"over the floor {min(over_floor):.3f}-{max(over_floor):.3f}; bar {checks.CHALLENGE_FACTOR:.2f}x, noise "
        f"stated +-{checks.CHALLENGE_NOISE:.1%} (floor +-{checks.CHALLENGE_FLOOR_NOISE:.1%})",
        flush=True,
    )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="runs of the copy and of 64 MiB x 2 (default 20)")
    parser.add_argument("--solution-runs", type=int, default=5, help="runs of the solutions notebook's (default 5)")
    parser.add_argument("--notebook", help="the solutions notebook (default: found in the checkout)")
    args = parser.parse_args()
    if not gpu_available():
        print("challenge_bar: needs a CUDA GPU (the bar is about live timing)", file=sys.stderr)
        return 2
    found = [Path(args.notebook)] if args.notebook else [ROOT / p for p in NOTEBOOKS if (ROOT / p).is_file()]
    if not found or not found[0].is_file():
        print(f"challenge_bar: no solutions notebook at {args.notebook or ' or '.join(NOTEBOOKS)}", file=sys.stderr)
        return 2
    my_fastest, my_settings = solution(found[0])
    best = checks.COURSE_BEST
    seconds = timed_live()
    print(
        f"the course's best: {best.describe()}; at most {checks.CHALLENGE_ROUNDS} rounds, early stop after "
        f"{checks.CHALLENGE_EARLY_ROUNDS} decided",
        flush=True,
    )
    results = [
        trial("the solutions notebook", my_fastest, my_settings, args.solution_runs, True, seconds),
        trial(
            "a copy of the course's best",
            copy_of_best,
            {"window": best.window, "buffers": best.buffers, "streams": best.streams},
            args.runs,
            True,
            seconds,
        ),
        trial("64 MiB x 2", copy_of_best, {"window": 64 * MiB, "buffers": 2, "streams": 2}, args.runs, False, seconds),
    ]
    print(
        f"live rounds: {sum(seconds):.1f} s for {len(seconds)} checks, median {statistics.median(seconds):.2f} s, "
        f"max {max(seconds):.2f} s a check"
    )
    print("the bar holds" if all(results) else "the bar does NOT hold on this GPU")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
