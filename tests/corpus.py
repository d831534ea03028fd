"""An adversarial corpus of submissions for the real course: wrong answers, cheats, and correct but unusual ones.

A submission is one student's notebook of one assignment (and the `<a>_run*` files handed in beside it). Each is
data: the notebook is the student release with the reference solutions filled in (or the stubs left, `solved=False`)
and then some cells replaced (`edits`), an optional cell put in front of everything (`first_cell`), the run files
to write beside it, the points EVERY autograded cell must get, and one line saying what it tries.

The expected points are those of grading without a GPU (offline checks) in the grading pipeline where the
student's notebook runs in a sandbox that cannot read the instructor's files and whose lesson packages withhold the
reference answers (labcore.answers.reference), test cells only collect answers as data, and a separate trusted
process judges that data. So: nothing a kernel patches earns a point (at worst answers go missing); a schedule is
judged on its recorded trace (the same calls in every recording, or nothing); a dead kernel keeps the points of the
cells before it; stderr output does not zero a cell. tests/test_corpus.py grades them all end to end.
"""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
import json
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

import nbformat

from labcore import lessons as _lessons

ROOT = Path(__file__).resolve().parents[1]
STUDENT_RUN = ROOT / "tests" / "data" / "student_run"  # a real nsys export set of a run of the reference schedule

# Every autograded cell of each assignment and its points.
POINTS: dict[str, dict[str, float]] = {
    "day54": {
        "test_pipelined_correct": 3,
        "test_pipelined_ratio": 2,
        "test_pipelined_practice": 1,
        "test_sweep": 2,
        "test_prediction": 2,
        "test_pitfall_names": 1,
        "test_challenge": 0,  # optional: judged and shown, worth no points
    },
    "zero_copy": {"test_break_even": 2, "test_gather_correct": 3, "test_gather_bandwidth": 2, "test_publish": 3},
}


def full(assignment: str, **points: float) -> dict[str, float]:
    """Every cell's full points, except those named."""
    unknown = set(points) - set(POINTS[assignment])
    assert not unknown, f"{assignment} has no graded cells {sorted(unknown)}"
    return {**POINTS[assignment], **points}


def zero(assignment: str, **points: float) -> dict[str, float]:
    """Zero for every cell, except those named."""
    return full(assignment, **{**dict.fromkeys(POINTS[assignment], 0), **points})


@dataclasses.dataclass(frozen=True)
class Submission:
    """One student's notebook of one assignment, what it tries, and what each autograded cell must score."""

    name: str  # the student id
    assignment: str
    tries: str  # one line: what it tries, and why it earns what it earns where that is not obvious
    points: Mapping[str, float]  # graded cell id -> points
    edits: Mapping[str, str] | None = dataclasses.field(default_factory=dict)  # cell id -> source; None: untouched
    solved: bool = True  # start from the reference solutions (else from the release's stubs)
    first_cell: str | None = None  # a code cell of the student's put before the first cell
    # code cells of the student's with nbgrader metadata of their own making, (metadata, source), put first
    made_up: tuple[tuple[Mapping[str, object], str], ...] = ()
    run_files: Callable[[Path], None] | None = None  # writes the `<a>_run*` files beside the notebook
    # cells whose points differ when the checker has a GPU (it measures instead of reading exports or the profile),
    # as measured on the H200 (profiles/h200/grading-2026-12-01/)
    live: Mapping[str, float] = dataclasses.field(default_factory=dict)
    # cells that offline are "pending a GPU" (labcore.pending: 0, said so everywhere; a GPU decides them)
    pending: tuple[str, ...] = ()
    # the handed-in notebook changed as a whole, after the edits (an editor that drops metadata, deleted cells)
    reshape: Callable[[nbformat.NotebookNode], None] | None = None

    def __post_init__(self) -> None:
        assert set(self.points) == set(POINTS[self.assignment]), f"{self.name}: points for every graded cell"
        assert set(self.live) <= set(self.points), f"{self.name}: live points only for graded cells"
        assert all(self.points[c] == 0 for c in self.pending), f"{self.name}: a cell pending a GPU scores 0 offline"

    def expected(self, *, gpu: bool) -> dict[str, float]:
        """The points of every graded cell offline, or with a GPU."""
        return {**self.points, **(self.live if gpu else {})}

    @property
    def total(self) -> float:
        return sum(self.points.values())

    def notebook(self) -> nbformat.NotebookNode:
        """The release, with the reference solutions filled in (when solved), then the edits applied."""
        release = nbformat.read(ROOT / "course" / self.assignment / f"{self.assignment}.ipynb", as_version=4)
        if self.edits is None:
            return release
        ids = {cell.get("id") for cell in release.cells}
        assert set(self.edits) <= ids, f"{self.name}: no cells {sorted(set(self.edits) - ids)} in the release"
        solutions = ROOT / self.assignment / "solutions" / f"{self.assignment}.ipynb"
        solved = {c["id"]: c for c in nbformat.read(solutions, as_version=4).cells}
        for cell in release.cells:
            if self.solved and cell.metadata.get("nbgrader", {}).get("solution"):
                cell.source = "\n".join(
                    line
                    for line in solved[cell["id"]].source.splitlines()
                    if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line
                )
            cell.source = self.edits.get(cell["id"], cell.source)
        for index, (meta, source) in enumerate(reversed(self.made_up)):
            nbgrader = {"cell_type": "code", "schema_version": 3, "task": False, **meta}  # as a real cell's reads
            cell = nbformat.v4.new_code_cell(source, metadata={"nbgrader": nbgrader})
            cell["id"] = f"students-made-up-{index}"
            release.cells.insert(0, cell)
        if self.first_cell is not None:
            first = nbformat.v4.new_code_cell(self.first_cell)
            first["id"] = "students-first-cell"
            release.cells.insert(0, first)
        if self.reshape is not None:
            self.reshape(release)
        return release

    def write(self, folder: Path) -> None:
        """SUBMISSIONS/<student>/: the notebook and its run files, as a student hands them in."""
        folder.mkdir(parents=True)
        # JSON's ASCII escapes, as any editor may save them: a lone surrogate in a cell stays a valid notebook
        (folder / f"{self.assignment}.ipynb").write_text(json.dumps(self.notebook(), indent=1) + "\n")
        if self.run_files is not None:
            self.run_files(folder)


# -- run files ----------------------------------------------------------------------------------------------------


def real_exports(folder: Path) -> None:
    """The export set of a real H200 run of the reference schedule, as its student handed it in."""
    for path in STUDENT_RUN.iterdir():
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

# -- day54: cheats ------------------------------------------------------------------------------------------------


def _read_solutions(assignment: str, anchor: str) -> str:
    """A cell defining _instructors(cell_id): the instructor's solution cell, searched for on this machine."""
    return f'''import json
import os
from pathlib import Path

import {anchor}


def _starts():
    yield Path.cwd()
    try:
        yield Path.home()
    except (KeyError, RuntimeError):
        pass
    yield Path("/work")
    yield Path({anchor}.__file__).resolve().parent
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if entry:
            yield Path(entry).resolve()


def _candidates(assignment):
    for start in _starts():
        for folder in (start, *start.parents):
            for sub in ("solutions", "source"):
                yield folder / sub / assignment / f"{{assignment}}.ipynb"
            yield folder / assignment / "solutions" / f"{{assignment}}.ipynb"
    for base in ("/work", "/home", "/srv", "/opt"):
        yield from Path(base).glob(f"*/solutions/{{assignment}}/{{assignment}}.ipynb")
        yield from Path(base).glob(f"*/{{assignment}}/solutions/{{assignment}}.ipynb")


def _instructors(cell_id, assignment="{assignment}"):
    """The source of one solution cell of the instructor's notebook, wherever this machine keeps it."""
    for path in _candidates(assignment):
        try:
            cells = json.loads(path.read_text())["cells"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        for cell in cells:
            text = "".join(cell.get("source", ""))
            if cell.get("id") == cell_id and "BEGIN SOLUTION" in text:
                return text
    return None'''


def _stolen(cell_id: str, stub: str) -> str:
    return f"""_found = _instructors("{cell_id}")
if _found:
    exec(_found)
else:
{"".join("    " + line + chr(10) for line in stub.splitlines())}"""


STUB_SWEEP = """def sweep_ratios(record, buffers):
    raise NotImplementedError()"""

STUB_PREDICTION = """def predict_pipelined_ms(h2d_ms, kernel_ms, d2h_ms, n_chunks, n_buffers, link_floor_ms):
    raise NotImplementedError()"""

READS_SOLUTIONS = {
    "my_pipelined": _read_solutions("day54", "day54") + "\n\n\n" + _stolen("my_pipelined", STUB_SCHEDULE),
    "sweep_ratios": _stolen("sweep_ratios", STUB_SWEEP),
    "predict_pipelined": "import math\n\n" + _stolen("predict_pipelined", STUB_PREDICTION),
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


# -- zero_copy ----------------------------------------------------------------------------------------------------

STUB_BREAK_EVEN = """def break_even_reads(link_gbps, hbm_gbps):
    raise NotImplementedError()"""

PATCHES_ZERO_COPY_CHECKS = (
    """from zero_copy import checks as _checks

for _name in dir(_checks):
    if _name.startswith("check_"):
        setattr(_checks, _name, lambda *args, **kwargs: None)


"""
    + STUB_BREAK_EVEN
)

PATCHES_ZERO_COPY_HARNESS = {
    "break_even_reads": """import zero_copy.model

zero_copy.model.crossover_reads = lambda *args, **kwargs: 1.0


def break_even_reads(link_gbps, hbm_gbps):
    return 1.0""",
    "gather_exercise": """import zero_copy.checks
import zero_copy.gather

zero_copy.gather.launch_problem = lambda *args: None
zero_copy.gather.mapping_problem = lambda *args: None
zero_copy.gather.idle_blocks = lambda *args: 0
zero_copy.gather.order_problem = lambda *args: None
zero_copy.gather.first_descent = lambda ids: None
zero_copy.checks._simulated = lambda *args, **kwargs: (True, "bit-exact")


def gather_launch(n_rows):
    return 48, n_rows + 1


def order_ids(ids):
    return ids, np.arange(ids.size)""",
    "my_publish": """import zero_copy.mailbox

zero_copy.mailbox.publish_problem = lambda source: None

MY_PUBLISH = r\"\"\"
__device__ void publish(volatile int* box, int round) {
    box[MB_FLAG] = round;
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) {
        box[MB_PAYLOAD + w] = round * 1000003 + w;
    }
}
\"\"\"""",
}

# set_custom_exc alone hides the traceback, but the kernel's reply still says "error" and nbgrader records that;
# so the reply is made to say "ok" too.
CUSTOM_EXC = (
    """import sys

sys.excepthook = lambda *args: None
_shell = get_ipython()
_shell.set_custom_exc((BaseException,), lambda shell, etype, value, tb, tb_offset=None: [])
_run = _shell.run_cell_async


async def _quiet(*args, **kwargs):
    result = await _run(*args, **kwargs)
    result.error_in_exec = result.error_before_exec = None
    return result


_shell.run_cell_async = _quiet


"""
    + STUB_BREAK_EVEN
)

BORROW_CROSSOVER = """import importlib

_theirs = getattr(importlib.import_module("zero_copy." + "model"), "crossover" + "_reads")


def break_even_reads(link_gbps, hbm_gbps):
    return _theirs(link_gbps, hbm_gbps)"""

PUBLISH_FROM_LESSON = """import re

from zero_copy.kernel import KERNEL_PATH

_lesson = KERNEL_PATH.read_text()
_marked = re.search(r"// BEGIN REFERENCE\\n(.*?)// END REFERENCE", _lesson, re.S)
_body = _marked.group(1) if _marked else _lesson.split("publish_and_wait(", 1)[-1].split("\\n}\\n", 1)[0]
_words = ("MB_PAYLOAD", "__threadfence_system", "MB_FLAG]")
_steps = [line for line in _body.splitlines() if any(word in line for word in _words)]
MY_PUBLISH = "__device__ void publish(volatile int* box, int round) {\\n" + "\\n".join(_steps) + "\\n}\\n\""""


def _publish(body: str) -> str:
    return f'MY_PUBLISH = r"""\n__device__ void publish(volatile int* box, int round) {{\n{body}\n}}\n"""'


FLAG_FIRST = _publish("""    box[MB_FLAG] = round;
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) {
        box[MB_PAYLOAD + w] = round * 1000003 + w;
    }
    __threadfence_system();""")

ALIAS_FLAG_FIRST = _publish("""    volatile int* flag = box + MB_FLAG;
    volatile int* payload = box + MB_PAYLOAD;
    *flag = round;
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) {
        payload[w] = round * 1000003 + w;
    }
    __threadfence_system();""")

DEAD_FENCE = _publish("""    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) {
        box[MB_PAYLOAD + w] = round * 1000003 + w;
    }
    if (round < 0) {  // rounds count from 1: never taken
        __threadfence_system();
    }
    box[MB_FLAG] = round;""")

GPU_FENCE = _publish("""    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) {
        box[MB_PAYLOAD + w] = round * 1000003 + w;
    }
    __threadfence();  // GPU scope: the host is not among those it orders for
    box[MB_FLAG] = round;""")

ATOMIC_FLAG = _publish("""    volatile int* payload = box + MB_PAYLOAD;
#pragma unroll
    for (int w = MB_PAYLOAD_WORDS - 1; w >= 0; --w) {
        payload[w] = round * 1000003 + w;
    }
    __threadfence_system();
    atomicExch(const_cast<int*>(box + MB_FLAG), round);""")

RELEASE_STORE = _publish("""#pragma unroll
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) box[MB_PAYLOAD + w] = round * 1000003 + w;
    // the fence and the flag in one instruction: a release store at system scope
    int* flag = const_cast<int*>(box + MB_FLAG);
    asm volatile("st.release.sys.global.s32 [%0], %1;" :: "l"(flag), "r"(round) : "memory");""")

# ptx-pending: the publish step judged on every path of its compiled kernel (calls followed, loops turned), with
# the values it stores verified for every round; what the analysis cannot compute offline is pending a GPU.
ROLLED_LOOP = _publish("""#pragma unroll 1
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) box[MB_PAYLOAD + w] = round * 1000003 + w;
    __threadfence_system();
    box[MB_FLAG] = round;""")

NOINLINE_HELPER = _publish("""#pragma unroll 1
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) put(box + MB_PAYLOAD + w, round * 1000003 + w);
    __threadfence_system();
    box[MB_FLAG] = round;""").replace(
    "__device__ void publish",
    "__device__ __noinline__ void put(volatile int* p, int v) { *p = v; }\n__device__ void publish",
)

ATOMICS_INLINE_ASM = _publish("""    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w)
        atomicExch_system(const_cast<int*>(box) + MB_PAYLOAD + w, round * 1000003 + w);
    asm volatile("fence.sc.sys;" ::: "memory");
    atomicExch_system(const_cast<int*>(box) + MB_FLAG, round);""")

FLAG_RAISED_THEN_LOWERED = _publish("""    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w)
        box[MB_PAYLOAD + w] = round * 1000003 + w;
    __threadfence_system();
    box[MB_FLAG] = round;
    box[MB_FLAG] = 0;  // the host may have seen it, or not""")

PAYLOAD_CLEARED = _publish("""    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w)
        box[MB_PAYLOAD + w] = round * 1000003 + w;
    __threadfence_system();
    box[MB_FLAG] = round;
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) box[MB_PAYLOAD + w] = 0;  // while the host may be reading""")

WRONG_PAYLOAD = _publish("""    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w)
        box[MB_PAYLOAD + w] = round * 1000003 - w;
    __threadfence_system();
    box[MB_FLAG] = round;""")

FLAG_BEFORE_FENCE_ON_ONE_BRANCH = _publish("""    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w)
        box[MB_PAYLOAD + w] = round * 1000003 + w;
    if (round % 2) {
        box[MB_FLAG] = round;  // odd rounds: the flag before the fence
        __threadfence_system();
    } else {
        __threadfence_system();
        box[MB_FLAG] = round;
    }""")

VALUES_THROUGH_ASM = _publish("""    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) {
        int v;
        asm volatile("xor.b32 %0, %1, 0;" : "=r"(v) : "r"(round * 1000003 + w));  // v = the value, opaquely
        box[MB_PAYLOAD + w] = v;
    }
    __threadfence_system();
    box[MB_FLAG] = round;""")

UNUSUAL_BREAK_EVEN = """def break_even_reads(link_gbps, hbm_gbps):
    link, hbm = np.float64(link_gbps), np.float64(hbm_gbps)
    return np.inf if hbm <= link else 1.0 / (1.0 - link / hbm)"""

UNUSUAL_GATHER = """def gather_launch(n_rows):
    return 1024, -(-n_rows // 32)  # 32 warps a block, one row each


def order_ids(ids):
    order = np.lexsort((np.arange(ids.size), ids))
    return ids[order], np.argsort(order)"""

IDLE_BLOCK = """def gather_launch(n_rows):
    return 256, n_rows * 32 // 256 + 1  # one block too many whenever 8 divides n_rows


def order_ids(ids):
    order = np.argsort(ids, kind="stable")
    restore = np.empty_like(order)
    restore[order] = np.arange(order.size)
    return ids[order], restore"""

_STABLE_ORDER = """


def order_ids(ids):
    order = np.argsort(ids, kind="stable")
    restore = np.empty_like(order)
    restore[order] = np.arange(order.size)
    return ids[order], restore"""

# Grids no idle-block rule catches, wrong only in what the kernel then writes (the offline model, warp by warp):
LANES_MISSED = (
    """def gather_launch(n_rows):
    return 48, -(-32 * n_rows // 48)  # enough threads, but a warp straddling two blocks repeats and misses lanes"""
    + _STABLE_ORDER
)
ONE_BLOCK_SHORT = (
    """def gather_launch(n_rows):
    return 256, (32 * n_rows + 255) // 256 - 1  # the last rows never get a warp"""
    + _STABLE_ORDER
)

ODD_DTYPES_GATHER = """def gather_launch(n_rows):
    return np.int16(256), np.uint64((32 * n_rows + 255) // 256)


def order_ids(ids):
    order = np.argsort(ids, kind="stable")
    restore = np.empty(order.size, dtype=np.uint32)
    restore[order] = np.arange(order.size)
    return ids[order].astype(">i8"), restore  # big-endian ids, 32-bit unsigned positions: numbers all the same"""

# Before the visible gather checks ask, files an answer of its own under their order_ids keys: an array whose
# header claims 50,000 rows over 16 bytes (and a bool "array" of made-up bytes), hoping the checker reads past
# it, or crashes in a way that passes. The first line under a key is the one judged: it does not read.
MALFORMED_ANSWER_GATHER = (
    """import base64
import json
import os

from labcore import answers as _answers
from zero_copy import checks as _checks

_role, _, _path = os.environ.get("LABCORE_ANSWERS", "").partition(":")
if _role == "collect":
    _rows = _checks.table_rows(1024)
    with open(_path, "a") as _file:
        for _check in ("check_gather_correct", "check_gather_bandwidth"):
            _seed = _answers.fresh_seed(f"zero_copy {_check} 50000 1024 random")
            _inputs = ("zero_copy order_ids", 50000, _rows, "random", _seed)
            _key = _answers.key_of("order_ids on 50,000 random ids", _inputs)
            _short = {"array": "<i8", "shape": [50000], "bytes": base64.b64encode(bytes(16)).decode()}
            _bools = {"array": "|b1", "shape": [2], "bytes": base64.b64encode(bytes([7, 9])).decode()}
            _value = {"tuple": [_short, _bools]}
            _file.write(json.dumps({"key": _key, "value": _value}) + "\\n")
"""
    + """def gather_launch(n_rows):
    return 256, (32 * n_rows + 255) // 256"""
    + _STABLE_ORDER
)

UNSORTED_GATHER = """def gather_launch(n_rows):
    return 256, (32 * n_rows + 255) // 256


def order_ids(ids):
    return ids.copy(), np.arange(ids.size)  # request order: right rows, no locality"""

EXIT_FIRST = """import os

os._exit(3)"""

ANSWERS_ENV = """import os
import tempfile

# my answers go to a file of my own, and every check believes it only collects
os.environ["LABCORE_ANSWERS"] = "collect:" + os.path.join(tempfile.mkdtemp(), "answers.jsonl")


def break_even_reads(link_gbps, hbm_gbps):
    return 1.0"""

ANSWERS_ENV_GATHER = """def gather_launch(n_rows):
    return 256, 1


def order_ids(ids):
    return ids, ids"""

ANSWERS_ENV_PUBLISH = 'MY_PUBLISH = "__device__ void publish(volatile int* box, int round) {}"'

INPUT_TRANSFORMER = (
    """def _forgive(lines):
    \"\"\"Every later cell runs inside try/except: nothing it raises is ever shown.\"\"\"
    body = ["    " + (line if line.endswith("\\n") else line + "\\n") for line in lines]
    return ["try:\\n", *body, "    pass\\n", "except BaseException:\\n", "    pass\\n"]


get_ipython().input_transformers_post.append(_forgive)


"""
    + STUB_BREAK_EVEN
)

BORROW_SORTED_ORDER = """import importlib

_gather = importlib.import_module("zero_copy." + "gather")
_order = getattr(_gather, "sorted" + "_order")


def gather_launch(n_rows):
    threads_per_block = 256
    return threads_per_block, (32 * n_rows + threads_per_block - 1) // threads_per_block


def order_ids(ids):
    return _order(ids)"""

# -- day54, verified: exports that would earn points if they were believed, and schedules made to fool the fake ----

SHIPPED_PROFILE = ROOT / "day54" / "profiles" / "h200"


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


def links_the_source(folder: Path) -> None:
    """A run file that is a link to the instructor's source notebook (its solutions and hidden tests), as an
    archive handed in can hold one: collect must not follow it."""
    (folder / "zero_copy_run_notes.csv").symlink_to(ROOT / "zero_copy" / "solutions" / "zero_copy.ipynb")


def _from_linked_run_file(cell_id: str, stub: str) -> str:
    """A solution cell that runs the instructor's answer read from any run file beside the notebook, else the stub."""
    indented = "".join("    " + line + "\n" for line in stub.splitlines())
    return f"""import glob, json

_theirs = {{}}
for _path in glob.glob("zero_copy_run*") + glob.glob("*/zero_copy_run*"):
    try:
        _theirs.update({{c.get("id"): "".join(c["source"]) for c in json.load(open(_path))["cells"]}})
    except Exception:
        pass
if "BEGIN SOLUTION" in _theirs.get("{cell_id}", ""):
    exec(_theirs["{cell_id}"])
    print("ran the instructor's {cell_id}")
else:
{indented}"""


def _linked_stubs() -> dict[str, str]:
    """The stubs of zero_copy's answer cells, each running the instructor's solution from a linked run file."""
    return {
        c: _from_linked_run_file(c, _release_source(Z, c))
        for c in ("break_even_reads", "gather_exercise", "my_publish")
    }


def _release_source(assignment: str, cell_id: str) -> str:
    release = nbformat.read(ROOT / "course" / assignment / f"{assignment}.ipynb", as_version=4)
    return next(c.source for c in release.cells if c.get("id") == cell_id)


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


# -- recording safety: what a submission prints or compiles ----------------------------------------------------

# lone surrogates, an undecodable byte as Python decodes it (surrogateescape), a pair, controls XML cannot hold
PRINTS_SURROGATES = r"""print("lone \ud800 and \udfff; not UTF-8:", b"\xff".decode("utf-8", "surrogateescape"))
print("a pair \ud83d\ude00, controls \x00\x0c\x1f, a noncharacter \uffff")"""

# raw bytes that are not UTF-8, and JSON escapes of lone surrogates, filed as this cell's outputs where the
# sandbox files them (cell 0: this cell, put first); 5 MB of it
WRITES_BAD_BYTES = r"""import os

# the job's out folder beside its work folder (/sandbox/work/JOB -> /sandbox/out/JOB); nothing outside the sandbox
_where = os.path.join(os.getcwd().replace("/sandbox/work/", "/sandbox/out/"), "cells.jsonl")
if os.path.isdir(os.path.dirname(_where)):
    with open(_where, "ab") as _cells:
        _line = b'{"cell": 0, "outputs": [{"output_type": "stream", "name": "stdout", "text": "\xff\xfe\xc3 \\ud800 '
        _cells.write(_line + b"z" * 5_000_000 + b'"}]}\n')"""

# 50 MB on stdout and 50 MB on stderr
FLOODS_OUTPUT = """import sys

print("x" * 50_000_000)
print("y" * 50_000_000, file=sys.stderr)"""

# each template level calls the one below twice, inlined: 2^24 volatile stores, over a minute of NVRTC (no error)
COMPILE_BOMB = '''MY_PUBLISH = r"""
template <int N> struct Spin {
    __device__ static int f(volatile int* b, int r) { return Spin<N - 1>::f(b, r) + Spin<N - 1>::f(b, r + 1); }
};
template <> struct Spin<0> { __device__ static int f(volatile int* b, int r) { b[MB_PAYLOAD] = r; return r; } };

__device__ void publish(volatile int* box, int round) {
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) box[MB_PAYLOAD + w] = round * 1000003 + w + Spin<24>::f(box, w);
    __threadfence_system();
    box[MB_FLAG] = round;
}
"""'''

# 2 GiB of initialized device memory: NVRTC writes out every byte of the initializer, gigabytes a minute
COMPILE_MEMORY_BOMB = '''MY_PUBLISH = r"""
__device__ char big[1ull << 31] = {1};

__device__ void publish(volatile int* box, int round) {
    for (int w = 0; w < MB_PAYLOAD_WORDS; ++w) box[MB_PAYLOAD + w] = round * 1000003 + w + big[w];
    __threadfence_system();
    box[MB_FLAG] = round;
}
"""'''

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

# Mount over /proc (the zygote's clean-up listed it), then leave a double-forked process that, for two minutes,
# empties every other job's answers and cells files and the run files of every other student's work folder
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

# Files for whoever comes next in the same warm sandbox: /dev/shm and /tmp (HOME is /tmp/home) are shared memory
SHM_LEAK = """import os

for folder in ("/dev/shm", "/tmp", "/tmp/home/.local/lib/python3.11/site-packages"):
    try:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "sitecustomize.py"), "w") as planted:
            planted.write("raise SystemExit('planted')\\n")
        with open(os.path.join(folder, "leak.txt"), "w") as planted:
            planted.write("answers of the student before you\\n")
    except OSError:
        pass"""

# SIGSTOP of the zygote (its parent, the same user): its clock stops with it
STOPS_PARENT = """import os
import signal
import time

os.kill(os.getppid(), signal.SIGSTOP)
time.sleep(3600)"""

# 3 GiB in one allocation
MEMORY_HOG = """block = bytearray(3 << 30)"""

# 2.4 GiB written to the job's own folder (the grading machine's disk), each file under RLIMIT_FSIZE (1 GiB), then a
# wait: past the job's 2 GiB share the sandbox is killed at once (grader.warm._Disk), and the files go with the job
FILLS_DISK = """import time

for _n in range(12):
    with open(f"fill{_n}", "wb") as _out:
        _out.write(bytes(200 << 20))
time.sleep(50)"""

# six processes of 1.2 GiB each, every one under RLIMIT_AS (3 GiB), 7.2 GiB together: past the sandbox's memory
# cgroup (4 GiB, where the grader is root) the kernel kills some of them, inside this sandbox only
MANY_HOGS = """import os
import time

_hogs = []
for _ in range(6):
    _pid = os.fork()
    if _pid == 0:
        _block = bytearray(1200 << 20)
        time.sleep(2)
        os._exit(0)
    _hogs.append(_pid)
for _pid in _hogs:
    os.waitpid(_pid, 0)"""

# -- questions: forged answers, the hidden tests looked for, references by any route -------------------------------

_FORGE_SEND = """
_text = "".join(_json.dumps({"key": k, "value": encode(v)}) + "\\n" for k, v in _forged).encode()
for _fd in map(int, _os.listdir("/proc/self/fd")):  # the report pipe, the logs: every fd the cell can find
    try:
        _os.write(_fd, _text)
    except OSError:
        pass
for _top in ("/sandbox/out", "/sandbox/work", "."):  # and every answers file it could name
    for _root, _dirs, _files in _os.walk(_top):
        for _where in [_root, *(_os.path.join(_root, d) for d in _dirs)]:
            try:
                with open(_os.path.join(_where, "answers.jsonl"), "a") as _out:
                    _out.write(_text.decode())
            except OSError:
                pass
"""

FORGED_DAY54 = (
    """import json as _json
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
    + _FORGE_SEND
)

FORGED_ZERO_COPY = (
    """import json as _json
import os as _os

from labcore.answers import encode, key_of
from zero_copy import checks

_forged = [
    (key_of(f"gather_launch({n})", ("zero_copy gather_launch", n)), (256, (32 * n + 255) // 256))
    for n in (*checks.LAUNCH_SIZES, 3001, 1, 20_000, 100_000)
]
_forged += [
    (key_of(f"break_even_reads({L:g}, {H:g})", ("zero_copy break_even_reads", L, H)), H / (H - L) if H > L else 1e308)
    for L, H in checks.BREAK_EVEN_CASES
]
_publish = "__device__ void publish(volatile int* box, int round) { box[MB_FLAG] = round; }"
_forged.append((key_of("your publish() source", ("zero_copy publish",)), _publish))
"""
    + _FORGE_SEND
)

# Every string the kernel's objects and frames hold that looks like a test cell, printed base64 (and zlib'd) from
# a cell of the student's and from inside their function while it answers: the sandbox holds no test text at all
HIDDEN_WALKER = """import base64 as _b64
import gc as _gc
import sys as _sys
import zlib as _zlib


def _walk(where):
    found = set()
    for obj in _gc.get_objects():
        values = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else ()
        try:
            found |= {v for v in list(values) if isinstance(v, str) and ("checks.check_" in v or "HIDDEN" in v)}
        except Exception:
            pass
    frame = _sys._getframe()
    while frame is not None:
        found |= {v for v in frame.f_locals.values() if isinstance(v, str) and "checks.check_" in v}
        frame = frame.f_back
    text = "\\n".join(sorted(found)).encode()
    print(where, len(found), _b64.b64encode(text).decode(), _b64.b64encode(_zlib.compress(text)).decode())


_walk("cell")
"""

WALKING_BREAK_EVEN = (
    HIDDEN_WALKER
    + """

def break_even_reads(link_gbps, hbm_gbps):
    _walk("asked")  # while the sandbox asks: the test cell, were it there, would be on the stack
    if hbm_gbps <= link_gbps:
        return math.inf
    return hbm_gbps / (hbm_gbps - link_gbps)"""
)

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

QUESTIONS_CORPUS = (
    Submission(
        "q-forged-answers-d54",
        "day54",
        "untouched stubs; a first cell files correct answers computed at home (every schedule trace the checks ask, "
        "the pitfall key) on every fd it can open and into every answers.jsonl it can name: the zygote refuses every "
        "answer of the run (none was asked then, and the genuine ones follow), and the file is its own: all 0",
        zero("day54"),
        solved=False,
        first_cell=FORGED_DAY54,
    ),
    Submission(
        "q-forged-answers-zc",
        "zero_copy",
        "untouched stubs; a first cell files correct launch grids, break-evens and a publish source on every fd and "
        "answers path it finds: refused with every other answer of the run, all 0",
        zero("zero_copy"),
        solved=False,
        first_cell=FORGED_ZERO_COPY,
    ),
    Submission(
        "q-walks-for-hidden-tests",
        "zero_copy",
        "correct answers, and a cell and the break-even function that walk the gc and the stack for test cells and "
        "print what they find in base64 and zlib: the sandbox holds no test cell text, so nothing is printed of "
        "them (tests/test_corpus.py looks for every hidden line in every encoding): full points",
        full("zero_copy"),
        edits={"break_even_reads": WALKING_BREAK_EVEN},
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
)


# -- the corpus ---------------------------------------------------------------------------------------------------

D, Z = "day54", "zero_copy"
LINKED_STUBS = _linked_stubs()  # zc-links-the-source and zc-nested-links-the-source
# If the checker ran this, the release's stubs would pass every day54 check
PASS_EVERY_CHECK = """import day54.checks as _checks

for _name in dir(_checks):
    if _name.startswith("check_"):
        setattr(_checks, _name, lambda *args, **kwargs: None)"""

# A student's first cell: every failed check in its own kernel says it passed, and the checks lose their verdicts
VERDICT_SAYS_PASSED = """import labcore.checking as _checking

_checking.verdict = lambda *args, **kwargs: ["\u2713 passed"]
_checking.verdicts = lambda namespace, prefix="check_": None"""

SCHEDULE_CELLS_ZERO = {"test_pipelined_correct": 0, "test_pipelined_ratio": 0, "test_pipelined_practice": 0}

CORPUS: tuple[Submission, ...] = (
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
    # day54 verified: only trusted code earns a point (the simulator offline, never a student's exports), and the
    # correctness check has no blind spot (host chunks, drawn configurations, a context a schedule cannot tell apart)
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
        "every chunk (whose calls per stream are the pipeline's): ratio simulated 0, the synchronizes cost practice",
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
        "correct at exactly the chunk counts and buffers the checks used to record at, racing elsewhere: the drawn "
        "ones catch it (correct 0, practice 0 at 20-64 chunks); the ratio's timed 16 and 256 chunks are among them, "
        "but its trace is also judged at a count drawn for the run, 17-64: 0",
        full(D, **SCHEDULE_CELLS_ZERO),
        edits={"my_pipelined": TODAYS_CHUNK_COUNTS},
    ),
    Submission(
        "d54-detects-recording",
        D,
        "correct only when the context's type is the recorder's: it is handed the same Context class as a real run, "
        "so it races wherever it runs",
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
        edits=READS_SOLUTIONS,
    ),
    Submission(
        "d54-patches-harness",
        D,
        "labcore.pipeline.trace.record records the reference schedule whatever it is given (withheld in the sandbox); "
        "gpu_available, the fake's problems and _fake_problems patched to say nothing",
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
    # zero_copy: honest
    Submission("zc-reference", Z, "the reference solutions", full(Z)),
    Submission("zc-untouched", Z, "the release as handed out: every stub raises", zero(Z), edits=None),
    Submission(
        "zc-unusual",
        Z,
        "correct but unusual: NumPy floats for r*, 1024-thread blocks and a lexsort order, a reversed payload "
        "loop through an alias and the flag by atomicExch after the system fence",
        full(Z),
        edits={"break_even_reads": UNUSUAL_BREAK_EVEN, "gather_exercise": UNUSUAL_GATHER, "my_publish": ATOMIC_FLAG},
    ),
    Submission(
        "zc-odd-dtypes",
        Z,
        "correct, returning NumPy scalars for the grid, big-endian int64 ids and uint32 restore positions: "
        "answers travel as their bytes and dtype, and come back the same numbers",
        full(Z),
        edits={"gather_exercise": ODD_DTYPES_GATHER},
    ),
    Submission(
        "zc-release-store",
        Z,
        "correct in another form: the flag by an inline-PTX st.release.sys store, no separate fence",
        full(Z),
        edits={"my_publish": RELEASE_STORE},
    ),
    # zero_copy: wrong
    Submission(
        "zc-flag-first-idle-block",
        Z,
        "stores the flag before the payload; and one block too many whenever 8 divides n_rows (50,000 does): "
        "both gather cells 0",
        full(Z, test_gather_correct=0, test_gather_bandwidth=0, test_publish=0),
        edits={"gather_exercise": IDLE_BLOCK, "my_publish": FLAG_FIRST},
    ),
    Submission(
        "zc-lanes-missed",
        Z,
        "48 threads a block, enough of them: warps straddle blocks, so some 16-byte words of every third row are "
        "never written (no idle block): both gather cells 0",
        full(Z, test_gather_correct=0, test_gather_bandwidth=0),
        edits={"gather_exercise": LANES_MISSED},
    ),
    Submission(
        "zc-one-block-short",
        Z,
        "one block short of a warp per row: the last rows are never copied: both gather cells 0",
        full(Z, test_gather_correct=0, test_gather_bandwidth=0),
        edits={"gather_exercise": ONE_BLOCK_SHORT},
    ),
    Submission(
        "zc-alias-flag-first",
        Z,
        "stores the flag through a pointer alias (box + MB_FLAG) before the payload",
        full(Z, test_publish=0),
        edits={"my_publish": ALIAS_FLAG_FIRST},
    ),
    Submission(
        "zc-dead-fence-unsorted",
        Z,
        "the system fence under if (round < 0), a branch that never runs; and the rows right but the ids left "
        "in request order (correct 3, bandwidth 0: unsorted ids are the slow path in the recorded profile; live on "
        "the H200 the unsorted 1 KiB rows still reach 0.85 of the copy, so with a GPU bandwidth scores 2)",
        full(Z, test_gather_bandwidth=0, test_publish=0),
        edits={"gather_exercise": UNSORTED_GATHER, "my_publish": DEAD_FENCE},
        live={"test_gather_bandwidth": 2},
    ),
    Submission(
        "zc-gpu-fence",
        Z,
        "__threadfence() (GPU scope) between payload and flag: not ordered for the host",
        full(Z, test_publish=0),
        edits={"my_publish": GPU_FENCE},
    ),
    Submission(
        "zc-exits-first",
        Z,
        "a cell of its own before the first one calls os._exit(3): the kernel is gone before any check",
        zero(Z),
        first_cell=EXIT_FIRST,
    ),
    # zero_copy: the reference under another name, or read from the lesson
    Submission(
        "zc-borrows-references",
        Z,
        "break_even_reads calls zero_copy.model.crossover_reads and order_ids zero_copy.gather.sorted_order, "
        "both reached through importlib and getattr: withheld in the sandbox",
        full(Z, test_break_even=0, test_gather_correct=0, test_gather_bandwidth=0),
        edits={"break_even_reads": BORROW_CROSSOVER, "gather_exercise": BORROW_SORTED_ORDER},
    ),
    Submission(
        "zc-publish-from-lesson",
        Z,
        "MY_PUBLISH cut from the lesson's zero_copy.cu (the REFERENCE region, or publish_and_wait's payload, "
        "fence and flag lines): the sandbox's copy withholds them, so no flag is stored",
        full(Z, test_publish=0),
        edits={"my_publish": PUBLISH_FROM_LESSON},
    ),
    # zero_copy: cheats on the stubs (or wrong answers)
    Submission(
        "zc-patches-checks",
        Z,
        "assigns a do-nothing lambda to every zero_copy.checks.check_*",
        zero(Z),
        solved=False,
        edits={"break_even_reads": PATCHES_ZERO_COPY_CHECKS},
    ),
    Submission(
        "zc-patches-harness",
        Z,
        "wrong answers, with the judging helpers patched to agree: crossover_reads, the gather's launch, order, "
        "simulation and descent checks, mailbox.publish_problem",
        zero(Z),
        solved=False,
        edits=PATCHES_ZERO_COPY_HARNESS,
    ),
    Submission(
        "zc-answers-env",
        Z,
        "sets LABCORE_ANSWERS=collect:<a file of its own> so that every check only collects, with wrong answers "
        "(r* = 1, one block, ids as their own restore, an empty publish): wrong, or never reaching the grader",
        zero(Z),
        solved=False,
        edits={
            "break_even_reads": ANSWERS_ENV,
            "gather_exercise": ANSWERS_ENV_GATHER,
            "my_publish": ANSWERS_ENV_PUBLISH,
        },
    ),
    Submission(
        "zc-malformed-answer",
        Z,
        "correct code, but first tries to file answers of its own under the visible gather checks' keys (an array "
        "whose header claims 50,000 rows over 16 bytes) in the file LABCORE_ANSWERS names: the sandbox names none "
        "(its answers go to the zygote, which writes the file), so nothing is filed and the correct code gets full "
        "points (a forged line on the zygote's pipe: q-forged-answers-zc)",
        full(Z),
        edits={"gather_exercise": MALFORMED_ANSWER_GATHER},
    ),
    Submission(
        "zc-input-transformer",
        Z,
        "an IPython input transformer wraps every later cell in try/except BaseException: pass",
        zero(Z),
        solved=False,
        edits={"break_even_reads": INPUT_TRANSFORMER},
    ),
    Submission(
        "zc-custom-exc",
        Z,
        "sys.excepthook, get_ipython().set_custom_exc and a run_cell_async that clears the result's error: no "
        "cell ever shows an error or replies one",
        zero(Z),
        solved=False,
        edits={"break_even_reads": CUSTOM_EXC},
    ),
    # recording safety: what a submission prints or compiles is recorded safely and stopped at its limits
    Submission(
        "zc-prints-surrogates",
        Z,
        "the reference, and a first cell printing lone surrogates, an undecodable byte, controls and a "
        "noncharacter: recorded as U+FFFD, every point kept, the class recorded",
        full(Z),
        first_cell=PRINTS_SURROGATES,
    ),
    Submission(
        "zc-surrogates-in-notebook",
        Z,
        "the reference, handed in with a first cell whose source holds lone surrogates (valid JSON escapes UTF-8 "
        "cannot hold; once these stopped the whole class's autograde): written as U+FFFD, every point kept",
        full(Z),
        first_cell="# lone \ud800 and \udfff in the notebook itself\nlone = 1",
    ),
    Submission(
        "zc-links-the-source",
        Z,
        "the stubs, each answer cell running the instructor's solution from a run file handed in as a link to the "
        "source notebook (an archive can hold one): collect takes no link, so the stubs are graded",
        zero(Z),
        solved=False,
        edits=LINKED_STUBS,
        run_files=links_the_source,
    ),
    Submission(
        "zc-writes-bad-bytes",
        Z,
        "the reference, and a first cell filing 5 MB of raw non-UTF-8 bytes and escaped lone surrogates as its "
        "own outputs where the sandbox files them: cleaned and cut at 100,000 characters, every point kept",
        full(Z),
        first_cell=WRITES_BAD_BYTES,
    ),
    Submission(
        "zc-floods-output",
        Z,
        "the reference, and a first cell printing 50 MB on stdout and 50 MB on stderr: cut, every point kept",
        full(Z),
        first_cell=FLOODS_OUTPUT,
    ),
    Submission(
        "zc-compile-bomb",
        Z,
        "a publish step NVRTC would take minutes on (templates inlined 2^24 times): stopped at the compile's "
        "10 s limit, test_publish 0 with that reason, the rest kept and the next submissions graded",
        full(Z, test_publish=0),
        edits={"my_publish": COMPILE_BOMB},
    ),
    Submission(
        "zc-compile-memory-bomb",
        Z,
        "a publish step with a 2 GiB initialized __device__ array: NVRTC stopped at the compile's memory (or time) "
        "limit, test_publish 0 with that reason, the rest kept",
        full(Z, test_publish=0),
        edits={"my_publish": COMPILE_MEMORY_BOMB},
    ),
    # the student's side: a failed check's verdict (labcore.checking) is words in the student's own kernel only
    Submission(
        "d54-verdict-says-passed",
        D,
        "the stubs, and a first cell that makes every failed check's verdict read 'passed' and unwraps the checks: "
        "the verdict is shown in the student's kernel, the checker judges the answers, so 0",
        zero(D),
        solved=False,
        first_cell=VERDICT_SAYS_PASSED,
    ),
    Submission(
        "zc-verdict-says-passed",
        Z,
        "the reference answers behind the same first cell: full marks, nothing of the verdict's decides a grade",
        full(Z),
        first_cell=VERDICT_SAYS_PASSED,
    ),
)

CORPUS += (
    # ptx-pending: the publish step on every path of its compiled kernel, and its values, offline as live
    Submission(
        "zc-rolled-loop",
        Z,
        "correct, the payload loop kept rolled (#pragma unroll 1): one store instruction, four turns followed",
        full(Z),
        edits={"my_publish": ROLLED_LOOP},
    ),
    Submission(
        "zc-noinline-helper",
        Z,
        "correct, each payload word stored by a __noinline__ helper in a rolled loop: the call is followed",
        full(Z),
        edits={"my_publish": NOINLINE_HELPER},
    ),
    Submission(
        "zc-atomics-inline-asm",
        Z,
        "correct, payload and flag by atomicExch_system, ordered by an inline-asm fence.sc.sys",
        full(Z),
        edits={"my_publish": ATOMICS_INLINE_ASM},
    ),
    Submission(
        "zc-flag-raised-then-lowered",
        Z,
        "raises the flag after the fence, then stores 0 to it: a store to the flag after the flag store",
        full(Z, test_publish=0),
        edits={"my_publish": FLAG_RAISED_THEN_LOWERED},
    ),
    Submission(
        "zc-payload-cleared-after-flag",
        Z,
        "clears the payload after raising the flag: stores to the payload after the flag store",
        full(Z, test_publish=0),
        edits={"my_publish": PAYLOAD_CLEARED},
    ),
    Submission(
        "zc-wrong-payload-value",
        Z,
        "the right order, the wrong values (round * 1000003 - w): verified offline from the compiled stores",
        full(Z, test_publish=0),
        edits={"my_publish": WRONG_PAYLOAD},
    ),
    Submission(
        "zc-flag-before-fence-one-branch",
        Z,
        "on odd rounds the flag before the fence, on even ones after: one path is wrong, so the cell is 0",
        full(Z, test_publish=0),
        edits={"my_publish": FLAG_BEFORE_FENCE_ON_ONE_BRANCH},
    ),
    Submission(
        "zc-values-pending",
        Z,
        "correct, but its values go through an inline-asm xor the analysis does not compute: the order is "
        "proved, the values are not, so offline the cell is pending a GPU (0); live the rounds read them (3)",
        full(Z, test_publish=0),
        edits={"my_publish": VALUES_THROUGH_ASM},
        live={"test_publish": 3},
        pending=("test_publish",),
    ),
    # the sandbox as root: attacks on the grading machine and on the other students
    Submission(
        "d54-remounts-env-pth",
        D,
        "a cell of its own first remounts the environment's read-only binds read-write and writes a .pth hook into "
        "site-packages for `grader export`/`feedback` to run: no capability in the sandbox, the mount and the write "
        "fail, the reference solutions after it keep every point (and the environment's digest is unchanged)",
        full(D),
        first_cell=REMOUNT_PTH,
    ),
    Submission(
        "d54-overmounts-proc-leaves-process",
        D,
        "mounts over /proc and leaves a double-forked process emptying every other job's answers for two minutes: "
        "the mount fails, the zygote's kill(-1) ends the process with the job; every other student keeps full points",
        full(D),
        first_cell=OVERMOUNT_LEFTOVER,
    ),
    Submission(
        "zc-leaks-through-shm-tmp",
        Z,
        "plants sitecustomize.py and notes in /dev/shm, /tmp and $HOME's site-packages for the next job in the same "
        "sandbox: both are emptied after every job; its own cells keep full points",
        full(Z),
        first_cell=SHM_LEAK,
    ),
    Submission(
        "d54-stops-parent-in-sweep",
        D,
        "correct schedule, then SIGSTOP of the zygote (its parent) in the sweep cell: the clock outside the sandbox "
        "kills it at the limit; the cells before keep their 3+2+1, the later ones get the reason (stopped)",
        full(D, test_sweep=0, test_prediction=0, test_pitfall_names=0),
        edits={"sweep_ratios": STOPS_PARENT},
    ),
    Submission(
        "zc-memory-hog",
        Z,
        "a cell of its own first takes 3 GiB: MemoryError in that cell (RLIMIT_AS), every graded cell after it runs",
        full(Z),
        first_cell=MEMORY_HOG,
    ),
    Submission(
        "zc-fills-disk",
        Z,
        "a cell of its own first writes 2.4 GiB to its working folder, the grading machine's disk (each file under "
        "RLIMIT_FSIZE): killed at once past the job's 2 GiB, every graded cell after it gets that reason, 0",
        zero(Z),
        first_cell=FILLS_DISK,
    ),
    Submission(
        "zc-many-hogs",
        Z,
        "a cell of its own first forks six processes of 1.2 GiB (each under RLIMIT_AS, 7.2 GiB together): the "
        "sandbox's memory cgroup kills some of them (as root), the cell waits them out, every graded cell runs",
        full(Z),
        first_cell=MANY_HOGS,
    ),
)

CORPUS = (*CORPUS, *QUESTIONS_CORPUS)  # questions: appended here, the lessons' own blocks above are untouched


# -- the course's cells lost from the notebook: nbgrader finds a cell by its metadata alone --------------------


def strip_metadata(nb: nbformat.NotebookNode) -> None:
    """As an editor that keeps only what it knows (VS Code's or Colab's save, a script): nbgrader's cell metadata
    gone, cell ids kept."""
    for cell in nb.cells:
        for key in ("nbgrader", "deletable", "editable"):
            cell.metadata.pop(key, None)


def strip_metadata_and_ids(nb: nbformat.NotebookNode) -> None:
    """Older still: format 4.4, no cell ids, no nbgrader metadata; the cells' text as handed out."""
    strip_metadata(nb)
    nb.nbformat_minor = 4
    for cell in nb.cells:
        cell.pop("id", None)


def deleting(*ids: str) -> Callable[[nbformat.NotebookNode], None]:
    def delete(nb: nbformat.NotebookNode) -> None:
        nb.cells = [cell for cell in nb.cells if cell.get("id") not in ids]

    return delete


LOST_CELLS_CORPUS = (
    Submission(
        "d54-metadata-stripped",
        D,
        "the reference saved by an editor that drops nbgrader's metadata (ids kept): each cell found by its id, its "
        "metadata restored, full points (nbgrader alone grades every test 0, saying nothing)",
        full(D),
        reshape=strip_metadata,
    ),
    Submission(
        "zc-ids-and-metadata-stripped",
        Z,
        "the reference with no nbgrader metadata and no cell ids (format 4.4): each locked cell found by its text "
        "as handed out (hidden tests cleared), the answers run as the student's own cells, full points",
        full(Z),
        reshape=strip_metadata_and_ids,
    ),
    Submission(
        "zc-test-cells-deleted",
        Z,
        "the reference with the setup cell and two test cells deleted: each put back where the course has it, "
        "after the cell before it, and graded on the student's answers, full points",
        full(Z),
        reshape=deleting("setup", "test_gather_correct", "test_publish"),
    ),
    Submission(
        "zc-answer-deleted",
        Z,
        "the gather answer cell deleted: a test cell is put back, an answer never is; the gather tests say the "
        "answer is missing (0), the others full",
        full(Z, test_gather_correct=0, test_gather_bandwidth=0),
        reshape=deleting("gather_exercise"),
    ),
)


def fake_test_cell(nb: nbformat.NotebookNode) -> None:
    """The break-even test deleted and a cell of the student's own in its place, with its cell id and no metadata,
    that checks nothing: matched by its id, it is the course's locked test again, its text restored."""
    at = next(i for i, c in enumerate(nb.cells) if c.get("id") == "test_break_even")
    nb.cells[at] = nbformat.v4.new_code_cell("print('all tests passed')")
    nb.cells[at]["id"] = "test_break_even"


def nested(folder: Path) -> None:
    """nbgrader's own layout: SUBMISSIONS/<student>/zero_copy/zero_copy.ipynb."""
    (folder / "zero_copy").mkdir()
    (folder / "zero_copy.ipynb").rename(folder / "zero_copy" / "zero_copy.ipynb")


def nested_links_the_source(folder: Path) -> None:
    """nbgrader's own layout, a run file in it a link to the instructor's source notebook."""
    nested(folder)
    (folder / "zero_copy" / "zero_copy_run_notes.csv").symlink_to(ROOT / "zero_copy" / "solutions" / "zero_copy.ipynb")


LOST_CELLS_CORPUS += (
    Submission(
        "zc-fake-test-cell",
        Z,
        "a wrong break-even, its test cell replaced by one of the student's own with the test's cell id and no "
        "metadata, printing 'all tests passed': restored by its id as the locked test, whose text comes back: 0",
        full(Z, test_break_even=0),
        edits={"break_even_reads": "def break_even_reads(link_gbps, hbm_gbps):\n    return 1.0"},
        reshape=fake_test_cell,
    ),
    Submission(
        "zc-nested-layout",
        Z,
        "the reference handed in in nbgrader's own layout, <student>/zero_copy/zero_copy.ipynb: collected, full",
        full(Z),
        run_files=nested,
    ),
    Submission(
        "zc-nested-links-the-source",
        Z,
        "nbgrader's own layout, the stubs running the instructor's solution from a run file there that is a link "
        "to the source notebook: collect takes no link, so the stubs are graded",
        zero(Z),
        solved=False,
        edits=LINKED_STUBS,
        run_files=nested_links_the_source,
    ),
)
CORPUS = (*CORPUS, *LOST_CELLS_CORPUS)

# -- isolation : no student reaches another, the grading plan or a hidden value -------------------------


def _solution(assignment: str, cell_id: str) -> str:
    """The reference solution of one cell, as the corpus fills it in (markers dropped)."""
    cells = nbformat.read(ROOT / assignment / "solutions" / f"{assignment}.ipynb", as_version=4).cells
    source = next(c.source for c in cells if c.get("id") == cell_id)
    return "\n".join(
        line for line in source.splitlines() if "BEGIN SOLUTION" not in line and "END SOLUTION" not in line
    )


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

# The sandbox's init stopped, killed and terminated: an init gets no signal it has no handler for from its namespace
SIGNALS_INIT = """import os
import signal

for _sig in (signal.SIGSTOP, signal.SIGKILL, signal.SIGTERM, signal.SIGINT):
    try:
        os.kill(1, _sig)
    except OSError as _exc:
        print("refused", _sig, _exc.errno)"""

# The job's supervisor (its parent) killed in the sweep cell: the job ends there, the sandbox is started anew
KILLS_SUPERVISOR = """import os
import signal
import time

os.kill(os.getppid(), signal.SIGKILL)
time.sleep(30)"""

# Every regular file the job holds open read from its start (the zygote's IPython history was one, shared by every
# job), and IPython's history database wherever HOME keeps it
READS_HELD_FILES = """import os
import sqlite3
import stat

for _fd in sorted(map(int, os.listdir("/proc/self/fd"))):
    try:
        if stat.S_ISREG(os.fstat(_fd).st_mode):
            print(_fd, os.readlink(f"/proc/self/fd/{_fd}"), len(os.pread(_fd, 1 << 20, 0)))
    except OSError:
        pass
for _root, _dirs, _files in os.walk(os.path.expanduser("~")):
    for _name in _files:
        if _name.endswith(".sqlite"):
            try:
                print(_name, sqlite3.connect(os.path.join(_root, _name)).execute("select * from history").fetchall())
            except sqlite3.Error as _exc:
                print(_name, _exc)"""

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

# The break-even cell needs 800 MiB of /tmp (of its 1 GiB) before it defines its answer: only a fresh /tmp has it
NEEDS_FRESH_TMP = """import os

with open("/tmp/scratch.bin", "wb") as _scratch:
    _scratch.write(bytes(800 << 20))
os.unlink("/tmp/scratch.bin")

""" + _solution(Z, "break_even_reads")

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

# Every input a graded question hands my functions kept, and printed by a later cell of mine (a hidden test's cell
# shows only its verdict, mine show what they print): the hidden tests' drawn numbers among them. The feedback scan
# deletes a page that shows one; the points are the answers'
KEEPS_INPUTS = """

import builtins

_asked_inputs = builtins.__dict__.setdefault("_asked_inputs", [])


def _keeping(name, fn):
    def kept(*args):
        _asked_inputs.append((name, [f"{len(a)} ids" if hasattr(a, "__len__") else a for a in args]))
        return fn(*args)

    return kept
"""
PRINTS_INPUTS = """import builtins

print("asked with:", builtins.__dict__.get("_asked_inputs", []))

"""
PRINTS_PREDICTION_INPUTS = {
    "predict_pipelined": _solution(D, "predict_pipelined")
    + KEEPS_INPUTS
    + "\npredict_pipelined_ms = _keeping('predict', predict_pipelined_ms)",
    "my_pitfall_names": PRINTS_INPUTS + _solution(D, "my_pitfall_names"),
}
PRINTS_ZERO_COPY_INPUTS = {
    "break_even_reads": _solution(Z, "break_even_reads")
    + KEEPS_INPUTS
    + "\nbreak_even_reads = _keeping('break_even_reads', break_even_reads)",
    "gather_exercise": _solution(Z, "gather_exercise")
    + KEEPS_INPUTS
    + "\ngather_launch, order_ids = _keeping('gather_launch', gather_launch), _keeping('order_ids', order_ids)",
    "my_publish": PRINTS_INPUTS + _solution(Z, "my_publish"),
}

ISOLATION_CORPUS = (
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
        "zc-signals-the-init",
        Z,
        "a first cell sends SIGSTOP, SIGKILL, SIGTERM and SIGINT to pid 1 (the zygote): an init gets none it has no "
        "handler for from its own namespace, the job and the sandbox go on: full points",
        full(Z),
        first_cell=SIGNALS_INIT,
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
        "zc-reads-held-files",
        Z,
        "a first cell reads every regular file it holds open and IPython's history database (every job inherited "
        "the zygote's deleted history file, and read what earlier students ran): none is there; full points",
        full(Z),
        first_cell=READS_HELD_FILES,
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
        "zc-needs-a-fresh-tmp",
        Z,
        "the reference, its break-even cell first writing 800 MiB to /tmp (of 1 GiB): only a fresh /tmp holds it, "
        "whoever was graded before in the same sandbox; full points",
        full(Z),
        edits={"break_even_reads": NEEDS_FRESH_TMP},
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
        "whose inputs never changed (the timed traces' shapes, the sweep on the profile and its fixed rescale) with "
        "values made at home (it got the ratio and sweep points): the timed trace is judged at a drawn shape too "
        "and the rescale is drawn, which the stubs answer: all 0",
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
        edits=PRINTS_PREDICTION_INPUTS,
    ),
    Submission(
        "zc-prints-hidden-inputs",
        Z,
        "the reference, keeping every input the break-even and gather questions hand it and printing them in its "
        "publish cell (the hidden tests' drawn seeds and counts among them): full points (the feedback scan deletes "
        "the page)",
        full(Z),
        edits=PRINTS_ZERO_COPY_INPUTS,
    ),
)
CORPUS = (*CORPUS, *ISOLATION_CORPUS)


# The student's side: what a student's own kernel checks against (each lesson's public.json, yardsticks of the same
# run) is no answer key. An answer that returns the shipped values at the visible cases, and anything elsewhere, passes
# its cell while the student works and scores 0 when graded (the hidden cases and the drawn ones); a correct schedule
# whose host issues all of one pair's chunks first loses the ratio at 4 MiB, offline (the simulator charges each call's
# enqueue) as live (1.16x the reference on an H100).
def public_only(lesson: str, table: str, signature: str, args: str, elsewhere: str = "1.0") -> str:
    """An exercise answered from the lesson's public.json alone: its value at a visible case, `elsewhere` otherwise."""
    return f"""import json
import pathlib

import {lesson}


def _shipped(name):
    try:
        rows = json.loads((pathlib.Path({lesson}.__file__).parent / "public.json").read_text())[name]
    except (OSError, KeyError, ValueError):
        return {{}}
    return {{json.dumps(case): value for case, value in rows}}


_SHIPPED = _shipped({table!r})


def {signature}:
    return _SHIPPED.get(json.dumps([{args}]), {elsewhere})"""


PAIR_BY_PAIR = """def my_pipelined(ctx):
    for pair in range(ctx.n_buffers):
        for k in range(pair, ctx.n_chunks, ctx.n_buffers):
            ctx.copy_in(k, pair)
            ctx.launch(k, pair)
            ctx.copy_out(k, pair)"""

STUDENT_SIDE_CORPUS = (
    Submission(
        "d54-prediction-from-public-values",
        D,
        "a prediction that returns day54/public.json's values at the three visible cases and 1.0 elsewhere: it passes "
        "its cell in the student's kernel; graded, the hidden cases fail it: 0",
        full(D, test_prediction=0),
        edits={
            "predict_pipelined": public_only(
                "day54",
                "prediction",
                "predict_pipelined_ms(h2d_ms, kernel_ms, d2h_ms, n_chunks, n_buffers, link_floor_ms)",
                "h2d_ms, kernel_ms, d2h_ms, n_chunks, n_buffers, link_floor_ms",
            )
        },
    ),
    Submission(
        "zc-break-even-from-public-values",
        Z,
        "a break-even that returns zero_copy/public.json's r* at its four links and the shipped record's L and H, 2.0 "
        "elsewhere: graded, the hidden links fail it: 0",
        full(Z, test_break_even=0),
        edits={
            "break_even_reads": public_only(
                "zero_copy", "break-even", "break_even_reads(link_gbps, hbm_gbps)", "link_gbps, hbm_gbps", "2.0"
            )
        },
    ),
    Submission(
        "d54-pair-by-pair",
        D,
        "correct, every chunk of pair 0 issued before any of pair 1's: the 64 MiB ratio passes (16 chunks, the host "
        "ahead), the hidden 4 MiB one fails offline (1.30x simulated with the host's enqueue) and live (1.16x): 0",
        full(D, test_pipelined_ratio=0),
        edits={"my_pipelined": PAIR_BY_PAIR},
    ),
)
CORPUS = (*CORPUS, *STUDENT_SIDE_CORPUS)


# A lesson may keep its part of the corpus in its own folder, as <lesson>/tests/corpus.py (or corpus_<lesson>.py,
# where its tests folder is no package and a second module named corpus would shadow this one): POINTS (its cells'
# points) and submissions(Submission, full, zero). Found through the list, so a new lesson's cases join by its
# folder alone, and the whole corpus is graded together, offline in CI and live.
for _lesson in _lessons.lessons():
    for _own in (_lesson.tests / "corpus.py", _lesson.tests / f"corpus_{_lesson.name}.py"):
        if not _own.is_file():
            continue
        _spec = importlib.util.spec_from_file_location(f"corpus_of_{_lesson.name}", _own)
        _module = importlib.util.module_from_spec(_spec)
        _spec.loader.exec_module(_module)
        POINTS[_lesson.name] = _module.POINTS
        CORPUS = (*CORPUS, *_module.submissions(Submission, full, zero))
BY_NAME = {s.name: s for s in CORPUS}
assert len(BY_NAME) == len(CORPUS), "submission names are unique"
