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
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=1) + "\n")
        tmp.replace(path)
        return path

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str = "record") -> Record:
        validate(data, source=source)
        return cls(
            lesson=data["lesson"],
            mode=data["mode"],
            source=data["source"],
            device=DeviceFacts.from_dict(data["device"]),
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
    if data["schema"] != SCHEMA_VERSION:
        raise UsageError(f"{source}: schema {data['schema']} is not the supported {SCHEMA_VERSION}")
    for i, entry in enumerate(data["passes"]):
        _need(entry, _PASS_REQUIRED, f"passes[{i}]", source)
        if not entry["times_ms"] or not all(isinstance(t, (int, float)) and t > 0 for t in entry["times_ms"]):
            raise UsageError(f"{source}: passes[{i}] ({entry['key']}) needs positive times_ms")
    for i, op in enumerate(data.get("trace", [])):
        _need(op, _OP_REQUIRED, f"trace[{i}]", source)
        if op["op"] not in OPS:
            raise UsageError(f"{source}: trace[{i}].op is {op['op']!r}; expected one of {', '.join(OPS)}")


def load(path: str | Path) -> Record:
    """Read a results.json; UsageError with the path and problem when it cannot."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"{path}: no such results file") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    return Record.from_dict(data, source=str(path))
