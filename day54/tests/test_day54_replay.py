"""Replays of the shipped H200 profile: from nsys exports and from results.json, and their consistency checks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from day54 import report
from day54.config import PassKey
from day54.replay import load_profile
from labcore import nsys
from labcore.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "day54" / "profiles" / "h200"


@pytest.fixture(scope="module")
def from_exports():
    return load_profile(PROFILE)


@pytest.fixture(scope="module")
def from_json():
    return load_profile(PROFILE / "results.json")


def test_exports_replay_names_its_source(from_exports):
    """The default profile directory replays from the nsys exports, with the run's results.json for device facts."""
    assert from_exports.source.startswith("nsys exports in") and "results.json" in from_exports.source
    assert from_exports.device.name == "NVIDIA H200" and from_exports.device.async_engine_count == 3


def test_every_pass_agrees_with_the_live_record_within_one_percent(from_exports, from_json):
    """Medians from NVTX ranges + cuda_gpu_trace match the same run's CUDA-event medians within 1%."""
    assert {p.key for p in from_exports.passes} == {p.key for p in from_json.passes}
    for live in from_json.passes:
        replayed = from_exports.pass_times(live.key)
        assert replayed.median_ms == pytest.approx(live.median_ms, rel=0.01), live.key
        assert len(replayed.times_ms) == len(live.times_ms) == from_json.config["repeats"]


def test_ratios_and_predictions_match(from_exports, from_json):
    """The sweep ratios agree within 1% and every prediction reaches the same outcome."""
    for window in report.windows(from_json):
        for depth in report.buffers(from_json):
            assert report.ratio(from_exports, window, depth) == pytest.approx(
                report.ratio(from_json, window, depth), rel=0.01
            )
    window = 64 << 20
    outcomes = [v.outcome for v in report.predictions(from_exports, window)]
    assert outcomes == [v.outcome for v in report.predictions(from_json, window)]


def test_acceptance_figures_of_the_recorded_run(from_exports):
    """The recorded H200 run: naive within 10% of the sum, 64 MiB ratio <= 0.70, 256 MiB the worst window."""
    st = report.stages(from_exports, 64 << 20)
    assert report.measured(from_exports, "naive", 64 << 20, 1) == pytest.approx(st.sum_ms, rel=0.10)
    assert report.ratio(from_exports, 64 << 20, 2) <= 0.70
    ratios = {w: report.ratio(from_exports, w, 2) for w in report.windows(from_exports)}
    assert max(ratios, key=ratios.get) == 256 << 20
    assert all(c.ok for c in from_exports.checks)


def test_pipelined_copies_in_overlap_copies_out(from_exports):
    """In the 64 MiB 2-buffer pipelined pass, a copy in of one chunk runs while a copy out of another runs."""
    ops = from_exports.ops("pipelined w=64MiB b=2")
    ins = [o for o in ops if o.op == "h2d"]
    outs = [o for o in ops if o.op == "d2h"]
    assert len(ins) == len(outs) == 16
    overlapping = [
        (i.chunk, o.chunk)
        for i in ins
        for o in outs
        if i.chunk != o.chunk and i.start_ns < o.end_ns and o.start_ns < i.end_ns
    ]
    assert len(overlapping) >= 10
    naive = from_exports.ops("naive w=64MiB b=1")
    assert not any(a.start_ns < b.end_ns and b.start_ns < a.end_ns for a in naive for b in naive if a is not b)


def test_trace_streams_and_chunks(from_exports):
    """Chunk k of the 2-buffer pass runs on stream k % 2; naive uses one stream."""
    ops = from_exports.ops("pipelined w=64MiB b=2")
    assert all(o.stream == o.chunk % 2 for o in ops)
    assert {o.stream for o in from_exports.ops("naive w=64MiB b=1")} == {0}


def test_pass_keys_round_trip():
    """A pass key's string form (the NVTX range name) parses back into the same name, window and depth."""
    assert PassKey.parse("pipelined w=64MiB b=2") == PassKey("pipelined", 64 << 20, 2)
    assert PassKey.parse("pitfall sync-in-loop w=4MiB b=2") == PassKey("pitfall sync-in-loop", 4 << 20, 2)
    for key in (PassKey("naive", 1000, 1), PassKey("student", 3 << 30, 4), PassKey("pitfall pageable", 4096, 2)):
        assert PassKey.parse(str(key)) == key
    assert PassKey.parse("tiny-range-0") is None
    assert PassKey.parse("pipelined w=64MiB b=") is None


# -- consistency checks on the way in ------------------------------------------------------------

TRACES = ("day54_nvtx_pushpop_trace.csv", "day54_cuda_gpu_trace.csv")


def _copy_profile(tmp_path: Path, with_json: bool = True, summaries: bool = False) -> Path:
    """The shipped exports (the two traces; the summaries too when asked) in a folder of their own."""
    target = tmp_path / "profile"
    target.mkdir()
    for path in PROFILE.glob("day54_*.csv"):
        if summaries or path.name in TRACES:
            shutil.copy(path, target / path.name)
    if with_json:
        shutil.copy(PROFILE / "results.json", target / "results.json")
    return target


def _rewrite_trace(directory: Path, edit) -> None:
    path = directory / "day54_cuda_gpu_trace.csv"
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    edited = edit(frame)
    (frame if edited is None else edited).to_csv(path, index=False)


def _first_instance(directory: Path, key: str) -> tuple[int, int]:
    frame = nsys.read_report(directory / "day54_nvtx_pushpop_trace.csv")
    row = frame[frame["range"] == key].iloc[0]
    return int(row.start_ns), int(row.end_ns)


def test_missing_copy_is_reported(tmp_path):
    """Dropping one copy in from the first naive 64 MiB instance: the error names the pass and the count."""
    directory = _copy_profile(tmp_path)
    start, end = _first_instance(directory, "naive w=64MiB b=1")

    def drop(frame):
        starts = frame["Start (ns)"].astype("int64")
        inside = frame[(starts >= start) & (starts <= end) & frame["Name"].str.contains("Host-to-Device")]
        return frame.drop(index=inside.index[0])

    _rewrite_trace(directory, drop)
    with pytest.raises(nsys.NsysFormatError, match=r"'naive w=64MiB b=1' instance 1: 15 h2d operations, expected 16"):
        load_profile(directory)


def test_wrong_copy_size_is_reported(tmp_path):
    """A copy of the wrong size inside a 4 MiB pass is named with its bytes."""
    directory = _copy_profile(tmp_path)
    start, end = _first_instance(directory, "h2d w=4MiB b=1")

    def shrink(frame):
        starts = frame["Start (ns)"].astype("int64")
        first = frame[(starts >= start) & (starts <= end)].index[0]
        frame.loc[first, "Bytes (MB)"] = "2.097"

    _rewrite_trace(directory, shrink)
    with pytest.raises(nsys.NsysFormatError, match=r"a copy of 2097000 bytes, expected 4194304"):
        load_profile(directory)


def test_missing_pass_is_reported(tmp_path):
    """Without the naive ranges the replay says which pass is missing."""
    directory = _copy_profile(tmp_path)
    path = directory / "day54_nvtx_pushpop_trace.csv"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(line for line in lines if "naive w=256MiB" not in line) + "\n")
    with pytest.raises(nsys.NsysFormatError, match="no 'naive' range for window 256MiB"):
        load_profile(directory)


def test_truncated_export_names_file_and_line(tmp_path):
    """A trace cut mid-row is rejected by the reader with its line number."""
    directory = _copy_profile(tmp_path)
    path = directory / "day54_cuda_gpu_trace.csv"
    text = path.read_text()
    path.write_text(text[: len(text) // 2].rsplit(",", 3)[0])
    with pytest.raises(nsys.NsysFormatError, match=r"day54_cuda_gpu_trace.csv: line \d+:"):
        load_profile(directory)


def test_exports_without_results_json_still_replay(tmp_path):
    """Exports alone give the passes and trace; device facts are then only the GPU's name."""
    directory = _copy_profile(tmp_path, with_json=False)
    replayed = load_profile(directory)
    assert replayed.device.name == "NVIDIA H200" and replayed.device.async_engine_count is None
    assert replayed.config["total_bytes"] == 1 << 30 and replayed.checks == []
    assert report.ratio(replayed, 64 << 20, 2) <= 0.70
    assert "Predictions" in report.render(replayed)


def test_summaries_of_the_same_run_agree_with_its_traces(tmp_path):
    """The shipped profile's five summaries pass the cross-check (counts and total times equal the traces')."""
    directory = _copy_profile(tmp_path, summaries=True)
    assert len(list(directory.glob("*_sum.csv"))) == 4
    assert report.ratio(load_profile(directory), 64 << 20, 2) <= 0.70


def _edit_summary(directory: Path, name: str, column: str, row: int, value: str) -> None:
    path = directory / f"day54_{name}.csv"
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame.loc[row, column] = value
    frame.to_csv(path, index=False)


@pytest.mark.parametrize(
    ("name", "column", "value", "message"),
    [
        ("cuda_gpu_kern_sum", "Instances", "8007", r"8007 kernels in 624684597 ns, the trace has 8008"),
        (
            "cuda_gpu_kern_sum",
            "Total Time (ns)",
            "600000000",
            r"8008 kernels in 600000000 ns, the trace has 8008 in 6246",
        ),
        ("cuda_gpu_mem_time_sum", "Count", "8100", r"8100 \[CUDA memcpy Host-to-Device\] .* the trace has 8104"),
        ("nvtx_sum", "Instances", "4", r"range 'pitfall pageable w=64MiB b=2': 4 instances, the push/pop trace has 5"),
        ("cuda_api_sum", "Num Calls", "100", r"100 copy and 8008 launch calls cannot enqueue 16208 copies"),
    ],
)
def test_a_summary_that_contradicts_the_traces_is_refused(tmp_path, name, column, value, message):
    """Summaries from another run, or edited ones, are refused naming the file and the disagreement."""
    directory = _copy_profile(tmp_path, summaries=True)
    row = 1 if name == "cuda_api_sum" else 0  # row 1 of the API summary is cudaMemcpyAsync
    _edit_summary(directory, name, column, row, value)
    with pytest.raises(nsys.NsysFormatError, match=rf"day54_{name}\.csv: {message}.*not of one run"):
        load_profile(directory)


def test_directory_without_a_profile(tmp_path):
    """An empty directory is named, with what was looked for."""
    with pytest.raises(UsageError, match="neither nsys CSV exports"):
        load_profile(tmp_path)


def test_a_folder_is_parsed_again_when_its_bytes_change_whatever_its_times_say(tmp_path, monkeypatch):
    """The replay keeps a folder's parse for the process (labcore.kit.replay), keyed by what its files hold: the same
    bytes are parsed once; an export rewritten to other bytes of the same size, its times put back, is parsed anew."""
    import os

    from day54 import replay as day54_replay
    from labcore.kit import replay

    folder = Path(shutil.copytree(PROFILE, tmp_path / "profile", ignore=shutil.ignore_patterns("*.nsys-rep")))
    parsed = []

    def counted(path: Path, companion: Path | None):
        parsed.append(path)
        return day54_replay.from_exports(path, companion)

    first = replay.load("day54", folder, counted)
    assert replay.load("day54", folder, counted).passes == first.passes and len(parsed) == 1
    trace = folder / "day54_cuda_gpu_trace.csv"
    times = trace.stat()
    text = trace.read_text()
    digit = next(i for i in range(len(text) - 1, 0, -1) if text[i] in "12345678")
    trace.write_text(text[:digit] + str(int(text[digit]) + 1) + text[digit + 1 :])  # one digit more: same size
    os.utime(trace, ns=(times.st_atime_ns, times.st_mtime_ns))
    assert trace.stat().st_size == times.st_size and trace.stat().st_mtime_ns == times.st_mtime_ns
    replay.load("day54", folder, counted)
    assert len(parsed) == 2
