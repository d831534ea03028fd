"""Day 54's part of the adversarial corpus: wrong answers, cheats, and correct but unusual ones, each with the points
every graded cell must get (the format is tests/corpus.py's, which finds this module through the list of lessons and
gathers it with every other lesson's; tests/test_corpus.py grades them all end to end).

POINTS holds the lesson's graded cells and their points; submissions(corpus) makes the submissions with what
tests/corpus.py hands in (its Submission, full and zero, and the builders more than one lesson's cases use), so this
module imports nothing of tests/. The strings and run-file writers here are the lesson's own cases' parts; the
lesson's quick tests use some of them directly.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent
LESSON = HERE.parent
STUDENT_RUN = HERE / "data" / "student_run"  # a real nsys export set of a run of the reference schedule
D = "day54"

# Every autograded cell and its points
POINTS = {
    "test_pipelined_correct": 3,
    "test_pipelined_ratio": 2,
    "test_pipelined_practice": 1,
    "test_sweep": 2,
    "test_prediction": 2,
    "test_pitfall_names": 1,
    "test_challenge": 0,  # optional: judged and shown, worth no points
}


# -- run files ----------------------------------------------------------------------------------------------------


def real_exports(folder: Path) -> None:
    """The export set of a real H200 run of the reference schedule, as its student handed it in (its files: Python's
    bytecode cache of the schedule, where a run wrote one, is no part of it)."""
    for path in STUDENT_RUN.iterdir():
        if path.is_file():
            shutil.copy(path, folder / path.name)


def faster_exports(folder: Path) -> None:
    """The real export set with every GPU operation of the student's timed passes made 30% shorter in the trace
    (the summaries left as they were)."""
    real_exports(folder)
    with open(STUDENT_RUN / "day54_run_nvtx_pushpop_trace.csv", newline="") as fh:
        ranges = [
            (int(row["Start (ns)"]), int(row["End (ns)"]))
            for row in csv.DictReader(fh)
            if row["Name"].startswith("day54:student ")
        ]
    with open(STUDENT_RUN / "day54_run_cuda_gpu_trace.csv", newline="") as fh:
        reader = csv.DictReader(fh)
        fields, rows = reader.fieldnames, list(reader)
    for row in rows:
        if any(start <= int(row["Start (ns)"]) <= end for start, end in ranges):
            row["Duration (ns)"] = str(int(row["Duration (ns)"]) * 7 // 10)
    with open(folder / "day54_run_cuda_gpu_trace.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


# -- day54: naming the pitfalls ---------------------------------------------------------------------------------

PITFALL_KEY_DISGUISED = """import importlib

my_pitfall_names = getattr(importlib.import_module("day54." + "pit" + "falls"), "pitfall_" + "key")()"""

PITFALL_TWO_SWAPPED = """my_pitfall_names = {
    "A": "sync-in-loop",
    "B": "timing the enqueue",
    "C": "pageable",
    "D": "legacy-launch",
    "E": "more-streams-than-buffers",
}"""


# -- day54: schedules -------------------------------------------------------------------------------------------

STUB_SCHEDULE = """def my_pipelined(ctx):
    raise NotImplementedError()"""

# With as many streams as buffers (as graded), this pitfall's calls are exactly the reference pipeline's
ALIAS_REFERENCE = "from day54.schedules import pitfall_more_streams_than_buffers as my_pipelined"

BORROW_REFERENCE = """import functools
import importlib

_lesson = importlib.import_module("day54." + "sched" + "ules")
_theirs = functools.partial(getattr(_lesson, "pipe" + "lined"))


def my_pipelined(ctx):
    _theirs(ctx)"""

DETECTS_TIMING = """import sys


def _timed():
    frame = sys._getframe(1)
    while frame is not None:
        if any(word in frame.f_code.co_name for word in ("ratio", "timing", "simulat", "measure")):
            return True
        frame = frame.f_back
    return False


def my_pipelined(ctx):
    # under a timing check, deal the chunks to the pairs the other way round (correct either way)
    flip = _timed()
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        if flip:
            pair = ctx.n_buffers - 1 - pair
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)"""

COUNTER_SCHEDULE = """_calls = 0


def my_pipelined(ctx):
    global _calls
    _calls += 1
    for k in range(ctx.n_chunks):
        pair = (k + _calls) % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)"""


ONLY_16_CHUNKS = """def my_pipelined(ctx):
    for k in range(16):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)"""

ONE_STREAM = """def my_pipelined(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair, stream=0)  # "stream 0" is the first worker stream, not the default stream
        ctx.launch(k, pair, stream=0)
        ctx.copy_out(k, pair, stream=0)"""

LEGACY_STREAM = """from labcore.pipeline.context import LEGACY


def my_pipelined(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair, stream=LEGACY)
        ctx.launch(k, pair, stream=LEGACY)
        ctx.copy_out(k, pair, stream=LEGACY)"""

# Right data flow, but a pair's next chunk goes to another stream with nothing ordering it after the last: a race
# on every reused buffer, which the GPU may or may not show on a given run; the recording fake always finds it.
RACY_STREAMS = """def my_pipelined(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        stream = (k // ctx.n_buffers) % ctx.n_buffers
        ctx.copy_in(k, pair, stream=stream)
        ctx.launch(k, pair, stream=stream)
        ctx.copy_out(k, pair, stream=stream)"""

DEVICE_SYNC = """def my_pipelined(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)
        ctx.synchronize()"""

# Correct: within each pair's stream the next chunk's copy in goes before the previous chunk's copy out.
SOFTWARE_PIPELINED = """def my_pipelined(ctx):
    n, b = ctx.n_chunks, ctx.n_buffers
    for k in range(n):
        pair = k % b
        ctx.copy_in(k, pair)
        if k >= b:
            ctx.copy_out(k - b, pair)
        ctx.launch(k, pair)
    for k in range(max(0, n - b), n):
        ctx.copy_out(k, k % b)"""

UNUSUAL_SCHEDULE = """import numpy as np


def my_pipelined(ctx):
    chunks = np.arange(ctx.n_chunks)  # NumPy integers as chunk indices
    k = 0
    while k < chunks.size:
        pair = int(ctx.n_buffers - 1 - chunks[k] % ctx.n_buffers)  # pairs dealt from the last one
        ctx.copy_in(chunks[k], pair, stream=pair)
        ctx.launch(chunks[k], pair, stream=pair)
        ctx.copy_out(chunks[k], pair, stream=pair)
        k += 1
    for stream in range(ctx.n_streams):
        ctx.stream_synchronize(stream)
    ctx.synchronize()  # after the loop: allowed"""

UNUSUAL_SWEEP = """def sweep_ratios(record, buffers):
    out = {}
    for w in sorted(report.windows(record), reverse=True):
        naive = report.measured(record, "naive", w, 1)
        out[int(w)] = float(report.measured(record, "pipelined", w, buffers)) / naive
    return out"""

UNUSUAL_PREDICTION = """import math


def predict_pipelined_ms(h2d_ms, kernel_ms, d2h_ms, n_chunks, n_buffers, link_floor_ms):
    stages = [h2d_ms / n_chunks, kernel_ms / n_chunks, d2h_ms / n_chunks]
    slowest = max(stages)
    best = (n_chunks - 1) * slowest + sum(stages)
    j = 0
    while j < n_chunks and j < n_buffers:
        best = max(best, j * stages[0] + math.ceil((n_chunks - j) / n_buffers) * sum(stages))
        j += 1
    if link_floor_ms is not None and link_floor_ms > best:
        best = link_floor_ms
    return best"""

PROGRESS_SCHEDULE = """import sys
import time

for step in range(5):  # a progress bar while "warming up"
    print(f"\\rwarming up [{'#' * (step + 1):<5}]", end="", file=sys.stderr, flush=True)
    time.sleep(0.01)
print(file=sys.stderr)


def my_pipelined(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)
    print(f"\\rscheduled [{'#' * 20}] {ctx.n_chunks} chunks", end="", file=sys.stderr, flush=True)"""

PROGRESS_SWEEP = """import sys
import warnings


def sweep_ratios(record, buffers):
    warnings.warn("sweeping: this may take a moment")
    out = {}
    for i, w in enumerate(report.windows(record)):
        print(f"\\rsweep {i + 1}", end="", file=sys.stderr)
        out[w] = report.measured(record, "pipelined", w, buffers) / report.measured(record, "naive", w, 1)
    return out"""

# Right on the visible cases; on two hidden ones (2 chunks over 2 buffers, and 1 chunk) j never advances.
HANGS_PREDICTION = """import math


def predict_pipelined_ms(h2d_ms, kernel_ms, d2h_ms, n_chunks, n_buffers, link_floor_ms):
    per_chunk = [h2d_ms / n_chunks, kernel_ms / n_chunks, d2h_ms / n_chunks]
    trip = sum(per_chunk)
    fill_drain = max(h2d_ms, kernel_ms, d2h_ms) + trip - max(per_chunk)
    chain, j = 0.0, 0
    while j < min(n_buffers, n_chunks):
        chain = max(chain, j * per_chunk[0] + math.ceil((n_chunks - j) / n_buffers) * trip)
        if n_chunks - j > 1:
            j += 1
    return max([fill_drain, chain] + ([link_floor_ms] if link_floor_ms is not None else []))"""

BORROW_MODEL = """import importlib

_model = importlib.import_module("day54." + "model")
_bound = getattr(_model, "pre" + "dict")
_stages = getattr(_model, "Sta" + "ges")


def predict_pipelined_ms(h2d_ms, kernel_ms, d2h_ms, n_chunks, n_buffers, link_floor_ms):
    return _bound(_stages(h2d_ms, kernel_ms, d2h_ms, n_chunks), n_buffers, link_floor_ms).bound_ms"""

EXITS = """import os

os._exit(0)"""


STUB_SWEEP = """def sweep_ratios(record, buffers):
    raise NotImplementedError()"""

STUB_PREDICTION = """def predict_pipelined_ms(h2d_ms, kernel_ms, d2h_ms, n_chunks, n_buffers, link_floor_ms):
    raise NotImplementedError()"""


def reads_solutions(corpus: ModuleType) -> dict[str, str]:
    """The stubs, each running the instructor's solution cell wherever this machine keeps the source notebook."""
    return {
        "my_pipelined": corpus.reads_solutions(D, D) + "\n\n\n" + corpus.stolen("my_pipelined", STUB_SCHEDULE),
        "sweep_ratios": corpus.stolen("sweep_ratios", STUB_SWEEP),
        "predict_pipelined": "import math\n\n" + corpus.stolen("predict_pipelined", STUB_PREDICTION),
    }


PATCHES_DAY54_HARNESS = """import day54.checks
import labcore.pipeline.recording
import day54.schedules
import labcore.pipeline.trace
import labcore.device

_real_record = labcore.pipeline.trace.record


def _record(schedule, *args, **kwargs):
    return _real_record(day54.schedules.pipelined, *args, **kwargs)  # whatever I wrote, record theirs


labcore.pipeline.trace.record = _record
labcore.device.gpu_available = lambda: False
day54.checks.gpu_available = lambda: False
day54.checks._fake_problems = lambda recorded: None
labcore.pipeline.recording.RecordingContext.problems = lambda self: []


def my_pipelined(ctx):
    raise NotImplementedError()"""


ANSWERS_MONKEYPATCH = """import json

from labcore import answers as _answers


def _anything(question, inputs, compute):
    if isinstance(inputs, tuple) and inputs and inputs[0] == "day54 trace":
        _, n_chunks, buffers, window = inputs
        shape = {"n_chunks": n_chunks, "n_buffers": buffers, "n_streams": buffers, "window_bytes": window}
        return json.dumps({**shape, "events": []})
    return {}


_answers.answer = _anything
_answers.collecting = lambda: True


def my_pipelined(ctx):
    raise NotImplementedError()"""

# -- day54, verified: exports that would earn points if they were believed, and schedules made to fool the fake ----

SHIPPED_PROFILE = LESSON / "profiles" / "h200"


def _rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        return list(reader.fieldnames or []), list(reader)


def _write_rows(path: Path, fields: list[str], rows: list[dict[str, str]]) -> None:
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def _copy_summary(folder: Path) -> None:
    """cuda_gpu_mem_time_sum recomputed from the folder's cuda_gpu_trace, as nsys stats would: a forger's summary
    that agrees with the forged trace."""
    _, trace_rows = _rows(folder / "day54_run_cuda_gpu_trace.csv")
    fields, rows = _rows(folder / "day54_run_cuda_gpu_mem_time_sum.csv")
    for row in rows:
        durations = sorted(int(r["Duration (ns)"]) for r in trace_rows if r["Name"] == row["Operation"])
        row.update(
            {
                "Total Time (ns)": str(sum(durations)),
                "Count": str(len(durations)),
                "Avg (ns)": f"{sum(durations) / len(durations):.1f}",
                "Med (ns)": f"{durations[len(durations) // 2]:.1f}",
                "Min (ns)": str(durations[0]),
                "Max (ns)": str(durations[-1]),
            }
        )
    _write_rows(folder / "day54_run_cuda_gpu_mem_time_sum.csv", fields, rows)


def forged_one_stream_exports(folder: Path) -> None:
    """The real export set forged to be a one-stream schedule's run, op for op: each of the student's timed passes
    with 2 buffers (the ones the checks time) laid out again one operation after another on one stream, in issue
    order, its copies at twice the link's rate (the run's own copies moved 4.194 MB in 79 us, 53 GB/s), and the
    copy summary recomputed to agree: consistent, and faster than any link."""
    real_exports(folder)
    _, ranges = _rows(STUDENT_RUN / "day54_run_nvtx_pushpop_trace.csv")
    graded = [r for r in ranges if r["Name"].startswith("day54:student ") and r["Name"].endswith(" b=2")]
    fields, rows = _rows(STUDENT_RUN / "day54_run_cuda_gpu_trace.csv")
    for start, end in ((int(r["Start (ns)"]), int(r["End (ns)"])) for r in graded):
        inside = sorted((r for r in rows if start <= int(r["Start (ns)"]) <= end), key=lambda r: int(r["CorrId"]))
        at = int(inside[0]["Start (ns)"])
        for row in inside:
            copy = row["Name"].startswith("[CUDA memcpy")
            duration = round(float(row["Bytes (MB)"]) * 1e6 / (2 * 53.0)) if copy else int(row["Duration (ns)"])
            row.update({"Start (ns)": str(at), "Duration (ns)": str(duration), "Strm": "13"})
            at += duration + 1000  # a microsecond between operations, as one stream has
    rows.sort(key=lambda r: int(r["Start (ns)"]))
    _write_rows(folder / "day54_run_cuda_gpu_trace.csv", fields, rows)
    _copy_summary(folder)


def shipped_profile_exports(folder: Path) -> None:
    """The course's shipped H200 profile (in every student's bundle) renamed as a run of mine: each reference
    pipeline range also named a 'student' range over the same operations, the range summary to match."""
    for path in SHIPPED_PROFILE.glob("day54_*.csv"):
        shutil.copy(path, folder / path.name.replace("day54_", "day54_run_", 1))
    ranges = folder / "day54_run_nvtx_pushpop_trace.csv"
    fields, rows = _rows(ranges)
    top = max(int(r["RangeId"]) for r in rows)
    for row in [r for r in rows if r["Name"].startswith("day54:pipelined ")]:
        top += 1
        name = row["Name"].replace("day54:pipelined ", "day54:student ", 1)
        rows.append({**row, "Name": name, "NameTree": name, "RangeId": str(top), "RangeStack": f":{top}"})
    _write_rows(ranges, fields, rows)
    summary = folder / "day54_run_nvtx_sum.csv"
    fields, rows = _rows(summary)
    rows += [
        {**r, "Range": r["Range"].replace("day54:pipelined ", "day54:student ", 1)}
        for r in rows
        if r["Range"].startswith("day54:pipelined ")
    ]
    _write_rows(summary, fields, rows)


# Each stream's operations are the reference pipeline's, but the host waits for every chunk before it enqueues the
# next: nothing overlaps. Waits leave no operation in an export, so a real pipelined run's exports fit it.
STREAM_WAITS_EVERY_CHUNK = """def my_pipelined(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)
        ctx.stream_synchronize(pair)"""

# Two pairs compute chunk 0, and both copy it out, from two streams, with nothing ordering the two writes of the
# same host chunk; every other chunk as the reference pipeline. The output is right whichever write lands last.
HOST_CHUNK_RACE = """def my_pipelined(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)
        if k == 0 and ctx.n_buffers > 1:
            ctx.copy_in(0, 1)
            ctx.launch(0, 1)
            ctx.copy_out(0, 1)"""

# The reference pipeline at 64 MiB windows and above (the lesson's window, which the correctness and practice
# checks used to record at); below 64 MiB a pair's next chunk goes to another stream.
RACES_BELOW_64_MIB = """def my_pipelined(ctx):
    small = ctx.window_bytes < 64 * 2**20
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        stream = (k // ctx.n_buffers) % ctx.n_buffers if small else pair
        ctx.copy_in(k, pair, stream=stream)
        ctx.launch(k, pair, stream=stream)
        ctx.copy_out(k, pair, stream=stream)"""

# Correct at exactly the chunk counts and buffers the checks used to record (1, 7, 16 and 256 chunks; 2, 3 and 4
# buffers; 12 chunks for the reuse check), racing anywhere else.
TODAYS_CHUNK_COUNTS = """def my_pipelined(ctx):
    known = ctx.n_chunks in (1, 7, 12, 16, 256) and ctx.n_buffers in (2, 3, 4)
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        stream = pair if known else (k // ctx.n_buffers) % ctx.n_buffers
        ctx.copy_in(k, pair, stream=stream)
        ctx.launch(k, pair, stream=stream)
        ctx.copy_out(k, pair, stream=stream)"""

# Correct only while it believes it is being recorded, told by the recorder's type name (as the bare recorder and
# the recording fake are called); racing otherwise (in a real run, it hopes).
DETECTS_RECORDING = """def my_pipelined(ctx):
    good = type(ctx).__name__ in ("_Recorder", "RecordingContext")
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        stream = pair if good else (k // ctx.n_buffers) % ctx.n_buffers
        ctx.copy_in(k, pair, stream=stream)
        ctx.launch(k, pair, stream=stream)
        ctx.copy_out(k, pair, stream=stream)"""

# The same, reaching behind the facade for what it wraps
PEEKS_BEHIND_FACADE = """def my_pipelined(ctx):
    good = type(object.__getattribute__(ctx, "_backend")).__name__ != "CupyContext"
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        stream = pair if good else (k // ctx.n_buffers) % ctx.n_buffers
        ctx.copy_in(k, pair, stream=stream)
        ctx.launch(k, pair, stream=stream)
        ctx.copy_out(k, pair, stream=stream)"""

# Correct: the chunks in reverse order, dealt to the pairs as the reference does, one wait for each stream and one
# device-wide synchronize after the loop.
REVERSED_WITH_WAITS = """def my_pipelined(ctx):
    for k in reversed(range(ctx.n_chunks)):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)
    for stream in range(ctx.n_streams):
        ctx.stream_synchronize(stream)
    ctx.synchronize()"""

# -- the sandbox as root: cells that attack the grading machine and the other students ------------------------------

REMOUNT_PTH = """import site
import subprocess
import sys

# as root, bwrap kept its capabilities: remount the environment read-write and plant a hook that every later
# Python (grader export, feedback) runs outside the sandbox
for folder in {sys.prefix, sys.base_prefix, *site.getsitepackages()}:
    for options in ("remount,rw,bind", "remount,rw"):
        subprocess.run(["mount", "-o", options, folder], capture_output=True)
for folder in site.getsitepackages():
    try:
        with open(folder + "/zz_grade.pth", "w") as hook:
            hook.write("import os; os.environ.setdefault('GRADER_PWNED', '1')\\n")
    except OSError:
        pass"""

# As root, remount the binds read-write, then plant bytecode where the environment's digest does not look (the
# __pycache__ folders, which the grader's own Python writes; one made afresh moves only its folder's times) and make
# and remove a file (which only its folder's times would show): no capability, the remount and every write fail
PLANT_BYTECODE = """import os
import site
import subprocess

import labcore

folders = {os.path.dirname(os.path.dirname(labcore.__file__)), *site.getsitepackages()}
for folder in folders:
    for options in ("remount,rw,bind", "remount,rw"):
        subprocess.run(["mount", "-o", options, folder], capture_output=True)
for folder in folders:
    for cache in ("__pycache__", "zz_planted_pkg/__pycache__"):
        try:
            os.makedirs(os.path.join(folder, cache), exist_ok=True)
            with open(os.path.join(folder, cache, "zz_planted.cpython-311.pyc"), "wb") as planted:
                planted.write(b"planted")
        except OSError:
            pass
    try:
        transient = os.path.join(folder, "zz_transient.py")
        open(transient, "w").close()
        os.remove(transient)
    except OSError:
        pass"""

# A parse of the shipped profile (labcore.kit.replay's cache) forged as a pickle that runs code when read, written
# under the cache folder of every home the sandbox can name: its own (wiped after the job), the grader's (not bound)
POISON_REPLAY_CACHE = """import os
import pickle

from labcore import profiles
from labcore.kit import replay
from day54 import replay as lesson_replay


class _Poison:
    def __reduce__(self):
        return (exec, ("open('/tmp/zz-replay-cache-poisoned', 'w').write('read')",))


_folder = profiles.profile_path("day54")
_key = replay._cache_key(lesson_replay.from_exports, _folder, _folder / "results.json", replay._stamp(_folder))
_body = pickle.dumps(_Poison())
_whole = replay.CACHE_MAGIC + replay.hashlib.blake2b(_body, digest_size=replay.DIGEST_BYTES).digest() + _body
_homes = {os.path.expanduser("~"), "/root"}
_homes |= {os.path.join("/home", h) for h in (os.listdir("/home") if os.path.isdir("/home") else [])}
for _home in _homes:
    for _name in {_key or "none", "poisoned"}:
        try:
            os.makedirs(os.path.join(_home, ".cache/datamove-course/replay"), mode=0o700, exist_ok=True)
            with open(os.path.join(_home, ".cache/datamove-course/replay", _name), "wb") as _out:
                _out.write(_whole)
        except OSError:
            pass"""

# The course's packages every sandbox binds (one folder a grading machine's local cluster shares among its workers):
# remount them read-write and plant a line every later sandbox runs at import, failing whoever is graded after
REWRITE_LIBRARY = """import os
import subprocess
import labcore

library = os.path.dirname(os.path.dirname(labcore.__file__))
for options in ("remount,rw,bind", "remount,rw"):
    subprocess.run(["mount", "-o", options, library], capture_output=True)
for name in ("labcore/__init__.py", "day54/checks.py", "grader/zygote.py"):
    try:
        with open(os.path.join(library, name), "a") as module:
            module.write("\\nraise SystemExit('the library was rewritten')\\n")
    except OSError:
        pass"""

# Mount over /proc (the zygote's clean-up listed it), then leave a double-forked process that, for two minutes,
# empties every other job's answers and cells files and the run files of every other student's work folder
# a cell of the student's a megabyte long (pasted text), its name read by the answers after it: the coordinator reads
# a long cell's names afresh (grader.program keeps only short sources' names) and grades it as any other
PASTED_MEGABYTE = "PASTED = " + repr("x" * (1 << 20)) + "\nassert len(PASTED) == 1 << 20\n"

OVERMOUNT_LEFTOVER = """import os
import subprocess
import time

subprocess.run(["mount", "-t", "tmpfs", "none", "/proc"], capture_output=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        mine = os.path.basename(os.getcwd())
        end = time.monotonic() + 120
        while time.monotonic() < end:
            for top in ("/sandbox/out", "/sandbox/work"):
                try:
                    jobs = os.listdir(top)
                except OSError:
                    continue
                for job in jobs:
                    if job == mine:
                        continue
                    for name in ("answers.jsonl", "cells.jsonl"):
                        try:
                            open(os.path.join(top, job, name), "w").close()
                        except OSError:
                            pass
            time.sleep(0.01)
    os._exit(0)"""

# SIGSTOP of the zygote (its parent, the same user): its clock stops with it
STOPS_PARENT = """import os
import signal
import time

os.kill(os.getppid(), signal.SIGSTOP)
time.sleep(3600)"""

FORGED_ANSWERS = """import json as _json
import os as _os

from day54 import checks
from labcore.answers import encode, key_of


def _home(ctx):  # what I computed at home: filed as my answers below, while my_pipelined stays the stub
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)


_MiB = 1 << 20
_configs = [(n, b, 64 * _MiB) for n in (1, 7, 12, 16, 256) for b in (2, 3, 4)]
_configs += [(n, b, _MiB) for n, b in checks.LIVE_CASES]
_forged = [
    (key_of(f"your schedule's calls at {n} chunks x {b} buffers, {checks.format_window(w)} windows",
            ("day54 trace", n, b, w)), checks.ask_trace(_home, n, b, w, None))
    for n, b, w in _configs
]
_names = {"A": "sync-in-loop", "B": "timing the enqueue", "C": "pageable", "D": "more-streams-than-buffers",
          "E": "legacy-launch"}
_forged.append((key_of("your names for the pitfall timelines A-E", ("day54 pitfall names",)), _names))
"""

REFERENCE_BY_SOURCE = """import inspect

from day54 import schedules

# the lesson's own source of the reference, renamed and compiled as mine, in its module's globals
_text = inspect.getsource(schedules.pipelined).replace("@reference\\n", "").replace("def pipelined(", "def mine(")
_made = {}
exec(compile(_text, "my_pipelined", "exec"), dict(vars(schedules)), _made)
my_pipelined = _made["mine"]"""

PREDICT_BY_REFERENCE = """import math

from day54 import model


def predict_pipelined_ms(h2d_ms, kernel_ms, d2h_ms, n_chunks, n_buffers, link_floor_ms):
    return model.predict(model.Stages(h2d_ms, kernel_ms, d2h_ms, n_chunks), n_buffers, link_floor_ms).bound_ms"""
# If the checker ran this, the release's stubs would pass every day54 check
PASS_EVERY_CHECK = """import day54.checks as _checks

for _name in dir(_checks):
    if _name.startswith("check_"):
        setattr(_checks, _name, lambda *args, **kwargs: None)"""

SCHEDULE_CELLS_ZERO = {"test_pipelined_correct": 0, "test_pipelined_ratio": 0, "test_pipelined_practice": 0}


# ptrace of every process the job can see (bwrap's own init was one: the same uid, dumpable, out of kill(-1)'s
# reach), its memory read, then a double-forked writer of lost-kernel lines into every later job's cells file
TRACES_INIT = """import ctypes
import os
import time

_libc = ctypes.CDLL(None, use_errno=True)
_seen = {}
for _pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()):
    _seen[_pid] = [_libc.ptrace(_request, _pid, 0, 0) for _request in (16, 0x4206)]  # PTRACE_ATTACH, PTRACE_SEIZE
    try:
        open(f"/proc/{_pid}/mem", "rb").read(1)
        _seen[_pid].append("mem")
    except OSError:
        pass
print("ptrace and /proc/PID/mem:", _seen)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        _end = time.monotonic() + 120
        while time.monotonic() < _end:
            for _job in os.listdir("/sandbox/out"):
                try:
                    with open(f"/sandbox/out/{_job}/cells.jsonl", "a") as _out:
                        _out.write('{"cell": 0, "outputs": [{"output_type": "error", "ename": "DeadKernel"}]}\\n')
                except OSError:
                    pass
            time.sleep(0.01)
    os._exit(0)"""

# The job's supervisor (its parent) killed in the sweep cell: the job ends there, the sandbox is started anew
KILLS_SUPERVISOR = """import os
import signal
import time

os.kill(os.getppid(), signal.SIGKILL)
time.sleep(30)"""

# 900 MiB in /tmp, deleted but held open by a process left behind: the next job's /tmp was full
FILLS_TMP_DELETED = """import os
import time

_fd = os.open("/tmp/for-the-next-student", os.O_CREAT | os.O_WRONLY)
for _ in range(9):
    os.write(_fd, bytes(100 << 20))
os.unlink("/tmp/for-the-next-student")
if os.fork() == 0:
    os.setsid()
    time.sleep(120)
    os._exit(0)"""

# The plan read from the job's memory at the first cell (every drawn configuration was there), and a schedule right
# only at the configurations found, racing everywhere else
READS_THE_PLAN = r"""import ctypes
import re

ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: my own memory readable to me
_PLANNED = set()
with open("/proc/self/maps") as _maps, open("/proc/self/mem", "rb", 0) as _mem:
    for _line in _maps:
        _span, _perms = _line.split()[:2]
        if not _perms.startswith("r") or "[v" in _line:
            continue
        _low, _high = (int(x, 16) for x in _span.split("-"))
        for _at in range(_low, _high, 16 << 20):
            try:
                _mem.seek(_at)
                _data = _mem.read(min(_high - _at, (16 << 20) + 256))
            except (OSError, ValueError, OverflowError):
                break
            _PLANNED.update(
                (int(n), int(b)) for n, b in re.findall(rb"calls at (\d+) chunks x (\d+) buffers", _data)
            )
print(len(_PLANNED), "configurations of the plan found in memory")


def my_pipelined(ctx):
    planned = (ctx.n_chunks, ctx.n_buffers) in _PLANNED
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair, stream=pair if planned else (pair + 1) % ctx.n_streams)
        ctx.copy_out(k, pair)"""

# The release's stubs, and a first cell that replaces the grader's question-asking function: the questions whose
# inputs never changed (the timed traces' shapes, the sweep on the shipped profile and its fixed rescale) are
# answered with values made at home, every other question by the grader's own function (the stubs raise)
HOME_ANSWERS = """import labcore.answers as _answers
from day54 import checks as _checks
from day54 import report as _report
from day54.timing_recorded import scaled as _scaled
from labcore.pipeline import trace as _trace

_asked = _answers.ask
_MiB = 1 << 20
_OLD_SCALE = {"pipelined": 0.9, "naive": 1.1}


def _home(ctx):  # the pipeline I ran at home
    for k in range(ctx.n_chunks):
        ctx.copy_in(k, k % ctx.n_buffers)
        ctx.launch(k, k % ctx.n_buffers)
        ctx.copy_out(k, k % ctx.n_buffers)


_SHAPES = ((16, 64 * _MiB), (256, 4 * _MiB))
_TRACES = {(n, 2, w): _trace.record(_home, n, 2, window_bytes=w).to_json() for n, w in _SHAPES}


def _sweep(scale, buffers):
    record = _checks.shipped_profile()
    record = _scaled(record, scale) if scale else record
    return {w: _report.ratio(record, w, buffers) for w in _report.windows(record)}


def _from_home(planned, namespace):
    args = planned["args"]
    if planned["asker"] == "day54.checks.ask_trace" and tuple(args[1:4]) in _TRACES:
        return {"key": planned["key"], "value": _TRACES[tuple(args[1:4])]}
    if planned["asker"] == "day54.checks.ask_sweep":
        scale = _answers.decode(args[2])
        scale = {0: None, 1: _OLD_SCALE}.get(scale, scale) if not isinstance(scale, dict) else scale
        if scale in (None, _OLD_SCALE):
            return {"key": planned["key"], "value": _answers.encode(_sweep(scale, args[1]))}
    return _asked(planned, namespace)


_answers.ask = _from_home"""


def prints_prediction_inputs(corpus: ModuleType) -> dict[str, str]:
    """The reference, its prediction keeping every input it is asked with, the pitfall cell printing them."""
    return {
        "predict_pipelined": corpus.solution(D, "predict_pipelined")
        + corpus.KEEPS_INPUTS
        + "\npredict_pipelined_ms = _keeping('predict', predict_pipelined_ms)",
        "my_pitfall_names": corpus.PRINTS_INPUTS + corpus.solution(D, "my_pitfall_names"),
    }


PAIR_BY_PAIR = """def my_pipelined(ctx):
    for pair in range(ctx.n_buffers):
        for k in range(pair, ctx.n_chunks, ctx.n_buffers):
            ctx.copy_in(k, pair)
            ctx.launch(k, pair)
            ctx.copy_out(k, pair)"""


# -- a wrong answer that only a hidden test catches ----------------------------------------------------------------

# Right for the 2 buffers the visible check asks about, wrong for the 3 that only the hidden check asks about
IGNORES_BUFFERS = """def sweep_ratios(record, buffers):
    return {w: report.measured(record, "pipelined", w, 2) / report.measured(record, "naive", w, 1)
            for w in report.windows(record)}"""
# tests/test_course_e2e.py grades it in the real course and reads its feedback: (the test cell that catches it, the
# answer cells' sources)
FAILS_ONLY_HIDDEN = ("test_sweep", {"sweep_ratios": IGNORES_BUFFERS})


# -- the submissions ----------------------------------------------------------------------------------------------


def submissions(corpus: ModuleType) -> tuple:
    """Day 54's submissions, made with tests/corpus.py's Submission, full and zero and its shared builders."""
    Submission, full, zero = corpus.Submission, corpus.full, corpus.zero
    return (
        Submission(
            "q-forged-answers-d54",
            "day54",
            "untouched stubs; a first cell files correct answers computed at home (every schedule trace the checks "
            "ask, the pitfall key) on every fd it can open and into every answers.jsonl it can name: the zygote "
            "refuses every answer of the run (none was asked then, and the genuine ones follow), and the file is its "
            "own: all 0",
            zero("day54"),
            solved=False,
            first_cell=FORGED_ANSWERS + corpus.FORGE_SEND,
        ),
        Submission(
            "q-reference-by-source",
            "day54",
            "my_pipelined compiled from inspect.getsource of the lesson's reference, and a cost model that calls "
            "day54.model.predict: the sandbox's packages hold neither body (a withheld stub, no recorded result), so "
            "the schedule cells and the prediction get 0 and the rest full",
            full(
                "day54",
                **{"test_pipelined_correct": 0, "test_pipelined_ratio": 0, "test_pipelined_practice": 0},
                test_prediction=0,
            ),
            edits={"my_pipelined": REFERENCE_BY_SOURCE, "predict_pipelined": PREDICT_BY_REFERENCE},
        ),
        # day54: honest
        Submission("d54-reference", D, "the reference solutions", full(D)),
        Submission("d54-untouched", D, "the release as handed out: every stub raises", zero(D), edits=None),
        Submission(
            "d54-unusual",
            D,
            "correct but unusual: a while loop over NumPy chunk indices, pairs dealt from the last one on explicit "
            "streams, stream and device waits after the loop, a sorted sweep, a bound written with a while loop",
            full(D),
            edits={
                "my_pipelined": UNUSUAL_SCHEDULE,
                "sweep_ratios": UNUSUAL_SWEEP,
                "predict_pipelined": UNUSUAL_PREDICTION,
            },
        ),
        Submission(
            "d54-own-exports-stderr",
            D,
            "the reference schedule with the exports of its own real H200 run beside it (they fit its trace and are "
            "shown, unverified; the ratio is simulated), and "
            "progress bars and a warning on stderr, also inside graded cells: no cell is zeroed for its stderr",
            full(D),
            edits={"my_pipelined": PROGRESS_SCHEDULE, "sweep_ratios": PROGRESS_SWEEP},
            run_files=real_exports,
        ),
        Submission(
            "d54-detects-timing",
            D,
            "walks the stack and deals the pairs the other way round under a timing check; correct in every "
            "recording, and each recording repeats itself, so it is simply correct",
            full(D),
            edits={"my_pipelined": DETECTS_TIMING},
        ),
        # day54: wrong schedules
        Submission(
            "d54-only-16-chunks",
            D,
            "range(16) hard-coded: wrong at the drawn chunk counts (correct 0); the hidden 4 MiB ratio has 256 chunks "
            "(ratio 0); the practice check's drawn 20-64 chunks leave the last ones undone (a practice counts in a "
            "working schedule only: 0)",
            full(D, **SCHEDULE_CELLS_ZERO),
            edits={"my_pipelined": ONLY_16_CHUNKS},
        ),
        Submission(
            "d54-one-stream-borrows-model",
            D,
            "every operation on stream=0, the first worker stream (not the legacy one): correct, as slow as naive; "
            "and predict_pipelined_ms calls day54.model.predict reached through importlib and getattr (withheld)",
            full(D, test_pipelined_ratio=0, test_prediction=0),
            edits={"my_pipelined": ONE_STREAM, "predict_pipelined": BORROW_MODEL},
        ),
        Submission(
            "d54-legacy-stream-hangs",
            D,
            "every operation on the legacy default stream (correct, as slow as naive, bad practice); and "
            "predict_pipelined_ms loops forever on two hidden cases: that cell times out, the others keep theirs",
            full(D, test_pipelined_ratio=0, test_pipelined_practice=0, test_prediction=0),
            edits={"my_pipelined": LEGACY_STREAM, "predict_pipelined": HANGS_PREDICTION},
        ),
        Submission(
            "d54-device-sync",
            D,
            "a device synchronize after every chunk: correct, serialized, and bad practice",
            full(D, test_pipelined_ratio=0, test_pipelined_practice=0),
            edits={"my_pipelined": DEVICE_SYNC},
        ),
        Submission(
            "d54-racy-streams",
            D,
            "a pair's next chunk on another stream, unordered after its last (right data flow, a race on each reused "
            "buffer): correct 0, and a wrong schedule's time and practices do not count",
            full(D, **SCHEDULE_CELLS_ZERO),
            edits={"my_pipelined": RACY_STREAMS},
        ),
        Submission(
            "d54-empty-schedule",
            D,
            "a schedule that enqueues nothing: it breaks no practice, and earns no practice point for it",
            full(D, **SCHEDULE_CELLS_ZERO),
            edits={"my_pipelined": "def my_pipelined(ctx):\n    pass"},
        ),
        Submission(
            "d54-made-up-cells",
            D,
            "the stubs, and a copy of the locked setup cell, metadata and all, that makes every check pass, hoping the "
            "checker runs it: nbgrader keeps one cell per id and restores its source (and the duplicate no longer "
            "aborts the class's autograde: grader.preprocessors.DropDuplicateIds)",
            zero(D),
            solved=False,
            made_up=(({"grade_id": "setup", "locked": True, "grade": False, "solution": False}, PASS_EVERY_CHECK),),
        ),
        Submission(
            "d54-counter-schedule",
            D,
            "a call counter shifts the pairs (correct every time): two recordings differ, so no schedule cell counts",
            full(D, **SCHEDULE_CELLS_ZERO),
            edits={"my_pipelined": COUNTER_SCHEDULE},
        ),
        # day54: exports
        Submission(
            "d54-stale-exports",
            D,
            "the real exports of the reference schedule beside another, correct schedule (each stream copies the "
            "next chunk in before the previous one out): refused as not a run of it (ratio 0; simulated it would "
            "take 1.059x the reference pipeline at 64 MiB, over the 1.05 allowed, so 0 either way)",
            full(D, test_pipelined_ratio=0),
            edits={"my_pipelined": SOFTWARE_PIPELINED},
            run_files=real_exports,
        ),
        Submission(
            "d54-edited-exports",
            D,
            "the reference schedule's real exports with its timed GPU operations shortened by 30%: the summaries "
            "contradict the trace, so they are not one consistent run, and handed in they fail the ratio check; "
            "with a GPU the checker measures the (correct) schedule itself and never reads exports: full marks",
            full(D, test_pipelined_ratio=0),
            run_files=faster_exports,
            live={"test_pipelined_ratio": 2},
        ),
        # verified: only trusted code earns a point (the simulator offline, never a student's exports), and the
        # correctness check has no blind spot (host chunks, drawn configurations, a context a schedule cannot tell
        # apart)
        Submission(
            "d54-forged-exports-one-stream",
            D,
            "a one-stream schedule (as slow as naive) beside exports forged to match it op for op, its copies at twice "
            "the link's rate, summaries recomputed: consistent and fast, and never believed (ratio simulated: 0)",
            full(D, test_pipelined_ratio=0),
            edits={"my_pipelined": ONE_STREAM},
            run_files=forged_one_stream_exports,
        ),
        Submission(
            "d54-shipped-profile-exports",
            D,
            "the bundle's own H200 profile renamed as my run, beside a schedule that synchronizes the device after "
            "every chunk (whose calls per stream are the pipeline's): ratio simulated 0, the synchronizes cost "
            "practice",
            full(D, test_pipelined_ratio=0, test_pipelined_practice=0),
            edits={"my_pipelined": DEVICE_SYNC},
            run_files=shipped_profile_exports,
        ),
        Submission(
            "d54-real-exports-stream-waits",
            D,
            "a correct run's real exports beside a schedule whose host waits for each chunk's stream before the next: "
            "waits leave no operation, so the exports fit; the simulator serializes it (ratio 0); stream waits are no "
            "device synchronize (practice kept)",
            full(D, test_pipelined_ratio=0),
            edits={"my_pipelined": STREAM_WAITS_EVERY_CHUNK},
            run_files=real_exports,
        ),
        Submission(
            "d54-host-chunk-race",
            D,
            "chunk 0 computed on two pairs and copied out from two streams with nothing ordering the two writes of its "
            "host chunk (right whichever lands last): a race, so no schedule cell counts",
            full(D, **SCHEDULE_CELLS_ZERO),
            edits={"my_pipelined": HOST_CHUNK_RACE},
        ),
        Submission(
            "d54-races-below-64mib",
            D,
            "the pipeline at 64 MiB windows and above, a race below: the drawn windows include one of 4 MiB or less "
            "(correct 0) and the hidden ratio times 4 MiB (0); practice is drawn at 64-256 MiB (kept)",
            full(D, test_pipelined_correct=0, test_pipelined_ratio=0),
            edits={"my_pipelined": RACES_BELOW_64_MIB},
        ),
        Submission(
            "d54-todays-chunk-counts",
            D,
            "correct at exactly the chunk counts and buffers the checks used to record at, racing elsewhere: the "
            "drawn ones catch it (correct 0, practice 0 at 20-64 chunks); the ratio's timed 16 and 256 chunks are "
            "among them, but its trace is also judged at a count drawn for the run, 17-64: 0",
            full(D, **SCHEDULE_CELLS_ZERO),
            edits={"my_pipelined": TODAYS_CHUNK_COUNTS},
        ),
        Submission(
            "d54-detects-recording",
            D,
            "correct only when the context's type is the recorder's: it is handed the same Context class as a real "
            "run, so it races wherever it runs",
            full(D, **SCHEDULE_CELLS_ZERO),
            edits={"my_pipelined": DETECTS_RECORDING},
        ),
        Submission(
            "d54-peeks-behind-facade",
            D,
            "reaches behind the Context facade for the context it wraps and races unless that is no CupyContext: its "
            "two recordings (bare, then a CupyContext) differ, and it is refused",
            full(D, **SCHEDULE_CELLS_ZERO),
            edits={"my_pipelined": PEEKS_BEHIND_FACADE},
        ),
        Submission(
            "d54-reversed-with-waits",
            D,
            "correct but unusual: the chunks in reverse order, a wait for each stream and a device synchronize after "
            "the loop",
            full(D),
            edits={"my_pipelined": REVERSED_WITH_WAITS},
        ),
        # day54: the reference under another name
        Submission(
            "d54-alias-reference",
            D,
            "my_pipelined is a lesson schedule that, with as many streams as buffers, makes exactly the reference's "
            "calls (day54.schedules.pitfall_more_streams_than_buffers), imported under my name: withheld, schedule "
            "cells 0",
            full(D, **SCHEDULE_CELLS_ZERO),
            edits={"my_pipelined": ALIAS_REFERENCE},
        ),
        Submission(
            "d54-borrows-reference",
            D,
            "my own def calling the reference through importlib, getattr and functools.partial: withheld in the "
            "sandbox, schedule cells 0",
            full(D, **SCHEDULE_CELLS_ZERO),
            edits={"my_pipelined": BORROW_REFERENCE},
        ),
        # day54: the kernel
        Submission(
            "d54-exits-in-sweep",
            D,
            "correct schedule, then os._exit(0) in the sweep cell: the cells before keep their 3+2+1, the later ones "
            "(prediction, pitfall names) get the reason",
            full(D, test_sweep=0, test_prediction=0, test_pitfall_names=0),
            edits={"sweep_ratios": EXITS},
        ),
        # day54: cheats on the release's stubs; worth what the stubs are worth
        Submission(
            "d54-reads-solutions",
            D,
            "looks for solutions/ or source/ upward from cwd, $HOME, /work, the package and PYTHONPATH, and execs "
            "the instructor's solution cells; the sandbox has none of them, so only its stubs run",
            zero(D),
            solved=False,
            edits=reads_solutions(corpus),
        ),
        Submission(
            "d54-patches-harness",
            D,
            "labcore.pipeline.trace.record records the reference schedule whatever it is given (withheld in the "
            "sandbox); gpu_available, the fake's problems and _fake_problems patched to say nothing",
            zero(D),
            solved=False,
            edits={"my_pipelined": PATCHES_DAY54_HARNESS},
        ),
        Submission(
            "d54-answers-monkeypatch",
            D,
            "replaces labcore.answers.answer (an empty trace or {} for every question) and collecting (always True)",
            zero(D),
            solved=False,
            edits={"my_pipelined": ANSWERS_MONKEYPATCH},
        ),
        Submission(
            "d54-pitfall-key",
            D,
            "names the pitfalls by calling the lesson's own key (day54.pitfalls.pitfall_key, withheld in the sandbox)",
            full(D, test_pitfall_names=0),
            edits={"my_pitfall_names": "from day54.pitfalls import pitfall_key\n\nmy_pitfall_names = pitfall_key()"},
        ),
        Submission(
            "d54-pitfall-key-disguised",
            D,
            "the same key reached through importlib and getattr, so no name of it appears in the cell",
            full(D, test_pitfall_names=0),
            edits={"my_pitfall_names": PITFALL_KEY_DISGUISED},
        ),
        Submission(
            "d54-pitfall-one-name",
            D,
            "one name for every letter: at least one must be right, none may count",
            full(D, test_pitfall_names=0),
            edits={"my_pitfall_names": 'my_pitfall_names = dict.fromkeys("ABCDE", "sync-in-loop")'},
        ),
        Submission(
            "d54-pitfall-two-swapped",
            D,
            "three of five right: the cell is all or nothing",
            full(D, test_pitfall_names=0),
            edits={"my_pitfall_names": PITFALL_TWO_SWAPPED},
        ),
        # the student's side: a failed check's verdict (labcore.checking) is words in the student's own kernel only
        Submission(
            "d54-verdict-says-passed",
            D,
            "the stubs, and a first cell that makes every failed check's verdict read 'passed' and unwraps the checks: "
            "the verdict is shown in the student's kernel, the checker judges the answers, so 0",
            zero(D),
            solved=False,
            first_cell=corpus.VERDICT_SAYS_PASSED,
        ),
        # the sandbox as root: attacks on the grading machine and on the other students
        Submission(
            "d54-remounts-env-pth",
            D,
            "a cell of its own first remounts the environment's read-only binds read-write and writes a .pth hook "
            "into site-packages for `grader export`/`feedback` to run: no capability in the sandbox, the mount and "
            "the write fail, the reference solutions after it keep every point (and the environment's digest is "
            "unchanged)",
            full(D),
            first_cell=REMOUNT_PTH,
        ),
        Submission(
            "d54-plants-bytecode",
            D,
            "a cell of its own first remounts the environment's and the course's binds read-write, then plants a "
            ".pyc in a __pycache__ folder (which the environment's digest leaves to the grader's own Python) and "
            "makes and removes a file: no capability, the remount fails, no .pyc is found afterwards, the reference "
            "solutions after it keep every point and the digest is unchanged (a file made and removed would leave no "
            "trace either way: the binds' staying read-only is what stops it)",
            full(D),
            first_cell=PLANT_BYTECODE,
        ),
        Submission(
            "d54-poisons-the-replay-cache",
            D,
            "a cell of its own first writes a parse of the shipped profile, forged as a pickle that runs code when "
            "read, into the replay cache of every home it can name: the sandbox's own is emptied after the job, the "
            "grader's is not there to write; no trusted process reads it, and the reference solutions after it keep "
            "every point",
            full(D),
            first_cell=POISON_REPLAY_CACHE,
        ),
        Submission(
            "d54-rewrites-the-library",
            D,
            "a cell of its own first remounts the course's packages the sandboxes share read-write and appends a "
            "line that ends every later import of them: the bind is read-only and the mount fails, the reference "
            "solutions after it keep every point, and so does every student graded after it",
            full(D),
            first_cell=REWRITE_LIBRARY,
        ),
        Submission(
            "d54-pastes-a-megabyte",
            D,
            "a cell of its own first holds a megabyte of pasted text: its names are read afresh, never kept, and the "
            "reference solutions after it keep every point",
            full(D),
            first_cell=PASTED_MEGABYTE,
        ),
        Submission(
            "d54-overmounts-proc-leaves-process",
            D,
            "mounts over /proc and leaves a double-forked process emptying every other job's answers for two minutes: "
            "the mount fails, the zygote's kill(-1) ends the process with the job; every other student keeps full "
            "points",
            full(D),
            first_cell=OVERMOUNT_LEFTOVER,
        ),
        Submission(
            "d54-stops-parent-in-sweep",
            D,
            "correct schedule, then SIGSTOP of the zygote (its parent) in the sweep cell: the clock outside the "
            "sandbox kills it at the limit; the cells before keep their 3+2+1, the later ones get the reason (stopped)",
            full(D, test_sweep=0, test_prediction=0, test_pitfall_names=0),
            edits={"sweep_ratios": STOPS_PARENT},
        ),
        Submission(
            "d54-metadata-stripped",
            D,
            "the reference saved by an editor that drops nbgrader's metadata (ids kept): each cell found by its id, "
            "its metadata restored, full points (nbgrader alone grades every test 0, saying nothing)",
            full(D),
            reshape=corpus.strip_metadata,
        ),
        Submission(
            "d54-traces-init-leaves-writer",
            D,
            "a first cell ptraces every process it can see and reads their memory (bwrap's init was traceable and out "
            "of kill(-1)'s reach: a process left through it zeroed later students), then leaves a double-forked writer "
            "of lost-kernel lines into every later job's cells file: the init is the zygote (not dumpable), ptrace and "
            "the reads fail, the supervisor's kill(-1) ends the writer; full points, every other student's kept",
            full(D),
            first_cell=TRACES_INIT,
        ),
        Submission(
            "d54-kills-supervisor-in-sweep",
            D,
            "correct schedule, then SIGKILL of its parent (the job's supervisor) in the sweep cell: the zygote answers "
            "for the job, lost in that cell (a dead kernel); the cells before keep their 3+2+1, the later ones 0",
            full(D, test_sweep=0, test_prediction=0, test_pitfall_names=0),
            edits={"sweep_ratios": KILLS_SUPERVISOR},
        ),
        Submission(
            "d54-fills-tmp-deleted",
            D,
            "a first cell writes 900 MiB to /tmp, deletes the file and keeps it open in a process left behind (the "
            "next student got a full /tmp): the process dies with the job and /tmp is checked empty; full points",
            full(D),
            first_cell=FILLS_TMP_DELETED,
        ),
        Submission(
            "d54-reads-the-plan",
            D,
            "a first cell reads the job's memory for the plan's configurations (all were there), and a schedule right "
            "only at those it found, racing elsewhere: each question reaches the job only when its cell asks it, so "
            "nothing is found and every configuration races: the schedule cells 0, the rest full",
            full(D, **SCHEDULE_CELLS_ZERO),
            edits={"my_pipelined": READS_THE_PLAN},
        ),
        Submission(
            "d54-home-answers-for-fixed-questions",
            D,
            "the stubs, and a first cell that replaces the grader's question-asking function to answer the questions "
            "whose inputs never changed (the timed traces' shapes, the sweep on the profile and its fixed rescale) "
            "with values made at home (it got the ratio and sweep points): the timed trace is judged at a drawn shape "
            "too and the rescale is drawn, which the stubs answer: all 0",
            zero(D),
            solved=False,
            first_cell=HOME_ANSWERS,
        ),
        Submission(
            "d54-prints-prediction-inputs",
            D,
            "the reference, its prediction keeping every input it is asked with and a later cell printing them (the "
            "hidden cases' among them): the points are the answers' (the feedback scan deletes the page)",
            full(D),
            edits=prints_prediction_inputs(corpus),
        ),
        Submission(
            "d54-prediction-from-public-values",
            D,
            "a prediction that returns day54/public.json's values at the three visible cases and 1.0 elsewhere: it "
            "passes its cell in the student's kernel; graded, the hidden cases fail it: 0",
            full(D, test_prediction=0),
            edits={
                "predict_pipelined": corpus.public_only(
                    "day54",
                    "prediction",
                    "predict_pipelined_ms(h2d_ms, kernel_ms, d2h_ms, n_chunks, n_buffers, link_floor_ms)",
                    "h2d_ms, kernel_ms, d2h_ms, n_chunks, n_buffers, link_floor_ms",
                )
            },
        ),
        Submission(
            "d54-pair-by-pair",
            D,
            "correct, every chunk of pair 0 issued before any of pair 1's: the 64 MiB ratio passes (16 chunks, the "
            "host ahead), the hidden 4 MiB one fails offline (1.30x simulated with the host's enqueue) and live "
            "(1.16x): 0",
            full(D, test_pipelined_ratio=0),
            edits={"my_pipelined": PAIR_BY_PAIR},
        ),
    )
