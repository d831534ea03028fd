"""The multi-GPU section offline: `python -m day54 --gpus`, its record and its tables.

Every record here is a test fixture (day54/tests/multi_gpu_fixture.py: made-up round numbers on a "Fixture GPU"), never
shipped: no two-GPU profile is recorded yet. Commands run with CUDA_VISIBLE_DEVICES empty, so they are offline on a
GPU machine too, and with COURSE_PROFILES pointing at a temporary folder, so a profile shipped later changes nothing.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from day54 import multi_gpu, plots
from day54.__main__ import parse_args
from day54.replay import load_profile as load_day54_profile
from day54.tests.multi_gpu_fixture import fixture_record, ship
from grader import bundle
from labcore.errors import UsageError
from labcore.record import validate

ROOT = Path(__file__).resolve().parents[2]


def day54(*args: str, profiles: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "COURSE_PROFILES": str(profiles), "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run(
        [sys.executable, "-m", "day54", *args], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env
    )


# -- the command -------------------------------------------------------------------------------------------------


def test_gpus_is_a_flag_off_by_default():
    """--gpus selects the section; without it the lab runs as before."""
    assert parse_args(["--gpus"]).gpus is True
    assert parse_args([]).gpus is False


def test_without_a_gpu_or_a_profile_it_says_how_to_record_one_and_exits_1(profiles):
    """One line on stderr naming the missing file and the recording command; nothing on stdout; exit 1."""
    done = day54("--gpus", profiles=profiles)
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "no GPU here" in lines[0] and "no two-GPU profile is recorded yet" in lines[0]
    assert str(profiles / "h200x2" / "day54" / "multi_gpu.json") in lines[0]
    assert lines[0].endswith("python -m day54 --gpus --json day54/profiles/h200x2/multi_gpu.json")


def test_offline_it_replays_the_shipped_profile(profiles, tmp_path):
    """Mode line first (replay of the shipped file, on 2x the recorded GPU), then the verdicts and both tables."""
    path = ship(profiles, fixture_record())
    done = day54("--gpus", "--plot", str(tmp_path / "plots"), "--json", str(tmp_path / "again.json"), profiles=profiles)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"day54 --gpus: replay of {path} (recorded ")
    assert "on 2x Fixture GPU (sm_90" in lines[0] and lines[0].endswith("; no GPU here")
    assert "Correctness (before any timing)" in done.stdout
    assert "Each GPU pipelining its own 1GiB (64MiB window, 16 chunks), alone and all 2 at once" in done.stdout
    assert "Moving 1GiB from GPU 0 to GPU 1" in done.stdout
    assert (tmp_path / "plots" / "day54_multi_gpu.png").read_bytes()[:4] == b"\x89PNG"
    again = json.loads((tmp_path / "again.json").read_text())
    validate(again)
    assert again["lesson"] == multi_gpu.SECTION and len(again["passes"]) == len(fixture_record().passes)


def test_from_profile_names_a_record_directly_and_options_it_cannot_honour_get_a_line(profiles, tmp_path):
    """--from-profile FILE replays that file; a live-only option given to a replay is one line on stderr."""
    path = fixture_record(1).save(tmp_path / "one.json")
    done = day54("--gpus", "--from-profile", str(path), "--buffers", "4", profiles=profiles)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"day54 --gpus: replay of {path} (recorded ")
    assert "replay: --buffers: a replay shows the recording as it was measured" in done.stderr
    assert multi_gpu.NO_NEIGHBOUR in done.stdout
    assert "a peer copy needs two GPUs; this machine has 1" in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--windows", "4MiB"],
            "error: --windows does not apply to --gpus (it runs one window on every GPU here); use --window",
        ),
        (
            ["--device", "1"],
            "error: --device does not apply to --gpus (it runs one window on every GPU here); use CUDA_VISIBLE_DEVICES",
        ),
        (["--no-pitfalls"], "error: --no-pitfalls does not apply to --gpus"),
        (["--window", "48MiB", "--total", "1GiB"], "error: --window 48MiB does not divide --total 1GiB"),
    ],
)
def test_options_the_section_cannot_take_are_one_line_and_exit_2(profiles, args, message):
    """The lab's options that mean nothing here, and a bad window, stop before anything runs."""
    done = day54("--gpus", *args, profiles=profiles)
    assert done.returncode == 2
    assert done.stderr.startswith(message) and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_records_are_kept_apart_from_the_lab(profiles, tmp_path):
    """The lab's replay refuses a multi-GPU record and the section refuses the lab's, each naming the file."""
    path = fixture_record().save(tmp_path / "multi.json")
    with pytest.raises(UsageError, match=r"multi.json records the 'day54-multi-gpu' lesson, not 'day54'"):
        load_day54_profile(path)
    lab = ROOT / "day54" / "profiles" / "h200" / "results.json"
    with pytest.raises(UsageError, match=r"records 'day54', not the multi-GPU section"):
        multi_gpu.load_profile(lab)


# -- the record and its tables ------------------------------------------------------------------------------------


def test_the_record_round_trips_through_json(tmp_path):
    """Saved and loaded (as a directory or a file), the record is the same record, read as a replay."""
    record = fixture_record()
    record.save(tmp_path / multi_gpu.PROFILE_NAME)
    for where in (tmp_path, tmp_path / multi_gpu.PROFILE_NAME):
        loaded = multi_gpu.load_profile(where)
        assert loaded.mode == "replay" and loaded.source == str(tmp_path / multi_gpu.PROFILE_NAME)
        assert dataclasses.replace(loaded, mode="live", source="live").to_dict() == record.to_dict()
        assert multi_gpu.render(loaded) == multi_gpu.render(record)


def test_the_pipelines_table_gives_each_gpu_its_ratio_alone_and_together():
    """GPU 1, 2 buffers: naive 50, pipelined 30 -> 0.600 alone; 36 together -> 0.720, 1.200 of alone."""
    table = multi_gpu.pipelines_table(fixture_record())
    row = next(line for line in table.splitlines() if line.split()[:2] == ["1", "2"])
    assert row.split() == ["1", "2", "50.000", "30.000", "0.600", "|", "50.000", "36.000", "0.720", "1.200"]
    assert multi_gpu.ratio(fixture_record(), 0, True, 3) == pytest.approx(25 * 1.1 / 50)
    assert "pipelined b=2, all GPUs: done 37.800 ms after the first enqueue, the slowest GPU's own 36.000 ms" in table
    assert "they overlapped" in table and "NOT" not in table


def test_gpus_that_took_turns_are_called_out():
    """A together span near the sum of the GPUs' times (not the slowest one's) says they did not run at once."""
    table = multi_gpu.pipelines_table(fixture_record(span_factor=1.9))
    assert table.count("they did NOT run at once") == 3


def test_the_copies_table_gives_ms_gbps_and_the_speedup():
    """1 GiB in 2.5 ms is 429.5 GB/s; in 20 ms 53.7 GB/s; the peer copy 8.0x faster."""
    text = multi_gpu.copies_table(fixture_record())
    peer = next(line for line in text.splitlines() if line.startswith("peer copy (cudaMemcpyPeerAsync"))
    staged = next(line for line in text.splitlines() if line.startswith("staged through pinned host"))
    assert peer.split()[-2:] == ["2.500", "429.5"] and "peer access enabled" in peer
    assert staged.split()[-2:] == ["20.000", "53.7"] and "(64MiB chunks, 2 staging buffers)" in staged
    assert text.splitlines()[-1] == "peer copy: 8.0x faster than staging through the host"


def test_without_peer_access_the_table_says_the_driver_moved_it():
    """GPUs that cannot reach each other's memory: the peer row says the driver's fallback carried the copy."""
    text = multi_gpu.copies_table(fixture_record(peer_enabled=False))
    assert "peer access NOT possible between these GPUs: the driver moves it by its own fallback" in text


def test_one_gpu_says_what_it_could_not_measure():
    """One GPU: the 'together' cells are '-', one line says there is no neighbour, one that a peer copy needs two."""
    text = multi_gpu.render(fixture_record(1))
    rows = [line for line in text.splitlines() if line.startswith("0 ")]
    assert len(rows) == 2 and all(row.split()[-4:] == ["-", "-", "-", "-"] for row in rows)
    assert multi_gpu.NO_NEIGHBOUR in text
    assert (
        text.splitlines()[-1]
        == "GPU to GPU: a peer copy needs two GPUs; this machine has 1 (CUDA_VISIBLE_DEVICES counts)"
    )
    assert "all GPUs: done" not in text


def test_the_figure_draws_both_experiments_or_says_what_is_missing():
    """Two GPUs: 8 ratio bars (2 GPUs x 2 depths x alone/together) and 2 copy bars; one GPU: 2 bars and the line."""
    two = plots.multi_gpus(fixture_record())
    left, right = two.axes
    assert len(left.patches) == 8 and len(right.patches) == 2
    one = plots.multi_gpus(fixture_record(1))
    assert len(one.axes[0].patches) == 2
    assert any("a peer copy needs two GPUs" in t.get_text() for t in one.axes[1].texts)


def test_the_students_bundle_would_carry_the_two_gpu_profile(tmp_path):
    """Once recorded, the profile lies where the bundle takes a lesson's files from (its package data)."""
    folder = tmp_path / multi_gpu.LESSON
    path = fixture_record().save(tmp_path / multi_gpu.PROFILE)
    patterns = bundle.package_options(ROOT)["package_data"][multi_gpu.LESSON]
    assert path in bundle._shipped_files(folder, patterns)
