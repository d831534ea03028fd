"""`python -m zero_copy`: run the experiments live on a GPU, or replay a recorded profile without one."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from labcore.errors import UsageError
from labcore.kit.cli import Parser, add_record_options, check_options
from labcore.mode import Mode, live_line, run_lesson
from labcore.record import Record
from labcore.sizes import parse_size
from zero_copy import LESSON, live, replay
from zero_copy.config import EXPERIMENTS, Config
from zero_copy.plots import plot_help, write_all
from zero_copy.report import report

_SIZE_OPTIONS = {
    "table_size": "table_bytes",
    "row_bytes": "row_bytes",
    "buffer_size": "buffer_bytes",
    "stream_size": "stream_bytes",
    "window": "chunk_bytes",
    "saxpy_size": "saxpy_bytes",
    "both_size": "both_bytes",
    "both_chunk": "both_chunk_bytes",
}
_COUNT_OPTIONS = {
    "rows": "rows",
    "streams": "n_streams",
    "reread_k": "reread_k",
    "both_buffers": "both_buffers",
    "repeats": "repeats",
    "warmup": "warmup",
    "seed": "seed",
}


def build_parser() -> argparse.ArgumentParser:
    """The command's options; sizes take 64MiB, 4GiB or a byte count."""
    defaults = Config()
    parser = Parser(
        hint=" (python -m zero_copy --help lists the options)",
        prog="python -m zero_copy",
        description=(
            "Zero-copy (mapped pinned) memory, measured: streaming, break-even, access shape, sparse gather, "
            "host-visible results, mapped SAXPY, the re-read failure mode, and day 54's job through mapped memory "
            "both ways. Without a GPU it replays the "
            "recorded profile."
        ),
    )
    add = parser.add_argument
    add("--only", help=f"comma-separated experiments (default all): {','.join(EXPERIMENTS)}")
    add("--table-size", help=f"gather: host table size (default {defaults.table_bytes >> 30}GiB)")
    add("--rows", type=int, help=f"gather: rows per batch (default {defaults.rows})")
    add("--row-bytes", help=f"gather: bytes per row, a multiple of 16 (default {defaults.row_bytes})")
    add("--buffer-size", help="break-even, access, re-read: buffer size, a power of two (default 256MiB)")
    add("--stream-size", help="streaming: bytes read once (default 1GiB)")
    add("--window", help="pipeline chunk (window) for streaming and asynchronous SAXPY (default 64MiB)")
    add("--chunk", dest="window", help=argparse.SUPPRESS)  # the option's old name, kept working
    add("--streams", type=int, help=f"streams of the pipelines (default {defaults.n_streams})")
    add("--reads", help="break-even: reads per byte, comma-separated (default 1,2,4,8)")
    add("--reread-k", type=int, help=f"re-read loop: loads per byte (default {defaults.reread_k})")
    add("--saxpy-size", help="SAXPY: bytes per array (default 512MiB)")
    add("--both-size", help="both ways: day 54's input and output size, a whole number of chunks (default 1GiB)")
    add("--both-chunk", help="both ways: the pipeline's chunk (default 16MiB)")
    add("--both-buffers", type=int, help=f"both ways: the pipeline's buffer pairs (default {defaults.both_buffers})")
    add(
        "--both-blocks-per-sm",
        help="both ways: the mapped kernel's grids in blocks per SM, comma-separated (default "
        f"{','.join(map(str, defaults.both_blocks_per_sm))}; one float4 per thread is always added)",
    )
    add("--repeats", type=int, help=f"timed repeats per pass (default {defaults.repeats})")
    add("--warmup", type=int, help=f"untimed runs before them (default {defaults.warmup})")
    add("--seed", type=int, help="random seed of the inputs (default 0)")
    add_record_options(
        parser,
        plot_help(),
        "replay a recorded profile (a directory holding results.json, or the file) instead of running live",
    )
    return parser


def config_from(args: argparse.Namespace) -> Config:
    """A validated Config from parsed options; UsageError names the bad option."""
    values: dict[str, object] = {}
    for option, field in _SIZE_OPTIONS.items():
        if getattr(args, option) is not None:
            values[field] = parse_size(getattr(args, option), option="--" + option.replace("_", "-"))
    for option, field in _COUNT_OPTIONS.items():
        if getattr(args, option) is not None:
            values[field] = getattr(args, option)
    if args.only is not None:
        values["only"] = tuple(dict.fromkeys(name.strip() for name in args.only.split(",") if name.strip()))
    if args.reads is not None:
        try:
            values["reads"] = tuple(int(part) for part in args.reads.split(",") if part.strip())
        except ValueError:
            raise UsageError(
                f"--reads {args.reads!r} is not a comma-separated list of whole numbers, e.g. 1,2,4,8"
            ) from None
    if args.both_blocks_per_sm is not None:
        try:
            parts = args.both_blocks_per_sm.split(",")
            values["both_blocks_per_sm"] = tuple(int(part) for part in parts if part.strip())
        except ValueError:
            raise UsageError(
                f"--both-blocks-per-sm {args.both_blocks_per_sm!r} is not a comma-separated list of whole numbers, "
                "e.g. 2,4,8,16,32,64"
            ) from None
    cfg = Config(**values)  # type: ignore[arg-type]
    cfg.validate()
    return cfg


def _sized_options_given(args: argparse.Namespace) -> list[str]:
    names = [*_SIZE_OPTIONS, *_COUNT_OPTIONS, "reads", "both_blocks_per_sm", "device"]
    return ["--" + name.replace("_", "-") for name in names if getattr(args, name) is not None]


def _replay(args: argparse.Namespace, mode: Mode) -> Record:
    """Load the recorded run and print its mode line; UsageError when it is not a zero-copy record."""
    record = replay.load_profile(mode.profile)
    print(
        f"{LESSON}: replay of {record.source} ({mode.reason}), recorded {record.recorded_at} on "
        f"{record.device.summary()}",
        flush=True,
    )
    ignored = _sized_options_given(args)
    if ignored:
        print(f"note: a replay shows the recorded run; {', '.join(ignored)} ignored", file=sys.stderr)
    return record


def _live(cfg: Config, argv: Sequence[str]) -> Record:
    """Check the device and host memory, print the mode line, and run."""
    facts, host = live.check_machine(cfg)
    print(live_line(LESSON), flush=True)
    return live.run_live(cfg, facts, host, command=" ".join(["python -m zero_copy", *argv]))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; 0 when every correctness check passed, 1 when one failed, 2 for bad input."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    check_options(args, ())  # before a live run of minutes, not after it
    cfg = config_from(args)
    mode = Mode.decide(args.from_profile or None, args.device)
    record = _live(cfg, argv) if mode.live else _replay(args, mode)
    only = cfg.only if args.only else None
    if only:
        replay.require_experiments(record, only)
    if args.json:
        print(f"results record: {record.save(args.json)}", file=sys.stderr)
    print(report(record, only))
    if args.plot:
        for path in write_all(record, args.plot):
            print(f"wrote {path}", file=sys.stderr)
    return 0 if all(check.ok for check in record.checks) else 1


if __name__ == "__main__":
    raise SystemExit(run_lesson(main, LESSON))
