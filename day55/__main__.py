"""python -m day55: stream-ordered allocation, live on a GPU or replayed from a recorded profile.

Day 54's pipeline with each chunk's device buffers allocated inside the loop: cudaMalloc/cudaFree per chunk,
cudaMallocAsync/cudaFreeAsync on the chunk's stream at the pool's default release threshold and raised, CuPy's own
pool, and the buffers allocated once; every output checked bit for bit before anything is timed."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from day55 import LESSON, report
from day55.config import Config
from day55.live import run_live
from day55.plots import traced_window, write_all
from day55.replay import load_profile
from labcore.device import DEVICE_ENV
from labcore.errors import UsageError, gpu_index, output_file, output_folder
from labcore.mode import FROM_PROFILE, Mode, live_line, run_lesson
from labcore.profiles import describe
from labcore.record import Record
from labcore.sizes import format_size, parse_size, parse_sizes


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line and exit 2, like every other bad input
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m day55", description=__doc__)
    parser.add_argument("--window", default=None, help="chunk size of the main table and timelines (default 64MiB)")
    parser.add_argument("--windows", default="4MiB,64MiB", help="windows of the sweep (default 4MiB,64MiB)")
    parser.add_argument("--buffers", type=int, default=2, help="buffer pairs, one stream each (default 2)")
    parser.add_argument("--fmas", type=int, default=512, help="chained FMAs per element (default 512)")
    parser.add_argument("--total", default="1GiB", help="array size (default 1GiB)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats per pass (default 5)")
    parser.add_argument("--seed", type=int, default=None, help="input seed (default: fresh)")
    parser.add_argument("--json", metavar="PATH", help="also write the results record here")
    parser.add_argument("--plot", metavar="DIR", help="also write the timelines and the medians here")
    parser.add_argument("--from-profile", metavar="DIR", help="replay this recorded profile instead of the GPU")
    parser.add_argument(
        "--device", metavar="N", default=None, help=f"the GPU to run on (default: ${DEVICE_ENV}, else 0)"
    )
    return parser


def config_from(args: argparse.Namespace) -> Config:
    cfg = Config(
        total_bytes=parse_size(args.total, option="--total"),
        window_bytes=parse_size(args.window or "64MiB", option="--window"),
        windows=parse_sizes(args.windows, option="--windows"),
        buffers=args.buffers,
        fmas=args.fmas,
        repeats=args.repeats,
    )
    if args.seed is not None:
        cfg.seed = args.seed
    cfg.validate()
    return cfg


LIVE_ONLY = ("windows", "buffers", "fmas", "total", "repeats", "seed", "device")


def given(argv: Sequence[str] | None) -> list[str]:
    """The live-only options typed on the command line."""
    words = list(sys.argv[1:] if argv is None else argv)
    return [name for name in LIVE_ONLY if any(w == f"--{name}" or w.startswith(f"--{name}=") for w in words)]


def saved_and_correct(record: Record, json_path: str | None) -> bool:
    """Write the record where --json asks; False, with the checks printed, when one failed (timing skipped)."""
    if json_path:
        print(f"results record: {record.save(json_path)}", file=sys.stderr)
    failed = [c for c in record.checks if not c.ok]
    if failed:
        print(report.checks_text(record))
        print(f"\nerror: {failed[0].name} failed ({failed[0].detail}); timing skipped", file=sys.stderr)
    return not failed


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    gpu_index(args.device)
    if args.plot:
        output_folder(args.plot, "--plot")
    if args.json:
        output_file(args.json, "--json")
    cfg = config_from(args)
    mode = Mode.decide(args.from_profile, args.device)
    if mode.live:
        print(live_line(LESSON), flush=True)
        record = run_live(cfg)
        window = cfg.window_bytes
    else:
        record = load_profile(mode.profile)
        print(f"{LESSON}: {describe(record)}" + ("" if mode.reason == FROM_PROFILE else f"; {mode.reason}"), flush=True)
        for option in given(argv):
            print(f"replay: --{option}: a replay shows the recording as it was measured", file=sys.stderr)
        window = report.main_window(record, cfg.window_bytes if args.window else None)
        if args.plot and (traced := traced_window(record, window)) != window:
            print(
                f"replay: --window {format_size(window)}: the recording traced its timelines at "
                f"{format_size(traced)}; the timelines show {format_size(traced)}",
                file=sys.stderr,
            )
    if not saved_and_correct(record, args.json):
        return 1
    print(report.render(record, window))
    if args.plot:
        for path in write_all(record, Path(args.plot), window):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(run_lesson(main, LESSON))
