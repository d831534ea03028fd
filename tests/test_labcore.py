"""The shared core: sizes, the results record's schema, and the plots' content."""

from __future__ import annotations

import base64
import copy
import json
import re
from typing import ClassVar

import numpy as np
import pytest

from labcore import answers, plots
from labcore.errors import UsageError
from labcore.lessons import names
from labcore.profiles import shipped_profile
from labcore.record import Op, Record, load, validate
from labcore.sizes import format_size, parse_size, parse_sizes

# Every lesson's shipped record (the one a replay reads), and those that hold a per-op trace
RECORDS = {name: shipped_profile(name) / "results.json" for name in names()}
TRACED = [name for name, path in RECORDS.items() if json.loads(path.read_text()).get("trace")]


@pytest.mark.parametrize(
    ("text", "nbytes"),
    [
        ("64MiB", 64 << 20),
        ("1GiB", 1 << 30),
        ("4096", 4096),
        ("64MB", 64_000_000),
        ("0.5GiB", 1 << 29),
        ("4 KiB", 4096),
    ],
)
def test_parse_size(text, nbytes):
    """Binary and decimal units and plain byte counts."""
    assert parse_size(text) == nbytes


@pytest.mark.parametrize("text", ["lots", "64XB", "-4MiB", "1.5B", ""])
def test_parse_size_rejects(text):
    """Anything else is a UsageError that quotes it."""
    with pytest.raises(UsageError, match="--total"):
        parse_size(text, option="--total")


def test_format_size_round_trips():
    """format_size gives what parse_size reads back."""
    for nbytes in (4 << 20, 64 << 20, 1 << 30, 1000, 3 << 10):
        assert parse_size(format_size(nbytes)) == nbytes
    assert parse_sizes("4MiB,64MiB") == [4 << 20, 64 << 20]


@pytest.mark.parametrize("name", names())
def test_shipped_record_is_valid_and_round_trips(name, tmp_path):
    """Each lesson's shipped results.json validates, loads, saves and loads again unchanged, every pass's times
    too."""
    data = json.loads(RECORDS[name].read_text())
    validate(data)
    record = load(RECORDS[name])
    saved = record.save(tmp_path / "again.json")
    assert json.loads(saved.read_text()) == record.to_dict()
    again = Record.from_dict(record.to_dict())
    assert data["passes"]
    for run in data["passes"]:
        assert again.pass_times(run["key"]).times_ms == record.pass_times(run["key"]).times_ms == run["times_ms"]


# Malformed records, each with the error it must raise ({first}: the first pass's key, as the error names it)
RECORD_MUTATIONS = [
    (lambda d: d.pop("device"), "lacks the field 'device'"),
    (lambda d: d.update(schema=2), "schema 2 is not the supported 1"),
    (lambda d: d.update(passes="none"), "record.passes should be list"),
    (lambda d: d["passes"][0].update(times_ms=[]), r"passes\[0\] \({first}\) needs positive times_ms"),
    (lambda d: d["passes"][0].update(times_ms=[1.0, -2.0]), "needs positive times_ms"),
]
TRACE_MUTATIONS = [
    (lambda d: d["trace"][0].update(op="memset"), r"trace\[0\]\.op is 'memset'"),
    (lambda d: d["trace"][0].update(chunk="3"), r"trace\[0\]\.chunk should be int, got str"),
]


@pytest.mark.parametrize(
    ("name", "mutate", "message"),
    [(name, *m) for name in names() for m in RECORD_MUTATIONS]
    + [(name, *m) for name in TRACED for m in TRACE_MUTATIONS],
)
def test_schema_errors_name_the_field(name, mutate, message):
    """Each malformed record (every lesson's shipped one, broken; its trace where it has one) is refused with the
    field that is wrong."""
    data = json.loads(RECORDS[name].read_text())
    broken = copy.deepcopy(data)
    mutate(broken)
    with pytest.raises(UsageError, match=message.format(first=re.escape(data["passes"][0]["key"]))):
        validate(broken, source="x.json")


def test_some_lesson_ships_a_trace():
    """Not vacuous: the trace's schema errors above are checked on at least one shipped record."""
    assert TRACED


def test_save_refuses_a_directory(tmp_path):
    """--json DIR is a clear error, not an overwrite."""
    with pytest.raises(UsageError, match="is a directory"):
        load(RECORDS[names()[0]]).save(tmp_path)


def test_timeline_draws_every_op_on_its_row():
    """One bar per op, rows by engine; each panel's title carries its end time."""
    ops = [
        Op("k", "h2d", 0, 0, 0, 100),
        Op("k", "kernel", 0, 0, 100, 50),
        Op("k", "d2h", 0, 0, 150, 100),
        Op("k", "h2d", 1, 1, 100, 100),
    ]
    fig = plots.timeline([("a", ops), ("b", ops[:2])])
    top, bottom = fig.axes
    bars = [sum(len(c.get_paths()) for c in ax.collections) for ax in (top, bottom)]
    assert bars == [4, 2] and len(top.collections) == 3  # a collection of bars per row
    assert top.get_title(loc="left") == "a: 0.00 ms"  # 250 ns
    assert [t.get_text() for t in top.get_yticklabels()] == ["copy in (H2D)", "kernel (SMs)", "copy out (D2H)"]
    by_stream = plots.timeline([("a", ops)], by="stream").axes[0]
    assert [t.get_text() for t in by_stream.get_yticklabels()] == ["stream 0", "stream 1"]


class _FakeDevice:
    used: ClassVar[list[int]] = []

    def __init__(self, index: int = 0) -> None:
        self.id = index

    def use(self) -> None:
        _FakeDevice.used.append(self.id)


def _two_gpus(monkeypatch):
    """labcore.device with a CuPy that sees two GPUs (the seam: cupy_or_none)."""
    from types import SimpleNamespace

    from labcore import device

    runtime = SimpleNamespace(getDeviceCount=lambda: 2)
    fake = SimpleNamespace(cuda=SimpleNamespace(runtime=runtime, Device=_FakeDevice))
    monkeypatch.setattr(device, "cupy_or_none", lambda: fake)
    _FakeDevice.used = []
    return device


def test_pick_device_takes_the_option_then_the_environment_then_zero(monkeypatch):
    """--device N wins, else $LABCORE_DEVICE, else GPU 0; the pick becomes CuPy's current device."""
    device = _two_gpus(monkeypatch)
    monkeypatch.delenv(device.DEVICE_ENV, raising=False)
    assert device.pick_device() == 0
    monkeypatch.setenv(device.DEVICE_ENV, "1")
    assert device.pick_device() == 1
    assert device.pick_device("0") == 0
    assert _FakeDevice.used == [0, 1, 0]


def test_pick_device_refuses_a_gpu_the_machine_lacks_in_one_line(monkeypatch):
    """An index past the last GPU, or not a number, is a UsageError naming what there is."""
    device = _two_gpus(monkeypatch)
    with pytest.raises(UsageError, match=r"^--device 2: this machine has GPUs 0 to 1 \(CUDA_VISIBLE_DEVICES counts\)$"):
        device.pick_device(2)
    monkeypatch.setenv(device.DEVICE_ENV, "first")
    with pytest.raises(UsageError, match=r"^LABCORE_DEVICE 'first': not a GPU index"):
        device.pick_device()
    assert _FakeDevice.used == []


# -- answers as data: the arrays' encoding ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        np.arange(50_000, dtype=np.int64)[::-1],  # a view: not contiguous
        np.array([[1.5, -np.inf], [np.nan, 2.0]], dtype=np.float32),
        np.array([True, False, True]),
        np.zeros((0, 3), dtype=np.uint16),
        np.array(7, dtype=">i4"),  # 0-d, big-endian
    ],
    ids=["int64-view", "float32-2d", "bool", "empty", "0d-big-endian"],
)
def test_arrays_travel_as_their_bytes_and_come_back_equal(value):
    """An array answer is filed as base64 of its bytes and reads back with the same dtype, shape and values."""
    encoded = json.loads(json.dumps(answers.encode(value)))
    assert set(encoded) == {"array", "shape", "bytes"}
    back = answers.decode(encoded)
    assert back.dtype == value.dtype and back.shape == value.shape and back.flags.writeable
    np.testing.assert_array_equal(back, value)


def _forged_array(kind="<i8", shape=(2,), raw=b"\0" * 16, text=None):
    return {"array": kind, "shape": list(shape), "bytes": text if text is not None else base64.b64encode(raw).decode()}


@pytest.mark.parametrize(
    "forged",
    [
        _forged_array(kind="|O"),  # objects: could be anything
        _forged_array(kind="|V16"),
        _forged_array(kind="banana"),
        _forged_array(kind=["<i8"]),
        _forged_array(raw=b"\0" * 15),  # a byte short of its shape
        _forged_array(shape=(3,)),  # more rows than bytes
        _forged_array(shape=(-1,)),  # numpy would infer the size
        {"array": "<i8", "shape": [True, True], "bytes": "AAAAAAAAAAAAAAAAAAAAAA=="},
        _forged_array(text="not base64!"),
        {"array": "<i8", "shape": [2], "data": [1, 2]},  # the list form: not an encoding any more
    ],
    ids=["object", "void", "unknown-dtype", "dtype-not-str", "short", "long", "inferred", "bool-shape", "b64", "list"],
)
def test_a_forged_array_is_refused_as_unreadable(forged):
    """What the checker reads back that is not an array of numbers with exactly its bytes is no answer."""
    with pytest.raises((TypeError, ValueError)):
        answers.decode(forged)


def test_a_forged_bool_array_holds_only_true_and_false():
    """Bytes other than 0 and 1 in a bool array read back as True, which numpy compares as True."""
    back = answers.decode(_forged_array(kind="|b1", shape=(3,), raw=bytes([0, 1, 7])))
    assert back.tolist() == [False, True, True] and (back == np.array([False, True, True])).all()


def test_a_live_run_that_meets_a_withheld_reference_replays_the_course_run_and_says_so(capsys):
    """The student edition's `python -m <lesson>` on a GPU: where the live run needs a withheld reference answer, one
    line says so and the same command replays the shipped profile; with --from-profile given, the error stands."""
    from labcore.answers import ReferenceWithheld
    from labcore.lessons import names
    from labcore.mode import run_lesson
    from labcore.profiles import default_profile

    lesson, calls = names()[0], []

    def main(argv):
        calls.append(list(argv))
        if "--from-profile" not in argv:
            raise ReferenceWithheld(f"{lesson}.schedules.pipelined")
        return 0

    assert run_lesson(main, lesson, ["--json", "x.json"]) == 0
    assert calls == [["--json", "x.json"], ["--json", "x.json", "--from-profile", str(default_profile(lesson))]]
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and "withholds" in said[0] and f"{lesson}.schedules.pipelined" in said[0]

    def always(argv):
        raise ReferenceWithheld(f"{lesson}.schedules.pipelined")

    with pytest.raises(ReferenceWithheld):
        run_lesson(always, lesson, ["--from-profile", "somewhere"])
