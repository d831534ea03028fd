"""The report, the plots and `python -m day56` on a record of made-up numbers (day56/tests/records.py), and the
host ranges a replay reads: everything that needs no GPU and no profile."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from day56 import HOST_DOMAIN, plots, report
from day56.__main__ import main
from day56.config import Config, PassKey, parse_host_range
from day56.replay import host_times
from day56.tests.records import made_up
from labcore.errors import UsageError


def outcomes(record):
    return {v.number: v.outcome for v in report.predictions(record)}


def test_pass_keys_and_host_ranges_round_trip():
    assert PassKey.parse("graph n=16") == PassKey("graph", 16) and str(PassKey("streams", 256)) == "streams n=256"
    assert PassKey.parse("pipelined w=64MiB b=2") is None and PassKey.parse("magic n=4") is None
    assert parse_host_range("launch graph n=64") == ("launch", PassKey("graph", 64))
    assert parse_host_range("warmup launch graph n=64") is None


def test_the_report_prints_every_table_and_five_verdicts():
    text = report.render(made_up())
    for head in ("Correctness", "GPU time", "Host time", "New input", "Pitfalls of capture", "Predictions"):
        assert head in text
    assert [v.number for v in report.predictions(made_up())] == [1, 2, 3, 4, 5]


def test_the_verdicts_follow_the_numbers():
    held = outcomes(made_up())
    assert held == {1: "held", 2: "held", 3: "held", 4: "held", 5: "held"}
    slow = outcomes(made_up(graph_gpu=1.2, launch_ms=0.1, update_ms=10.0))
    assert slow[2] == "failed" and slow[3] == "failed" and slow[4] == "failed" and slow[1] == "failed"


def test_break_even_is_one_off_over_the_saving_rounded_up():
    record = made_up()
    # 16 chunks: capture 0.375 + instantiate 0.16 ms over a saving of 0.25 - 0.02 ms a launch
    assert report.break_even(record, 16) == math.ceil((0.375 + 0.16) / 0.23)
    assert report.break_even(made_up(launch_ms=1.0), 16) == math.inf


def test_plots_write_three_pictures(tmp_path):
    written = plots.write_all(made_up(), tmp_path)
    assert [p.name for p in written] == ["day56_timeline.png", "day56_host.png", "day56_gpu.png"]
    assert all(p.stat().st_size > 10_000 for p in written)


def test_python_m_day56_replays_a_results_json(tmp_path, capsys):
    path = made_up().save(tmp_path / "results.json")
    assert main(["--from-profile", str(path), "--plot", str(tmp_path / "plots"), "--buffers", "4"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"day56: replay of {path}") and "Predictions" in out
    assert "replay: --buffers: a replay shows the recording as it was measured" in err


def test_a_failed_check_stops_before_the_timing(tmp_path, capsys):
    record = made_up()
    record.checks[0].ok = False
    path = record.save(tmp_path / "results.json")
    assert main(["--from-profile", str(path)]) == 1
    assert "timing skipped" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--window", "3MiB"], "does not divide"),
        (["--window", "lots"], "--window"),
        (["--buffers", "1"], "at least 2 buffer pairs"),
        (["--repeats", "0"], "at least 1"),
    ],
)
def test_bad_options_are_one_line(argv, message):
    with pytest.raises(UsageError, match=message):
        main(argv)


def test_a_results_json_of_another_lesson_is_refused(tmp_path):
    data = made_up().to_dict()
    data["lesson"] = "day54"
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    with pytest.raises(UsageError, match="records the 'day54' lesson"):
        main(["--from-profile", str(path)])


def test_host_times_come_from_the_host_domain_ranges_without_warmups():
    rows = [
        ("warmup enqueue streams n=16", 900),
        ("enqueue streams n=16", 250_000),
        ("enqueue streams n=16", 260_000),
        ("launch graph n=16", 20_000),
        ("capture graph n=16", 400_000),
        ("instantiate graph n=16", 150_000),
        ("capture graph n=16", 999_000),  # a later capture of the same key: the first counts
        ("update graph n=16", 90_000),
    ]
    frame = pd.DataFrame(
        {
            "domain": [HOST_DOMAIN] * len(rows) + ["day56"],
            "range": [r for r, _ in rows] + ["streams n=16"],
            "start_ns": list(range(len(rows) + 1)),
            "duration_ns": [d for _, d in rows] + [5],
        }
    )
    found = host_times(frame)["16"]
    assert found["enqueue_ms"] == [0.25, 0.26] and found["launch_ms"] == [0.02]
    assert found["capture_ms"] == 0.4 and found["instantiate_ms"] == 0.15 and found["update_ms"] == 0.09


def test_config_refuses_what_no_run_can_do():
    with pytest.raises(UsageError, match="does not cut"):
        Config(total_bytes=1 << 20, chunks=[3]).validate()
    assert Config().main_chunks == 16 and Config(chunks=[64, 256]).main_chunks == 64
