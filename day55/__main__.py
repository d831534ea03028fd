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
from labcore.kit import cli
from labcore.mode import run_lesson
from labcore.sizes import parse_size, parse_sizes


def build_parser() -> argparse.ArgumentParser:
    return cli.lesson_parser(LESSON, __doc__, windows="4MiB,64MiB", buffers=2, plot="the timelines and the medians")


def config_from(args: argparse.Namespace) -> Config:
    cfg = Config(
        total_bytes=parse_size(args.total, option="--total"),
        window_bytes=parse_size(args.window or "64MiB", option="--window"),
        windows=parse_sizes(args.windows, option="--windows"),
        buffers=args.buffers,
        fmas=args.fmas,
        repeats=args.repeats,
    )
    return cli.validated(cfg, args.seed)


LIVE_ONLY = ("windows", "buffers", "fmas", "total", "repeats", "seed", "device")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, cfg, record, mode = cli.started(parser, argv, config_from, LESSON, run_live, load_profile)
    window = cfg.window_bytes
    if not mode.live:
        typed = cli.typed_options(parser, argv)
        cli.say(cli.as_measured(option for option in LIVE_ONLY if option in typed))
        window = report.main_window(record, cfg.window_bytes if args.window else None)
        if args.plot:
            cli.say(cli.traced_note(window, traced_window(record, window)))
    why = lambda c: f" ({c.detail})"  # noqa: E731
    render = lambda: report.render(record, window)  # noqa: E731
    plots = lambda: write_all(record, Path(args.plot), window)  # noqa: E731
    return cli.shown(record, args.json, args.plot, report.checks_text, why, render, plots)


if __name__ == "__main__":
    sys.exit(run_lesson(main, LESSON))
