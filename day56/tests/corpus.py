"""Day 56's submissions for the adversarial corpus (tests/corpus.py's format and points): honest, unusual but
correct, wrong, and cheating. tests/corpus.py adds them to its CORPUS and POINTS (it finds this module through the
list of lessons), and tests/test_corpus.py grades them end to end with real nbgrader; test_day56_corpus.py runs
each one's answers through the checks here, in the student's own kernel, as a quick check of the expected points.

Offline the timed cell of a correct schedule is pending a GPU (0, said so); a schedule that a capture cannot hold
fails it offline too (the capture is judged before anything would be timed).
"""

from __future__ import annotations

from types import ModuleType

A = "day56"
POINTS = {"test_break_even": 2, "test_capture_safe": 3, "test_capture_timed": 2, "test_pitfalls": 1}
PENDING = ("test_capture_timed",)
LIVE = {"test_capture_timed": 2}

# -- answers, as a student's cells hold them ------------------------------------------------------------------------

UNUSUAL_BREAK_EVEN = """import math


def break_even_launches(one_off_ms, enqueue_ms, launch_ms):
    # integer launches by ceiling division, and a saving of nothing as float('inf')
    saved = enqueue_ms - launch_ms
    if not saved > 0:
        return float("inf")
    return int(-(-one_off_ms // saved))"""

REVERSED_SCHEDULE = """def my_capturable(ctx):
    # the chunks from the last to the first, each pair on its stream given explicitly
    k = ctx.n_chunks - 1
    while k >= 0:
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair, stream=pair)
        ctx.launch(k, pair, stream=pair)
        ctx.copy_out(k, pair, stream=pair)
        k -= 1"""

BATCHED_SCHEDULE = """def my_capturable(ctx):
    # a round of buffer pairs at a time: every copy in of the round, then every kernel, then every copy out
    for first in range(0, ctx.n_chunks, ctx.n_buffers):
        round_ = range(first, min(first + ctx.n_buffers, ctx.n_chunks))
        for k in round_:
            ctx.copy_in(k, k - first)
        for k in round_:
            ctx.launch(k, k - first)
        for k in round_:
            ctx.copy_out(k, k - first)"""

SPELLED_ANSWERS = """my_capture_answers = {"SYNC": "Error", "host_read": "  OLD", "new_input": "Old "}
my_capture_answers["gpu_time"] = "SAME"
my_capture_answers = {key.lower(): value for key, value in my_capture_answers.items()}"""

WAITS_AT_THE_END = """def my_capturable(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)
    ctx.synchronize()  # day 54's habit: inside a capture the wait is refused and the capture invalidated"""

WAITS_EACH_ROUND = """def my_capturable(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)
        if pair == ctx.n_buffers - 1:
            ctx.stream_synchronize(0)"""

KERNEL_ON_THE_NEXT_STREAM = """def my_capturable(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair, stream=(pair + 1) % ctx.n_buffers)  # unordered after its copy in: a race
        ctx.copy_out(k, pair)"""

# Right only at the timed cell's shape (64 chunks of 4 MiB, 3 buffers), each kernel on the next pair's stream at
# every other: the capture cell's configurations are drawn anew each grading run; the timed cell checks and times
# its own shape only.
RIGHT_ONLY_WHEN_TIMED = (
    KERNEL_ON_THE_NEXT_STREAM.replace(
        "(ctx):\n",
        "(ctx):\n    timed = ctx.n_chunks == 64 and ctx.n_buffers == 3 and ctx.window_bytes == 4 * 2**20\n",
        1,
    )
    .replace("stream=(pair + 1)", "stream=pair if timed else (pair + 1)")
    .replace("  # unordered after its copy in: a race", "")
)

SERIAL_SCHEDULE = """def my_capturable(ctx):
    # day 54's naive schedule: right, capturable, and serial (the timed check's floor bound fails it on a GPU)
    for k in range(ctx.n_chunks):
        ctx.copy_in(k, 0)
        ctx.launch(k, 0)
        ctx.copy_out(k, 0)"""

NO_CEILING = """import math


def break_even_launches(one_off_ms, enqueue_ms, launch_ms):
    saving = enqueue_ms - launch_ms
    return one_off_ms / saving if saving > 0 else math.inf  # a fraction of a launch"""

NEGATIVE_WHEN_NO_SAVING = """import math


def break_even_launches(one_off_ms, enqueue_ms, launch_ms):
    return math.ceil(one_off_ms / (enqueue_ms - launch_ms)) if enqueue_ms != launch_ms else math.inf"""

WRONG_ANSWERS = (
    """my_capture_answers = {"sync": "waits", "host_read": "result", "new_input": "old", "gpu_time": "faster"}"""
)

CALLS_THE_MODEL = """import day56.model


def break_even_launches(one_off_ms, enqueue_ms, launch_ms):
    return day56.model.break_even_launches(one_off_ms, enqueue_ms, launch_ms)"""

LESSONS_SCHEDULE = """import importlib

my_capturable = getattr(importlib.import_module("day56." + "schedules"), "pipe" + "lined")"""

READS_THE_KEY = """import day56.checks

my_capture_answers = day56.checks.pitfall_key()"""

PATCHES_THE_CHECKS = """import day56.checks as _checks
import day56.model as _model

for _name in dir(_checks):
    if _name.startswith("check_"):
        setattr(_checks, _name, lambda *args, **kwargs: None)
_model.break_even_launches = lambda *args: 1.0"""

FORGES_A_TRACE = """import day56.checks as _checks

# answers the trace question itself, with the lesson's pipeline recorded at home, whatever my_capturable does
_checks.ask_trace = lambda schedule, n, b, w: _checks.trace.record(
    lambda ctx: [(ctx.copy_in(k, k % b), ctx.launch(k, k % b), ctx.copy_out(k, k % b)) for k in range(n)], n, b,
    window_bytes=w).to_json()"""


# Isolation : what a capture refuses, which the recording fake passed offline (live CUDA refused it)
LEGACY_LAUNCH_IN_CAPTURE = """from labcore.pipeline.context import LEGACY


def my_capturable(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair)
        ctx.launch(k, pair, stream=LEGACY)  # ordered after every stream's work outside a capture; inside, refused
        ctx.copy_out(k, pair)"""

LEGACY_COPIES_IN_CAPTURE = """from labcore.pipeline.context import LEGACY


def my_capturable(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.copy_in(k, pair, stream=LEGACY)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair, stream=LEGACY)"""

MALLOC_IN_CAPTURE = """def my_capturable(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.free(k, pair)  # fresh buffers for every chunk: cudaFree and cudaMalloc, which a capture cannot record
        ctx.malloc(k, pair)
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)"""

KEEPS_BREAK_EVEN_INPUTS = """import builtins
import math

_asked_inputs = builtins.__dict__.setdefault("_asked_inputs", [])


def break_even_launches(one_off_ms, enqueue_ms, launch_ms):
    _asked_inputs.append((one_off_ms, enqueue_ms, launch_ms))  # the hidden cases' drawn inputs too
    saved = enqueue_ms - launch_ms
    return math.ceil(one_off_ms / saved) if saved > 0 else math.inf"""

PRINTS_INPUTS_AND_ANSWERS = """import builtins

print("asked with:", builtins.__dict__.get("_asked_inputs", []))
my_capture_answers = {"sync": "error", "host_read": "old", "new_input": "old", "gpu_time": "same"}"""

TRACES_AND_SIGNALS = """import ctypes
import os
import signal

_libc = ctypes.CDLL(None, use_errno=True)
for _pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()):
    print(_pid, [_libc.ptrace(_request, _pid, 0, 0) for _request in (16, 0x4206)], ctypes.get_errno())
for _sig in (signal.SIGSTOP, signal.SIGKILL):
    os.kill(1, _sig)  # the zygote, its PID namespace's init: neither reaches it"""


# Answered from the lesson's public.json alone: the shipped value at each visible case, a guess elsewhere. It passes its
# cell in the student's kernel; graded, the hidden cases find it out.
PUBLIC_ONLY_BREAK_EVEN = """import json
import pathlib

import day56


def _shipped():
    try:
        rows = json.loads((pathlib.Path(day56.__file__).parent / "public.json").read_text())["break-even"]
    except (OSError, KeyError, ValueError):
        return {}
    return {json.dumps(case): value for case, value in rows}


_SHIPPED = _shipped()


def break_even_launches(one_off_ms, enqueue_ms, launch_ms):
    return _SHIPPED.get(json.dumps([one_off_ms, enqueue_ms, launch_ms]), 4.0)"""


def submissions(corpus: ModuleType) -> tuple:
    """The day-56 submissions, made with tests/corpus.py's Submission, full and zero (corpus: that module)."""
    s, full, zero = corpus.Submission, corpus.full, corpus.zero
    return (
        # honest
        s(
            "d56-reference",
            A,
            "the reference solutions; the timed cell pending offline",
            full(A, test_capture_timed=0),
            pending=PENDING,
            live=LIVE,
        ),
        s("d56-untouched", A, "the release as handed out: every stub raises", zero(A), edits=None),
        s("d56-stubs-left", A, "solutions left as stubs", zero(A), solved=False),
        # unusual but correct
        s(
            "d56-unusual",
            A,
            "correct but unusual: chunks from the last to the first on explicit streams in a while loop, an integer "
            "break-even by ceiling division and float('inf'), answers in capitals with spaces: full points",
            full(A, test_capture_timed=0),
            edits={
                "my_capturable": REVERSED_SCHEDULE,
                "break_even_launches": UNUSUAL_BREAK_EVEN,
                "my_capture_answers": SPELLED_ANSWERS,
            },
            pending=PENDING,
            live=LIVE,
        ),
        s(
            "d56-batched",
            A,
            "a round of pairs at a time (all copies in, all kernels, all copies out): stream order still protects "
            "every pair, and the graph overlaps as well",
            full(A, test_capture_timed=0),
            edits={"my_capturable": BATCHED_SCHEDULE},
            pending=PENDING,
            live=LIVE,
        ),
        # wrong
        s(
            "d56-waits-at-the-end",
            A,
            "day 54's synchronize after the loop, inside the captured function: refused like CUDA refuses it",
            full(A, test_capture_safe=0, test_capture_timed=0),
            edits={"my_capturable": WAITS_AT_THE_END},
        ),
        s(
            "d56-waits-each-round",
            A,
            "a stream synchronize after every round of pairs: the capture is invalidated",
            full(A, test_capture_safe=0, test_capture_timed=0),
            edits={"my_capturable": WAITS_EACH_ROUND},
        ),
        s(
            "d56-race",
            A,
            "each kernel on the next pair's stream: unordered after its own copy in, a race the fake finds",
            full(A, test_capture_safe=0, test_capture_timed=0),
            edits={"my_capturable": KERNEL_ON_THE_NEXT_STREAM},
        ),
        s(
            "d56-right-only-when-timed",
            A,
            "right at the timed cell's 64 x 4 MiB x 3 only, racing at every other shape: the drawn configurations "
            "find the race (capture 0); the timed cell judges the shape it times (pending offline, 2 live)",
            full(A, test_capture_safe=0, test_capture_timed=0),
            edits={"my_capturable": RIGHT_ONLY_WHEN_TIMED},
            pending=PENDING,
            live=LIVE,
        ),
        s(
            "d56-serial",
            A,
            "naive's serial loop: right and capturable (full offline), but on a GPU 1.8x the link floor: the timed "
            "cell fails live",
            full(A, test_capture_timed=0),
            edits={"my_capturable": SERIAL_SCHEDULE},
            pending=PENDING,
        ),
        s(
            "d56-break-even-fractions",
            A,
            "a break-even that does not round up (a fraction of a launch): the break-even cell 0",
            full(A, test_capture_timed=0, test_break_even=0),
            edits={"break_even_launches": NO_CEILING},
            pending=PENDING,
            live=LIVE,
        ),
        s(
            "d56-break-even-negative",
            A,
            "a break-even of a negative count where a launch costs more than the enqueue loop it replaces",
            full(A, test_capture_timed=0, test_break_even=0),
            edits={"break_even_launches": NEGATIVE_WHEN_NO_SAVING},
            pending=PENDING,
            live=LIVE,
        ),
        s(
            "d56-wrong-pitfalls",
            A,
            "two of the four pitfalls answered wrong",
            full(A, test_capture_timed=0, test_pitfalls=0),
            edits={"my_capture_answers": WRONG_ANSWERS},
            pending=PENDING,
            live=LIVE,
        ),
        # cheating
        s(
            "d56-calls-the-model",
            A,
            "a break-even that calls day56.model's: the sandbox's package holds no body of it",
            full(A, test_capture_timed=0, test_break_even=0),
            edits={"break_even_launches": CALLS_THE_MODEL},
            pending=PENDING,
            live=LIVE,
        ),
        s(
            "d56-lessons-schedule",
            A,
            "my_capturable is day56.schedules.pipelined, found by a computed name: withheld in the sandbox",
            full(A, test_capture_safe=0, test_capture_timed=0),
            edits={"my_capturable": LESSONS_SCHEDULE},
        ),
        s(
            "d56-reads-the-key",
            A,
            "the pitfall answers read from day56.checks.pitfall_key(): withheld in the sandbox",
            full(A, test_capture_timed=0, test_pitfalls=0),
            edits={"my_capture_answers": READS_THE_KEY},
            pending=PENDING,
            live=LIVE,
        ),
        s(
            "d56-patches-the-checks",
            A,
            "untouched stubs; a first cell replaces every day56 check and the model by do-nothing lambdas: the "
            "trusted checker's own are untouched, all 0",
            zero(A),
            solved=False,
            first_cell=PATCHES_THE_CHECKS,
        ),
        # isolation
        s(
            "d56-legacy-launch-in-capture",
            A,
            "kernels on the legacy default stream inside the captured function: CUDA refuses them "
            "(cudaErrorStreamCaptureImplicit) and the fake now does too (it passed offline): capture 0, timed 0",
            full(A, test_capture_safe=0, test_capture_timed=0),
            edits={"my_capturable": LEGACY_LAUNCH_IN_CAPTURE},
        ),
        s(
            "d56-legacy-copies-in-capture",
            A,
            "the copies on the legacy default stream inside the capture, the kernels on the pairs' streams: refused "
            "like the launches: capture 0, timed 0",
            full(A, test_capture_safe=0, test_capture_timed=0),
            edits={"my_capturable": LEGACY_COPIES_IN_CAPTURE},
        ),
        s(
            "d56-malloc-in-capture",
            A,
            "cudaFree and cudaMalloc of each chunk's buffers inside the captured function: calls a capture cannot "
            "record (cudaErrorStreamCaptureUnsupported): capture 0, timed 0",
            full(A, test_capture_safe=0, test_capture_timed=0),
            edits={"my_capturable": MALLOC_IN_CAPTURE},
        ),
        s(
            "d56-prints-break-even-inputs",
            A,
            "a right break-even that keeps every input it is asked with, the hidden cases' drawn ones among them, "
            "and a later cell that prints them: full points (the feedback scan deletes the page)",
            full(A, test_capture_timed=0),
            edits={"break_even_launches": KEEPS_BREAK_EVEN_INPUTS, "my_capture_answers": PRINTS_INPUTS_AND_ANSWERS},
            pending=PENDING,
            live=LIVE,
        ),
        s(
            "d56-traces-and-signals-the-init",
            A,
            "a first cell ptraces every process it sees and sends SIGSTOP and SIGKILL to pid 1: the zygote is not "
            "dumpable and its namespace's init, nothing happens; the reference keeps its points",
            full(A, test_capture_timed=0),
            first_cell=TRACES_AND_SIGNALS,
            pending=PENDING,
            live=LIVE,
        ),
        s(
            "d56-forges-the-trace",
            A,
            "waits at the end, and a first cell that makes the trace question answer with a good pipeline's trace: "
            "the sandbox answers planned questions with the course's askers, so the patch changes nothing",
            full(A, test_capture_safe=0, test_capture_timed=0),
            edits={"my_capturable": WAITS_AT_THE_END},
            first_cell=FORGES_A_TRACE,
        ),
        s(
            "d56-break-even-from-public-values",
            A,
            "a break-even that returns day56/public.json's values at the visible cases and 4 elsewhere: it passes its "
            "cell in the student's kernel; graded, the hidden cases fail it: 0",
            full(A, test_break_even=0, test_capture_timed=0),
            edits={"break_even_launches": PUBLIC_ONLY_BREAK_EVEN},
            pending=PENDING,
            live=LIVE,
        ),
    )
