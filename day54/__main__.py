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
from labcore.device import DEVICE_ENV, gpu_count
from labcore.errors import UsageError, gpu_index, output_file, output_folder
from labcore.mode import FROM_PROFILE, NO_GPU, Mode, live_line, run_lesson
from labcore.plots import save
from labcore.profiles import describe, require_exports
from labcore.record import Record
from labcore.sizes import format_size, parse_size, parse_sizes


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line and exit 2, like every other bad input
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
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
    parser.add_argument("--plot", metavar="DIR", help="also write the timeline, sweep, stage and pitfall plots here")
    parser.add_argument("--from-profile", metavar="DIR", help="replay this recorded profile instead of the GPU")
    parser.add_argument(
        "--device", metavar="N", default=None, help=f"the GPU to run on (default: ${DEVICE_ENV}, else 0)"
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
    """The options typed on the command line (argparse leaves a value it was handed in place of a default)."""
    unset = object()
    parser = build_parser()
    names = list(vars(parser.parse_args([])))
    parsed = parser.parse_args(argv, argparse.Namespace(**dict.fromkeys(names, unset)))
    return {name for name in names if getattr(parsed, name) is not unset}


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
    if json_path:
        print(f"results record: {record.save(json_path)}", file=sys.stderr)
    failed = [c for c in record.checks if not c.ok]
    if failed:
        print(report.checks_text(record))
        print(f"\nerror: {failed[0].name} failed at chunk {failed[0].first_bad_chunk}; timing skipped", file=sys.stderr)
    return not failed


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


def check_options(args: argparse.Namespace) -> None:
    """What can be refused before any work: folders and files to write, a profile folder missing exports, a GPU
    that is no GPU's number."""
    gpu_index(args.device)
    if args.plot:
        output_folder(args.plot, "--plot")
    if args.json:
        output_file(args.json, "--json")
    require_exports(args.from_profile, REPLAYED_EXPORTS)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    check_options(args)
    if args.gpus:
        return gpus_main(argv, args)
    cfg = config_from(args)
    mode = Mode.decide(args.from_profile, args.device)
    if mode.live:
        print(live_line(LESSON), flush=True)
        record = run_live(cfg)
        window = cfg.window_bytes
    else:
        record = load_profile(mode.profile)
        print(f"{LESSON}: {describe(record)}" + ("" if mode.reason == FROM_PROFILE else f"; {mode.reason}"), flush=True)
        window = report.main_window(record, cfg.window_bytes if args.window else None)
        for note in replay_notes(argv, cfg, record):
            print(note, file=sys.stderr)
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
        for path in write_all(record, args.plot, window):
            print(f"wrote {path}")
    print(f"\nwindow {format_size(report.main_window(record, window))}: done", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(run_lesson(main, LESSON))
