"""What one run measures (the experiments picked, their sizes, the checks on them made before anything is
pinned) and the typed key and planned row of each timed pass."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from labcore.errors import UsageError
from labcore.sizes import format_size, parse_size

EXPERIMENTS = ("streaming", "breakeven", "access", "gather", "mailbox", "saxpy", "reread", "both_ways")
# Experiments added after the shipped profile may have been recorded: a replay of an older record says the section
# was not recorded (and on which day the experiment came), rather than failing.
ADDED_ON = {"both_ways": "2026-12-03"}
PROBE_BYTES = 256 << 20  # the pinned copy that measures the link rate L
HBM_PROBE_BYTES = 1 << 30  # the device-to-device copy that measures the HBM rate H
VECTOR_BYTES = 16  # kernels load float4 / uint4
MAILBOX_BYTES = 64
MAX_READS = 64
MAX_BLOCKS_PER_SM = 1024


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
    both_bytes: int = 1 << 30  # day 54's input (and output) size
    both_chunk_bytes: int = 16 << 20  # the pipeline it is compared with: 16 MiB chunks ...
    both_buffers: int = 3  # ... on 3 buffer pairs
    both_blocks_per_sm: tuple[int, ...] = (2, 4, 8, 16, 32, 64)  # the mapped kernel's grids, in blocks per SM
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
        data["both_blocks_per_sm"] = list(self.both_blocks_per_sm)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Config:
        """The Config a results record stores (lists back to tuples); fields an older record lacks take their
        defaults, fields this version does not know are left out."""
        known = {field.name for field in dataclasses.fields(cls)}
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in known})

    def validate(self) -> None:
        """UsageError naming the first option that is wrong, its value, and what would be valid."""
        _check_sizes(self)
        _check_counts(self)


FLOAT4 = "the kernels load float4"


def _check_sizes(cfg: Config) -> None:
    _words("--row-bytes", cfg.row_bytes, "the gather copies 16-byte words; try 1KiB")
    _whole("--table-size", cfg.table_bytes, ("--row-bytes", cfg.row_bytes, "rows"), "the table is read row by row")
    if cfg.buffer_bytes < (1 << 20) or cfg.buffer_bytes & (cfg.buffer_bytes - 1):
        raise UsageError(
            f"--buffer-size {format_size(cfg.buffer_bytes)} is not a power of two of at least 1MiB "
            f"(the scattered pattern permutes indices modulo the size); try 256MiB"
        )
    _words("--stream-size", cfg.stream_bytes, FLOAT4)
    _words("--window", cfg.chunk_bytes, FLOAT4)
    _words("--saxpy-size", cfg.saxpy_bytes, FLOAT4)
    _words("--both-chunk", cfg.both_chunk_bytes, FLOAT4)
    _whole(
        "--both-size", cfg.both_bytes, ("--both-chunk", cfg.both_chunk_bytes, "chunks"), "the pipeline cuts it equally"
    )
    if cfg.chunk_bytes > min(cfg.stream_bytes, cfg.saxpy_bytes):
        raise UsageError(
            f"--window {format_size(cfg.chunk_bytes)} is larger than the data it splits "
            f"(--stream-size {format_size(cfg.stream_bytes)}, "
            f"--saxpy-size {format_size(cfg.saxpy_bytes)})"
        )


def _words(option: str, nbytes: int, why: str) -> None:
    """UsageError unless `nbytes` is a positive multiple of the kernels' 16-byte word."""
    if nbytes < VECTOR_BYTES or nbytes % VECTOR_BYTES:
        raise UsageError(f"{option} {format_size(nbytes)} is not a positive multiple of {VECTOR_BYTES} bytes ({why})")


def _whole(option: str, nbytes: int, part: tuple[str, int, str], why: str) -> None:
    """UsageError unless `nbytes` is a whole number of parts (the part's option, its size, what the parts are)."""
    part_option, part_bytes, parts = part
    if nbytes < part_bytes or nbytes % part_bytes:
        raise UsageError(
            f"{option} {format_size(nbytes)} is not a whole number of {format_size(part_bytes)} {parts} ({why}); "
            f"use a multiple of {part_option}, e.g. {format_size(max(1, nbytes // part_bytes) * part_bytes)}"
        )


def _check_counts(cfg: Config) -> None:
    unknown = [name for name in cfg.only if name not in EXPERIMENTS]
    if unknown or not cfg.only:
        raise UsageError(
            f"--only {','.join(cfg.only) or '(empty)'}: unknown experiment "
            f"{', '.join(unknown) or '(none given)'}; choose from {','.join(EXPERIMENTS)}"
        )
    if not 1 <= cfg.rows < 2**31:
        raise UsageError(f"--rows {cfg.rows} must be between 1 and {2**31 - 1}")
    if not cfg.reads or any(not 1 <= r <= MAX_READS for r in cfg.reads) or len(set(cfg.reads)) < 2:
        raise UsageError(
            f"--reads {','.join(map(str, cfg.reads))}: give at least two different counts "
            f"between 1 and {MAX_READS} (the crossover is fitted through them), e.g. 1,2,4,8"
        )
    if not 1 <= cfg.reread_k <= MAX_READS:
        raise UsageError(f"--reread-k {cfg.reread_k} must be between 1 and {MAX_READS}")
    if not 1 <= cfg.both_buffers <= 32:
        raise UsageError(f"--both-buffers {cfg.both_buffers} must be between 1 and 32")
    grids = cfg.both_blocks_per_sm
    if not grids or any(not 1 <= m <= MAX_BLOCKS_PER_SM for m in grids) or len(set(grids)) < len(grids):
        raise UsageError(
            f"--both-blocks-per-sm {','.join(map(str, grids)) or '(empty)'}: give different whole numbers between "
            f"1 and {MAX_BLOCKS_PER_SM} (blocks of 256 threads per SM), e.g. 2,4,8,16,32,64"
        )
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
        "both_ways": (2 * cfg.both_bytes, "--both-size"),
    }
    picked = ["probes", *cfg.only]
    return [(name, *needs[name]) for name in picked]


_COUNTS = (("r", "reads"), ("rows", "rows"), ("k", "reread_k"), ("n", "n_floats"), ("blocks", "blocks"))
_SIZE_TOKEN = re.compile(r"\d+(?:B|KiB|MiB|GiB)")


@dataclasses.dataclass(frozen=True)
class PassKey:
    """One timed pass: the experiment, the path it measures, and the counts and sizes that tell it apart.

    Its string form ('probe h2d 256MiB', 'breakeven zero-copy r=4 256MiB', 'gather sorted rows=50000',
    'streaming pipeline 1GiB chunk=64MiB streams=3') names the NVTX range in nsys exports and the pass in a
    results record; `parse` is the one place that reads it back.
    """

    experiment: str
    path: str
    reads: int | None = None  # r=: how often a kernel reads each byte
    rows: int | None = None  # rows=: rows per gathered batch
    reread_k: int | None = None  # k=: loads per byte of the re-read loop
    n_floats: int | None = None  # n=: floats per SAXPY array
    blocks: int | None = None  # blocks=: the grid of a kernel whose grid is what the pass varies
    nbytes: int | None = None  # the buffer the pass reads, as a bare size
    chunk_bytes: int | None = None
    n_streams: int | None = None

    def __str__(self) -> str:
        parts = [self.experiment, self.path]
        parts += [f"{tag}={getattr(self, field)}" for tag, field in _COUNTS if getattr(self, field) is not None]
        if self.nbytes is not None:
            parts.append(format_size(self.nbytes))
        if self.chunk_bytes is not None:
            parts.append(f"chunk={format_size(self.chunk_bytes)}")
        if self.n_streams is not None:
            parts.append(f"streams={self.n_streams}")
        return " ".join(parts)

    @classmethod
    def parse(cls, text: str) -> PassKey | None:
        """'breakeven zero-copy r=4 256MiB' -> PassKey('breakeven', 'zero-copy', reads=4, nbytes=268435456);
        None when the text is not the string form of a key."""
        experiment, *tokens = text.split(" ")
        path: list[str] = []
        values: dict[str, int] = {}
        fields = dict(_COUNTS)
        for token in tokens:
            tag, equals, value = token.partition("=")
            if equals and tag in fields and value.isdigit():
                values[fields[tag]] = int(value)
            elif equals and tag == "streams" and value.isdigit():
                values["n_streams"] = int(value)
            elif equals and tag == "chunk" and _SIZE_TOKEN.fullmatch(value):
                values["chunk_bytes"] = parse_size(value)
            elif _SIZE_TOKEN.fullmatch(token):
                values["nbytes"] = parse_size(token)
            elif values or equals:
                return None
            else:
                path.append(token)
        if not experiment or not path:
            return None
        key = cls(experiment, " ".join(path), **values)
        return key if str(key) == text else None


@dataclasses.dataclass(frozen=True)
class Planned:
    """A pass an experiment times: its key, its label in the tables, the model's time, the bytes it moves, and
    what else the pass records about itself (path, pattern, spacing, stride, ...)."""

    key: PassKey
    label: str = ""
    model_ms: float | None = None
    nbytes: int | None = None
    params: dict[str, Any] = dataclasses.field(default_factory=dict)

    def with_params(self, **more: Any) -> Planned:
        """The same pass with more recorded about it (a stride, a shift chosen at run time)."""
        return dataclasses.replace(self, params={**self.params, **more})

    def to_dict(self) -> dict[str, Any]:
        """The row as a results record stores it: {"key": <string form>, "label", "model_ms", "bytes", ...}."""
        return {
            "key": str(self.key),
            "label": self.label,
            "model_ms": self.model_ms,
            "bytes": self.nbytes,
            **self.params,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Planned:
        """A row read back from a results record; UsageError when its key is not a pass key."""
        key = read_key(data["key"])
        params = {k: v for k, v in data.items() if k not in ("key", "label", "model_ms", "bytes")}
        return cls(key, data.get("label", ""), data.get("model_ms"), data.get("bytes"), params)


def read_key(text: str) -> PassKey:
    """A pass key read back from a results record; UsageError when the text is not one."""
    key = PassKey.parse(text)
    if key is None:
        raise UsageError(f"{text!r} in a zero_copy record is not a pass key such as 'probe h2d 256MiB'")
    return key


def planned_rows(section: dict[str, Any]) -> list[Planned]:
    """The "rows" of an experiment's section of a results record, read back as planned rows."""
    return [Planned.from_dict(row) for row in section["rows"]]


def as_json(value: Any) -> Any:
    """A plan as a results record stores it: planned rows as dicts, keys in their string form."""
    if isinstance(value, Planned):
        return value.to_dict()
    if isinstance(value, PassKey):
        return str(value)
    if isinstance(value, dict):
        return {name: as_json(item) for name, item in value.items()}
    if isinstance(value, list):
        return [as_json(item) for item in value]
    return value
