"""What one run measures: the experiments picked, their sizes, and the checks on them made before anything is pinned."""

from __future__ import annotations

import dataclasses
from typing import Any

from labcore.errors import UsageError
from labcore.sizes import format_size

EXPERIMENTS = ("streaming", "breakeven", "access", "gather", "mailbox", "saxpy", "reread")
PROBE_BYTES = 256 << 20  # the pinned copy that measures the link rate L
HBM_PROBE_BYTES = 1 << 30  # the device-to-device copy that measures the HBM rate H
VECTOR_BYTES = 16  # kernels load float4 / uint4
MAILBOX_BYTES = 64
MAX_READS = 64


@dataclasses.dataclass(frozen=True)
class Config:
    """Sizes and repeats of one run; the defaults are the lesson's (a 4 GiB table, 50,000 rows of 1 KiB)."""

    only: tuple[str, ...] = EXPERIMENTS
    table_bytes: int = 4 << 30
    rows: int = 50_000
    row_bytes: int = 1 << 10
    buffer_bytes: int = 256 << 20
    stream_bytes: int = 1 << 30
    chunk_bytes: int = 64 << 20
    n_streams: int = 3
    reads: tuple[int, ...] = (1, 2, 4, 8)
    reread_k: int = 16
    saxpy_bytes: int = 512 << 20
    repeats: int = 5
    warmup: int = 1
    seed: int = 0

    @property
    def table_rows(self) -> int:
        return self.table_bytes // self.row_bytes

    @property
    def batch_bytes(self) -> int:
        return self.rows * self.row_bytes

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["only"], data["reads"] = list(self.only), list(self.reads)
        return data

    def validate(self) -> None:
        """UsageError naming the first option that is wrong, its value, and what would be valid."""
        _check_sizes(self)
        _check_counts(self)


def _check_sizes(cfg: Config) -> None:
    if cfg.row_bytes < VECTOR_BYTES or cfg.row_bytes % VECTOR_BYTES:
        raise UsageError(f"--row-bytes {cfg.row_bytes} is not a positive multiple of {VECTOR_BYTES} "
                         f"(the gather copies 16-byte words); try 1KiB")
    if cfg.table_bytes < cfg.row_bytes or cfg.table_bytes % cfg.row_bytes:
        raise UsageError(f"--table-size {format_size(cfg.table_bytes)} is not a whole number of "
                         f"{format_size(cfg.row_bytes)} rows; use a multiple of --row-bytes, e.g. "
                         f"{format_size(max(1, cfg.table_bytes // cfg.row_bytes) * cfg.row_bytes)}")
    if cfg.buffer_bytes < (1 << 20) or cfg.buffer_bytes & (cfg.buffer_bytes - 1):
        raise UsageError(f"--buffer-size {format_size(cfg.buffer_bytes)} is not a power of two of at least 1MiB "
                         f"(the scattered pattern permutes indices modulo the size); try 256MiB")
    for option, nbytes in (("--stream-size", cfg.stream_bytes), ("--chunk", cfg.chunk_bytes),
                           ("--saxpy-size", cfg.saxpy_bytes)):
        if nbytes < VECTOR_BYTES or nbytes % VECTOR_BYTES:
            raise UsageError(f"{option} {format_size(nbytes)} is not a positive multiple of {VECTOR_BYTES} bytes "
                             f"(kernels load float4)")
    if cfg.chunk_bytes > min(cfg.stream_bytes, cfg.saxpy_bytes):
        raise UsageError(f"--chunk {format_size(cfg.chunk_bytes)} is larger than the data it splits "
                         f"(--stream-size {format_size(cfg.stream_bytes)}, "
                         f"--saxpy-size {format_size(cfg.saxpy_bytes)})")


def _check_counts(cfg: Config) -> None:
    unknown = [name for name in cfg.only if name not in EXPERIMENTS]
    if unknown or not cfg.only:
        raise UsageError(f"--only {','.join(cfg.only) or '(empty)'}: unknown experiment "
                         f"{', '.join(unknown) or '(none given)'}; choose from {','.join(EXPERIMENTS)}")
    if not 1 <= cfg.rows < 2**31:
        raise UsageError(f"--rows {cfg.rows} must be between 1 and {2**31 - 1}")
    if not cfg.reads or any(not 1 <= r <= MAX_READS for r in cfg.reads) or len(set(cfg.reads)) < 2:
        raise UsageError(f"--reads {','.join(map(str, cfg.reads))}: give at least two different counts "
                         f"between 1 and {MAX_READS} (the crossover is fitted through them), e.g. 1,2,4,8")
    if not 1 <= cfg.reread_k <= MAX_READS:
        raise UsageError(f"--reread-k {cfg.reread_k} must be between 1 and {MAX_READS}")
    if not 1 <= cfg.n_streams <= 32:
        raise UsageError(f"--streams {cfg.n_streams} must be between 1 and 32")
    if not 1 <= cfg.repeats <= 1000 or not 0 <= cfg.warmup <= 100:
        raise UsageError(f"--repeats {cfg.repeats} / --warmup {cfg.warmup}: repeats must be 1..1000, warmup 0..100")


def pinned_needs(cfg: Config) -> list[tuple[str, int, str]]:
    """(experiment, pinned bytes it holds at its peak, the option that sizes it) for each experiment picked."""
    needs = {
        "probes": (PROBE_BYTES, "(fixed)"),
        "streaming": (2 * cfg.stream_bytes, "--stream-size"),
        "breakeven": (cfg.buffer_bytes, "--buffer-size"),
        "access": (cfg.buffer_bytes, "--buffer-size"),
        "gather": (cfg.table_bytes + cfg.batch_bytes, "--table-size"),
        "mailbox": (MAILBOX_BYTES, "(fixed)"),
        "saxpy": (3 * cfg.saxpy_bytes, "--saxpy-size"),
        "reread": (cfg.buffer_bytes, "--buffer-size"),
    }
    picked = ["probes", *cfg.only]
    return [(name, *needs[name]) for name in picked]
