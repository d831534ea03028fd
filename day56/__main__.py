"""python -m day56: the pipeline as one CUDA graph, live on a GPU or replayed from a recorded profile.

At every window of --windows and --window (64, 16 and 4 MiB of a 1 GiB array: 16, 64 and 256 chunks) the pipeline
runs stream by stream and captured as one graph; both are checked bit for bit against naive before any clock is
read. It prints the GPU time of each beside the duplex floor (at --window, default 64MiB), what the host pays per
pass (the enqueue loop against one launch), the graph's one-off capture and instantiate with its break-even in
launches, the update of the graph for a new input, the pitfalls of capture as this GPU answered them, and the
lesson's predictions judged on the numbers."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from day56 import LESSON, report
from day56.config import Config
from day56.live import run_live
from day56.plots import write_all
from day56.replay import load_profile
from labcore.errors import UsageError
from labcore.kit import cli
from labcore.mode import run_lesson
from labcore.record import Record
from labcore.sizes import format_size, parse_size, parse_sizes


def build_parser() -> argparse.ArgumentParser:
    return cli.lesson_parser(
        LESSON,
        __doc__,
        windows="64MiB,16MiB,4MiB",
        buffers=3,
        plot="the timeline, host and GPU plots",
        pitfalls=True,
        window="the window of the timelines, the duplex floor and the pitfalls",
    )


def config_from(args: argparse.Namespace) -> Config:
    """Options into a validated Config: windows become chunk counts of the total."""
    total = parse_size(args.total, option="--total")
    windows = parse_sizes(args.windows, option="--windows")
    main = parse_size(args.window, option="--window") if args.window is not None else None
    asked = windows if main is None else [*windows, main]
    for option, window in [("--windows", w) for w in windows] + [("--window", main)] * (main is not None):
        if window <= 0 or total % window:
            raise UsageError(f"{option} {format_size(window)} does not divide --total {format_size(total)}")
    cfg = Config(
        total_bytes=total,
        chunks=sorted({total // w for w in asked}),
        buffers=args.buffers,
        fmas=args.fmas,
        repeats=args.repeats,
        pitfalls=not args.no_pitfalls,
        main=None if main is None else total // main,
    )
    return cli.validated(cfg, args.seed)


LIVE_ONLY = ("buffers", "fmas", "total", "repeats", "seed", "device", "no_pitfalls")


def replay_notes(typed: set[str], cfg: Config, record: Record) -> list[str]:
    """One line per option given that a replay cannot honour."""
    notes = []
    have = report.chunk_counts(record)
    if typed & {"window", "windows"} and sorted(cfg.chunks) != have:
        shown = ",".join(format_size(record.config["total_bytes"] // n) for n in have)
        option = "--windows" if "windows" in typed else "--window"
        notes.append(f"replay: {option}: the recording has the windows {shown}; showing those")
    return notes + cli.as_measured(option for option in LIVE_ONLY if option in typed)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, cfg, record, mode = cli.started(parser, argv, config_from, LESSON, run_live, load_profile)
    if not mode.live:
        cli.say(replay_notes(cli.typed_options(parser, argv), cfg, record))
    why = lambda c: f": {c.detail}"  # noqa: E731
    plots = lambda: write_all(record, args.plot)  # noqa: E731
    return cli.shown(record, args.json, args.plot, report.checks_text, why, lambda: report.render(record), plots)


if __name__ == "__main__":
    sys.exit(run_lesson(main, LESSON))
