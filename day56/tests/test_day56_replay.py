"""The shipped profile (day56/profiles/h200, recorded on the H200 by day56/record.sh): its nsys exports replay
into a record that agrees with the run's own results.json, and `python -m day56` replays it without a GPU. Until
the profile is recorded these tests skip, naming the file they miss (a profile is never made up)."""

from __future__ import annotations

from pathlib import Path

import pytest

from day56 import LESSON, report
from day56.__main__ import main
from day56.replay import from_exports, load_profile
from labcore import record as rec
from labcore.device import gpu_available

PROFILE = Path(__file__).resolve().parents[1] / "profiles" / "h200"
RESULTS = PROFILE / "results.json"
TRACE = PROFILE / f"{LESSON}_cuda_gpu_trace.csv"


def _need(path: Path) -> None:
    if not path.is_file():
        pytest.skip(
            f"no {path.relative_to(PROFILE.parents[2])} yet: the profile is recorded on the H200 (day56/record.sh)"
        )


def test_the_exports_agree_with_the_runs_own_record():
    _need(RESULTS)
    _need(TRACE)
    replayed, own = from_exports(PROFILE, RESULTS), rec.load(RESULTS)
    assert {p.key for p in replayed.passes} == {p.key for p in own.passes}
    for mine in own.passes:
        theirs = replayed.pass_times(mine.key)
        assert abs(theirs.median_ms / mine.median_ms - 1) < 0.02, (mine.key, theirs.median_ms, mine.median_ms)
    for n in report.chunk_counts(own):
        live, profiled = report.launch_ms(own, n), report.launch_ms(replayed, n)
        assert profiled >= live * 0.5 and profiled <= live * 2 + 0.05, (n, live, profiled)


def test_the_replay_draws_both_timelines_from_the_node_level_trace():
    _need(TRACE)
    record = load_profile(PROFILE)
    n = report.main_chunks(record)
    assert len(record.ops(f"streams n={n}")) == 3 * n and len(record.ops(f"graph n={n}")) == 3 * n


@pytest.mark.skipif(gpu_available(), reason="with a GPU, python -m day56 runs live instead of replaying")
def test_python_m_day56_replays_the_shipped_profile(capsys):
    _need(RESULTS)
    assert main([]) == 0
    assert capsys.readouterr().out.startswith("day56: replay of ")
