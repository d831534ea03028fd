"""Day 55's part of the adversarial corpus (tests/corpus.py's format): wrong answers, cheats, and correct but unusual
ones, each with the points every autograded cell must get offline, and with a GPU where that differs.

Offline the timing cell is pending a GPU for every schedule whose trace is right (0, said so) and fails for every
other; a GPU decides it (`live`). `submissions(corpus)` builds them with the corpus's own Submission, full and zero
(tests/corpus.py, handed in), so this file imports nothing of tests/ (tests/corpus.py adds them to its CORPUS)."""

from __future__ import annotations

from types import ModuleType

A = "day55"
POINTS = {
    "test_malloc_prediction": 2,
    "test_stream_ordered_correct": 3,
    "test_stream_ordered_time": 2,
    "test_pitfalls": 2,
}
TIME = "test_stream_ordered_time"
SCHEDULE_ZERO = {"test_stream_ordered_correct": 0, TIME: 0}

UNUSUAL_SCHEDULE = """import numpy as np


def my_stream_ordered(ctx):
    k = np.int64(0)
    while k < ctx.n_chunks:
        pair = int(k) % ctx.n_buffers
        ctx.malloc_async(k, pair, stream=pair)
        ctx.copy_in(k, pair, stream=pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)
        ctx.free_async(k, pair, stream=pair)
        k += 1
    ctx.synchronize()"""

AHEAD_SCHEDULE = """def my_stream_ordered(ctx):
    # the next chunk's buffers are allocated on its own stream while this chunk is in flight
    if ctx.n_chunks:
        ctx.malloc_async(0, 0)
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        if k + 1 < ctx.n_chunks:
            ctx.malloc_async(k + 1, (k + 1) % ctx.n_buffers)
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)
        ctx.free_async(k, pair)"""

FREE_ON_OTHER_STREAM = """def my_stream_ordered(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.malloc_async(k, pair)
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)
        ctx.free_async(k, pair, stream=(pair + 1) % ctx.n_streams)"""

# Right only at the shape the timed cell records (16 chunks of 64 MiB, 2 buffers), racing at every other: the
# correctness cell's configurations are drawn anew each grading run, so it cannot know them; the timed cell times
# (and checks) only its own shape, where this schedule is right.
RIGHT_ONLY_WHEN_TIMED = FREE_ON_OTHER_STREAM.replace(
    "(ctx):\n", "(ctx):\n    timed = ctx.n_chunks == 16 and ctx.n_buffers == 2 and ctx.window_bytes == 64 * 2**20\n", 1
).replace("stream=(pair + 1)", "stream=pair if timed else (pair + 1)")

CUDA_MALLOC = """def my_stream_ordered(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.malloc(k, pair)
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)
        ctx.free(k, pair)"""

ALLOCATES_ONCE = """def my_stream_ordered(ctx):
    pairs = range(min(ctx.n_buffers, ctx.n_chunks))
    for pair in pairs:
        ctx.malloc_async(pair, pair)
    for k in range(ctx.n_chunks):
        ctx.copy_in(k, k % ctx.n_buffers)
        ctx.launch(k, k % ctx.n_buffers)
        ctx.copy_out(k, k % ctx.n_buffers)
    for pair in pairs:
        ctx.free_async(ctx.n_chunks - 1, pair)"""

NEVER_FREES = """def my_stream_ordered(ctx):
    for k in range(ctx.n_chunks):
        pair = k % ctx.n_buffers
        ctx.malloc_async(k, pair)
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)"""

COUNTER_SCHEDULE = """_calls = 0


def my_stream_ordered(ctx):
    global _calls
    _calls += 1
    for k in range(ctx.n_chunks):
        pair = (k + _calls) % ctx.n_buffers
        ctx.malloc_async(k, pair)
        ctx.copy_in(k, pair)
        ctx.launch(k, pair)
        ctx.copy_out(k, pair)
        ctx.free_async(k, pair)"""

ALIAS_REFERENCE = "from day55.schedules import stream_ordered as my_stream_ordered"

BORROW_BY_IMPORTLIB = """import importlib

_theirs = getattr(importlib.import_module("day55." + "schedules"), "stream" + "_ordered")


def my_stream_ordered(ctx):
    _theirs(ctx)"""

PEEKS = """def my_stream_ordered(ctx):
    backend = object.__getattribute__(ctx, "_backend")
    for k in range(backend.n_chunks):
        pair = k % backend.n_buffers
        backend.malloc_async(k, pair)
        backend.copy_in(k, pair)
        backend.launch(k, pair)
        backend.copy_out(k, pair)
        backend.free_async(k, pair)"""

FORGETS_FREE = """def predict_malloc_ms(h2d_ms, kernel_ms, d2h_ms, n_chunks, malloc_ms, free_ms):
    return h2d_ms + kernel_ms + d2h_ms + n_chunks * malloc_ms"""

UNUSUAL_PREDICTION = """def predict_malloc_ms(h2d_ms, kernel_ms, d2h_ms, n_chunks, malloc_ms, free_ms):
    total = 0.0
    for _ in range(int(n_chunks)):
        total += (h2d_ms + kernel_ms + d2h_ms) / n_chunks + malloc_ms + free_ms
    return total"""

PREDICT_BY_MODEL = """import day55.model
from labcore.pipeline.stages import Stages


def predict_malloc_ms(h2d_ms, kernel_ms, d2h_ms, n_chunks, malloc_ms, free_ms):
    return day55.model.per_chunk_malloc_ms(Stages(h2d_ms, kernel_ms, d2h_ms, n_chunks), malloc_ms, free_ms)"""

VERDICTS_E_WRONG = (
    """my_verdicts = {"A": "race", "B": "serializes", "C": "returns memory", "D": "correct", "E": "serializes"}"""
)

VERDICTS_ODD_SPELLING = (
    """my_verdicts = {"a": "RACE", "b": " Serializes", "c": "returns_memory", "d": "Correct", "e": "correct"}"""
)

VERDICTS_FROM_KEY = """import day55.checks

my_verdicts = day55.checks.pitfall_key()"""

PASS_EVERY_CHECK = """import day55.checks as _checks

for _name in dir(_checks):
    if _name.startswith("check_"):
        setattr(_checks, _name, lambda *args, **kwargs: None)"""


# Isolation : the zygote signalled, every held file and /tmp read, a process left behind
SIGNALS_AND_READS = """import os
import signal
import stat
import time

for _sig in (signal.SIGSTOP, signal.SIGKILL, signal.SIGTERM):
    os.kill(1, _sig)  # the zygote, its PID namespace's init: no signal of the job's reaches it
for _fd in sorted(map(int, os.listdir("/proc/self/fd"))):
    try:
        if stat.S_ISREG(os.fstat(_fd).st_mode):
            print(_fd, os.readlink(f"/proc/self/fd/{_fd}"), len(os.pread(_fd, 1 << 20, 0)))
    except OSError:
        pass
print(sorted(os.listdir("/tmp")), sorted(os.listdir("/dev/shm")))
if os.fork() == 0:
    os.setsid()
    time.sleep(120)
    os._exit(0)"""


# Answered from the lesson's public.json alone: the shipped value at each visible case, a guess elsewhere. It passes its
# cell in the student's kernel; graded, the hidden cases find it out.
PUBLIC_ONLY_PREDICTION = """import json
import pathlib

import day55


def _shipped():
    try:
        rows = json.loads((pathlib.Path(day55.__file__).parent / "public.json").read_text())["malloc prediction"]
    except (OSError, KeyError, ValueError):
        return {}
    return {json.dumps(case): value for case, value in rows}


_SHIPPED = _shipped()


def predict_malloc_ms(h2d_ms, kernel_ms, d2h_ms, n_chunks, malloc_ms, free_ms):
    return _SHIPPED.get(json.dumps([h2d_ms, kernel_ms, d2h_ms, n_chunks, malloc_ms, free_ms]), 50.0)"""


def submissions(corpus: ModuleType) -> tuple:
    """Day 55's submissions, built with tests/corpus.py's Submission, full and zero."""
    Submission, full, zero = corpus.Submission, corpus.full, corpus.zero
    right = dict(live={TIME: 2}, pending=(TIME,))
    return (
        Submission(
            f"{A}-reference", A, "the reference solutions; timing pending offline", full(A, **{TIME: 0}), **right
        ),
        Submission(f"{A}-untouched", A, "the release as handed out: every stub raises", zero(A), edits=None),
        Submission(
            f"{A}-signals-init-reads-files",
            A,
            "a first cell sends SIGSTOP, SIGKILL and SIGTERM to pid 1, reads every regular file it holds and lists "
            "/tmp and /dev/shm, and leaves a process behind: the zygote is its namespace's init, the job holds only "
            "its own files, the process dies with the job; the reference keeps its points",
            full(A, **{TIME: 0}),
            first_cell=SIGNALS_AND_READS,
            **right,
        ),
        Submission(
            f"{A}-unusual",
            A,
            "correct but unusual: a while loop over a NumPy chunk index, explicit streams, a device wait after the "
            "loop, a prediction summed chunk by chunk, verdicts in odd spellings",
            full(A, **{TIME: 0}),
            edits={
                "my_stream_ordered": UNUSUAL_SCHEDULE,
                "predict_malloc": UNUSUAL_PREDICTION,
                "my_verdicts": VERDICTS_ODD_SPELLING,
            },
            **right,
        ),
        Submission(
            f"{A}-allocates-ahead",
            A,
            "correct but unusual: each chunk's buffers allocated one chunk ahead, on the stream that will use them",
            full(A, **{TIME: 0}),
            edits={"my_stream_ordered": AHEAD_SCHEDULE},
            **right,
        ),
        Submission(
            f"{A}-free-on-other-stream",
            A,
            "frees each chunk on the next pair's stream: a race the recording fake names (the output may be right)",
            full(A, **SCHEDULE_ZERO),
            edits={"my_stream_ordered": FREE_ON_OTHER_STREAM},
        ),
        Submission(
            f"{A}-right-only-when-timed",
            A,
            "right at the timed cell's 16 x 64 MiB x 2 only, freeing on the next pair's stream at every other shape: "
            "the drawn configurations find the race (correct 0); the timed cell judges the shape it times (pending "
            "offline, 2 live)",
            full(A, test_stream_ordered_correct=0, **{TIME: 0}),
            edits={"my_stream_ordered": RIGHT_ONLY_WHEN_TIMED},
            **right,
        ),
        Submission(
            f"{A}-cuda-malloc",
            A,
            "cudaMalloc/cudaFree per chunk: right output, but blocking calls, not stream-ordered allocation",
            full(A, **SCHEDULE_ZERO),
            edits={"my_stream_ordered": CUDA_MALLOC},
        ),
        Submission(
            f"{A}-allocates-once",
            A,
            "stream-ordered calls, but every pair allocated once before the loop: not per chunk",
            full(A, **SCHEDULE_ZERO),
            edits={"my_stream_ordered": ALLOCATES_ONCE},
        ),
        Submission(
            f"{A}-never-frees",
            A,
            "allocates per chunk and never frees: every reuse of a pair leaks the allocation before",
            full(A, **SCHEDULE_ZERO),
            edits={"my_stream_ordered": NEVER_FREES},
        ),
        Submission(
            f"{A}-counter",
            A,
            "a schedule whose pairs depend on how often it ran: its two recordings differ, refused",
            full(A, **SCHEDULE_ZERO),
            edits={"my_stream_ordered": COUNTER_SCHEDULE},
        ),
        Submission(
            f"{A}-peeks",
            A,
            "correct but unusual: reaches behind the Context facade and makes the same calls on what is there; both "
            "recordings are of the same calls (the second is a genuine CupyContext), so it is judged on them",
            full(A, **{TIME: 0}),
            edits={"my_stream_ordered": PEEKS},
            **right,
        ),
        Submission(
            f"{A}-alias-reference",
            A,
            "the lesson's stream_ordered imported under the exercise's name: withheld in the sandbox",
            full(A, **SCHEDULE_ZERO),
            edits={"my_stream_ordered": ALIAS_REFERENCE},
        ),
        Submission(
            f"{A}-borrow-by-importlib",
            A,
            "the reference fetched by importlib from strings cut in two: still a withheld body",
            full(A, **SCHEDULE_ZERO),
            edits={"my_stream_ordered": BORROW_BY_IMPORTLIB},
        ),
        Submission(
            f"{A}-forgets-free",
            A,
            "a prediction that pays one trip in all and forgets cudaFree: wrong on every case",
            full(A, **{TIME: 0, "test_malloc_prediction": 0}),
            edits={"predict_malloc": FORGETS_FREE},
            **right,
        ),
        Submission(
            f"{A}-predict-by-model",
            A,
            "the prediction by calling day55.model's own: withheld in the sandbox",
            full(A, **{TIME: 0, "test_malloc_prediction": 0}),
            edits={"predict_malloc": PREDICT_BY_MODEL},
            **right,
        ),
        Submission(
            f"{A}-prediction-from-public-values",
            A,
            "a prediction that returns day55/public.json's values at the visible cases and 50 ms elsewhere: it passes "
            "its cell in the student's kernel; graded, the hidden cases fail it: 0",
            full(A, **{TIME: 0, "test_malloc_prediction": 0}),
            edits={"predict_malloc": PUBLIC_ONLY_PREDICTION},
            **right,
        ),
        Submission(
            f"{A}-verdict-e-wrong",
            A,
            "four verdicts right, E called serializing (it allocates ahead and never waits)",
            full(A, **{TIME: 0, "test_pitfalls": 0}),
            edits={"my_verdicts": VERDICTS_E_WRONG},
            **right,
        ),
        Submission(
            f"{A}-verdicts-from-key",
            A,
            "the verdicts read from day55.checks.pitfall_key: withheld and never recorded",
            full(A, **{TIME: 0, "test_pitfalls": 0}),
            edits={"my_verdicts": VERDICTS_FROM_KEY},
            **right,
        ),
        Submission(
            f"{A}-patches-checks",
            A,
            "untouched stubs and a first cell that makes every check a no-op in its own kernel: checks run in the "
            "trusted checker, so nothing is earned",
            zero(A),
            solved=False,
            first_cell=PASS_EVERY_CHECK,
        ),
    )
