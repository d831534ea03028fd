"""python -m day54: the double-buffering lab, live on a GPU or replayed from a recorded profile."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from day54 import LESSON, report
from day54.config import Config
from day54.live import run_live
from day54.plots import write_all
from day54.replay import describe, load_profile
from labcore.errors import UsageError, run_cli
from labcore.mode import FROM_PROFILE, Mode, live_line
from labcore.sizes import format_size, parse_size, parse_sizes


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line and exit 2, like every other bad input
        raise UsageError(message)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = _Parser(prog="python -m day54", description=__doc__)
    parser.add_argument("--window", default=None, help="chunk size of the main table (default 64MiB)")
    parser.add_argument("--windows", default="4MiB,64MiB,256MiB", help="windows of the sweep")
    parser.add_argument("--buffers", default="2,3", help="pipeline depths, buffer pairs (default 2,3)")
    parser.add_argument("--fmas", type=int, default=512, help="chained FMAs per element (default 512)")
    parser.add_argument("--total", default="1GiB", help="array size (default 1GiB)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats per pass (default 5)")
    parser.add_argument("--seed", type=int, default=None, help="input seed (default: fresh)")
    parser.add_argument("--no-pitfalls", action="store_true", help="skip the pitfall demonstrations")
    parser.add_argument("--json", metavar="PATH", help="also write the results record here")
    parser.add_argument("--plot", metavar="DIR", help="also write the timeline, sweep and stage plots here")
    parser.add_argument("--from-profile", metavar="DIR", help="replay this recorded profile instead of the GPU")
    return parser.parse_args(argv)


# Options that shape a live run; a replay shows what was recorded, so it says when one of them was given.
REPLAY_IGNORES = ("windows", "buffers", "fmas", "total", "repeats", "seed", "no_pitfalls")
DEFAULTS = vars(parse_args([]))


def config_from(args: argparse.Namespace) -> Config:
    """Turn options into a validated Config."""
    try:
        depths = [int(b) for b in str(args.buffers).split(",") if b.strip()]
    except ValueError:
        raise UsageError(f"--buffers {args.buffers!r} is not a list of integers such as 2,3") from None
    cfg = Config(
        total_bytes=parse_size(args.total, option="--total"),
        window_bytes=parse_size(args.window or "64MiB", option="--window"),
        windows=parse_sizes(args.windows, option="--windows"),
        buffers=depths,
        fmas=args.fmas,
        repeats=args.repeats,
        pitfalls=not args.no_pitfalls,
    )
    if args.seed is not None:
        cfg.seed = args.seed
    cfg.validate()
    return cfg


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    cfg = config_from(args)
    mode = Mode.decide(args.from_profile)
    if mode.live:
        print(live_line(LESSON), flush=True)
        record = run_live(cfg)
        window = cfg.window_bytes
    else:
        record = load_profile(mode.profile)
        print(f"{LESSON}: {describe(record)}" + ("" if mode.reason == FROM_PROFILE else f"; {mode.reason}"), flush=True)
        window = cfg.window_bytes if args.window else None
        ignored = [f"--{name.replace('_', '-')}" for name in REPLAY_IGNORES if getattr(args, name) != DEFAULTS[name]]
        if ignored:
            print(f"note: a replay shows the recorded run; {', '.join(ignored)} ignored", file=sys.stderr)
    if args.json:
        print(f"results record: {record.save(args.json)}", file=sys.stderr)
    failed = [c for c in record.checks if not c.ok]
    if failed:
        print(report.checks_text(record))
        print(f"\nerror: {failed[0].name} failed at chunk {failed[0].first_bad_chunk}; timing skipped", file=sys.stderr)
        return 1
    print(report.render(record, window))
    if args.plot:
        for path in write_all(record, args.plot, window):
            print(f"wrote {path}")
    print(f"\nwindow {format_size(report.main_window(record, window))}: done", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
