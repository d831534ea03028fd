"""Day 57 replayed from its shipped profile: the passes from the NVTX ranges, the unified-memory traffic of one
repeat from the binned exports, the claims judged; a bad profile is one clear line."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from day57 import LESSON, plots, replay, report
from labcore.errors import UsageError
from labcore.profiles import shipped_profile

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def record():
    return replay.load_profile()


def test_every_pass_replays_from_the_ranges(record):
    """Five passes, three timed repeats each, every output bit-exact in the recorded run."""
    assert [p.name for p in record.passes] == ["pipeline", "duplex", "faults", "prefetch", "advised"]
    assert all(len(p.times_ms) == 3 for p in record.passes)
    assert record.source.startswith("nsys exports in") and all(c.ok for c in record.checks)


def test_the_traffic_is_what_each_pass_moves(record):
    """Prefetch moves the whole input to the GPU with no fault; the advised re-run moves nothing and faults nowhere;
    the faulting pass faults on both sides."""
    moved = record.extra[report.MIGRATIONS]
    assert moved["prefetch"]["h2d_bytes"] == pytest.approx(1 << 30, rel=0.01)
    assert moved["prefetch"]["gpu_faults"] == moved["prefetch"]["cpu_faults"] == 0
    assert moved["advised"] == {"h2d_bytes": 0, "d2h_bytes": 0, "gpu_faults": 0, "cpu_faults": 0}
    assert moved["faults"]["gpu_faults"] > 1000 and moved["faults"]["cpu_faults"] > 100


def test_the_claims_are_judged_on_the_numbers(record):
    verdicts = report.predictions(record)
    assert [v.outcome for v in verdicts] == ["held", "held", "held"]
    ratio = report.ratio(record, "advised", "duplex")
    assert verdicts[2].numbers.startswith(f"advised/floor {ratio:.2f}x") and ratio < 1


def test_the_figures_draw(record, tmp_path):
    written = plots.write_all(record, tmp_path)
    assert [p.name for p in written] == ["day57_bars.png", "day57_timeline.png"]
    assert all(p.stat().st_size > 10_000 for p in written)


def test_a_bad_bin_file_is_one_line(tmp_path):
    profile = tmp_path / "profile"
    shutil.copytree(shipped_profile(LESSON), profile)
    bins = profile / replay.FILES["gpu_faults"]
    bins.write_text(bins.read_text().replace("\n", "\nten,2\n", 1))
    with pytest.raises(UsageError, match=r"day57_um_gpu_faults\.csv:2: not whole numbers: ten,2"):
        replay.load_profile(profile)
    done = subprocess.run(
        [sys.executable, "-m", "day57", "--from-profile", str(profile)], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "not whole numbers" in done.stderr
