"""python -m day54: the double-buffering lab, live on a GPU or replayed from a recorded profile.

`--gpus` runs the multi-GPU section instead (day54.multi_gpu): every GPU pipelining its own array, alone and all at
once, and a buffer moved from GPU 0 to GPU 1 by peer copy and through the host."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from day54 import LESSON, multi_gpu, report
from day54.config import Config
from day54.live import run_live
from day54.plots import multi_gpus, traced_window, write_all
from day54.replay import REPLAYED_EXPORTS, load_profile
from labcore.device import gpu_count
from labcore.errors import UsageError
from labcore.kit import cli
from labcore.mode import NO_GPU, run_lesson
from labcore.plots import save
from labcore.record import Check, Record
from labcore.sizes import format_size, parse_size, parse_sizes


def build_parser() -> argparse.ArgumentParser:
    parser = cli.lesson_parser(
        LESSON,
        __doc__,
        windows="4MiB,64MiB,256MiB",
        buffers="2,3",
        plot="the timeline, sweep, stage and pitfall plots",
        pitfalls=True,
    )
    parser.add_argument(
        "--gpus",
        action="store_true",
        help="the multi-GPU section instead: every GPU pipelining its own array alone and all at once, and GPU 0 "
        f"to GPU 1 by peer copy and through the host (offline: {multi_gpu.PROFILE.as_posix()})",
    )
    return parser


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def given_options(argv: Sequence[str] | None) -> set[str]:
    """The options typed on the command line."""
    return cli.typed_options(build_parser(), argv)


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
    return cli.validated(cfg, args.seed)


def _listed(values: Sequence[int], fmt: Callable[[int], str] = str) -> str:
    return ",".join(fmt(v) for v in values)


def _note(option: str, asked: str, have: str | None, missing: str | None) -> str:
    """'replay: --buffers 4 not in the recording (it has 2,3); showing 2,3', and its variants."""
    if have is None:
        return f"replay: --{option} {asked}: the recording does not say; showing it as recorded"
    if missing is None:  # the recording has what was asked, and more
        return f"replay: --{option} {asked}: the recording has {have}; showing {have}"
    lead = f"replay: --{option} {asked}" + ("" if missing == asked else f": {missing}")
    return f"{lead} not in the recording (it has {have}); showing {have}"


def replay_notes(argv: Sequence[str] | None, cfg: Config, record: Record) -> list[str]:
    """One line per option given that a replay cannot honour: what was asked, what the recording has, what is shown."""
    given = given_options(argv)
    notes = []
    for option, asked, have, fmt in (
        ("buffers", cfg.buffers, report.buffers(record), str),
        ("windows", cfg.windows, report.windows(record), format_size),
    ):
        if option in given and sorted(set(asked)) != have:
            missing = [v for v in asked if v not in have]
            notes.append(
                _note(option, _listed(asked, fmt), _listed(have, fmt), _listed(missing, fmt) if missing else None)
            )
    for option, asked, have, fmt in (
        ("fmas", cfg.fmas, record.config.get("fmas"), str),
        ("total", cfg.total_bytes, record.config.get("total_bytes"), format_size),
        ("seed", cfg.seed, record.config.get("seed"), str),
        ("repeats", cfg.repeats, _single({len(p.times_ms) for p in record.passes}), str),
    ):
        if option in given and asked != have:
            notes.append(_note(option, fmt(asked), None if have is None else fmt(have), fmt(asked)))
    if "device" in given:
        notes.append(f"replay: --device {parse_args(argv).device}: a replay runs on no GPU; showing the recording")
    if "no_pitfalls" in given and record.extra.get("pitfalls"):
        notes.append("replay: --no-pitfalls: the recording has the pitfall runs; showing them")
    return notes


def _single(values: set[int]) -> int | None:
    return next(iter(values)) if len(values) == 1 else None


GPUS_IGNORES = {"windows": "--window", "no_pitfalls": None, "device": "CUDA_VISIBLE_DEVICES"}  # and what to use
GPUS_LIVE_ONLY = ("total", "window", "buffers", "fmas", "repeats", "seed")


def saved_and_correct(record: Record, json_path: str | None) -> bool:
    """Write the record where --json asks; False, with the checks printed, when one failed (timing skipped)."""
    return cli.saved_and_correct(record, json_path, report.checks_text, _why)


def _why(check: Check) -> str:
    return f" at chunk {check.first_bad_chunk}"


def gpus_main(argv: Sequence[str] | None, args: argparse.Namespace) -> int:
    """`--gpus`: the multi-GPU section, live on the GPUs here (one runs what one can), else its recorded profile."""
    given = given_options(argv)
    for option, instead in GPUS_IGNORES.items():
        if option in given:
            flag = "--" + option.replace("_", "-")
            use = f"; use {instead}" if instead else ""
            raise UsageError(f"{flag} does not apply to --gpus (it runs one window on every GPU here){use}")
    args.windows = args.window or "64MiB"  # the section runs the main window only: validate that one
    cfg = config_from(args)
    name = "day54 --gpus"
    if args.from_profile is None and gpu_count() > 0:
        print(multi_gpu.live_line(gpu_count()), flush=True)
        record = multi_gpu.run_live(cfg)
    elif args.from_profile is None and not multi_gpu.shipped_exists():
        print(f"{name}: {NO_GPU}, and {multi_gpu.no_profile_line()}", file=sys.stderr)
        return 1
    else:
        record = multi_gpu.load_profile(args.from_profile)
        why = "" if args.from_profile else f"; {NO_GPU}"
        print(f"{name}: {multi_gpu.describe(record)}{why}", flush=True)
        for option in sorted(given & set(GPUS_LIVE_ONLY)):
            print(f"replay: --{option}: a replay shows the recording as it was measured", file=sys.stderr)
    if not saved_and_correct(record, args.json):
        return 1
    print(multi_gpu.render(record))
    if args.plot:
        print(f"wrote {save(multi_gpus(record), Path(args.plot) / 'day54_multi_gpu.png')}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    cli.check_options(args, REPLAYED_EXPORTS)
    if args.gpus:
        return gpus_main(argv, args)
    cfg = config_from(args)
    record, mode = cli.measured(args.from_profile, args.device, LESSON, lambda: run_live(cfg), load_profile)
    window = cfg.window_bytes
    if not mode.live:
        window = report.main_window(record, cfg.window_bytes if args.window else None)
        cli.say(replay_notes(argv, cfg, record))
        if args.plot:
            cli.say(cli.traced_note(window, traced_window(record, window)))
    plots = lambda: write_all(record, args.plot, window)  # noqa: E731
    status = cli.shown(
        record, args.json, args.plot, report.checks_text, _why, lambda: report.render(record, window), plots
    )
    if status == 0:
        print(f"\nwindow {format_size(report.main_window(record, window))}: done", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(run_lesson(main, LESSON))
