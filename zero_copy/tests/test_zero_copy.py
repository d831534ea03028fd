"""CPU tests of the zero-copy lesson: the model, the config and its errors, the record, and the replay."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from labcore import mode
from labcore.device import DeviceFacts
from labcore.errors import UsageError, run_cli
from labcore.pipeline.context import Context
from labcore.pipeline.kernel import DEFAULT_FMAS, FMA_A, FMA_B
from labcore.pipeline.recording import RecordingContext
from labcore.profiles import RESULTS, shipped_profile
from labcore.record import Check, PassTimes, Record, load, validate
from zero_copy import LESSON, live, model, notebook, plots
from zero_copy.__main__ import main
from zero_copy.config import (
    ADDED_ON,
    EXPERIMENTS,
    Config,
    PassKey,
    Planned,
    as_json,
    pinned_needs,
    planned_rows,
    read_key,
)
from zero_copy.experiments import pipeline_order, pipelined
from zero_copy.hostmem import HostMemory, check_host_memory
from zero_copy.mapped import MappingSupport, require_mapping
from zero_copy.report import both_ways_verdict, breakeven_verdict, gather_verdict, mailbox_verdict, predates, report
from zero_copy.verify import closed_form_check

GIB = 1 << 30
REPO = Path(__file__).resolve().parents[2]
SHIPPED = shipped_profile(LESSON) / RESULTS
RATES = model.Rates(h2d_gbps=54.9, d2h_gbps=54.1, hbm_gbps=4300.0)
SMS = 132  # an H200's SMs


def _facts(*, can_map: bool = True) -> DeviceFacts:
    return DeviceFacts(
        name="NVIDIA H200",
        compute_capability="9.0",
        async_engine_count=3,
        can_map_host_memory=can_map,
        integrated=False,
        can_use_host_pointer_for_registered_mem=True,
        pageable_memory_access=False,
        total_memory_bytes=150_000_000_000,
        pcie_gen=5,
        pcie_gen_max=5,
        pcie_width=16,
        driver="580.159.04",
        cuda_runtime="13.0",
        cupy="14.2.0",
    )


def _add(record: Record, row: Planned, ms: float, name: str) -> None:
    record.passes.append(
        PassTimes(key=str(row.key), name=name, params={}, times_ms=[ms * 0.99, ms, ms * 1.02], bytes_moved=row.nbytes)
    )


def fake_record(
    *,
    gather_factor: float = 1.06,
    zero_copy_factor: float = 1.08,
    cached_rereads: bool = False,
    mailbox_running: bool = True,
    both_mapped: float = 1.10,
    both_pipeline: float = 1.04,
) -> Record:
    """A record shaped as a live run leaves it, with times set from the model times a factor (both ways: over a
    duplex floor 1.15x the solo copies' model, the mapped kernel flat across grids)."""
    cfg = Config()
    record = Record(lesson="zero_copy", mode="live", source="test", device=_facts(), config=cfg.to_dict())
    probes = model.plan_probes()
    for row, gbps in zip(probes["rows"], (RATES.h2d_gbps, RATES.d2h_gbps, RATES.hbm_gbps), strict=True):
        _add(record, row, row.nbytes / (gbps * 1e6), "probe")
    record.extra["probes"] = {**as_json(probes), "rates": dataclasses.asdict(RATES)}
    for name, factor in (("streaming", 1.05), ("access", 1.1), ("saxpy", 1.1), ("reread", 1.05)):
        plan = getattr(model, f"plan_{name}")(cfg, RATES)
        for row in plan["rows"]:
            _add(record, row, row.model_ms * factor, name)
        record.extra[name] = as_json(plan)
    breakeven = model.plan_breakeven(cfg, RATES)
    for row in breakeven["rows"]:
        reads = 1 if cached_rereads else row["reads"]
        _add(record, row["zero_copy"], row["zero_copy"].model_ms / row["reads"] * reads * zero_copy_factor, "breakeven")
        _add(record, row["copy"], row["copy"].model_ms * 1.01, "breakeven")
    record.extra["breakeven"] = as_json(breakeven)
    gather = model.plan_gather(cfg, RATES)
    times = {"sorted": gather_factor, "unsorted": gather_factor * 1.1, "copy": 1.0}
    for row in gather["rows"]:
        path = row.key.path
        ms = row.model_ms * times[path] if row.model_ms else 25.0 if path == "cpu-take" else 26.1
        _add(record, row, ms, "gather")
    _add(record, Planned(gather["fill_key"], nbytes=cfg.table_bytes), cfg.table_bytes / 45e6, "gather fill")
    record.extra["gather"] = {**as_json(gather), "pin_ms": 1234.0}
    mailbox = model.plan_mailbox(cfg)
    results = [
        {
            "round": n,
            "flag_seen": True,
            "flag_seen_ms": 0.05,
            "payload": [n * 1000003 + w for w in range(4)],
            "payload_ok": True,
            "running_when_read": mailbox_running,
            "acked": True,
            "timed_out": False,
            "kernel_waited_us": 30.0,
        }
        for n in range(1, cfg.warmup + cfg.repeats + 1)
    ]
    record.passes.append(
        PassTimes(
            key=str(mailbox["key"]),
            name="mailbox",
            params={"clock": "host"},
            times_ms=[r["flag_seen_ms"] for r in results[cfg.warmup :]],
        )
    )
    record.extra["mailbox"] = {**as_json(mailbox), "results": results}
    both = model.plan_both_ways(cfg, RATES, SMS)
    floor = both["rows"][-1].model_ms * 1.15
    for row in both["rows"]:
        factor = {"mapped": both_mapped, "pipeline": both_pipeline, "duplex": 1.0}[row.key.path]
        _add(record, row, floor * factor, "both_ways")
    record.extra["both_ways"] = as_json(both)
    support = MappingSupport(True, False, True, False, True, True, registered_pointers_equal=True)
    record.extra["support"] = dataclasses.asdict(support)
    record.extra["experiments"] = list(EXPERIMENTS)
    record.checks.append(Check("gather sorted", True, "bit-exact, 12,800,000 values"))
    return record


@pytest.fixture
def profile_dir(tmp_path: Path) -> Path:
    fake_record().save(tmp_path / "results.json")
    return tmp_path


# -- the model -------------------------------------------------------------------


def test_transfer_time_is_bytes_over_rate():
    """1 GB at 50 GB/s takes 20 ms."""
    assert model.transfer_ms(1e9, 50.0) == pytest.approx(20.0)


def test_copy_and_zero_copy_costs_follow_the_seed_formulas():
    """Copy B/L + r·B/H, zero-copy r·B/L."""
    nbytes = 256 << 20
    assert model.copy_path_ms(nbytes, 4, RATES) == pytest.approx(nbytes / 54.9e6 + 4 * nbytes / 4300e6)
    assert model.zero_copy_ms(nbytes, 4, 54.9) == pytest.approx(4 * nbytes / 54.9e6)


def test_crossover_sits_just_above_one_read_when_hbm_is_much_faster():
    """r* = H / (H - L) with one link rate; a slower zero-copy load rate pulls it below 1."""
    assert model.crossover_reads(54.9, 4300.0) == pytest.approx(4300.0 / (4300.0 - 54.9))
    assert model.crossover_reads(54.9, 4300.0, 50.8) == pytest.approx((1 / 54.9) / (1 / 50.8 - 1 / 4300.0))
    assert model.crossover_reads(54.9, 4300.0, 50.8) < 1.0
    assert math.isinf(model.crossover_reads(100.0, 100.0))


def test_fit_recovers_the_lines_it_was_given():
    """zero-copy 5·r and copy 4.9 + 0.06·r cross at 4.9 / (5 - 0.06)."""
    reads = [1, 2, 4, 8]
    fit = model.fit_breakeven(reads, [5.0 * r for r in reads], [4.9 + 0.06 * r for r in reads])
    assert fit["zero_copy_ms_per_read"] == pytest.approx(5.0)
    assert fit["copy_fixed_ms"] == pytest.approx(4.9)
    assert fit["copy_ms_per_read"] == pytest.approx(0.06)
    assert fit["crossover_reads"] == pytest.approx(4.9 / 4.94)


def test_plans_give_every_pass_a_unique_key():
    """No two passes of one run share a record key."""
    cfg = Config()
    keys = [row.key for row in model.plan_probes()["rows"]]
    for name in ("streaming", "access", "gather", "saxpy", "reread"):
        keys += [row.key for row in getattr(model, f"plan_{name}")(cfg, RATES)["rows"]]
    for row in model.plan_breakeven(cfg, RATES)["rows"]:
        keys += [row["zero_copy"].key, row["copy"].key]
    keys += [row.key for row in model.plan_both_ways(cfg, RATES, SMS)["rows"]]
    assert len(keys) == len(set(keys))


def test_pass_keys_print_as_the_record_names_them():
    """The typed key's string form is the NVTX range and record key; parse reads it back, and nothing else."""
    assert str(PassKey("breakeven", "zero-copy", reads=4, nbytes=256 << 20)) == "breakeven zero-copy r=4 256MiB"
    pipeline = PassKey("streaming", "pipeline", nbytes=1 << 30, chunk_bytes=64 << 20, n_streams=3)
    assert str(pipeline) == "streaming pipeline 1GiB chunk=64MiB streams=3"
    assert PassKey.parse(str(pipeline)) == pipeline
    assert PassKey.parse("reread far mapped k=16 256MiB") == PassKey(
        "reread", "far mapped", reread_k=16, nbytes=256 << 20
    )
    for text in (
        "",
        "probe",
        "probe h2d r=x",
        "gather sorted rows=5 extra",
        "probe h2d 256MiB 1GiB",
        "streaming pipeline 1GiB streams=3 chunk=64MiB",
    ):
        assert PassKey.parse(text) is None, text


@pytest.mark.skipif(not SHIPPED.is_file(), reason="no shipped profile yet")
def test_every_recorded_key_reads_back_as_the_same_pass_key():
    """Each pass of the shipped profile parses to a typed key whose string form is the recorded one."""
    for found in load(SHIPPED).passes:
        key = PassKey.parse(found.key)
        assert key is not None and str(key) == found.key, found.key


@pytest.mark.skipif(not SHIPPED.is_file(), reason="no shipped profile yet")
def test_plans_write_their_rows_as_the_shipped_profile_holds_them():
    """Rows planned from the shipped run's config and rates are the dicts that run wrote (keys, labels, model
    times, bytes), less what a live run adds as it goes (strides, shifts)."""
    record = load(SHIPPED)
    cfg = Config.from_dict(record.config)
    rates = model.Rates(**record.extra["probes"]["rates"])
    if "both_ways" in record.extra:  # a profile recorded since the experiment came
        both = record.extra["both_ways"]
        assert as_json(model.plan_both_ways(cfg, rates, both["sm_count"])) == both
    for name in ("streaming", "access", "gather", "saxpy", "reread"):
        shipped = [
            {k: v for k, v in row.items() if k not in ("stride", "shift_vec")} for row in record.extra[name]["rows"]
        ]
        assert as_json(getattr(model, f"plan_{name}")(cfg, rates))["rows"] == shipped, name
    shipped = [{k: v for k, v in row.items() if k != "shift_vec"} for row in record.extra["breakeven"]["rows"]]
    assert as_json(model.plan_breakeven(cfg, rates))["rows"] == shipped
    assert as_json(model.plan_gather(cfg, rates))["fill_key"] == record.extra["gather"]["fill_key"]
    assert as_json(model.plan_mailbox(cfg))["key"] == record.extra["mailbox"]["key"]

    def no_model(rows: list[dict]) -> list[dict]:  # profiles before model_ms was stored lack it; probes have none
        return [{k: v for k, v in row.items() if k != "model_ms"} for row in rows]

    assert no_model(as_json(model.plan_probes())["rows"]) == no_model(record.extra["probes"]["rows"])


def test_gather_model_is_the_batch_copy_time():
    """50,000 rows of 1 KiB at 54.9 GB/s: about 0.93 ms."""
    plan = model.plan_gather(Config(), RATES)
    sorted_row = next(r for r in plan["rows"] if r.key.path == "sorted")
    assert sorted_row.model_ms == pytest.approx(50_000 * 1024 / 54.9e6)


# -- the config and bad input ---------------------------------------------------


def _exit_and_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    status = run_cli(main, argv)
    err = capsys.readouterr().err.strip().splitlines()
    return status, err[-1] if err else ""


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--table-size", "1000000B"], "--table-size"),
        (["--row-bytes", "100"], "--row-bytes"),
        (["--only", "gather,teleport"], "teleport"),
        (["--reads", "4"], "--reads"),
        (["--reads", "1,x"], "--reads"),
        (["--buffer-size", "300MiB"], "power of two"),
        (["--rows", "0"], "--rows"),
        (["--repeats", "0"], "--repeats"),
        (["--window", "2GiB"], "--window"),
        (["--chunk", "2GiB"], "--window"),
        (["--table-size", "lots"], "not a size"),
        (["--both-size", "100MiB"], "--both-size"),
        (["--both-chunk", "8B"], "--both-chunk"),
        (["--both-buffers", "0"], "--both-buffers"),
        (["--both-blocks-per-sm", "0,4"], "--both-blocks-per-sm"),
        (["--both-blocks-per-sm", "2,four"], "--both-blocks-per-sm"),
        (["--no-such-option"], "unrecognized"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]):
    """Each bad option gives exit 2 and one error line that names it."""
    status, line = _exit_and_line(argv, capsys)
    assert status == 2
    assert line.startswith("error: ") and needle in line


def test_json_into_a_directory_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """--json pointing at a directory fails before any work."""
    status, line = _exit_and_line(["--json", str(tmp_path)], capsys)
    assert status == 2 and "directory" in line


def test_pinned_needs_count_the_gather_table_and_staging():
    """The gather pins its table plus one batch of staging."""
    needs = {name: need for name, need, _ in pinned_needs(Config())}
    assert needs["gather"] == 4 * GIB + 50_000 * 1024
    assert needs["saxpy"] == 3 * (512 << 20)


def test_a_table_larger_than_pinnable_memory_is_refused_with_numbers():
    """64 GiB available leaves 56 GiB to pin; a 100 GiB table is refused, naming the option and a size that fits."""
    host = HostMemory(available_bytes=64 * GIB, cgroup_free_bytes=None, memlock_bytes=None)
    with pytest.raises(UsageError, match=r"gather experiment would pin 100\.05 GiB.*56\.00 GiB.*--table-size at most"):
        check_host_memory(Config(table_bytes=100 * GIB), host)
    check_host_memory(Config(table_bytes=40 * GIB), host)


def test_the_cgroup_limit_binds_when_lower_and_memlock_does_not():
    """A 10 GiB cgroup refuses a 12 GiB table even with 64 GiB available; a 64 KiB memlock limit refuses nothing."""
    with pytest.raises(UsageError, match=r"cgroup free 10\.0 GiB"):
        check_host_memory(Config(table_bytes=12 * GIB), HostMemory(64 * GIB, 10 * GIB, None))
    check_host_memory(Config(), HostMemory(64 * GIB, None, 64 << 10))


def test_a_device_that_cannot_map_is_refused():
    """canMapHostMemory=0 is a UsageError naming the device and the way out."""
    with pytest.raises(UsageError, match=r"cannot map host memory.*--from-profile"):
        require_mapping(_facts(can_map=False))
    require_mapping(_facts())


def test_live_mode_refuses_a_device_that_cannot_map(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """With a GPU that cannot map, the command exits 2 before pinning anything."""
    monkeypatch.setattr(mode, "gpu_available", lambda: True)
    monkeypatch.setattr(live, "device_facts", lambda: _facts(can_map=False))
    status, line = _exit_and_line([], capsys)
    assert status == 2 and "canMapHostMemory=0" in line


def test_live_mode_refuses_a_table_too_large_to_pin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """The host memory check runs before the mode line and before any pinning."""
    monkeypatch.setattr(mode, "gpu_available", lambda: True)
    monkeypatch.setattr(live, "device_facts", _facts)
    monkeypatch.setattr(live, "read_host_memory", lambda: HostMemory(32 * GIB, None, None))
    status, line = _exit_and_line(["--table-size", "64GiB"], capsys)
    assert status == 2 and "would pin 64.05 GiB" in line
    assert "live on" not in capsys.readouterr().out


# -- the record and the replay --------------------------------------------------


def test_record_round_trips_through_json_without_infinities(tmp_path: Path):
    """A saved record validates, loads back equal, and is strict JSON (no inf/NaN)."""
    record = fake_record()
    path = record.save(tmp_path / "results.json")
    data = json.loads(path.read_text())
    validate(data)
    json.dumps(data, allow_nan=False)
    assert load(path).to_dict() == record.to_dict()
    assert data["lesson"] == "zero_copy"


def _planned_without_a_pass(record: Record) -> list[str]:
    """The keys the record's plans name (every section's rows, the break-even's pairs, the gather's table fill,
    the mailbox) that no pass of the record carries."""
    sections = ("probes", "streaming", "access", "gather", "saxpy", "reread", "both_ways")
    keys = [row.key for name in sections if name in record.extra for row in planned_rows(record.extra[name])]
    keys += [
        Planned.from_dict(row[path]).key for row in record.extra["breakeven"]["rows"] for path in ("zero_copy", "copy")
    ]
    keys += [read_key(record.extra["gather"]["fill_key"]), read_key(record.extra["mailbox"]["key"])]
    return [str(key) for key in keys if not record.has_pass(key)]


@pytest.mark.skipif(not SHIPPED.is_file(), reason="no shipped profile yet")
def test_every_planned_row_has_a_pass():
    """The report can find a pass for every key the shipped run's plans name; a record missing one names it."""
    record = load(SHIPPED)
    for name in ("streaming", "access", "gather", "saxpy", "reread"):
        for row in record.extra[name]["rows"]:
            assert record.has_pass(row["key"]), row["key"]
    assert _planned_without_a_pass(record) == []
    both = len(record.extra["both_ways"]["rows"]) if "both_ways" in record.extra else 0
    assert len(record.passes) == 31 + both  # one pass per planned key, and no other
    for index in (0, 7, 17, 23, 30):  # a probe, a break-even pass, the table fill, the mailbox, a re-read
        shorter = load(SHIPPED)
        removed = shorter.passes.pop(index)
        assert _planned_without_a_pass(shorter) == [removed.key]


def test_replay_prints_mode_line_then_tables(profile_dir: Path, capsys: pytest.CaptureFixture[str]):
    """The first line says replay, which file, when and on what; every section and verdict follows."""
    assert run_cli(main, ["--from-profile", str(profile_dir)]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith(f"zero_copy: replay of {profile_dir / 'results.json'} (--from-profile), recorded ")
    assert "NVIDIA H200" in first
    for heading in (
        "link and HBM",
        "streaming:",
        "break-even:",
        "access shape:",
        "sparse gather:",
        "host-visible results:",
        "mapped SAXPY:",
        "failure mode:",
        "verdicts",
    ):
        assert heading in out
    assert "break-even: HELD" in out and "gather: PASS" in out and "mailbox: PASS" in out


def test_report_is_the_same_after_a_json_round_trip(tmp_path: Path):
    """report() of a record and of the same record loaded back from JSON are identical (the live run and its
    replay are compared on a GPU in test_zero_copy_gpu.py)."""
    record = fake_record()
    assert report(load(record.save(tmp_path / "r.json"))) == report(record)


def test_only_limits_the_replayed_sections(profile_dir: Path, capsys: pytest.CaptureFixture[str]):
    """--only gather prints the gather table and verdict, not the break-even."""
    assert run_cli(main, ["--from-profile", str(profile_dir), "--only", "gather"]) == 0
    out = capsys.readouterr().out
    assert "sparse gather:" in out and "gather: PASS" in out
    assert "break-even" not in out


def test_only_an_experiment_the_record_lacks_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """Replaying --only gather from a record without one exits 2."""
    record = fake_record()
    del record.extra["gather"]
    record.save(tmp_path / "results.json")
    status, line = _exit_and_line(["--from-profile", str(tmp_path), "--only", "gather"], capsys)
    assert status == 2 and "no gather experiment" in line


def test_breakeven_holds_when_measurements_follow_the_model():
    """Zero-copy 8% slower per read than L: crossover 0.94 against the model's 1.01, winners agree."""
    verdict = breakeven_verdict(fake_record())
    assert verdict["held"]
    assert verdict["crossover_model"] == pytest.approx(4300 / (4300 - 54.9))
    assert verdict["crossover_measured"] == pytest.approx(0.94, abs=0.02)
    assert verdict["zero_copy_gbps"] == pytest.approx(54.9 / 1.08, rel=1e-3)


def test_breakeven_does_not_hold_when_rereads_come_from_a_cache(capsys: pytest.CaptureFixture[str]):
    """If zero-copy cost did not grow with r, copying would never win: the verdict says so, with numbers."""
    record = fake_record(cached_rereads=True)
    verdict = breakeven_verdict(record)
    assert not verdict["held"] and not verdict["winners_agree"]
    text = report(record)
    assert "break-even: DID NOT HOLD" in text
    assert "at r = 8 the model picks copy but zero-copy won" in text


def test_gather_verdict_needs_085_of_the_copy_and_tenfold_over_cpu():
    """1.06x the copy time passes (0.94 of it); 1.25x fails (0.80)."""
    passing = gather_verdict(fake_record(gather_factor=1.06))
    assert passing["passed"] and passing["fraction_of_copy"] == pytest.approx(1 / 1.06)
    assert passing["speedup_over_cpu"] > 10
    failing = gather_verdict(fake_record(gather_factor=1.25))
    assert not failing["passed"] and failing["fraction_of_copy"] == pytest.approx(0.8)


def test_mailbox_verdict_fails_if_the_kernel_had_already_finished():
    """A payload read after the stream finished does not show a host-visible result."""
    assert mailbox_verdict(fake_record())["passed"]
    assert not mailbox_verdict(fake_record(mailbox_running=False))["passed"]
    assert "mailbox: FAIL" in report(fake_record(mailbox_running=False))


def test_failed_checks_make_exit_status_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """A record with a failed correctness check replays with exit 1 and names it."""
    record = fake_record()
    record.checks.append(Check("gather unsorted", False, "3 of 12,800,000 values differ"))
    record.save(tmp_path / "results.json")
    assert run_cli(main, ["--from-profile", str(tmp_path)]) == 1
    assert "FAILED: gather unsorted" in capsys.readouterr().out


def test_replay_of_a_missing_profile_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """--from-profile at a directory without results.json exits 2."""
    status, line = _exit_and_line(["--from-profile", str(tmp_path)], capsys)
    assert status == 2 and "no such results file" in line


def _offline_env() -> dict[str, str]:
    paths = [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    return dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONPATH=os.pathsep.join(paths))


def test_offline_command_replays_as_a_process(profile_dir: Path):
    """`python -m zero_copy --from-profile DIR` as a process prints its mode line and the tables (how long it takes
    is zero_copy/benchmarks/replay_time.py's to measure: within 5 s on a quiet machine)."""
    done = subprocess.run(
        [sys.executable, "-m", "zero_copy", "--from-profile", str(profile_dir)],
        cwd=REPO,
        env=_offline_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("zero_copy: replay of ")


@pytest.mark.skipif(not SHIPPED.is_file(), reason="no shipped profile yet")
def test_shipped_profile_is_a_complete_passing_run():
    """The H200 profile holds every experiment, every check passed, and the lesson's verdicts hold."""
    record = load(SHIPPED)
    assert record.lesson == "zero_copy" and record.device.name.startswith("NVIDIA H200")
    missing = set(EXPERIMENTS) - set(record.extra["experiments"])
    assert all(predates(record, name) for name in missing), missing  # only those added after it was recorded
    assert all(check.ok for check in record.checks)
    assert gather_verdict(record)["passed"]
    assert mailbox_verdict(record)["passed"]


@pytest.mark.skipif(not SHIPPED.is_file(), reason="no shipped profile yet")
def test_default_offline_run_replays_the_shipped_profile():
    """Without a GPU, plain `python -m zero_copy` replays zero_copy/profiles/h200 (its time:
    zero_copy/benchmarks/replay_time.py)."""
    done = subprocess.run(
        [sys.executable, "-m", "zero_copy"], cwd=REPO, env=_offline_env(), capture_output=True, text=True, timeout=60
    )
    if "live on" in done.stdout.splitlines()[0]:
        pytest.skip("a GPU is visible here")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith(f"zero_copy: replay of {SHIPPED} (no GPU here)")


def test_a_replay_names_the_options_it_cannot_honour(profile_dir: Path, capsys: pytest.CaptureFixture[str]):
    """Sizes, counts and reads shape a live run only: a replay says it ignores them; --only it honours."""
    argv = ["--from-profile", str(profile_dir), "--only", "gather", "--rows", "5000", "--reads", "1,2", "--seed", "3"]
    assert run_cli(main, argv) == 0
    captured = capsys.readouterr()
    assert "note: a replay shows the recorded run; --rows, --seed, --reads ignored" in captured.err
    assert "--only" not in captured.err and "sparse gather:" in captured.out
    assert captured.out.count("device: ") == 1


# -- day 54's job through mapped memory both ways ----------------------------------------------------------------


def test_both_ways_grids_are_multiples_of_the_sm_count_then_one_float4_per_thread():
    """2..64 blocks per SM on 132 SMs, then 1 GiB / 16 B / 256 threads; grids past that are capped and kept once."""
    assert model.both_ways_grids(Config(), SMS) == [
        (264, 2),
        (528, 4),
        (1056, 8),
        (2112, 16),
        (4224, 32),
        (8448, 64),
        (262144, None),
    ]
    assert model.both_ways_grids(Config(both_bytes=16 << 20), SMS) == [
        (264, 2),
        (528, 4),
        (1056, 8),
        (2112, 16),
        (4096, 32),
    ]


def test_both_ways_model_is_the_link_floor_and_the_pipeline_one_chunk_each_way_more():
    """Every path moves 2B; the floor is the slower direction's solo copy, the pipeline's overhang c/L + c/L_d2h."""
    plan = model.plan_both_ways(Config(), RATES, SMS)
    floor = (1 << 30) / (54.1 * 1e6)  # D2H is the slower direction here
    overhang = (16 << 20) / (54.9 * 1e6) + (16 << 20) / (54.1 * 1e6)
    by_path = {row.key.path: row for row in plan["rows"]}
    assert by_path["duplex"].model_ms == pytest.approx(floor)
    assert by_path["mapped"].model_ms == pytest.approx(floor)
    assert by_path["pipeline"].model_ms == pytest.approx(floor + overhang)
    assert plan["overhang_model_ms"] == pytest.approx(overhang)
    assert {row.nbytes for row in plan["rows"]} == {2 << 30}
    assert (plan["fmas"], plan["threads"], plan["sm_count"], plan["n_buffers"]) == (512, 256, SMS, 3)


def test_both_ways_keys_print_and_parse_back():
    """The grid is the key's blocks= count; the pipeline's key names its chunk and streams."""
    keys = [str(row.key) for row in model.plan_both_ways(Config(), RATES, SMS)["rows"]]
    assert keys[0] == "both_ways mapped blocks=264 1GiB"
    assert keys[-2:] == ["both_ways pipeline 1GiB chunk=16MiB streams=3", "both_ways duplex 1GiB"]
    assert all(str(PassKey.parse(key)) == key for key in keys)


def test_both_ways_verdict_reads_each_path_over_the_floor_beside_it():
    """Mapped 1.10x and the pipeline 1.04x a floor: the pipeline wins, the grids agree, the overhangs add up."""
    verdict = both_ways_verdict(fake_record())
    assert verdict["mapped_over_floor"] == pytest.approx(1.10)
    assert verdict["pipeline_over_floor"] == pytest.approx(1.04)
    assert verdict["faster"] == "pipeline" and verdict["mapped_blocks"] == 264
    assert verdict["grid_spread"] == pytest.approx(1.0) and verdict["grids"] == 7
    assert verdict["mapped_excess_ms"] == pytest.approx(0.10 * verdict["floor_ms"])
    assert verdict["pipeline_overhang_ms"] == pytest.approx(0.04 * verdict["floor_ms"])
    assert verdict["mapped_gbps"] == pytest.approx(verdict["floor_gbps"] / 1.10)
    assert both_ways_verdict(fake_record(both_mapped=1.05))["faster"] == "mapped≈pipeline"
    assert both_ways_verdict(fake_record(both_mapped=1.01))["faster"] == "mapped"


def test_both_ways_report_has_a_row_per_grid_and_a_verdict(capsys: pytest.CaptureFixture[str]):
    """The section lists every grid, the pipeline and the floor with their time over the floor; the verdict names
    the winner with both ratios."""
    text = report(fake_record(), ["both_ways"])
    section = text.split("mapped both ways: day 54's job, 1GiB in, 512 chained FMAs per float, 1GiB out")[1]
    rows = [line for line in section.splitlines() if line.startswith("  mapped both ways, ")]
    assert len(rows) == 7 and all(line.split()[-1] == "1.10" for line in rows)
    assert "  link floor: 1GiB H2D and D2H copies at once" in section
    assert "both ways: the pipeline was faster: mapped both ways" in text
    assert "1.10x the duplex link floor" in text and "the pipeline" in text and "1.04x" in text
    assert "not recorded" not in text


def _old_record(tmp_path: Path, *, recorded_at: str = "2026-11-30T09:10:08+00:00") -> Path:
    """A record without the both-ways experiment, as the lesson's profile recorded before it came."""
    record = fake_record()
    del record.extra["both_ways"]
    record.passes = [p for p in record.passes if p.name != "both_ways"]
    record.extra["experiments"] = [name for name in EXPERIMENTS if name != "both_ways"]
    record.recorded_at = recorded_at
    record.save(tmp_path / "results.json")
    return tmp_path


NOT_RECORDED = "mapped both ways: not recorded in this run (recorded 2026-11-30; the experiment came on 2026-12-03)"


def test_a_record_made_before_the_experiment_replays_and_says_it_was_not_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """The whole replay and --only both_ways exit 0 and say the section was not recorded; a record made since that
    lacks it (a run of other experiments) is asked for it in vain, exit 2."""
    old = _old_record(tmp_path)
    assert predates(load(old / "results.json"), "both_ways") and ADDED_ON["both_ways"] == "2026-12-03"
    assert run_cli(main, ["--from-profile", str(old)]) == 0
    out = capsys.readouterr().out
    assert NOT_RECORDED in out and "break-even: HELD" in out and "  both ways: " not in out
    assert run_cli(main, ["--from-profile", str(old), "--only", "both_ways"]) == 0
    assert NOT_RECORDED in capsys.readouterr().out
    newer = _old_record(tmp_path / "newer", recorded_at="2026-12-04T10:00:00+00:00")
    status, line = _exit_and_line(["--from-profile", str(newer), "--only", "both_ways"], capsys)
    assert status == 2 and "no both_ways experiment" in line


def test_the_notebook_shows_an_old_record_without_failing(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """The section's cells on a record that predates it: measure, show, compare and the figure each say it was not
    recorded; the predictions' measured column is "-"."""
    record = notebook.measure("both_ways", profile=_old_record(tmp_path))
    notebook.show(record, "both_ways")
    assert NOT_RECORDED in capsys.readouterr().out
    notebook.compare({"both_floor_ms": 23.0, "both_faster": "mapped"}, record)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("quantity ") and lines[-1].startswith(NOT_RECORDED)
    assert all(line.split()[-2:] == ["-", "-"] for line in lines[1:3]), lines
    fig = notebook.figure("both_ways", record)
    assert "not recorded in this run" in fig.axes[0].texts[0].get_text()


def test_the_notebook_compares_both_ways_predictions_with_the_record(capsys: pytest.CaptureFixture[str]):
    """Each both-ways quantity reads the verdict; the word quantity matches a tie either way."""
    record = fake_record()
    guesses = {"both_mapped_over_floor": 1.0, "both_pipeline_over_floor": 1.04, "both_faster": "pipeline"}
    notebook.compare(guesses, record)
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[-2:] == ["1.1", "1.10"] and lines[2].split()[-1] == "1.00"
    assert lines[3].split()[-1] == "same" and len(lines) == 4
    assert notebook.QUANTITIES["both_faster"].read(fake_record(both_mapped=1.05)) == "mapped≈pipeline"


def test_the_both_ways_figure_draws_every_grid_and_both_references():
    """Mapped medians against blocks, with the pipeline's and the floor's medians as lines."""
    fig = plots.both_ways(fake_record())
    ax = fig.axes[0]
    mapped = ax.lines[0]
    assert list(mapped.get_xdata()) == [264, 528, 1056, 2112, 4224, 8448, 262144]
    labels = sorted(text.get_text() for text in ax.get_legend().get_texts())
    assert [label.split(":")[0].split(",")[0] for label in labels] == [
        "day 54's pipeline",
        "link floor",
        "mapped both ways (the SMs' loads and stores)",
    ]


def test_the_pipeline_is_day_54s_and_no_students_schedule():
    """Chunk k on pair (and stream) k % 3, race-free, every chunk out; handed a schedule's Context it refuses."""
    assert pipeline_order(5, 2) == [(0, 0), (1, 1), (2, 0), (3, 1), (4, 0)]
    ctx = RecordingContext(64, 3, window_bytes=16 << 20)
    pipelined(ctx)
    assert ctx.problems() == [] and len(ctx.ops) == 3 * 64
    assert ctx.per_stream()[1][:3] == [("h2d", 1, 1), ("kernel", 1, 1), ("d2h", 1, 1)]
    with pytest.raises(TypeError, match="not an answer to day 54's exercise"):
        pipelined(Context(RecordingContext(4, 2)))


def test_the_closed_form_check_names_the_first_chunk_out_of_bounds():
    """Day 54's float32 chain (here NumPy's fma stand-in: float64 steps rounded) passes; a NaN fails its chunk."""
    x = np.random.default_rng(0).random(1 << 14, dtype=np.float32)
    y = x.copy()
    for _ in range(DEFAULT_FMAS):
        y = (y.astype(np.float64) * float(FMA_A) + float(FMA_B)).astype(np.float32)
    ok, detail = closed_form_check(x, y, DEFAULT_FMAS, 1 << 10)
    assert ok and detail.endswith("16,384 values")
    y[5000] = np.nan
    assert closed_form_check(x, y, DEFAULT_FMAS, 1 << 10) == (False, "chunk 4: max error nan > tolerance 3.06e-05")
    y[5000] = x[5000]  # the input itself is far from the chain's result
    assert not closed_form_check(x, y, DEFAULT_FMAS, 1 << 10)[0]


def test_config_from_an_older_record_takes_the_new_defaults():
    """A record's config without the both-ways fields reads back with their defaults; unknown fields are dropped."""
    data = Config().to_dict()
    for field in ("both_bytes", "both_chunk_bytes", "both_buffers", "both_blocks_per_sm"):
        del data[field]
    data["retired_option"] = 1
    assert Config.from_dict(data) == Config()
    assert Config.from_dict(Config(both_blocks_per_sm=(1, 3)).to_dict()).both_blocks_per_sm == (1, 3)
    assert {name: need for name, need, _ in pinned_needs(Config())}["both_ways"] == 2 * GIB
