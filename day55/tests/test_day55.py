"""Day 55 offline: the schedules on the recording fake, the model, the report and plots of a record, the CLI's
options and its replay of a results.json, and the graded checks judging traces (no GPU needed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from day55 import checks, live, model, plots, report, schedules
from day55.__main__ import main
from day55.config import VARIANTS, Config, PassKey
from day55.tests import synthetic
from labcore.errors import UsageError
from labcore.pending import PendingGPU
from labcore.pipeline.recording import RecordingContext
from labcore.pipeline.stages import Stages

MiB = 1 << 20
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", list(VARIANTS))
def test_every_measured_schedule_is_right_by_the_ordering_rules(name):
    for n, b in ((1, 2), (7, 2), (16, 3), (5, 4)):
        ctx = RecordingContext(n, b, allocated=False)
        schedules.for_variant(name)(ctx)
        assert ctx.problems() == [], (name, n, b, ctx.problems()[:1])


def test_the_free_on_the_other_stream_races():
    found = live.race_shown()
    assert found and "race on" in found[0] and "free_async" in " ".join(found)


def test_the_model_of_cuda_malloc_per_chunk_is_every_trip_plus_both_calls():
    st = Stages(16.0, 8.0, 16.0, 16)
    assert model.per_chunk_malloc_ms(st, 0.1, 0.2) == pytest.approx(16 * (2.5 + 0.3))
    costs = model.CallCosts(0.1, 0.2, 0.001, 0.5)
    simulated = model.simulated_ms(schedules.per_chunk_malloc, st, costs, 2, keeps_pool=True)
    assert simulated == pytest.approx(model.per_chunk_malloc_ms(st, 0.1, 0.2))
    assert model.simulated_ms(schedules.stream_ordered, st, costs, 2, keeps_pool=True) < 0.6 * simulated


def test_the_report_shows_every_part_and_each_claim_with_its_prediction():
    text = report.render(synthetic.record())
    for part in ("correctness", "stages alone at 64MiB", "cudaMallocAsync from a warm pool", "window sweep", "claims"):
        assert part in text
    claims = report.claims(synthetic.record(), 64 * MiB)
    assert [c.number for c in claims] == [1, 2, 3, 4, 5] and all(c.outcome == "held" for c in claims)
    assert all("predicted" in c.line() and "measured" in c.line() for c in claims)


def test_a_claim_that_the_record_refutes_says_so():
    record = synthetic.record()
    key = str(PassKey("async-keep", 64 * MiB, 2))
    for p in record.passes:
        if p.key == key:
            p.times_ms = [t * 3 for t in p.times_ms]
    lines = [c.line() for c in report.claims(record, 64 * MiB)]
    assert any(line.startswith("  2. FAILED: cudaMallocAsync/cudaFreeAsync on the chunk's stream") for line in lines)


def test_a_failed_check_shows_the_verdicts_and_no_timing():
    record = synthetic.record()
    record.checks[1].ok = False
    assert report.render(record).startswith("correctness") and "claims" not in report.render(record)


def test_the_plots_draw_from_a_record(tmp_path):
    written = plots.write_all(synthetic.record(), tmp_path)
    assert [p.name for p in written] == ["day55_timeline.png", "day55_simulated.png", "day55_medians.png"]
    assert all(p.stat().st_size > 10_000 for p in written)


def test_the_cli_replays_a_results_json_and_writes_plots(tmp_path, capsys):
    path = synthetic.record().save(tmp_path / "results.json")
    assert main(["--from-profile", str(path), "--plot", str(tmp_path / "plots"), "--buffers", "3"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("day55: replay of ") and "claims" in out and "wrote " in out
    assert "replay: --buffers: a replay shows the recording as it was measured" in err


def test_the_cli_refuses_bad_input_in_one_line():
    for argv, message in (
        (["--window", "3MiB"], "does not divide --total"),
        (["--buffers", "0"], "at least 1 buffer pair"),
        (["--from-profile", "/nonexistent/x"], "no such file or directory"),
    ):
        run = subprocess.run([sys.executable, "-m", "day55", *argv], cwd=ROOT, capture_output=True, text=True)
        assert run.returncode != 0 and message in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr


def test_a_results_json_of_another_lesson_is_refused(tmp_path):
    data = synthetic.record().to_dict()
    data["lesson"] = "day54"
    (tmp_path / "results.json").write_text(json.dumps(data))
    with pytest.raises(UsageError, match="records the 'day54' lesson, not 'day55'"):
        main(["--from-profile", str(tmp_path / "results.json")])


def test_the_config_refuses_an_unknown_variant():
    with pytest.raises(UsageError, match="choose from once"):
        Config(variants=["once", "bogus"]).validate()


# -- the graded checks, judged on traces ----------------------------------------------------------------------------


def my_stream_ordered(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.malloc_async(k, pair)
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)
        ctx.free_async(k, pair)


def allocates_ahead(ctx):
    """Unusual and right: chunk k+1's buffers allocated while chunk k is in flight, each free after its copy out."""
    if ctx.n_chunks:
        ctx.malloc_async(0, 0)
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        if k + 1 < ctx.n_chunks:
            ctx.malloc_async(k + 1, (k + 1) % ctx.n_buffers)
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)
        ctx.free_async(k, pair)


def frees_on_the_other_stream(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.malloc_async(k, pair)
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)
        ctx.free_async(k, pair, stream=(pair + 1) % ctx.n_streams)


def cuda_malloc_per_chunk(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.malloc(k, pair)
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)
        ctx.free(k, pair)


def allocates_once(ctx):
    for pair in range(min(ctx.n_buffers, ctx.n_chunks)):
        ctx.malloc_async(pair, pair)
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)
    for pair in range(min(ctx.n_buffers, ctx.n_chunks)):
        ctx.free_async(ctx.n_chunks - 1, pair)


def never_frees(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.malloc_async(k, pair)
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)


@pytest.mark.parametrize("schedule", [my_stream_ordered, allocates_ahead])
def test_right_answers_pass_offline_and_the_timing_cell_is_pending(schedule, capsys):
    checks.check_stream_ordered_correct(schedule, buffers=2)
    checks.check_stream_ordered_correct(schedule, buffers=3)
    assert "offline: race-free stream-ordered allocation per chunk" in capsys.readouterr().out
    with pytest.raises(PendingGPU, match="pending a GPU: timing needs the GPU"):
        checks.check_stream_ordered_time(schedule)


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        (frees_on_the_other_stream, "race on"),
        (cuda_malloc_per_chunk, "a blocking call, which serializes the device"),
        (allocates_once, "copied into buffers an earlier chunk used"),
        (never_frees, "would leak"),
    ],
)
def test_wrong_answers_fail_offline_with_what_is_wrong(schedule, message):
    with pytest.raises(AssertionError, match=message):
        checks.check_stream_ordered_correct(schedule, buffers=2)


def test_the_lessons_own_schedule_is_refused_in_the_students_kernel():
    with pytest.raises(AssertionError, match="this is day55's own schedule"):
        checks.check_stream_ordered_correct(schedules.stream_ordered)


def test_a_schedule_that_reads_past_the_facade_is_refused():
    def peeks(ctx):
        ctx.d_in  # noqa: B018 - what a schedule may not touch

    with pytest.raises(AssertionError, match="which schedules cannot"):
        checks.check_stream_ordered_correct(peeks)


def predict_malloc_ms(h2d_ms, kernel_ms, d2h_ms, n_chunks, malloc_ms, free_ms):
    return h2d_ms + kernel_ms + d2h_ms + n_chunks * (malloc_ms + free_ms)


def test_the_prediction_check_passes_the_arithmetic_and_fails_a_forgotten_free():
    checks.check_malloc_prediction(predict_malloc_ms)
    with pytest.raises(AssertionError, match="you predict"):
        checks.check_malloc_prediction(lambda h, k, d, n, m, f: h + k + d + n * m)


def test_the_pitfall_check(as_graded):
    checks.check_pitfalls({"a": "race", "B": "serializes", "C": "returns-memory", "D": "correct", "E": "Correct"})
    with pytest.raises(AssertionError, match="4 of 5 right"):
        checks.check_pitfalls({"A": "race", "B": "serializes", "C": "correct", "D": "correct", "E": "correct"})
    with pytest.raises(AssertionError, match="no verdict for E"):
        checks.check_pitfalls({"A": "race", "B": "serializes", "C": "correct", "D": "correct"})
    with pytest.raises(AssertionError, match="is not one of correct"):
        checks.check_pitfalls({"A": "racy", "B": "serializes", "C": "correct", "D": "correct", "E": "x"})
