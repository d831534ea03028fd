"""The shipped profile (day55/profiles/h200, recorded on the H200 by day55/record.sh): the replay from its nsys
exports agrees with the results.json the same run wrote, holds every pass and timeline, and runs offline in
seconds. Until the profile is recorded these tests skip, naming the file that is missing."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from day55 import report
from day55.config import VARIANTS, PassKey
from day55.replay import from_exports
from labcore.record import load

ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "day55" / "profiles" / "h200"
NEEDED = ("results.json", "day55_nvtx_pushpop_trace.csv", "day55_cuda_gpu_trace.csv")


@pytest.fixture(scope="module")
def shipped():
    missing = [name for name in NEEDED if not (PROFILE / name).is_file()]
    if missing:
        pytest.skip(f"no shipped profile yet: {PROFILE / missing[0]} is missing (record it: bash day55/record.sh)")
    return from_exports(PROFILE, PROFILE / "results.json"), load(PROFILE / "results.json")


def test_the_exports_agree_with_the_runs_own_record(shipped):
    replayed, written = shipped
    assert {p.key for p in replayed.passes} == {p.key for p in written.passes}
    for p in written.passes:
        mine = replayed.pass_times(p.key)
        assert len(mine.times_ms) == len(p.times_ms)
        assert mine.median_ms == pytest.approx(p.median_ms, rel=0.02), p.key  # nsys ranges against the events


def test_every_way_of_allocating_is_checked_timed_and_drawn(shipped):
    replayed, _ = shipped
    assert replayed.checks and all(c.ok for c in replayed.checks)
    window = report.main_window(replayed)
    for name in VARIANTS:
        key = PassKey(name, window, report.buffers(replayed))
        assert replayed.has_pass(key) and replayed.ops(key), key
    assert report.calls(replayed, window) is not None
    assert "claims" in report.render(replayed)


def test_the_cli_replays_the_shipped_profile_in_seconds(shipped, tmp_path):
    def children_cpu() -> float:
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        return used.ru_utime + used.ru_stime

    def replay(*extra: str) -> subprocess.CompletedProcess:
        run = subprocess.run(
            [sys.executable, "-m", "day55", "--from-profile", str(PROFILE), *extra],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, run.stderr
        assert run.stdout.startswith("day55: replay of nsys exports in ")
        return run

    started = children_cpu()
    replay()
    assert children_cpu() - started < 5  # the command's CPU seconds, the bar for an offline replay
    replay("--plot", str(tmp_path))  # matplotlib's first import may build its font cache: no bar on this one
    assert len(list(tmp_path.glob("*.png"))) == 3
