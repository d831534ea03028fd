"""The checks autograded day-56 cells call. Each raises AssertionError with what it found.

Every call into the student's code goes through labcore.answers (answers as data): while grading, the sandbox
records the schedule's trace and the values, and the trusted checker judges them, running nothing of the
student's. A schedule is judged on its trace (labcore.pipeline.trace): offline it is replayed inside a stream
capture on the recording fake (labcore.pipeline.recording), which refuses a synchronizing call or a host read the
way CUDA does and then finds races and misrouted chunks; with a GPU the same trace is also captured into a real
graph, launched, and compared bit for bit with naive on fresh input. The timed check runs only on a GPU: without
one it is pending (labcore.pending), never passed on evidence the student made.

The configurations are drawn for each grading run from the grading seed (labcore.answers.fresh_seed), fresh on
every call in a student's own kernel.
"""

from __future__ import annotations

import dataclasses
import math
import random
import secrets
import statistics
import time
from collections.abc import Callable
from typing import Any

from day56 import graph, model, schedules
from day56.config import MiB
from labcore import answers, checking, measured, public
from labcore.answers import reference
from labcore.checking import Case, Result, answered_calls, assert_own_function, expected_output, say, verdicts
from labcore.device import gpu_available
from labcore.gpulock import gpu_turn
from labcore.pending import PendingGPU, pending_message
from labcore.pipeline import trace
from labcore.pipeline.context import CupyContext, HostArrays
from labcore.pipeline.recording import CaptureError, RecordingContext
from labcore.pipeline.verify import bit_exact_check
from labcore.timing import time_pass

KiB = 1 << 10


def _draws(name: str) -> random.Random:
    return random.Random(answers.fresh_seed(f"day56 configurations: {name}"))


# -- exercise 1: the break-even in launches ----------------------------------------------------------------------


def break_even_cases(name: str = "break-even") -> list[tuple[float, float, float]]:
    """(one_off_ms, enqueue_ms, launch_ms) drawn for this grading run: three with a saving (a small, a middling
    and a large one-off), and one where a launch saves nothing (the answer is inf)."""
    rng = _draws(name)
    cases = []
    for low, high in ((0.2, 2.0), (2.0, 20.0), (20.0, 200.0)):
        enqueue = round(rng.uniform(0.05, 5.0), 4)
        cases.append((round(rng.uniform(low, high), 4), enqueue, round(enqueue * rng.uniform(0.002, 0.2), 4)))
    launch = round(rng.uniform(0.05, 1.0), 4)
    cases.append((round(rng.uniform(0.5, 5.0), 4), round(launch * rng.uniform(0.5, 1.0), 4), launch))
    rng.shuffle(cases)
    return cases


OWN_BREAK_EVEN = [(1.2, 0.9, 0.05), (12.5, 2.4, 0.3), (150.0, 4.1, 0.02), (2.0, 0.3, 0.45)]  # in place of the drawn
VISIBLE_BREAK_EVEN = [(3.0, 1.0, 0.25), (1.0, 0.1, 0.1)]  # the release's test cell asks these beside them
BREAK_EVEN = public.Expectation(  # the cases your own kernel checks, and the model's answer to each (labcore.public)
    "day56", "break-even", VISIBLE_BREAK_EVEN + OWN_BREAK_EVEN, lambda case: model.break_even_launches(*case)
)


def check_break_even(fn: Callable[..., float], *, cases: list[tuple[float, float, float]] | None = None) -> None:
    """Your break_even_launches(one_off_ms, enqueue_ms, launch_ms) gives the model's whole number of launches
    (inf where a launch saves nothing) on four cases drawn for this grading run, and on `cases` if given; in your
    own kernel on OWN_BREAK_EVEN in place of the drawn ones, every case judged on the public values (BREAK_EVEN)."""
    assert_own_function(
        fn,
        n_params=3,
        what="break_even_launches",
        references=(model.break_even_launches,),
        forbidden=("model",),
        hint="work the arithmetic out yourself",
    )
    asked = [*(cases or []), *answers.asked_cases(break_even_cases, OWN_BREAK_EVEN)]
    for case, got in zip(asked, answered_calls(fn, "break_even_launches", "day56 break-even", asked), strict=True):
        want = BREAK_EVEN.want(case)
        one_off, enqueue, launch = case
        where = f"one-off {one_off} ms, enqueue {enqueue} ms, launch {launch} ms"
        assert isinstance(got, (int, float)) and not isinstance(got, bool), f"{where}: you give {got!r}, not a number"
        if math.isinf(want):
            assert math.isinf(got) and got > 0, (
                f"{where}: a launch saves nothing, so it never pays back (inf); you give {got!r}"
            )
            continue
        assert got == want, f"{where}: you give {got!r} launches, the model {want:.0f}" + (
            " (a number of launches is whole: round up)" if abs(got - want) < 1 else ""
        )
    say(f"{len(asked)} cases, each the model's number of launches")


# -- exercise 2: a schedule a capture can hold -------------------------------------------------------------------


def capture_cases(name: str, count: int = 6) -> list[Case]:
    """Configurations drawn for this grading run: 1 chunk, an odd count, one the buffers do not divide, many
    (100-300), the rest 2-64; buffers 2-6 (2 and 3 always); windows 4 KiB-64 MiB in whole 4 KiB pages."""
    rng = _draws(name)
    depths = [2, 3] + [rng.randint(2, 6) for _ in range(count - 2)]
    rng.shuffle(depths)
    counts = [
        1,
        rng.randrange(3, 32, 2),
        rng.choice([n for n in range(5, 61) if n % depths[2]] or [7]),
        rng.randint(100, 300),
    ]
    counts += [rng.randint(2, 64) for _ in range(count - 4)]
    windows = [max(4 * KiB, round(2 ** rng.uniform(12, 26) / (4 * KiB)) * 4 * KiB) for _ in range(count)]
    return [Case(n, b, w) for n, b, w in zip(counts, depths, windows, strict=True)]


def live_cases(name: str) -> list[Case]:
    """What a GPU captures and launches on fresh input: three cases of 64 KiB-1 MiB windows, at most 256 chunks."""
    rng = _draws(f"{name} live")
    return [
        Case(n, b, max(64 * KiB, round(2 ** rng.uniform(16, 20) / (4 * KiB)) * 4 * KiB))
        for n, b in ((1, 2), (rng.randrange(3, 32, 2), 3), (rng.randint(100, 256), rng.randint(2, 6)))
    ]


@answers.asker
def ask_trace(schedule: Callable[[Any], None], n_chunks: int, buffers: int, window: int) -> str:
    """The schedule's trace at one configuration, as JSON text."""
    return trace.record(schedule, n_chunks, buffers, window_bytes=window).to_json()


def traced(schedule: Callable[[Any], None], case: Case) -> trace.Trace:
    """The schedule's trace at one configuration: recorded here, or in the grading sandbox and read back."""
    question, read = checking.trace_question(case.n_chunks, case.buffers, case.window)
    inputs = ("day56 trace", case.n_chunks, case.buffers, case.window)
    return answers.answer(question, inputs, ask_trace, schedule, *dataclasses.astuple(case), read=read)


def capture_problem(recorded: trace.Trace) -> str | None:
    """What is wrong with a trace as a captured graph (recording fake): a call a capture refuses, or, once the
    graph's launch has finished (the host waits after the capture), a race or a misrouted chunk."""
    fake = RecordingContext(recorded.n_chunks, recorded.n_buffers, n_streams=recorded.n_streams)
    where = f"{recorded.n_chunks} chunks, {recorded.n_buffers} buffers"
    fake.begin_capture()
    try:
        recorded.replay(fake)
    except CaptureError as exc:
        return f"{where}: {exc}"
    except IndexError as exc:
        return f"{where}: {exc}"
    fake.end_capture()
    fake.synchronize()  # the host waits for the launch
    problems = fake.problems()
    if problems:
        return f"{where}: {len(problems)} problem(s); first bad chunk {problems[0].chunk}: {problems[0].message}"
    if not fake.ops:
        return f"{where}: the schedule enqueues nothing"
    return None


def _live_graph(recorded: trace.Trace) -> str:
    """Capture the trace into a graph on the GPU, launch it once on fresh random input, compare with naive."""
    host = HostArrays(recorded.window_bytes * recorded.n_chunks)
    host.fill_random(secrets.randbelow(2**31))
    ctx = CupyContext(host, recorded.window_bytes, recorded.n_buffers, 512)
    expected = expected_output(host, ctx)
    gctx = graph.capturable(ctx)
    with gpu_turn():
        captured = graph.capture(gctx, recorded.replay)
        exec_, _ = graph.instantiate(captured)
        graph.launch(exec_)
        ctx.synchronize()
    check = bit_exact_check("your graph", host.verify_and_poison(expected, ctx.chunk_elems), recorded.n_chunks)
    graph.destroy_exec(exec_)
    captured.destroy()
    assert check.ok, f"live, your schedule captured as a graph at {recorded.n_chunks} chunks: {check.detail}"
    return check.detail


def assert_own_schedule(schedule: Callable[[Any], None]) -> None:
    """In the student's own kernel, an early word: the schedule is written in the notebook, not the lesson's.
    While grading the sandbox withholds the lesson's schedules themselves, under any name."""
    checking.assert_own_schedule(
        schedule, references=(schedules.pipelined, schedules.naive), forbidden=("schedules", "pipelined")
    )


def check_capture_safe(schedule: Callable[[Any], None]) -> None:
    """Your schedule can be captured into a graph: no synchronizing call and no host read inside it, and, once the
    graph's launch has finished, every chunk's output from its own input with no race (recording fake, six
    configurations drawn for this grading run); with a GPU, also captured, launched and bit-exact on fresh input."""
    assert_own_schedule(schedule)
    cases = capture_cases("capture")
    live = live_cases("capture")
    recorded = [traced(schedule, case) for case in cases + live]
    answers.asked()
    checking.judge_correct(
        recorded,
        cases,
        live,
        capture_problem,
        _live_graph,
        (
            "offline: captured on the recording fake at {shown}: nothing a capture refuses, no race, every chunk right",
            "captured on the fake at {shown}; live as a graph on fresh input at {live}",
        ),
    )


# -- exercise 3: the graph's timing (a GPU decides) --------------------------------------------------------------

TIMED_CHUNKS = 64
TIMED_WINDOW = 4 * MiB  # 64 chunks of 4 MiB: 256 MiB each way, a quarter of the lesson's array (GPU seconds)
# your graph's launch costs the host at least this many times less than your enqueue loop: the reference measured
# 4.9x on the H200 (2026-12-03; 2.25 ms against 0.46 ms at 64 chunks: a launch's cost grows with the graph's nodes)
HOST_FACTOR = 3.0
GPU_FACTOR = 1.05  # at most this much GPU time over your schedule stream by stream, in the same run
FLOOR_FACTOR = 1.15  # and at most this much over the duplex floor (the three-buffer pipeline measures about 1.06x)
# A bar missed in the first round is measured again, MAX_TIMED_ROUNDS rounds of 5 runs in all, and judged once on the
# medians of every run: in a live class of 100 on the H200 (2026-12-05) one copy of the reference missed in one round
# of 5. A miss by more than FAR_OFF of its bar is not measured again.
MAX_TIMED_ROUNDS = 3
FAR_OFF = 1.25


def _host_clocked(fn: Callable[[], None], cpu: list[float], wall: list[float]) -> Callable[[], None]:
    """fn, filing the host's cost of each call: this thread's CPU time (what the host spent issuing the work, which
    other processes taking the CPU meanwhile cannot inflate) and, beside it, the wall clock."""

    def run() -> None:
        c0, t0 = time.thread_time(), time.perf_counter()
        fn()
        cpu.append((time.thread_time() - c0) * 1e3)
        wall.append((time.perf_counter() - t0) * 1e3)

    return run


def _timed_runs(recorded: trace.Trace) -> tuple[dict[str, list[float]], int, str | None]:
    """The timed rounds of check_capture_timed: (every run's times by name, rounds done, what was wrong with the
    graph's verified output or None). A bar missed in the first round is measured again (MAX_TIMED_ROUNDS)."""
    host = HostArrays(TIMED_WINDOW * TIMED_CHUNKS)
    host.fill_random(secrets.randbelow(2**31))
    ctx = CupyContext(host, TIMED_WINDOW, 3, 512)
    expected = expected_output(host, ctx)
    gctx = graph.capturable(ctx)
    with gpu_turn():
        captured = graph.capture(gctx, recorded.replay)
        exec_, _ = graph.instantiate(captured)
    names = ("enqueue", "launch", "enqueue wall", "launch wall", "floor", "streams", "graph")
    runs: dict[str, list[float]] = {name: [] for name in names}
    timed = dict(params={}, domain="grader", repeats=5)
    try:
        for done in range(1, MAX_TIMED_ROUNDS + 1):
            clocks: dict[str, list[float]] = {name: [] for name in names[:4]}
            floor = time_pass(
                lambda: schedules.duplex(ctx.with_buffers(2)), key="grader duplex", name="duplex", **timed
            )
            streams = time_pass(
                _host_clocked(lambda: recorded.replay(ctx), clocks["enqueue"], clocks["enqueue wall"]),
                key="grader streams",
                name="streams",
                **timed,
            )
            graphed = time_pass(
                _host_clocked(lambda: graph.launch(exec_), clocks["launch"], clocks["launch wall"]),
                key="grader graph",
                name="graph",
                before_last=host.poison,  # the output checked below is the last launch's, not the streams'
                **timed,
            )
            check = bit_exact_check("your graph", host.verify_and_poison(expected, ctx.chunk_elems), TIMED_CHUNKS)
            if not check.ok:
                return runs, done, check.detail
            for name, found in clocks.items():
                runs[name] += found[1:]  # the first: the warm-up
            for name, found in (("floor", floor), ("streams", streams), ("graph", graphed)):
                runs[name] += found.times_ms
            results = timed_results(runs, done)
            if done == 1 and (all(r.passed for r in results) or any(_far_off(r) for r in results)):
                break  # a near miss runs every round and is judged once, on all of them
    finally:
        graph.destroy_exec(exec_)
        captured.destroy()
    return runs, done, None


def check_capture_timed(schedule: Callable[[Any], None]) -> None:
    """On a GPU: your schedule at 64 chunks of 4 MiB with 3 buffers, timed in the same rounds stream by stream and
    as a graph beside the duplex floor (5 runs each a round; a bar missed is measured again, MAX_TIMED_ROUNDS):
    one launch costs the host at least 3x less than your enqueue loop, the graph's GPU time is at most 1.05x your
    streams' and at most 1.15x the floor. Without a GPU this is pending: nothing
    offline can time a launch."""
    assert_own_schedule(schedule)
    case = Case(TIMED_CHUNKS, 3, TIMED_WINDOW)
    recorded = traced(schedule, case)
    answers.asked()
    problem = capture_problem(recorded)
    assert problem is None, problem
    if not gpu_available():
        raise PendingGPU(pending_message("your graph's launch and GPU time are measured on a GPU only"))
    (runs, done, wrong), shared = measured.once(
        "day56 capture timed", measured.digest(recorded.to_json()), lambda: _timed_runs(recorded), list, tuple
    )
    assert wrong is None, f"the output of a timed launch of your graph is wrong: {wrong}"
    host_factor, own, over_floor = (checking.record(r) for r in timed_results(runs, done))
    numbers = (
        f"host: your enqueue loop {host_factor.detail}; GPU: as a graph {own.detail}, {over_floor.value:.3f}x the "
        f"duplex floor {statistics.median(runs['floor']):.2f} ms" + (f" ({measured.SHARED})" if shared else "")
    )
    assert over_floor.passed, f"{numbers}: more than {FLOOR_FACTOR}x the link floor: is it a pipeline?"
    assert own.passed, f"{numbers}: as a graph it takes more than {GPU_FACTOR}x its time stream by stream"
    assert host_factor.passed, f"{numbers}: a launch should cost the host at least {HOST_FACTOR:.0f}x less"
    say(f"{over_floor.detail}: {numbers}")


def timed_results(runs: dict[str, list[float]], rounds: int) -> tuple[Result, Result, Result]:
    """check_capture_timed's three numbers as data, from the medians of every run so far: the host's enqueue loop
    over one launch (at least HOST_FACTOR), the graph's GPU time over your streams' (at most GPU_FACTOR) and over
    the duplex floor (at most FLOOR_FACTOR)."""
    enq, lau, floor, streams, graphed = (
        statistics.median(runs[n]) for n in ("enqueue", "launch", "floor", "streams", "graph")
    )
    walls = [statistics.median(runs[n]) for n in ("enqueue wall", "launch wall") if runs.get(n)]
    wall = f"; wall clock {walls[0]:.3f} and {walls[1]:.3f} ms" if len(walls) == 2 else ""
    setting = f"{TIMED_CHUNKS} chunks of {TIMED_WINDOW // MiB} MiB, 3 buffers"
    source = f"live, medians of {rounds} round{'s' if rounds > 1 else ''} of 5 runs, the graph's output verified"
    return (
        Result(
            "day56 host: your enqueue loop / one launch",
            setting,
            "x less host time",
            enq / lau,
            "x",
            "live",
            threshold=HOST_FACTOR,
            passes_below=False,
            detail=f"{enq:.3f} ms, one launch {lau:.3f} ms of host CPU time ({enq / lau:.1f}x less{wall})",
        ),
        Result(
            "day56 GPU: as a graph / stream by stream",
            setting,
            "x your streams' time",
            graphed / streams,
            "x",
            "live",
            threshold=GPU_FACTOR,
            detail=f"{graphed:.2f} ms, stream by stream {streams:.2f} ms ({graphed / streams:.3f}x)",
        ),
        Result(
            "day56 GPU: as a graph / the duplex floor",
            setting,
            "x the link floor",
            graphed / floor,
            "x",
            "live",
            threshold=FLOOR_FACTOR,
            detail=source,
        ),
    )


def _far_off(result: Result) -> bool:
    """A miss that more runs would not turn: past the bar by more than a quarter."""
    bar = result.threshold
    assert bar is not None
    return result.value > bar * FAR_OFF if result.passes_below else result.value < bar / FAR_OFF


# -- exercise 4: the pitfalls of capture -------------------------------------------------------------------------

PITFALL_QUESTIONS = {
    "sync": ("the captured function calls ctx.synchronize()", ("error", "waits", "ignored")),
    "host_read": ("the host reads the output array inside the capture", ("result", "old", "error")),
    "new_input": (
        "the graph is launched again after the data moved to new arrays, without an update",
        ("new", "old", "error"),
    ),
    "gpu_time": ("on this copy-bound job, the graph's GPU time against the streams'", ("same", "faster", "slower")),
}


@reference(recordable=False)
def pitfall_key() -> dict[str, str]:
    """The answers to the pitfall questions."""
    return {"sync": "error", "host_read": "old", "new_input": "old", "gpu_time": "same"}


def check_pitfalls(answer: Any) -> None:
    """Your answers to the four questions of PITFALL_QUESTIONS, one of its choices each."""
    given = answers.answer("your answers to the capture pitfalls", ("day56 pitfalls",), answers.ask_value, answer)
    answers.asked()
    expected = "a dict with one of the listed choices for each of " + ", ".join(PITFALL_QUESTIONS)
    assert isinstance(given, dict), f"your answer is a {type(given).__name__}; give {expected}"
    chosen = {}
    for key, (question, choices) in PITFALL_QUESTIONS.items():
        value = given.get(key)
        word = value.strip().lower() if isinstance(value, str) else value
        assert word in choices, f"{key} ({question}): {value!r} is not one of {', '.join(choices)}"
        chosen[key] = word
    key = checking.answer_key(
        pitfall_key, f"an answer to each of the {len(PITFALL_QUESTIONS)} questions, each one of its choices"
    )
    wrong = [k for k in PITFALL_QUESTIONS if chosen[k] != key[k]]
    assert not wrong, (
        f"{len(PITFALL_QUESTIONS) - len(wrong)} of {len(PITFALL_QUESTIONS)} right; look again at {', '.join(wrong)}"
    )
    say(f"all {len(PITFALL_QUESTIONS)} right")


verdicts(globals())  # in the student's kernel a failed check shows one verdict, not a traceback (labcore.checking)
