"""What the day-54 notebook calls: one record per question, live on a GPU or replayed, saying which."""

from __future__ import annotations

import inspect
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from day54 import LESSON, report
from day54.config import Config
from day54.live import run_live
from day54.recording import RecordingContext
from day54.replay import describe, load_profile
from labcore.device import gpu_available
from labcore.mode import FROM_PROFILE, Mode, live_line
from labcore.record import Record
from labcore.sizes import parse_size, parse_sizes


def measure(
    *,
    total: str = "1GiB",
    window: str = "64MiB",
    windows: str = "4MiB,64MiB,256MiB",
    buffers: str = "2,3",
    fmas: int = 512,
    repeats: int = 5,
    pitfalls: bool = True,
    profile: str | Path | None = None,
) -> Record:
    """Measure live when a GPU is here (printing which), else replay the recorded profile (saying so)."""
    mode = Mode.decide(profile)
    if not mode.live:
        record = load_profile(mode.profile)
        why = "" if mode.reason == FROM_PROFILE else f"; {mode.reason}, so these are recorded numbers"
        print(f"{LESSON}: {describe(record)}{why}")
        return record
    print(live_line(LESSON))
    cfg = Config(
        total_bytes=parse_size(total),
        window_bytes=parse_size(window),
        windows=parse_sizes(windows),
        buffers=[int(b) for b in buffers.split(",")],
        fmas=fmas,
        repeats=repeats,
        pitfalls=pitfalls,
    )
    return run_live(cfg)


def show(record: Record, window: str | None = None) -> None:
    """Print the same report `python -m day54` prints."""
    print(report.render(record, parse_size(window) if window else None))


def compare(predictions: dict[str, float | str], record: Record, window: str = "64MiB") -> None:
    """Print each prediction beside the measured number (the keys of PREDICTION_KEYS)."""
    w = parse_size(window)
    st = report.stages(record, w)
    measured: dict[str, float | str] = {
        "naive_ms": report.measured(record, "naive", w, 1),
        "pipelined_ms": report.measured(record, "pipelined", w, 2),
        "speedup": report.measured(record, "naive", w, 1) / report.measured(record, "pipelined", w, 2),
        "slowest_stage": st.slowest,
    }
    print(f"{'prediction':<16}{'yours':>12}{'measured':>12}")
    for key, value in measured.items():
        guess = predictions.get(key)
        shown = ["-" if v is None else f"{v:.2f}" if isinstance(v, (int, float)) else str(v) for v in (guess, value)]
        print(f"{key:<16}{shown[0]:>12}{shown[1]:>12}")


PREDICTION_KEYS = ("naive_ms", "pipelined_ms", "speedup", "slowest_stage")


RUN_REPORTS = "nvtx_sum,nvtx_pushpop_trace,cuda_gpu_mem_time_sum,cuda_api_sum,cuda_gpu_kern_sum,cuda_gpu_trace"


def record_my_run(schedule, directory: str | Path = ".") -> list[Path]:
    """On a GPU, measure your schedule under Nsight Systems and leave day54_run_*.csv beside the notebook.

    Graders without a GPU read those exports. Without nsys only day54_run.json is written; without a GPU
    nothing is (the grader then simulates your schedule and says so).
    """
    schedule(RecordingContext(16, 2))  # an unwritten exercise stops here, before any subprocess
    if not gpu_available():
        print("no GPU here: nothing to record; graders will simulate your schedule on the recorded stage times")
        return []
    directory = Path(directory)
    source = directory / "day54_run_schedule.py"
    source.write_text("import math\n\n\n" + textwrap.dedent(inspect.getsource(schedule)))
    command = [sys.executable, "-m", "day54.student", source.name, schedule.__name__, "--json", "day54_run.json"]
    nsys = os.environ.get("NSYS") or shutil.which("nsys")
    if nsys:
        command = [
            nsys,
            "profile",
            "-t",
            "cuda,nvtx",
            "--sample=none",
            "--cpuctxsw=none",
            "--force-overwrite",
            "true",
            "-o",
            "day54_run",
            *command,
        ]
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    if subprocess.run(command, cwd=directory, env=env).returncode != 0:
        print("recording your run failed (see the lines above): fix the schedule and run this cell again")
        return []
    if nsys:
        subprocess.run(
            [nsys, "stats", "--report", RUN_REPORTS, "--format", "csv", "--output", "day54_run", "day54_run.nsys-rep"],
            cwd=directory,
            env=env,
            check=True,
            capture_output=True,
        )
        for leftover in ("day54_run.sqlite", "day54_run.nsys-rep"):
            (directory / leftover).unlink(missing_ok=True)
    else:
        print("nsys not found (set NSYS=/path/to/nsys): wrote day54_run.json only")
    written = sorted(directory.glob("day54_run*"))
    print("wrote", ", ".join(p.name for p in written))
    return written
