"""The command line every lesson shares: `python -m <lesson>`, live on a GPU or replayed from a profile.

Each option means one thing in every lesson: `--window` the one window (chunk size) of the main table and the
timelines, `--windows` the windows measured besides it, `--buffers` buffer pairs, `--total` the array, `--fmas`
chained FMAs per element, `--repeats` timed repeats per pass, `--seed` the input's seed, `--json` the record written,
`--plot` the figures' folder, `--from-profile` a profile replayed, `--device` the GPU. A lesson's __main__:

    parser = lesson_parser(LESSON, __doc__, windows="4MiB,64MiB", buffers=2, plot="the timelines")
    args = parser.parse_args(argv)
    check_options(args, REPLAYED_EXPORTS)
    record, mode = measured(args.from_profile, args.device, LESSON, lambda: run_live(cfg), load_profile)
    if not saved_and_correct(record, args.json, report.checks_text):
        return 1

and `if __name__ == "__main__": sys.exit(labcore.mode.run_lesson(main, LESSON))`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from labcore.device import DEVICE_ENV
from labcore.errors import UsageError, gpu_index, output_file, output_folder
from labcore.kit.replay import REPLAYED_EXPORTS
from labcore.mode import FROM_PROFILE, Mode, live_line
from labcore.profiles import describe, require_exports
from labcore.record import Check, Record
from labcore.sizes import format_size

MAIN_WINDOW = "64MiB"


class Parser(argparse.ArgumentParser):
    """argparse's parser whose errors are one line and exit 2, like every other bad input (`hint` ends the line)."""

    def __init__(self, *args: Any, hint: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hint = hint

    def error(self, message: str) -> None:
        raise UsageError(f"{message}{self.hint}")


def lesson_parser(
    lesson: str,
    doc: str | None,
    *,
    windows: str | None,
    buffers: str | int,
    plot: str,
    pitfalls: bool = False,
    window: str = "chunk size of the main table and timelines",
) -> Parser:
    """The lesson's parser with the options every lesson has; `windows` and `buffers` are its defaults (`windows`
    None: the lesson measures one window, and has no --windows), `plot` what --plot writes, `pitfalls` whether it
    has --no-pitfalls. A lesson adds its own options after."""
    parser = Parser(prog=f"python -m {lesson}", description=doc)
    parser.add_argument("--window", default=None, help=f"{window} (default {MAIN_WINDOW})")
    if windows is not None:
        parser.add_argument("--windows", default=windows, help=f"windows measured besides it (default {windows})")
    buffers_type = int if isinstance(buffers, int) else str
    parser.add_argument("--buffers", type=buffers_type, default=buffers, help=f"buffer pairs (default {buffers})")
    parser.add_argument("--fmas", type=int, default=512, help="chained FMAs per element (default 512)")
    parser.add_argument("--total", default="1GiB", help="array size (default 1GiB)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats per pass (default 5)")
    parser.add_argument("--seed", type=int, default=None, help="input seed (default: fresh)")
    if pitfalls:
        parser.add_argument("--no-pitfalls", action="store_true", help="skip the pitfall demonstrations")
    add_record_options(parser, f"also write {plot} here")
    return parser


def add_record_options(
    parser: argparse.ArgumentParser, plot: str, replay: str = "replay this recorded profile instead of the GPU"
) -> None:
    """--json, --plot (`plot` is its help), --from-profile and --device: the options of every lesson's record."""
    parser.add_argument("--json", metavar="PATH", help="also write the results record here")
    parser.add_argument("--plot", metavar="DIR", help=plot)
    parser.add_argument("--from-profile", metavar="DIR", help=replay)
    parser.add_argument(
        "--device", metavar="N", default=None, help=f"the GPU to run on (default: ${DEVICE_ENV}, else 0)"
    )


def typed_options(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> set[str]:
    """The options typed on the command line, by their dest (argparse leaves a value it was handed in place of a
    default)."""
    unset = object()
    names = list(vars(parser.parse_args([])))
    parsed = parser.parse_args(argv, argparse.Namespace(**dict.fromkeys(names, unset)))
    return {name for name in names if getattr(parsed, name) is not unset}


def check_options(args: argparse.Namespace, reports: Sequence[str]) -> None:
    """What can be refused before any work: a GPU that is no GPU's number, folders and files to write, a profile
    folder missing the exports a replay reads."""
    gpu_index(args.device)
    if args.plot:
        output_folder(args.plot, "--plot")
    if args.json:
        output_file(args.json, "--json")
    require_exports(args.from_profile, reports)


def started(
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    config_from: Callable[[argparse.Namespace], Any],
    lesson: str,
    run_live: Callable[[Any], Record],
    replay: Callable[[Path | None], Record],
    exports: Sequence[str] = REPLAYED_EXPORTS,
) -> tuple[argparse.Namespace, Any, Record, Mode]:
    """The start of every lesson's main: options parsed and checked (`exports`: the nsys exports the lesson's
    replay reads), the Config, then the record live or replayed after the mode line (`measured`)."""
    args = parser.parse_args(argv)
    check_options(args, exports)
    cfg = config_from(args)
    record, mode = measured(args.from_profile, args.device, lesson, lambda: run_live(cfg), replay)
    return args, cfg, record, mode


def measured(
    profile: str | None,
    device: str | None,
    lesson: str,
    live: Callable[[], Record],
    replay: Callable[[Path | None], Record],
) -> tuple[Record, Mode]:
    """The record, live or replayed (Mode.decide), after the mode line on stdout."""
    mode = Mode.decide(profile, device)
    if mode.live:
        print(live_line(lesson), flush=True)
        return live(), mode
    record = replay(mode.profile)
    print(replay_line(lesson, record, mode), flush=True)
    return record, mode


def replay_line(lesson: str, record: Record, mode: Mode) -> str:
    """The mode line of a replay: where its numbers came from, and why it replays unless --from-profile asked."""
    return f"{lesson}: {describe(record)}" + ("" if mode.reason == FROM_PROFILE else f"; {mode.reason}")


def shown(
    record: Record,
    json_path: str | None,
    plot: str | None,
    checks_text: Callable[[Record], str],
    why: Callable[[Check], str],
    render: Callable[[], str],
    plots: Callable[[], Iterable[Path]],
) -> int:
    """The end of every lesson's main: the record written where --json asks, then (when every check passed) the
    report `render()` and the figures `plots()` drawn where --plot asks; 0, or 1 when a check failed."""
    if not saved_and_correct(record, json_path, checks_text, why):
        return 1
    print(render())
    if plot:
        for path in plots():
            print(f"wrote {path}")
    return 0


def saved_and_correct(
    record: Record, json_path: str | None, checks_text: Callable[[Record], str], why: Callable[[Check], str]
) -> bool:
    """Write the record where --json asks; False, with the checks printed, when one failed (timing skipped): 'error:
    <check> failed<why(check)>; timing skipped'."""
    if json_path:
        print(f"results record: {record.save(json_path)}", file=sys.stderr)
    failed = [c for c in record.checks if not c.ok]
    if failed:
        print(checks_text(record))
        print(f"\nerror: {failed[0].name} failed{why(failed[0])}; timing skipped", file=sys.stderr)
    return not failed


def say(notes: Iterable[str]) -> None:
    """The replay's notes, one a line on stderr."""
    for note in notes:
        print(note, file=sys.stderr)


def as_measured(options: Iterable[str]) -> list[str]:
    """'replay: --<option>: a replay shows the recording as it was measured', for each live-only option given."""
    return [
        f"replay: --{option.replace('_', '-')}: a replay shows the recording as it was measured" for option in options
    ]


def traced_note(window: int, traced: int) -> list[str]:
    """The note when the recording traced its timelines at another window than the one shown (none when the same)."""
    if traced == window:
        return []
    return [
        f"replay: --window {format_size(window)}: the recording traced its timelines at "
        f"{format_size(traced)}; the timelines show {format_size(traced)}"
    ]


def validate_windows(total_bytes: int, windows: Iterable[int]) -> None:
    """UsageError for an array no run can hold, or a window that does not cut it into whole float32 chunks."""
    if total_bytes <= 0:
        raise UsageError(f"--total {format_size(total_bytes)}: the array needs a size, e.g. 1GiB")
    for window in windows:
        if window <= 0 or window % 4:
            raise UsageError(f"--window {format_size(window)} must be a positive multiple of 4 bytes (float32)")
        if window > total_bytes:
            raise UsageError(f"--window {format_size(window)} exceeds --total {format_size(total_bytes)}")
        if total_bytes % window:
            raise UsageError(
                f"--window {format_size(window)} does not divide --total "
                f"{format_size(total_bytes)}; pick a window that divides it, e.g. 64MiB"
            )


def validate_counts(fmas: int, repeats: int) -> None:
    """UsageError for a negative FMA count or fewer than one timed repeat."""
    if fmas < 0:
        raise UsageError(f"--fmas {fmas} must be 0 or more")
    if repeats < 1:
        raise UsageError(f"--repeats {repeats} must be at least 1")


def validated(cfg: Any, seed: int | None) -> Any:
    """A lesson's Config with --seed applied (when given: else the Config's fresh one), validated."""
    if seed is not None:
        cfg.seed = seed
    cfg.validate()
    return cfg
