"""python -m day57: day 54's job through managed memory, live on a GPU or replayed from a recorded profile.

The pinned pipeline and the duplex floor, then the same gigabyte in cudaMallocManaged memory: faulted in and out on
first touch, prefetched chunk by chunk on streams in the pipeline's place, and with advice (input read-mostly,
output preferring the host); every output checked bit for bit against naive before and after the timing. Offline
it replays the shipped profile, whose nsys trace adds the faults and migrations of one repeat of each managed
pass."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from day57 import LESSON, report
from day57.config import Config
from day57.live import run_live
from day57.plots import write_all
from day57.replay import EXPORTS, load_profile
from labcore.kit import cli
from labcore.mode import run_lesson
from labcore.sizes import parse_size

LIVE_ONLY = ("window", "buffers", "fmas", "total", "repeats", "seed", "device")


def build_parser() -> argparse.ArgumentParser:
    return cli.lesson_parser(
        LESSON,
        __doc__,
        windows=None,
        buffers=3,
        plot="the bars and the unified-memory timeline",
        window="the chunk size of the pipeline and of the prefetches",
    )


def config_from(args: argparse.Namespace) -> Config:
    cfg = Config(
        total_bytes=parse_size(args.total, option="--total"),
        window_bytes=parse_size(args.window or cli.MAIN_WINDOW, option="--window"),
        buffers=args.buffers,
        fmas=args.fmas,
        repeats=args.repeats,
    )
    return cli.validated(cfg, args.seed)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, _, record, mode = cli.started(parser, argv, config_from, LESSON, run_live, load_profile, EXPORTS)
    if not mode.live:
        typed = cli.typed_options(parser, argv)
        cli.say(cli.as_measured(option for option in LIVE_ONLY if option in typed))
    why = lambda c: f": {c.detail}"  # noqa: E731
    plots = lambda: write_all(record, args.plot)  # noqa: E731
    return cli.shown(record, args.json, args.plot, report.checks_text, why, lambda: report.render(record), plots)


if __name__ == "__main__":
    sys.exit(run_lesson(main, LESSON))
