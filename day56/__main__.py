"""python -m day56: the pipeline as one CUDA graph, live on a GPU or replayed from a recorded profile.

At every window (64, 16 and 4 MiB of a 1 GiB array: 16, 64 and 256 chunks) the pipeline runs stream by stream and
captured as one graph; both are checked bit for bit against naive before any clock is read. It prints the GPU time
of each beside the duplex floor, what the host pays per pass (the enqueue loop against one launch), the graph's
one-off capture and instantiate with its break-even in launches, the update of the graph for a new input, the
pitfalls of capture as this GPU answered them, and the lesson's predictions judged on the numbers."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from day56 import LESSON, report
from day56.config import Config
from day56.live import run_live
from day56.plots import write_all
from day56.replay import load_profile
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
    parser = _Parser(prog="python -m day56", description=__doc__)
    parser.add_argument(
        "--window", default="64MiB,16MiB,4MiB", help="windows (chunk sizes) to measure (default 64MiB,16MiB,4MiB)"
    )
    parser.add_argument("--buffers", type=int, default=3, help="buffer pairs of the pipeline (default 3)")
    parser.add_argument("--fmas", type=int, default=512, help="chained FMAs per element (default 512)")
    parser.add_argument("--total", default="1GiB", help="array size (default 1GiB)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats per pass (default 5)")
    parser.add_argument("--seed", type=int, default=None, help="input seed (default: fresh)")
    parser.add_argument("--no-pitfalls", action="store_true", help="skip the pitfall demonstrations")
    parser.add_argument("--json", metavar="PATH", help="also write the results record here")
    parser.add_argument("--plot", metavar="DIR", help="also write the timeline, host and GPU plots here")
    parser.add_argument("--from-profile", metavar="DIR", help="replay this recorded profile instead of the GPU")
    parser.add_argument(
        "--device", metavar="N", default=None, help=f"the GPU to run on (default: ${DEVICE_ENV}, else 0)"
    )
    return parser


def config_from(args: argparse.Namespace) -> Config:
    """Options into a validated Config: windows become chunk counts of the total."""
    total = parse_size(args.total, option="--total")
    windows = parse_sizes(args.window, option="--window")
    for window in windows:
        if window <= 0 or total % window:
            raise UsageError(f"--window {format_size(window)} does not divide --total {format_size(total)}")
    cfg = Config(
        total_bytes=total,
        chunks=sorted({total // w for w in windows}),
        buffers=args.buffers,
        fmas=args.fmas,
        repeats=args.repeats,
        pitfalls=not args.no_pitfalls,
    )
    if args.seed is not None:
        cfg.seed = args.seed
    cfg.validate()
    return cfg


def replay_notes(argv: Sequence[str] | None, cfg: Config, record: Record) -> list[str]:
    """One line per option given that a replay cannot honour."""
    given = set(argv or [])
    notes = []
    have = report.chunk_counts(record)
    if any(a.startswith("--window") for a in given) and sorted(cfg.chunks) != have:
        shown = ",".join(format_size(record.config["total_bytes"] // n) for n in have)
        notes.append(f"replay: --window: the recording has the windows {shown}; showing those")
    for option in ("--buffers", "--fmas", "--total", "--repeats", "--seed", "--device", "--no-pitfalls"):
        if any(a == option or a.startswith(option + "=") for a in given):
            notes.append(f"replay: {option}: a replay shows the recording as it was measured")
    return notes


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
    else:
        record = load_profile(mode.profile)
        print(f"{LESSON}: {describe(record)}" + ("" if mode.reason == FROM_PROFILE else f"; {mode.reason}"), flush=True)
        for note in replay_notes(argv if argv is not None else sys.argv[1:], cfg, record):
            print(note, file=sys.stderr)
    if args.json:
        print(f"results record: {record.save(args.json)}", file=sys.stderr)
    failed = [c for c in record.checks if not c.ok]
    if failed:
        print(report.checks_text(record))
        print(f"\nerror: {failed[0].name} failed: {failed[0].detail}; timing skipped", file=sys.stderr)
        return 1
    print(report.render(record))
    if args.plot:
        for path in write_all(record, args.plot):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(run_lesson(main, LESSON))
