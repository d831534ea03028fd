"""What the day-54 notebook calls: one record per question, live on a GPU or replayed, saying which.

In the student edition (`python -m grader bundle`) the exercises' reference answers are withheld: the pipelined
schedule, the cost model and the pitfall key. The lesson cells still run to the end there: each shows the course's
recorded result for the shipped profile (labcore.answers.recorded_reference, a recorded figure) until the student's
own answer exists in the notebook (`my_pipelined`, `predict_pipelined_ms`), then runs the student's, and says which.
"""

from __future__ import annotations

import inspect
import math
import os
import shutil
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure
from matplotlib.image import imread

from day54 import LESSON, model, multi_gpu, plots, report, schedules
from day54.config import Config, MiB, PassKey
from day54.live import run_live
from day54.model import Prediction
from day54.pitfalls import pitfall_key
from day54.plots import multi_gpus
from day54.replay import load_profile
from labcore import answers
from labcore.answers import ReferenceWithheld
from labcore.device import gpu_available, gpu_count
from labcore.kit.cells import is_written
from labcore.mode import FROM_PROFILE, NO_GPU, Mode, live_line
from labcore.pipeline.context import Context
from labcore.pipeline.recording import RecordingContext
from labcore.predictions import LEDGER, Quantity
from labcore.profiles import describe
from labcore.record import Record
from labcore.sizes import format_size, parse_size, parse_sizes


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
    """Measure live when a GPU is here (printing which), else replay the recorded profile (saying so).

    In the student edition the live pipelined passes run the student's `my_pipelined` once it is written (the
    pitfalls, variants of the reference, are then not run); until then the cell replays the course's recorded run."""
    mode = Mode.decide(profile)
    mine = _your_schedule()
    if mode.live and answers.withheld(schedules.pipelined) and mine is None:
        record = load_profile(None)
        print(
            f"{LESSON}: {describe(record)}; the live passes need the pipelined schedule, exercise 1's answer, which "
            "is not in the student edition: these are the course's recorded numbers until your my_pipelined is "
            "written (then run this cell again)"
        )
        return record
    if not mode.live:
        record = load_profile(mode.profile)
        why = "" if mode.reason == FROM_PROFILE else f"; {mode.reason}, so these are recorded numbers"
        print(f"{LESSON}: {describe(record)}{why}")
        return record
    edition = answers.withheld(schedules.pipelined)
    print(
        live_line(LESSON)
        + (": the pipelined passes run your my_pipelined (the student edition has no reference schedule)" * edition)
    )
    if edition:
        pitfalls = False
    cfg = Config(
        total_bytes=parse_size(total),
        window_bytes=parse_size(window),
        windows=parse_sizes(windows),
        buffers=[int(b) for b in buffers.split(",")],
        fmas=fmas,
        repeats=repeats,
        pitfalls=pitfalls,
    )
    with _stand_ins():
        return run_live(cfg)


# -- the student's answers standing in for the withheld references (the student edition) ---------------------------


def _your_schedule() -> Any | None:
    return answers.yours("my_pipelined", lambda fn: fn(RecordingContext(16, 2)))


def _your_model() -> Any | None:
    """The student's predict_pipelined_ms as the model's `predict` (its bound only), or None while not written."""
    mine = answers.yours("predict_pipelined_ms", lambda fn: float(fn(10.0, 5.0, 10.0, 16, 2, None)))
    if mine is None:
        return None

    def predict(stages: model.Stages, n_buffers: int, link_floor_ms: float | None = None) -> Prediction:
        bound = float(mine(stages.h2d_ms, stages.kernel_ms, stages.d2h_ms, stages.n_chunks, n_buffers, link_floor_ms))
        return Prediction(math.nan, math.nan, link_floor_ms, bound, "your predict_pipelined_ms")

    return predict


def _stand_ins() -> Any:
    """Where references are withheld, the student's written answers stand in for them (saying so once a cell)."""
    found: dict[Any, Any] = {}
    if answers.withheld(schedules.pipelined) and (schedule := _your_schedule()) is not None:
        found[schedules.pipelined] = schedule
    if answers.withheld(model.predict) and (predict := _your_model()) is not None:
        found[model.predict] = predict
        print("(the cost model here is your predict_pipelined_ms: the student edition has no reference model)")
    return answers.standing_in(found, ("day54",))


def _or_recorded(show: Any, record: Record) -> Any:
    """show(record) with the student's answers standing in; where that needs a withheld reference the student has
    not answered yet, show(the course's recorded run), saying so."""
    try:
        with _stand_ins():
            return show(record)
    except ReferenceWithheld as withheld:
        shipped = load_profile(None)
        print(
            f"({withheld}.) Shown instead for the course's recorded run ({describe(shipped)}), until your answer "
            "is written; then run this cell again."
        )
        return show(shipped)


def figure(name: str, record: Record) -> Figure:
    """One of day54.plots' figures of a record (`figure("sweep", record)`), as `_or_recorded` draws it."""
    return _or_recorded(getattr(plots, name), record)


UNLABELLED = "day54.unlabelled_pitfalls.png"  # the exercise's five timelines, drawn from the shipped profile


def unlabelled_pitfalls(record: Record) -> Figure:
    """The "name the pitfall" timelines A-E. The student edition has no pitfall key (the answer), so it shows them
    as the instructors' checkout drew them from the course's recorded run."""
    if not answers.withheld(pitfall_key):
        drawn = plots.unlabelled_pitfalls(record)
        folder = answers.recording_folder()
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            drawn.savefig(folder / UNLABELLED, dpi=100)
        return drawn
    path = answers.RECORDED_DIR / UNLABELLED
    if not path.is_file():  # the grading sandbox: no recording at all
        return plots.unlabelled_pitfalls(record)
    print("the five timelines of the course's recorded run (the student edition draws them from that run only)")
    image = imread(path)
    shown = Figure(figsize=(image.shape[1] / 100, image.shape[0] / 100), dpi=100)
    axes = shown.add_axes((0, 0, 1, 1))
    axes.imshow(image)
    axes.set_axis_off()
    return shown


PARTS = ("checks", "stages", "sweep", "model", "pitfalls", "verdicts")


def show(record: Record, part: str = "all", window: str | None = None) -> None:
    """Print what `python -m day54` prints, or one part of it: one of PARTS (the lesson shows them in turn)."""
    if part != "all" and part not in PARTS:
        raise ValueError(f"no report part called {part!r}; choose from {', '.join(PARTS)}")
    _or_recorded(lambda rec: _show(rec, part, window), record)


def _show(record: Record, part: str, window: str | None) -> None:
    w = report.main_window(record, parse_size(window) if window else None)
    if part == "all":
        print(report.render(record, w))
        return
    if part == "checks":
        print(report.checks_text(record))
    elif part == "stages":
        print(report.table(record, w).split("\n\nmodel, ")[0])
    elif part == "model":
        print("\n".join(line for line in report.table(record, w).splitlines() if line.startswith("model, ")))
    elif part == "sweep":
        print(report.sweep_table(record))
    elif part == "pitfalls":
        print(report.pitfalls_table(record) or "this record has no pitfall runs (measured with pitfalls=False)")
    else:
        print("\n".join(v.line() for v in report.predictions(record, w)))


def _pitfall_over_pipelined(name: str) -> Quantity:
    def read(record: Record) -> float | None:
        w = report.main_window(record)
        key = PassKey(f"pitfall {name}", w, 2)
        if not record.has_pass(key):
            return None
        return record.pass_times(key).median_ms / report.measured(record, "pipelined", w, 2)

    return Quantity(f"pitfall {name} / correct pipeline", read)


def _enqueue_fraction(record: Record) -> float | None:
    enqueue = record.extra.get("enqueue_ms")
    if not enqueue:
        return None
    w = report.main_window(record)
    return statistics.median(enqueue) / report.measured(record, "pipelined", w, 2)


def _slowest(stages: Any) -> str:
    """The slowest stage's name, or "h2d≈d2h" when stages within 2% of it tie (either answer is right)."""
    times = {"h2d": stages.h2d_ms, "kernel": stages.kernel_ms, "d2h": stages.d2h_ms}
    top = max(times.values())
    return "≈".join(name for name, t in times.items() if t >= top * 0.98)


def _at_main(read):
    return lambda record: read(record, report.main_window(record))


QUANTITIES: dict[str, Quantity] = {
    "naive_ms": Quantity("naive pass, ms", _at_main(lambda r, w: report.measured(r, "naive", w, 1))),
    "slowest_stage": Quantity("slowest stage alone", _at_main(lambda r, w: _slowest(report.stages(r, w)))),
    "pipelined_ms": Quantity("pipelined, 2 buffers, ms", _at_main(lambda r, w: report.measured(r, "pipelined", w, 2))),
    "speedup": Quantity(
        "naive / pipelined (2 buffers)",
        _at_main(lambda r, w: report.measured(r, "naive", w, 1) / report.measured(r, "pipelined", w, 2)),
    ),
    "link_floor_ms": Quantity("duplex link probe, ms", lambda r: report.link_floor_ms(r)),
    "two_buffers_over_max": Quantity(
        "2 buffers / slowest stage",
        _at_main(lambda r, w: report.measured(r, "pipelined", w, 2) / report.stages(r, w).max_ms),
    ),
    "three_buffers_over_link": Quantity(
        "3 buffers / link floor",
        _at_main(
            lambda r, w: (
                report.measured(r, "pipelined", w, 3) / report.link_floor_ms(r)
                if 3 in report.buffers(r) and report.link_floor_ms(r)
                else None
            )
        ),
    ),
    "worst_window": Quantity(
        "window with the worst ratio (2 buffers)",
        lambda r: format_size(max(report.windows(r), key=lambda w: report.ratio(r, w, 2))),
    ),
    "ratio_smallest_window": Quantity(
        "pipelined/naive, smallest window", lambda r: report.ratio(r, min(report.windows(r)), 2)
    ),
    "ratio_largest_window": Quantity(
        "pipelined/naive, largest window", lambda r: report.ratio(r, max(report.windows(r)), 2)
    ),
    "legacy_launch_x": _pitfall_over_pipelined("legacy-launch"),
    "sync_in_loop_x": _pitfall_over_pipelined("sync-in-loop"),
    "more_streams_x": _pitfall_over_pipelined("more-streams-than-buffers"),
    "pageable_x": _pitfall_over_pipelined("pageable"),
    "enqueue_fraction": Quantity("host clock without sync / true time", _enqueue_fraction),
}
PREDICTION_KEYS = tuple(QUANTITIES)


def compare(predictions: dict[str, float | str | None], record: Record) -> None:
    """Each prediction beside the run's number and measured/yours; remembered for closing_table()."""
    print(LEDGER.compare(predictions, QUANTITIES, record))


def closing_table() -> None:
    """Every prediction compared in this session (this notebook's kernel), in one table."""
    print(LEDGER.closing())


# -- section 7: several GPUs ------------------------------------------------------------------------------------


def measure_gpus(profile: str | Path | None = None) -> Record | None:
    """Section 7, live on two GPUs or more; else the recorded two-GPU profile, saying why; else one line saying
    that none is recorded yet, and None (the section's other cells then show nothing)."""
    count = gpu_count()
    if profile is None and count >= 2:
        print(multi_gpu.live_line(count))
        return multi_gpu.run_live(Config(windows=[64 * MiB], pitfalls=False))
    here = NO_GPU if count == 0 else "one GPU here"
    if profile is None and not multi_gpu.shipped_exists():
        print(f"{multi_gpu.SECTION}: {here}, and {multi_gpu.no_profile_line()}; this section has nothing to show")
        return None
    record = multi_gpu.load_profile(profile)
    why = "" if profile is not None else f"; {here}, so these are recorded numbers"
    print(f"{multi_gpu.SECTION}: {multi_gpu.describe(record)}{why}")
    return record


def show_gpus(record: Record | None) -> None:
    """Section 7's correctness verdicts and tables (nothing for no record)."""
    if record is not None:
        print(multi_gpu.render(record))


def _worst_together(record: Record) -> float | None:
    b = min(multi_gpu.depths(record))
    ratios = [multi_gpu.ratio(record, gpu, True, b) for gpu in range(multi_gpu.gpus_in(record))]
    return None if None in ratios else max(ratios)


def _copy(read: Any) -> Any:
    def value(record: Record) -> float | None:
        peer, staged = multi_gpu.copy_times(record, "peer"), multi_gpu.copy_times(record, "staged")
        return None if peer is None or staged is None else read(peer, staged)

    return value


GPU_QUANTITIES: dict[str, Quantity] = {
    "ratio_alone": Quantity(
        "pipelined/naive, 2 buffers, GPU 0 alone",
        lambda r: multi_gpu.ratio(r, 0, False, min(multi_gpu.depths(r))),
    ),
    "ratio_together": Quantity("pipelined/naive, 2 buffers, worst GPU, all at once", _worst_together),
    "peer_gbps": Quantity("peer copy GPU 0 -> GPU 1, GB/s", _copy(lambda peer, staged: peer.gbps())),
    "staged_gbps": Quantity("staged through pinned host, GB/s", _copy(lambda peer, staged: staged.gbps())),
    "peer_over_staged": Quantity("staged ms / peer ms", _copy(lambda peer, staged: staged.median_ms / peer.median_ms)),
}


def compare_gpus(predictions: dict[str, float | str | None], record: Record | None) -> None:
    """Section 7's predictions beside the record's numbers, remembered for closing_table() (nothing for no record)."""
    if record is not None:
        print(LEDGER.compare(predictions, GPU_QUANTITIES, record))


def gpus_figure(record: Record | None) -> Any:
    """Section 7's picture (a matplotlib Figure, which a notebook shows), or None for no record."""
    return None if record is None else multi_gpus(record)


def your_model_vs_measured(predict_ms: Any, record: Record, window: str = "64MiB") -> None:
    """Your cost model on this run's stage times beside the measured pipelines, depth by depth."""
    w = parse_size(window)
    st = report.stages(record, w)
    link = report.link_floor_ms(record)
    if not is_written(predict_ms, st.h2d_ms, st.kernel_ms, st.d2h_ms, st.n_chunks, 2, link):
        return
    for depth in report.buffers(record):
        mine = predict_ms(st.h2d_ms, st.kernel_ms, st.d2h_ms, st.n_chunks, depth, link)
        got = report.measured(record, "pipelined", w, depth)
        print(f"{depth} buffers: you predict {mine:.2f} ms, measured {got:.2f} ms (measured/yours {got / mine:.2f})")


RUN_REPORTS = "nvtx_sum,nvtx_pushpop_trace,cuda_gpu_mem_time_sum,cuda_api_sum,cuda_gpu_kern_sum,cuda_gpu_trace"


def record_my_run(schedule, directory: str | Path = ".") -> list[Path]:
    """On a GPU, measure your schedule under Nsight Systems and leave day54_run_*.csv beside the notebook.

    Graders without a GPU compare those exports with your schedule's trace (exports of another schedule, or not
    of one run, fail the timing check) and show what they measured, unverified: the points come from simulating
    your schedule on the course's recorded stage times. Without nsys only day54_run.json is written; without a
    GPU nothing is.
    """
    if not is_written(schedule, Context(RecordingContext(16, 2))):  # an unwritten exercise stops here, before any run
        return []
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
