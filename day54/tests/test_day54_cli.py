"""python -m day54 as a user meets it: mode line, tables, plots, JSON, and one-line errors with exit 2."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from day54 import live
from day54.__main__ import main
from day54.config import Config
from labcore.device import gpu_available
from labcore.errors import UsageError, run_cli
from labcore.kit import memory
from labcore.record import validate

ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "day54" / "profiles" / "h200"


def day54(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "day54", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.skipif(gpu_available(), reason="with a GPU the default is a live run")
def test_default_without_gpu_replays_the_shipped_exports():
    """First line is the replay mode line; then checks, the table, the sweep, the pitfalls and four predictions."""
    done = day54()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("day54: replay of nsys exports in") and lines[0].endswith("no GPU here")
    for needed in (
        "h2d only",
        "kernel only",
        "d2h only",
        "naive bound (sum)",
        "pipeline floor (max)",
        "link floor (duplex)",
        "measured naive",
        "measured pipelined, 2 buffers",
        "measured pipelined, 3 buffers",
        "Window sweep",
        "Pitfalls at 64MiB",
    ):
        assert any(line.startswith(needed) or needed in line for line in lines), needed
    assert sum(1 for line in lines if line.lstrip()[:3] in ("1. ", "2. ", "3. ", "4. ")) == 4


def test_from_profile_results_json_and_window():
    """--from-profile a results.json and --window 4MiB: the table is about 4 MiB."""
    done = day54("--from-profile", str(PROFILE / "results.json"), "--window", "4MiB")
    assert done.returncode == 0, done.stderr
    assert "Window 4MiB: 256 chunks of 4MiB" in done.stdout
    assert done.stdout.startswith(f"day54: replay of {PROFILE / 'results.json'}")


def test_plot_and_json(tmp_path):
    """--plot writes four PNGs (the exports trace the pitfalls); --json writes a valid record of the replay."""
    done = day54("--from-profile", str(PROFILE), "--plot", str(tmp_path / "plots"), "--json", str(tmp_path / "r.json"))
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert names == ["day54_pitfalls.png", "day54_stages.png", "day54_sweep.png", "day54_timeline.png"]
    assert all((tmp_path / "plots" / n).read_bytes()[:4] == b"\x89PNG" for n in names)
    data = json.loads((tmp_path / "r.json").read_text())
    validate(data)
    assert data["mode"] == "replay" and len(data["passes"]) == 23


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--window", "48MiB"], "does not divide --total 1GiB"),
        (["--window", "2GiB"], "exceeds --total 1GiB"),
        (["--windows", "4MiB,3MiB"], "does not divide"),
        (["--buffers", "0"], "each depth must be at least 1"),
        (["--buffers", "two"], "is not a list of integers"),
        (["--fmas", "-1"], "--fmas -1 must be 0 or more"),
        (["--total", "lots"], "--total 'lots' is not a size"),
        (["--repeats", "0"], "--repeats 0 must be at least 1"),
        (["--frobnicate"], "unrecognized arguments: --frobnicate"),
        (["--from-profile", "/nonexistent/dir"], "no such file or directory"),
        (["--from-profile", str(PROFILE), "--window", "8MiB"], "--window 8MiB is not in the record"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message, capsys):
    """Each bad option gets exactly one stderr line naming it and exit status 2 (run in this process)."""
    assert run_cli(main, args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err


@pytest.mark.parametrize("option", ["--plot", "--json"])
@pytest.mark.parametrize("where", ["under-a-file", "the-file"])
def test_an_output_that_cannot_be_made_is_one_line_before_any_work(option, where, tmp_path):
    """--plot DIR / --json PATH where a file stands in the way: one line naming the option, exit 2, nothing written."""
    blocker = tmp_path / "notes.txt"
    blocker.write_text("a file, not a folder\n")
    target = blocker / "out" if where == "under-a-file" else blocker
    value = str(target / "r.json") if option == "--json" else str(target)
    done = day54("--no-pitfalls", option, value)
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"error: {option} {value}: ")
    assert "is a file, not a folder" in done.stderr or "cannot make the folder" in done.stderr
    assert blocker.read_text() == "a file, not a folder\n"


def test_gpus_plot_into_a_file_is_one_line(tmp_path):
    """The multi-GPU section checks --plot the same way, before it looks for GPUs or profiles."""
    (tmp_path / "f").write_text("")
    done = day54("--gpus", "--plot", str(tmp_path / "f" / "plots"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "cannot make the folder" in done.stderr


@pytest.mark.parametrize("gone", ["cuda_gpu_trace", "nvtx_pushpop_trace"])
def test_a_profile_folder_missing_a_trace_export_is_refused(gone, tmp_path):
    """A profile folder with nsys exports but without a trace a replay reads is one line naming the file, not a
    quiet replay of its results.json alone; naming that results.json still replays it."""
    folder = tmp_path / "profile"
    shutil.copytree(PROFILE, folder, ignore=shutil.ignore_patterns("*.nsys-rep"))
    (folder / f"day54_{gone}.csv").unlink()
    done = day54("--from-profile", str(folder), "--no-pitfalls")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and f"no day54_{gone}.csv" in done.stderr
    alone = day54("--from-profile", str(folder / "results.json"), "--no-pitfalls")
    assert alone.returncode == 0 and alone.stdout.startswith(f"day54: replay of {folder / 'results.json'}")


def test_python_m_day54_bad_input_has_no_traceback():
    """The real command, as a user runs it: one line, exit status 2, no traceback."""
    done = day54("--frobnicate")
    assert done.returncode == 2
    assert done.stderr == "error: unrecognized arguments: --frobnicate\n"


@pytest.mark.skipif(gpu_available(), reason="with a GPU the default is a live run")
def test_no_gpu_and_no_profile(tmp_path):
    """Where no profile is shipped, the one line says so and how to fix it."""
    done = day54(env={"COURSE_PROFILES": str(tmp_path)})
    assert done.returncode == 2
    assert "no GPU found and no recorded profile" in done.stderr and "--from-profile" in done.stderr


def test_malformed_results_json(tmp_path, capsys):
    """A broken results.json is named with its line."""
    path = tmp_path / "results.json"
    path.write_text('{"schema": 1,\n "lesson": ')
    assert run_cli(main, ["--from-profile", str(path)]) == 2
    assert "line 2: not valid JSON" in capsys.readouterr().err


def test_memory_check_refuses_before_allocating(monkeypatch):
    """A total beyond available host memory, or windows beyond free device memory, is refused with numbers."""
    cfg = Config(total_bytes=8 << 30, windows=[64 << 20])
    monkeypatch.setattr(memory, "available_host_bytes", lambda: 16 << 30)
    monkeypatch.setattr(memory, "free_device_bytes", lambda: 80 << 30)
    with pytest.raises(UsageError, match=r"needs 40\.0 GiB of host memory.*16\.0 GiB is available"):
        live.check_memory(cfg)
    cfg = Config(total_bytes=1 << 30, windows=[256 << 20])
    monkeypatch.setattr(memory, "free_device_bytes", lambda: 1 << 30)
    with pytest.raises(UsageError, match=r"need 1\.56 GiB of device memory; 1\.00 GiB is free"):
        live.check_memory(cfg)


@pytest.mark.skipif(gpu_available(), reason="with a GPU these options shape a live run")
def test_a_replay_names_the_options_it_cannot_honour(capsys):
    """Each option a replay cannot honour gets its own stderr line; --window is honoured, defaults say nothing."""
    assert run_cli(main, ["--buffers", "4", "--fmas", "100", "--window", "4MiB"]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines()[:2] == [
        "replay: --buffers 4 not in the recording (it has 2,3); showing 2,3",
        "replay: --fmas 100 not in the recording (it has 512); showing 512",
    ]
    assert "Window 4MiB: 256 chunks of 4MiB" in captured.out
    assert run_cli(main, []) == 0
    assert "replay:" not in capsys.readouterr().err
    assert run_cli(main, ["--device", "1", "--no-pitfalls"]) == 0
    assert "replay: --device 1: a replay runs on no GPU; showing the recording" in capsys.readouterr().err


def test_zero_copy_json_under_a_file_is_one_line(tmp_path):
    """python -m zero_copy refuses --json under a file the same way, before any run."""
    (tmp_path / "f").write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "zero_copy", "--json", str(tmp_path / "f" / "r.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"error: --json {tmp_path / 'f' / 'r.json'}: {tmp_path / 'f'} is a file")
