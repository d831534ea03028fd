"""Read `nsys stats --format csv` exports into normalised pandas DataFrames.

Seven reports are understood, under both naming generations of Nsight Systems:

    canonical (2023.1 on)    2022.4-era name
    nvtx_sum                 nvtxsum
    nvtx_pushpop_sum         nvtxppsum
    nvtx_pushpop_trace       nvtxpptrace
    cuda_gpu_mem_time_sum    gpumemtimesum
    cuda_api_sum             cudaapisum
    cuda_gpu_kern_sum        gpukernsum
    cuda_gpu_trace           gputrace

Normalisation: snake_case columns; every time becomes an int64 count of ns (the
`--timeunit` suffixes (ns), (us), (ms), (s) are converted exactly, with decimal
arithmetic, rounding to the nearest ns, halves away from zero; a coarser unit
only carries the precision nsys printed); sizes become int64 bytes.

Precision of `bytes` (cuda_gpu_trace): nsys prints `Bytes (MB)` in decimal
megabytes with 3 decimals, so `bytes = round(MB * 1e6)` is only known to
+-500 B (a 64 MiB copy of 67,108,864 B reads back as 67,109,000 B).
`throughput_bps` is the report's own `Throughput` column times 1e6; the report
scripts compute it as `bytes * (1000000000 / duration)` in SQLite integer
arithmetic (the 1e9 / duration quotient is truncated), so for long copies it
is visibly low (the shipped sample: 3892.314 MB/s for a copy that really ran
at 3947 MB/s). Compute bandwidth from `bytes / duration_ns` instead.

NVTX range names carry their domain: `domain:name`, or `:name` for the default
domain (`:name` in recent versions; some versions print the bare `name`). The
`domain` column is None for the default domain and `range` has the prefix
removed. The split is at the first ':', so a bare default-domain name that
itself contains ':' cannot be told from a domain prefix.

Where each accepted header shape comes from (nsys column names are produced by
the report scripts in `<nsys>/target-linux-x64/reports/*.py`, which name
columns `Total Time:dur_ns`, `Bytes:mem_B`, `Throughput:thru_B` and print them
as `Total Time (ns)`, `Bytes (MB)`, `Throughput (MB/s)`):

- nvtx_sum / nvtxsum, `... StdDev (ns),Style,Range`: the shipped 2025.3.1
  sample (tests/data/nsys/); the same columns in a 2022-era `nvtxsum` console
  report (a public `cudac/matmul` README quoting `nsys profile --stats=true`);
  the Nsight Systems Analysis Guide, "nvtx_sum -- NVTX Range Summary".
- nvtx_pushpop_sum / nvtxppsum, `... StdDev (ns),Range`: nsys 2025.1.1
  `nvtx_pushpop_sum` output quoted in public repos; Analysis Guide
  "nvtx_pushpop_sum". The 2022.4 `nvtxppsum` is assumed to share it (no raw
  2022.4 export seen); the older `Time(%),...,Average,Minimum,Maximum,Range`
  shape (pre-2022 nvtxppsum.py) is NOT accepted.
- nvtx_pushpop_trace / nvtxpptrace, `Start (ns),End (ns),Duration (ns),
  DurChild (ns),DurNonChild (ns),Name,PID,TID,Lvl,NumChild,RangeId,ParentId,
  RangeStack,NameTree`: the nvtx_pushpop_trace.py report script (2021-2024) and
  the older NVTXPushPopTrace script, identical column list; NVIDIA JAX-Toolbox
  (nsys-jax) reads the same header; Analysis Guide "nvtx_pushpop_trace".
- cuda_gpu_mem_time_sum / gpumemtimesum, `... StdDev (ns),Operation`: the
  2025.3.1 sample; cuda_gpu_mem_time_sum.py; a 2022-era `gpumemtimesum`
  console report (same matmul README). Labels: old scripts' MemcpyOperStrs
  (`[CUDA memcpy HtoD]`, `DtoH`, `DtoD`, ...), new ENUM_CUDA_MEMCPY_OPER labels
  (`[CUDA memcpy Host-to-Device]`, `Device-to-Host`; `Device-to-Device` follows
  that enum's pattern but was not seen in a real export); `[CUDA memset]` in both.
- cuda_api_sum / cudaapisum, `... StdDev (ns),Name` with `Num Calls`: the
  sample; a 2022-era `cudaapisum` console report; Analysis Guide.
- cuda_gpu_kern_sum / gpukernsum, `... StdDev (ns),Name`, optionally with
  `GridXYZ,BlockXYZ` before Name (2022.4-era gpukernsum, printf('%4d %4d %4d'),
  e.g. ' 896    1    1'): the sample (without); cuda_gpu_kern_sum.py, whose
  usage text says the grid/block form was dropped again and moved to
  cuda_gpu_kern_gb_sum; a 2022-era `gpukernsum` report and a comment quoting
  its CSV header (with).
- cuda_gpu_trace / gputrace: old `Start (ns),Duration (ns),CorrId,GrdX,GrdY,
  GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),DymSMem (MB),Bytes (MB),Throughput
  (MBps),SrcMemKd,DstMemKd,Device,Ctx,Strm,Name` (the older gputrace script
  without GreenCtx; the CSV header quoted in the CASIO benchmark scripts and
  another nsys-result parser); new
  adds `GreenCtx` before `Strm` and prints `Throughput (MB/s)` (the 2025.3.1
  sample; cuda_gpu_trace.py 2020-2024). `Device` is printf('%s (%d)', name, id).
- Time units: nsys stats `--timeunit` (nsec/usec/msec/sec). Only `(ns)` headers
  were seen in real exports; the `(us)`, `(ms)`, `(s)` suffixes are accepted as
  the same columns in those units.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path

import pandas as pd

from labcore.errors import UsageError

REPORTS = (
    "nvtx_sum",
    "nvtx_pushpop_sum",
    "nvtx_pushpop_trace",
    "cuda_gpu_mem_time_sum",
    "cuda_api_sum",
    "cuda_gpu_kern_sum",
    "cuda_gpu_trace",
)
REPORTS_NEEDED_DEFAULT = ("nvtx_sum", "cuda_gpu_mem_time_sum", "cuda_api_sum", "cuda_gpu_kern_sum", "cuda_gpu_trace")

# 2022.4-era report name -> canonical name (the 2023.1 renaming).
OLD_NAMES = {
    "nvtxsum": "nvtx_sum",
    "nvtxppsum": "nvtx_pushpop_sum",
    "nvtxpptrace": "nvtx_pushpop_trace",
    "gpumemtimesum": "cuda_gpu_mem_time_sum",
    "cudaapisum": "cuda_api_sum",
    "gpukernsum": "cuda_gpu_kern_sum",
    "gputrace": "cuda_gpu_trace",
}
REPORT_ALIASES = {**{name: name for name in REPORTS}, **OLD_NAMES}

TIME_UNITS_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
THROUGHPUT_UNITS = ("MBps", "MB/s")

MEMOP_KINDS = {
    "[CUDA memcpy HtoD]": "h2d",
    "[CUDA memcpy Host-to-Device]": "h2d",
    "[CUDA memcpy DtoH]": "d2h",
    "[CUDA memcpy Device-to-Host]": "d2h",
    "[CUDA memcpy DtoD]": "d2d",
    "[CUDA memcpy Device-to-Device]": "d2d",
    "[CUDA memset]": "memset",
}

_STATS = ("Total Time", "Avg", "Med", "Min", "Max", "StdDev")
_STAT_COLUMNS = ("total_ns", "avg_ns", "med_ns", "min_ns", "max_ns", "stddev_ns")
_TRACE_HEAD = (
    "Start",
    "Duration",
    "CorrId",
    "GrdX",
    "GrdY",
    "GrdZ",
    "BlkX",
    "BlkY",
    "BlkZ",
    "Reg/Trd",
    "StcSMem",
    "DymSMem",
    "Bytes",
    "Throughput",
    "SrcMemKd",
    "DstMemKd",
    "Device",
    "Ctx",
)
_PUSHPOP_TRACE = (
    "Start",
    "End",
    "Duration",
    "DurChild",
    "DurNonChild",
    "Name",
    "PID",
    "TID",
    "Lvl",
    "NumChild",
    "RangeId",
    "ParentId",
    "RangeStack",
    "NameTree",
)

# Accepted header shapes, as column names with their unit suffix removed.
HEADER_SHAPES: dict[str, tuple[tuple[str, ...], ...]] = {
    "nvtx_sum": (("Time", *_STATS[:1], "Instances", *_STATS[1:], "Style", "Range"),),
    "nvtx_pushpop_sum": (("Time", *_STATS[:1], "Instances", *_STATS[1:], "Range"),),
    "nvtx_pushpop_trace": (_PUSHPOP_TRACE,),
    "cuda_gpu_mem_time_sum": (("Time", *_STATS[:1], "Count", *_STATS[1:], "Operation"),),
    "cuda_api_sum": (("Time", *_STATS[:1], "Num Calls", *_STATS[1:], "Name"),),
    "cuda_gpu_kern_sum": (
        ("Time", *_STATS[:1], "Instances", *_STATS[1:], "Name"),
        ("Time", *_STATS[:1], "Instances", *_STATS[1:], "GridXYZ", "BlockXYZ", "Name"),
    ),
    "cuda_gpu_trace": ((*_TRACE_HEAD, "Strm", "Name"), (*_TRACE_HEAD, "GreenCtx", "Strm", "Name")),
}

_INSTANTS = frozenset({"Start", "End"})  # the other time columns are durations, never negative
_TIME_BASES = frozenset({*_STATS, *_INSTANTS, "Duration", "DurChild", "DurNonChild"})
_MB_BASES = frozenset({"Bytes", "StcSMem", "DymSMem"})
_UNIT_RE = re.compile(r"^(?P<base>.*?) \((?P<unit>[^()]*)\)$")
_DEVICE_RE = re.compile(r"^(?P<name>.*)\((?P<id>-?\d+)\)\s*$")


class NsysFormatError(UsageError):
    """An nsys export that cannot be read: names the file, the line and what was expected."""

    def __init__(self, path: str | Path, line: int | None, problem: str) -> None:
        """Keep path, line (None for file- or folder-level problems) and problem; message 'path: line N: problem'."""
        self.path = Path(path)
        self.line = line
        self.problem = problem
        where = f"{path}: line {line}: " if line is not None else f"{path}: "
        super().__init__(where + problem)


@dataclass(frozen=True)
class _Header:
    """A recognised header line: its report, 1-based line number, names, bases and units."""

    report: str
    line: int
    names: tuple[str, ...]
    bases: tuple[str, ...]
    units: tuple[str | None, ...]

    def has(self, base: str) -> bool:
        """Whether the header has a column with this unit-less name."""
        return base in self.bases


@dataclass(frozen=True)
class _Row:
    """One data row, with the context needed to name the file, line and column on error."""

    path: Path
    line: int
    header: _Header
    cells: tuple[str, ...]

    def _at(self, base: str) -> tuple[str, str, str | None]:
        """The full column name, raw cell and unit of a column."""
        i = self.header.bases.index(base)
        return self.header.names[i], self.cells[i], self.header.units[i]

    def fail(self, base: str, expected: str) -> NsysFormatError:
        """The error for a cell of this column that is not what was expected."""
        name, raw, _ = self._at(base)
        return NsysFormatError(self.path, self.line, f"column {name!r} is {raw!r}, expected {expected}")

    def text(self, base: str) -> str:
        """The cell as a string."""
        return self._at(base)[1]

    def blank(self, base: str) -> bool:
        """Whether the cell is empty."""
        return not self.text(base).strip()

    def number(self, base: str) -> Decimal:
        """The cell as an exact finite decimal."""
        try:
            value = Decimal(self.text(base))
        except InvalidOperation:
            raise self.fail(base, "a number") from None
        if not value.is_finite():
            raise self.fail(base, "a number")
        return value

    def integer(self, base: str) -> int:
        """The cell as an integer."""
        value = self.number(base)
        if value != value.to_integral_value():
            raise self.fail(base, "an integer")
        return int(value)

    def opt_integer(self, base: str) -> int | None:
        """The cell as an integer, or None when empty."""
        return None if self.blank(base) else self.integer(base)

    def time_ns(self, base: str) -> int:
        """A time cell converted from its header's unit to integer ns; a duration (not a Start or End) is 0 or more."""
        unit = self._at(base)[2]
        value = _round(self.number(base) * TIME_UNITS_NS[unit])
        if value < 0 and base not in _INSTANTS:
            raise self.fail(base, "a duration, 0 or more")
        return value

    def bytes_from_mb(self, base: str) -> int:
        """A `(MB)` cell (decimal megabytes) as integer bytes."""
        return _round(self.number(base) * 1_000_000)

    def throughput_bps(self, base: str) -> float:
        """A `(MBps)`/`(MB/s)` cell as bytes per second; NaN when empty."""
        return math.nan if self.blank(base) else float(self.number(base) * 1_000_000)


def _round(value: Decimal) -> int:
    """Round a decimal to the nearest integer, halves away from zero."""
    return int(value.to_integral_value(rounding=ROUND_HALF_UP))


def canonical_report(name: str) -> str:
    """The canonical report name for either naming generation; ValueError if unknown."""
    try:
        return REPORT_ALIASES[name]
    except KeyError:
        raise ValueError(f"unknown nsys report {name!r}; known: {', '.join(REPORT_ALIASES)}") from None


def report_from_filename(path: str | Path) -> tuple[str, str] | None:
    """(canonical report, prefix) for a `<prefix>_<report>.csv` export name, or None."""
    path = Path(path)
    if path.suffix.lower() != ".csv":
        return None
    stem = path.stem
    for alias in sorted(REPORT_ALIASES, key=len, reverse=True):
        if stem == alias:
            return REPORT_ALIASES[alias], ""
        if stem.endswith("_" + alias):
            return REPORT_ALIASES[alias], stem[: -len(alias) - 1]
    return None


def split_range(name: str) -> tuple[str | None, str]:
    """Split an NVTX `domain:name` into (domain or None for the default domain, name)."""
    if ":" not in name:
        return None, name
    domain, _, rest = name.partition(":")
    return (domain or None), rest


def memop_kind(label: str) -> str:
    """'h2d', 'd2h', 'd2d' or 'memset' for a memory-operation label; the label itself otherwise."""
    return MEMOP_KINDS.get(label.strip(), label)


def _split_unit(column: str) -> tuple[str, str | None]:
    """Split a header cell like 'Total Time (ns)' into ('Total Time', 'ns')."""
    match = _UNIT_RE.match(column.strip())
    if match is None:
        return column.strip(), None
    return match["base"], match["unit"]


def _read_lines(path: Path) -> list[str]:
    """The file's lines, with their line endings; NsysFormatError if it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise NsysFormatError(path, None, "no such file, expected an nsys stats CSV export") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise NsysFormatError(path, None, f"cannot be read as UTF-8 text ({exc})") from None
    return text.splitlines(keepends=True)


def _parse_line(line: str) -> list[str]:
    """The CSV fields of a single line (a header candidate)."""
    try:
        return next(csv.reader([line]), [])
    except csv.Error:
        return []


def _match_header(cells: Sequence[str], reports: Sequence[str]) -> str | None:
    """The first of the reports whose header shape these cells have, if any."""
    bases = tuple(_split_unit(cell)[0] for cell in cells)
    for report in reports:
        if bases in HEADER_SHAPES[report]:
            return report
    return None


def _expected(reports: Sequence[str]) -> str:
    """A short description of the headers expected, for error messages."""
    if len(reports) != 1:
        return "the header of one of the nsys reports " + ", ".join(reports)
    shape = HEADER_SHAPES[reports[0]][-1]
    return f"a {reports[0]} header like '{','.join(shape)}' (units in parentheses)"


def _find_header(path: Path, lines: Sequence[str], reports: Sequence[str]) -> _Header:
    """Skip preamble lines up to the first recognised header; NsysFormatError if there is none."""
    first_csv: tuple[int, str] | None = None
    for number, line in enumerate(lines, start=1):
        if "," not in line:
            continue
        cells = _parse_line(line)
        report = _match_header(cells, reports)
        if report is not None:
            return _checked_header(path, number, report, cells)
        if first_csv is None:
            first_csv = (number, line.strip())
    if first_csv is None:
        number = max(len(lines), 1)
        raise NsysFormatError(
            path, number, f"no CSV header found (file has {len(lines)} lines), expected {_expected(reports)}"
        )
    number, line = first_csv
    raise NsysFormatError(path, number, f"unrecognised header {line!r}, expected {_expected(reports)}")


def _checked_header(path: Path, number: int, report: str, cells: Sequence[str]) -> _Header:
    """Build the header, checking each column's unit suffix."""
    names = tuple(cell.strip() for cell in cells)
    split = [_split_unit(name) for name in names]
    for name, (base, unit) in zip(names, split, strict=True):
        problem = _unit_problem(base, unit)
        if problem:
            raise NsysFormatError(path, number, f"column {name!r} {problem}")
    return _Header(report, number, names, tuple(b for b, _ in split), tuple(u for _, u in split))


def _unit_problem(base: str, unit: str | None) -> str | None:
    """Why a column's unit is wrong for its name, or None when it is right."""
    if base in _TIME_BASES:
        allowed: tuple[str | None, ...] = tuple(TIME_UNITS_NS)
        what = "time unit"
    elif base == "Time":
        allowed, what = ("%",), "unit"
    elif base in _MB_BASES:
        allowed, what = ("MB",), "size unit"
    elif base == "Throughput":
        allowed, what = THROUGHPUT_UNITS, "throughput unit"
    else:
        allowed, what = (None,), "unit"
    if unit in allowed:
        return None
    if unit is None:
        return f"has no {what}, expected one of ({'), ('.join(a for a in allowed if a)})"
    wanted = "no unit" if allowed == (None,) else "one of " + ", ".join(f"({a})" for a in allowed)
    return f"has unknown {what} ({unit}), expected {wanted}"


def _data_rows(path: Path, lines: Sequence[str], header: _Header) -> Iterator[_Row]:
    """The data rows after the header; blank lines are skipped, short or long rows are errors."""
    reader = csv.reader(lines[header.line :], strict=True)
    width = len(header.names)
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise NsysFormatError(path, header.line + reader.line_num, f"malformed CSV ({exc})") from None
        line = header.line + reader.line_num
        if not cells or not any(cell.strip() for cell in cells):
            continue
        if len(cells) != width:
            raise NsysFormatError(
                path, line, f"row has {len(cells)} fields, expected {width} (truncated or corrupt row?)"
            )
        yield _Row(path, line, header, tuple(cells))


def _stats(row: _Row) -> dict[str, int]:
    """The six summary-time columns of a *_sum report, in ns."""
    return {out: row.time_ns(base) for base, out in zip(_STATS, _STAT_COLUMNS, strict=True)}


_STAT_SCHEMA = [(column, "int64") for column in _STAT_COLUMNS]
_GRID_BLOCK = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")


def _nvtx_sum_schema(header: _Header) -> list[tuple[str, str]]:
    """Columns of nvtx_sum / nvtx_pushpop_sum."""
    style = [("style", "object")] if header.has("Style") else []
    return [("domain", "object"), ("range", "object"), *style, ("instances", "int64"), *_STAT_SCHEMA]


def _nvtx_sum_row(row: _Row) -> dict[str, object]:
    """One nvtx_sum / nvtx_pushpop_sum row."""
    domain, name = split_range(row.text("Range"))
    style = {"style": row.text("Style")} if row.header.has("Style") else {}
    return {"domain": domain, "range": name, **style, "instances": row.integer("Instances"), **_stats(row)}


def _pushpop_trace_schema(header: _Header) -> list[tuple[str, str]]:
    """Columns of nvtx_pushpop_trace."""
    return [
        ("start_ns", "int64"),
        ("end_ns", "int64"),
        ("duration_ns", "int64"),
        ("domain", "object"),
        ("range", "object"),
        ("dur_child_ns", "int64"),
        ("dur_non_child_ns", "int64"),
        ("pid", "int64"),
        ("tid", "int64"),
        ("lvl", "int64"),
        ("num_child", "int64"),
        ("range_id", "int64"),
        ("parent_id", "Int64"),
        ("range_stack", "object"),
        ("name_tree", "object"),
    ]


def _pushpop_trace_row(row: _Row) -> dict[str, object]:
    """One nvtx_pushpop_trace row."""
    domain, name = split_range(row.text("Name"))
    start, end, duration = row.time_ns("Start"), row.time_ns("End"), row.time_ns("Duration")
    if end - start != duration:  # nsys writes all three: a range whose numbers disagree was edited
        raise row.fail("Duration", f"End - Start ({end - start} ns)")
    return {
        "start_ns": start,
        "end_ns": end,
        "duration_ns": duration,
        "domain": domain,
        "range": name,
        "dur_child_ns": row.time_ns("DurChild"),
        "dur_non_child_ns": row.time_ns("DurNonChild"),
        "pid": row.integer("PID"),
        "tid": row.integer("TID"),
        "lvl": row.integer("Lvl"),
        "num_child": row.integer("NumChild"),
        "range_id": row.integer("RangeId"),
        "parent_id": row.opt_integer("ParentId"),
        "range_stack": row.text("RangeStack"),
        "name_tree": row.text("NameTree"),
    }


def _mem_time_schema(header: _Header) -> list[tuple[str, str]]:
    """Columns of cuda_gpu_mem_time_sum."""
    return [("operation", "object"), ("label", "object"), ("count", "int64"), *_STAT_SCHEMA]


def _mem_time_row(row: _Row) -> dict[str, object]:
    """One cuda_gpu_mem_time_sum row."""
    label = row.text("Operation")
    return {"operation": memop_kind(label), "label": label, "count": row.integer("Count"), **_stats(row)}


def _api_schema(header: _Header) -> list[tuple[str, str]]:
    """Columns of cuda_api_sum."""
    return [("name", "object"), ("calls", "int64"), *_STAT_SCHEMA]


def _api_row(row: _Row) -> dict[str, object]:
    """One cuda_api_sum row."""
    return {"name": row.text("Name"), "calls": row.integer("Num Calls"), **_stats(row)}


def _kern_schema(header: _Header) -> list[tuple[str, str]]:
    """Columns of cuda_gpu_kern_sum, with grid/block when the report has GridXYZ/BlockXYZ."""
    grid = [(column, "int64") for column in _GRID_BLOCK] if header.has("GridXYZ") else []
    return [("name", "object"), ("instances", "int64"), *_STAT_SCHEMA, *grid]


def _xyz(row: _Row, base: str) -> tuple[int, int, int]:
    """A 'GridXYZ'/'BlockXYZ' cell like ' 896    1    1' as three integers."""
    parts = row.text(base).split()
    if len(parts) != 3 or not all(re.fullmatch(r"-?\d+", part) for part in parts):
        raise row.fail(base, "three integers separated by spaces")
    x, y, z = (int(part) for part in parts)
    return x, y, z


def _kern_row(row: _Row) -> dict[str, object]:
    """One cuda_gpu_kern_sum row."""
    out: dict[str, object] = {"name": row.text("Name"), "instances": row.integer("Instances"), **_stats(row)}
    if row.header.has("GridXYZ"):
        out.update(zip(_GRID_BLOCK, (*_xyz(row, "GridXYZ"), *_xyz(row, "BlockXYZ")), strict=True))
    return out


def _trace_schema(header: _Header) -> list[tuple[str, str]]:
    """Columns of cuda_gpu_trace."""
    green = [("green_context", "Int64")] if header.has("GreenCtx") else []
    return [
        ("start_ns", "int64"),
        ("duration_ns", "int64"),
        ("end_ns", "int64"),
        ("corr_id", "int64"),
        ("kind", "object"),
        ("name", "object"),
        ("bytes", "int64"),
        ("throughput_bps", "float64"),
        ("src_kind", "object"),
        ("dst_kind", "object"),
        ("device", "int64"),
        ("device_name", "object"),
        ("context", "int64"),
        *green,
        ("stream", "int64"),
        *[(column, "Int64") for column in _GRID_BLOCK],
    ]


def _device(row: _Row) -> tuple[int, str]:
    """The 'Device' cell, printed as '<name> (<id>)', as (id, name)."""
    match = _DEVICE_RE.match(row.text("Device"))
    if match is None:
        raise row.fail("Device", "'<GPU name> (<device id>)'")
    return int(match["id"]), match["name"].strip()


def _trace_memory(row: _Row) -> dict[str, object]:
    """The kind/size columns of a trace row: memory operations have Bytes, kernels do not."""
    name = row.text("Name")
    if row.blank("Bytes"):
        if name.startswith(("[CUDA memcpy", "[CUDA memset")):
            raise row.fail("Bytes", "a size for a memory operation")
        return {"kind": "kernel", "bytes": 0, "throughput_bps": math.nan, "src_kind": None, "dst_kind": None}
    return {
        "kind": memop_kind(name),
        "bytes": row.bytes_from_mb("Bytes"),
        "throughput_bps": row.throughput_bps("Throughput"),
        "src_kind": row.text("SrcMemKd") or None,
        "dst_kind": row.text("DstMemKd") or None,
    }


def _trace_row(row: _Row) -> dict[str, object]:
    """One cuda_gpu_trace row."""
    start, duration = row.time_ns("Start"), row.time_ns("Duration")
    device, device_name = _device(row)
    green = {"green_context": row.opt_integer("GreenCtx")} if row.header.has("GreenCtx") else {}
    grid = zip(_GRID_BLOCK, ("GrdX", "GrdY", "GrdZ", "BlkX", "BlkY", "BlkZ"), strict=True)
    return {
        "start_ns": start,
        "duration_ns": duration,
        "end_ns": start + duration,
        "corr_id": row.integer("CorrId"),
        "name": row.text("Name"),
        **_trace_memory(row),
        "device": device,
        "device_name": device_name,
        "context": row.integer("Ctx"),
        **green,
        "stream": row.integer("Strm"),
        **{out: row.opt_integer(base) for out, base in grid},
    }


# -- cuda_gpu_trace, column by column -------------------------------------------------------------------------
# A trace holds tens of thousands of rows (day 55's, 57,000), and a row read through _Row costs some 35 us: two
# seconds a trace, paid by every replay and by each warm grading process. The exports nsys writes (integer times,
# sizes with at most six decimals, a device printed as 'name (id)') are read here a column at a time, to the same
# frame; anything else, malformed or merely unusual, goes to the row reader, which reads it or names the line.

_INTEGER = r"-?\d+"
_COUNT = r"\d+"  # a duration: a negative one goes to the row reader, which names it
_MB_EXACT = r"\d+(?:\.\d{1,6})?"  # decimal megabytes that are a whole number of bytes
_DECIMAL = r"\d+(?:\.\d*)?"


def _each(pattern: str, cells: Sequence[str], *, blank: bool = False) -> bool:
    """Whether every cell is the pattern whole (or empty, with `blank`): one regex pass over the column."""
    if not cells:
        return True
    one = f"(?:{pattern})?" if blank else f"(?:{pattern})"
    joined = "\n".join(cells)
    return joined.count("\n") == len(cells) - 1 and re.fullmatch(f"{one}(?:\n{one})*", joined) is not None


def _shifted(number: str) -> str:
    """A decimal string times 1,000,000, as a string (exact: the point moves six places)."""
    whole, _, fraction = number.partition(".")
    fraction = fraction.ljust(6, "0")
    return f"{whole}{fraction[:6]}.{fraction[6:] or '0'}"


def _fast_trace(lines: Sequence[str], header: _Header) -> pd.DataFrame | None:
    """The cuda_gpu_trace frame read column by column, or None where any cell is not as nsys writes it."""
    try:
        # a data row's first cell (its start) is never blank: only a row that starts blank is looked at whole
        reader = csv.reader(lines[header.line :], strict=True)
        rows = [cells for cells in reader if cells and (cells[0].strip() or any(c.strip() for c in cells))]
    except csv.Error:
        return None
    width = len(header.names)
    if any(len(cells) != width for cells in rows):
        return None
    columns = dict(zip(header.bases, zip(*rows, strict=True), strict=True)) if rows else dict.fromkeys(header.bases, ())
    units = dict(zip(header.bases, header.units, strict=True))
    integers = ["Start", "CorrId", "Ctx", "Strm"]
    optional = ["GrdX", "GrdY", "GrdZ", "BlkX", "BlkY", "BlkZ", *(["GreenCtx"] if header.has("GreenCtx") else [])]
    if (
        not _each(_COUNT, columns["Duration"])
        or not all(_each(_INTEGER, columns[b]) for b in integers)
        or not all(_each(_INTEGER, columns[b], blank=True) for b in optional)
    ):
        return None
    names, sizes, rates = columns["Name"], columns["Bytes"], columns["Throughput"]
    memory = [bool(size.strip()) for size in sizes]
    moved = [size for size, m in zip(sizes, memory, strict=True) if m]
    rated = [rate for rate, m in zip(rates, memory, strict=True) if m]
    if not _each(_MB_EXACT, moved) or not _each(_DECIMAL, rated, blank=True):
        return None
    if any(not m and n.startswith(("[CUDA memcpy", "[CUDA memset")) for n, m in zip(names, memory, strict=True)):
        return None
    # names, sizes, rates and devices repeat (a few chunk sizes, one device): each distinct text is read once
    device_of = {text: _DEVICE_RE.match(text) for text in set(columns["Device"])}
    if not all(device_of.values()):
        return None
    device_id = {text: int(found["id"]) for text, found in device_of.items()}  # type: ignore[index]
    device_name = {text: found["name"].strip() for text, found in device_of.items()}  # type: ignore[index]
    kind_of = {name: memop_kind(name) for name in set(names)}
    bytes_of = {size: int(_shifted(size).partition(".")[0]) for size in set(moved)}
    rate_of = {rate: float(_shifted(rate)) for rate in set(rated) if rate.strip()}
    start = [int(c) * TIME_UNITS_NS[units["Start"]] for c in columns["Start"]]
    duration = [int(c) * TIME_UNITS_NS[units["Duration"]] for c in columns["Duration"]]
    src, dst = columns["SrcMemKd"], columns["DstMemKd"]
    data: dict[str, Sequence[object]] = {
        "start_ns": start,
        "duration_ns": duration,
        "end_ns": [a + b for a, b in zip(start, duration, strict=True)],
        "corr_id": list(map(int, columns["CorrId"])),
        "kind": [kind_of[n] if m else "kernel" for n, m in zip(names, memory, strict=True)],
        "name": names,
        "bytes": [bytes_of[s] if m else 0 for s, m in zip(sizes, memory, strict=True)],
        "throughput_bps": [rate_of[r] if m and r.strip() else math.nan for r, m in zip(rates, memory, strict=True)],
        "src_kind": [(s or None) if m else None for s, m in zip(src, memory, strict=True)],
        "dst_kind": [(d or None) if m else None for d, m in zip(dst, memory, strict=True)],
        "device": [device_id[text] for text in columns["Device"]],
        "device_name": [device_name[text] for text in columns["Device"]],
        "context": list(map(int, columns["Ctx"])),
        "stream": list(map(int, columns["Strm"])),
    }
    for out, base in zip((*_GRID_BLOCK, "green_context"), optional, strict=False):
        data[out] = [int(c) if c else None for c in columns[base]]
    return pd.DataFrame({column: pd.Series(data[column], dtype=dtype) for column, dtype in _trace_schema(header)})


_Schema = Callable[[_Header], list[tuple[str, str]]]
_Builder = Callable[[_Row], dict[str, object]]
_READERS: dict[str, tuple[_Schema, _Builder]] = {
    "nvtx_sum": (_nvtx_sum_schema, _nvtx_sum_row),
    "nvtx_pushpop_sum": (_nvtx_sum_schema, _nvtx_sum_row),
    "nvtx_pushpop_trace": (_pushpop_trace_schema, _pushpop_trace_row),
    "cuda_gpu_mem_time_sum": (_mem_time_schema, _mem_time_row),
    "cuda_api_sum": (_api_schema, _api_row),
    "cuda_gpu_kern_sum": (_kern_schema, _kern_row),
    "cuda_gpu_trace": (_trace_schema, _trace_row),
}


def _frame(schema: Sequence[tuple[str, str]], records: Iterable[dict[str, object]]) -> pd.DataFrame:
    """A DataFrame with exactly the schema's columns and dtypes (also when there are no rows)."""
    rows = list(records)
    return pd.DataFrame({column: pd.Series([r[column] for r in rows], dtype=dtype) for column, dtype in schema})


def read_report(path: str | Path, report: str | None = None) -> pd.DataFrame:
    """Read one nsys stats CSV export into a normalised DataFrame (see the module docstring)."""
    path = Path(path)
    if report is not None:
        candidates: tuple[str, ...] = (canonical_report(report),)
    else:
        named = report_from_filename(path)
        candidates = (named[0],) if named else REPORTS
    lines = _read_lines(path)
    header = _find_header(path, lines, candidates)
    schema, build = _READERS[header.report]
    fast = _fast_trace(lines, header) if header.report == "cuda_gpu_trace" else None
    frame = (
        fast if fast is not None else _frame(schema(header), (build(row) for row in _data_rows(path, lines, header)))
    )
    frame.attrs.update(report=header.report, path=str(path))
    return frame


def _exports_by_prefix(directory: Path) -> dict[str, dict[str, list[Path]]]:
    """prefix -> canonical report -> export files found directly in the directory."""
    found: dict[str, dict[str, list[Path]]] = {}
    for path in sorted(directory.iterdir()):
        named = report_from_filename(path) if path.is_file() else None
        if named:
            report, prefix = named
            found.setdefault(prefix, {}).setdefault(report, []).append(path)
    return found


def find_exports(directory: str | Path, prefix: str | None = None) -> dict[str, Path]:
    """Canonical report name -> export file in a directory, for both naming generations."""
    directory = Path(directory)
    if not directory.is_dir():
        raise NsysFormatError(directory, None, "not a directory, expected a folder of nsys stats CSV exports")
    groups = _exports_by_prefix(directory)
    if prefix is None and len(groups) > 1:
        names = ", ".join(repr(p) for p in groups)
        raise NsysFormatError(
            directory, None, f"holds exports with several prefixes ({names}); expected one, or pass prefix= to choose"
        )
    group = groups.get(prefix, {}) if prefix is not None else next(iter(groups.values()), {})
    for report, paths in group.items():
        if len(paths) > 1:
            files = ", ".join(p.name for p in paths)
            raise NsysFormatError(directory, None, f"holds {len(paths)} {report} exports ({files}), expected one")
    return {report: group[report][0] for report in REPORTS if report in group}


def read_exports(
    directory: str | Path, reports: Sequence[str] = REPORTS_NEEDED_DEFAULT, prefix: str | None = None
) -> dict[str, pd.DataFrame]:
    """Read the named reports from a directory of exports; NsysFormatError naming any that is missing."""
    directory = Path(directory)
    found = find_exports(directory, prefix)
    wanted = [canonical_report(report) for report in reports]
    for report in wanted:
        if report not in found:
            old = next(o for o, new in OLD_NAMES.items() if new == report)
            raise NsysFormatError(
                directory,
                None,
                f"missing the {report} report: expected a file "
                f"<prefix>_{report}.csv (or <prefix>_{old}.csv from nsys 2022.4)",
            )
    return {report: read_report(found[report], report) for report in wanted}
