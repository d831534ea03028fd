"""The one results record that every measurement produces, live or replayed.

Tables, predictions, plots and the grader read only this record. It is plain
JSON with a schema version; `validate` names the first field that is wrong.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import statistics
from pathlib import Path
from typing import Any

from labcore.device import DeviceFacts
from labcore.errors import UsageError

SCHEMA_VERSION = 1
OPS = ("h2d", "kernel", "d2h")


@dataclasses.dataclass
class PassTimes:
    """Repeated timings of one named pass (e.g. 'pipelined w=64MiB b=2')."""

    key: str
    name: str
    params: dict[str, Any]
    times_ms: list[float]
    host_ms: list[float] = dataclasses.field(default_factory=list)
    bytes_moved: int | None = None

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def mean_ms(self) -> float:
        return statistics.fmean(self.times_ms)

    @property
    def spread_ms(self) -> tuple[float, float]:
        return min(self.times_ms), max(self.times_ms)

    def gbps(self) -> float | None:
        """Decimal GB/s moved at the median time, when the pass moves bytes."""
        if not self.bytes_moved:
            return None
        return self.bytes_moved / (self.median_ms * 1e-3) / 1e9


@dataclasses.dataclass
class Op:
    """One operation on the device timeline, relative to its pass's start."""

    key: str
    op: str
    chunk: int
    stream: int
    start_ns: int
    duration_ns: int
    nbytes: int = 0
    buffer: int | None = None

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.duration_ns


@dataclasses.dataclass
class Check:
    """A correctness verdict; a failure names the first bad chunk when there is one."""

    name: str
    ok: bool
    detail: str
    first_bad_chunk: int | None = None


@dataclasses.dataclass
class Record:
    """Everything one run measured: device, configuration, passes, trace, checks."""

    lesson: str
    mode: str
    source: str
    device: DeviceFacts
    config: dict[str, Any]
    passes: list[PassTimes] = dataclasses.field(default_factory=list)
    trace: list[Op] = dataclasses.field(default_factory=list)
    checks: list[Check] = dataclasses.field(default_factory=list)
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)
    recorded_at: str = dataclasses.field(
        default_factory=lambda: _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    )
    schema: int = SCHEMA_VERSION

    def pass_times(self, key: object) -> PassTimes:
        """The pass with this key (typed or its string form); UsageError naming what is there if absent."""
        key = str(key)
        for entry in self.passes:
            if entry.key == key:
                return entry
        have = ", ".join(p.key for p in self.passes) or "none"
        raise UsageError(f"the record from {self.source} has no pass {key!r} (it has: {have})")

    def has_pass(self, key: object) -> bool:
        return any(p.key == str(key) for p in self.passes)

    def ops(self, key: object) -> list[Op]:
        """The trace of one pass, in start order."""
        return sorted((op for op in self.trace if op.key == str(key)), key=lambda o: o.start_ns)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def save(self, path: str | Path) -> Path:
        """Write the record as JSON; refuse to write over a directory."""
        path = Path(path)
        if path.is_dir():
            raise UsageError(f"--json {path} is a directory; give a file name such as {path / 'results.json'}")
        tmp = path.with_name(path.name + ".tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(self.to_dict(), indent=1) + "\n")
            tmp.replace(path)
        except OSError as exc:  # a full disk, a folder gone read-only: no half-written record left behind
            tmp.unlink(missing_ok=True)
            raise UsageError(f"--json {path}: cannot write it ({exc.strerror or exc})") from None
        except BaseException:  # Ctrl-C while writing
            tmp.unlink(missing_ok=True)
            raise
        return path

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str = "record") -> Record:
        validate(data, source=source)
        try:
            device = DeviceFacts.from_dict(data["device"])
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{source}: record.device is not a device's facts ({exc})") from None
        return cls(
            lesson=data["lesson"],
            mode=data["mode"],
            source=data["source"],
            device=device,
            config=dict(data["config"]),
            passes=[PassTimes(**p) for p in data["passes"]],
            trace=[Op(**o) for o in data.get("trace", [])],
            checks=[Check(**c) for c in data.get("checks", [])],
            extra=dict(data.get("extra", {})),
            recorded_at=data["recorded_at"],
            schema=data["schema"],
        )


_REQUIRED = {
    "schema": int,
    "lesson": str,
    "mode": str,
    "source": str,
    "device": dict,
    "config": dict,
    "passes": list,
    "recorded_at": str,
}
_PASS_REQUIRED = {"key": str, "name": str, "params": dict, "times_ms": list}
_OP_REQUIRED = {"key": str, "op": str, "chunk": int, "stream": int, "start_ns": int, "duration_ns": int}
_CHECK_REQUIRED = {"name": str, "ok": bool, "detail": str}
_OPTIONAL = {"trace": list, "checks": list, "extra": dict}  # of these types when there


def _known(obj: dict[str, Any], kind: type, where: str, source: str) -> None:
    """No field the dataclass does not have (it would not load, and it is no record this code wrote)."""
    fields = {f.name for f in dataclasses.fields(kind)}
    unknown = sorted(set(obj) - fields)
    if unknown:
        raise UsageError(f"{source}: {where} has the unknown field {unknown[0]!r} (known: {', '.join(sorted(fields))})")


def _need(obj: dict[str, Any], fields: dict[str, type], where: str, source: str) -> None:
    for field, kind in fields.items():
        if field not in obj:
            raise UsageError(f"{source}: {where} lacks the field {field!r}")
        if not isinstance(obj[field], kind) or (isinstance(obj[field], bool) and kind is int):
            raise UsageError(f"{source}: {where}.{field} should be {kind.__name__}, got {type(obj[field]).__name__}")


def validate(data: Any, *, source: str = "record") -> None:
    """Raise UsageError naming the first thing wrong with a record's JSON data."""
    if not isinstance(data, dict):
        raise UsageError(f"{source}: a results record is a JSON object, got {type(data).__name__}")
    _need(data, _REQUIRED, "record", source)
    _need(data, {k: v for k, v in _OPTIONAL.items() if k in data}, "record", source)
    if data["schema"] != SCHEMA_VERSION:
        raise UsageError(f"{source}: schema {data['schema']} is not the supported {SCHEMA_VERSION}")
    for field, kind, required in (("passes", PassTimes, _PASS_REQUIRED), ("trace", Op, _OP_REQUIRED)):
        for i, entry in enumerate(data.get(field, [])):
            where = f"{field}[{i}]"
            if not isinstance(entry, dict):
                raise UsageError(f"{source}: {where} should be an object, got {type(entry).__name__}")
            _need(entry, required, where, source)
            _known(entry, kind, where, source)
    _validate_values(data, source)


def _validate_values(data: dict[str, Any], source: str) -> None:
    """The values a record's fields must hold: positive times, known op kinds, durations of 0 or more, checks."""
    for i, entry in enumerate(data["passes"]):
        times = entry["times_ms"]
        if not times or not all(isinstance(t, (int, float)) and not isinstance(t, bool) and t > 0 for t in times):
            raise UsageError(f"{source}: passes[{i}] ({entry['key']}) needs positive times_ms")
    for i, op in enumerate(data.get("trace", [])):
        if op["op"] not in OPS:
            raise UsageError(f"{source}: trace[{i}].op is {op['op']!r}; expected one of {', '.join(OPS)}")
        if op["duration_ns"] < 0:
            raise UsageError(f"{source}: trace[{i}].duration_ns is {op['duration_ns']}; a duration is 0 or more")
    for i, check in enumerate(data.get("checks", [])):
        if not isinstance(check, dict):
            raise UsageError(f"{source}: checks[{i}] should be an object, got {type(check).__name__}")
        _need(check, _CHECK_REQUIRED, f"checks[{i}]", source)
        _known(check, Check, f"checks[{i}]", source)


def load(path: str | Path) -> Record:
    """Read a results.json; UsageError with the path and problem when it cannot."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"{path}: no such results file") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: a folder, not a results file (a run's results.json)") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not text (bytes that are not UTF-8), so not a results record") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise UsageError(f"{path}: JSON nested too deep to be a results record") from None
    return Record.from_dict(data, source=str(path))
