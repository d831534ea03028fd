"""The checks autograded notebook cells call. Each raises AssertionError with the measured numbers.

A schedule is judged on its trace (labcore.pipeline.trace): the fixed sequence of calls it makes, recorded behind
the Context facade in the grading sandbox and replayed here, never by running the student's function in this
process. Offline the recording fake decides correctness by CUDA's ordering rules, allocation's included (a use
nothing orders after its allocation or before its free races it); with a GPU the same trace also runs on fresh
random input and must be bit-exact. Timing is live only: offline the timing cell is pending a GPU
(labcore.pending), and says what the simulator expects.

Every call into the student's code goes through labcore.answers: questions are data, answers are data, and the
configurations are drawn from the grading seed (fresh on every run in a student's own kernel).
"""

from __future__ import annotations

import math
import random
import secrets
import statistics
from collections.abc import Callable
from typing import Any

from day55 import model, pool, report, schedules
from day55.config import MiB
from day55.model import per_chunk_malloc_ms
from day55.replay import shipped_profile
from labcore import answers, checking, measured, public
from labcore.checking import (
    Case,
    assert_own_function,
    expected_output,
    format_window,
    rounds_decided,
    say,
    verdicts,
)
from labcore.device import gpu_available
from labcore.errors import UsageError
from labcore.gpulock import gpu_turn
from labcore.pending import PendingGPU, pending_message
from labcore.pipeline import trace
from labcore.pipeline.context import HOST, CupyContext, HostArrays
from labcore.pipeline.recording import RecordingContext
from labcore.pipeline.simulate import simulate
from labcore.pipeline.stages import Stages
from labcore.pipeline.verify import bit_exact_check, check_bit_exact
from labcore.timing import grader_pass

KiB = 1 << 10
TIMED_TOTAL_BYTES = 1 << 30  # the lesson's array
TIMED_WINDOW = 64 * MiB
MAX_ONCE_ROUNDS = 9  # a near miss of ONCE_FACTOR is measured again, up to this many rounds in all
ONCE_FACTOR = 1.10  # your stream-ordered schedule may take this much of the buffers-allocated-once pipeline's time


def assert_own_schedule(schedule: Callable[[Any], None]) -> None:
    """In the student's own kernel, the early word: the schedule is written in the notebook, not imported. While
    grading the sandbox withholds the reference bodies themselves (labcore.answers.reference)."""
    checking.assert_own_schedule(
        schedule,
        references=(schedules.stream_ordered, schedules.stream_ordered_waiting, schedules.once),
        forbidden=("schedules", "stream_ordered"),
        hint="enqueue the allocations, copies and launches yourself",
    )


# -- configurations ----------------------------------------------------------------------------------------------


def _draws(name: str) -> random.Random:
    return random.Random(answers.fresh_seed(f"day55 configurations: {name}"))


def _window(rng: random.Random, low: int = 4 * KiB, high: int = 256 * MiB) -> int:
    """Log-uniform in [low, high], whole 4 KiB pages."""
    return max(low, min(high, round(2 ** rng.uniform(math.log2(low), math.log2(high)) / (4 * KiB)) * 4 * KiB))


def drawn_cases(name: str, count: int = 6) -> list[Case]:
    """Configurations drawn anew every grading run: chunk counts 1, an odd one 3-31, one the buffers do not divide
    and many (100-300), the rest 2-64; buffers 2, 3 and 4, the rest 2-4; windows 4 KiB to 256 MiB."""
    rng = _draws(name)
    depths = [2, 3, 4] + [rng.randint(2, 4) for _ in range(count - 3)]
    rng.shuffle(depths)
    not_divided = rng.choice([n for n in range(5, 61) if n % depths[2]])
    counts = [1, rng.randrange(3, 32, 2), not_divided, rng.randint(100, 300)]
    counts += [rng.randint(2, 64) for _ in range(count - 4)]
    windows = [_window(rng) for _ in range(count)]
    return [Case(n, b, w) for n, b, w in zip(counts, depths, windows, strict=True)]


def live_cases(name: str) -> list[Case]:
    """Configurations run on the GPU: 1 chunk, odd, not divided, many; windows 64 KiB to 1 MiB."""
    rng = _draws(f"{name} live")
    return [Case(c.n_chunks, c.buffers, _window(rng, 64 * KiB, 1 * MiB)) for c in drawn_cases(f"{name} live", 4)]


# -- traces ---------------------------------------------------------------------------------------------------------


def traced(schedule: Callable[[Any], None], n_chunks: int, buffers: int, window: int) -> trace.Trace:
    """The schedule's trace at one configuration: recorded here, or in the grading sandbox and read back."""
    question, read = checking.trace_question(n_chunks, buffers, window)
    inputs = ("day55 trace", n_chunks, buffers, window)
    return answers.answer(question, inputs, ask_trace, schedule, n_chunks, buffers, window, read=read)


@answers.asker
def ask_trace(schedule: Callable[[Any], None], n_chunks: int, buffers: int, window: int) -> str:
    """The schedule's trace at one configuration, as JSON text (what `traced` asks)."""
    return trace.record(schedule, n_chunks, buffers, window_bytes=window).to_json()


def on_fake(recorded: trace.Trace) -> RecordingContext:
    """A trace replayed on the recording fake whose pairs start unallocated (AssertionError naming a bad call)."""
    fake = RecordingContext(recorded.n_chunks, recorded.n_buffers, n_streams=recorded.n_streams, allocated=False)
    try:
        recorded.replay(fake)
    except IndexError as exc:
        raise AssertionError(f"{_shape(recorded)}: {exc}") from None
    return fake


def _shape(recorded: trace.Trace) -> str:
    return f"{recorded.n_chunks} chunks, {recorded.n_buffers} buffers, {format_window(recorded.window_bytes)} windows"


def stream_ordered_problems(recorded: trace.Trace) -> list[str]:
    """What is wrong with a trace as stream-ordered allocation per chunk: CUDA's ordering rules (races, uses of no
    allocation, leaks, wrong outputs), a blocking cudaMalloc or cudaFree, and a chunk whose buffers were not
    allocated for it inside the loop (a chunk's copy in into an allocation an earlier chunk used)."""
    fake = on_fake(recorded)
    found = [f"chunk {p.chunk}: {p.message}" for p in fake.problems()]
    found += [
        f"{rec.describe()}: a blocking call, which serializes the device" for rec in fake.ops if rec.stream == HOST
    ]
    used: set[int] = set()
    for rec in fake.ops:
        if rec.op == "h2d" and rec.allocation > 0:
            if rec.allocation in used:
                found.append(f"chunk {rec.chunk} is copied into buffers an earlier chunk used: allocate per chunk")
            used.add(rec.allocation)
    return found


def _live_correct(recorded: trace.Trace) -> str:
    """Replay a trace on the GPU on fresh random input, pairs unallocated, output poisoned; bit for bit."""
    n, b, w = recorded.n_chunks, recorded.n_buffers, recorded.window_bytes
    host = HostArrays(w * n)
    host.fill_random(secrets.randbelow(2**31))
    ctx = CupyContext(host, w, b, 512, allocated=False)
    reference = expected_output(host, ctx)
    with gpu_turn():
        recorded.replay(ctx)
        ctx.synchronize()
        left = ctx.release_all()
    assert not left, f"live, {n} chunks, {b} buffers: pairs {left} were still allocated at the end"
    check = check_bit_exact("your schedule", host.device_view(host.h_out), reference, ctx.chunk_elems)
    assert check.ok, f"live, {n} chunks, {b} buffers, {format_window(w)}: {check.detail}"
    return check.detail


def check_stream_ordered_correct(schedule: Callable[[Any], None], *, buffers: int = 2, n_chunks: int = 16) -> None:
    """Each chunk's buffers allocated and freed inside the loop with cudaMallocAsync / cudaFreeAsync, race-free
    and right at every configuration: by the ordering rules, and live on fresh input with a GPU.

    At the cell's configuration (n_chunks x buffers, 64 MiB), six drawn for this grading run (drawn_cases) and four
    more (live_cases) that a GPU also runs."""
    assert_own_schedule(schedule)
    cases = [Case(n_chunks, buffers, 64 * MiB), *drawn_cases("correct")]
    live = live_cases("correct")
    recorded = [traced(schedule, c.n_chunks, c.buffers, c.window) for c in cases + live]
    answers.asked()
    checking.judge_correct(
        recorded,
        cases,
        live,
        _first_problem,
        _live_correct,
        (
            "offline: race-free stream-ordered allocation per chunk, every output from its own input, at {shown} "
            "(recording fake, no GPU to run it on)",
            "by the ordering rules at {shown}; live and bit-exact at {live}",
        ),
    )


def _first_problem(recorded: trace.Trace) -> str | None:
    """How many problems stream_ordered_problems finds, and the first (None: none)."""
    found = stream_ordered_problems(recorded)
    return f"{_shape(recorded)}: {len(found)} problem(s); first: {found[0]}" if found else None


def _timed_hooks(host: HostArrays, expected: Any, chunk_elems: int, name: str) -> dict[str, Any]:
    def after() -> None:
        check = bit_exact_check(name, host.verify_and_poison(expected, chunk_elems), host.h_out.size // chunk_elems)
        assert check.ok, f"the output of a timed run of {name} is wrong: {check.detail}"

    return dict(before_last=host.poison, after_last=after)


def _live_times(recorded: trace.Trace, rounds: int) -> tuple[float, float, int]:
    """Your trace and the buffers-allocated-once pipeline, alternating, each round's last run verified: medians. At
    least `rounds` rounds, then more until the verdict is decided (labcore.checking.rounds_decided), up to
    MAX_ONCE_ROUNDS: a near miss is measured again, never judged on three rounds alone."""
    host = HostArrays(TIMED_TOTAL_BYTES)
    host.fill_random(secrets.randbelow(2**31))
    ctx = CupyContext(host, recorded.window_bytes, recorded.n_buffers, 512, allocated=False)
    expected = expected_output(host, ctx)
    runs = {"yours": lambda: recorded.replay(ctx), "allocated once": lambda: schedules.once(ctx)}
    medians: dict[str, list[float]] = {name: [] for name in runs}
    with pool.release_threshold(0):  # the default: what a program that never sets it gets
        for done in range(max(rounds, MAX_ONCE_ROUNDS)):
            for name, fn in runs.items():
                found = grader_pass(fn, name, done == 0, **_timed_hooks(host, expected, ctx.chunk_elems, name))
                medians[name].append(found.median_ms)
            fractions = [m / o / ONCE_FACTOR for m, o in zip(medians["yours"], medians["allocated once"], strict=True)]
            if done + 1 >= rounds and rounds_decided(fractions, least_rounds=rounds):
                break
    left = ctx.release_all()
    assert not left, f"pairs {left} were still allocated after your schedule"
    return statistics.median(medians["yours"]), statistics.median(medians["allocated once"]), len(medians["yours"])


def _simulated_ratio(recorded: trace.Trace) -> str:
    """What the simulator expects of the trace against allocating once, on the course's recorded H200 run."""
    record = shipped_profile()
    window = report.main_window(record)
    costs = report.calls(record, window)
    if costs is None:
        return "the shipped profile has no call costs to simulate with"
    st = report.stages(record, window)
    fake = on_fake(recorded)
    mine = max(o.end_ns for o in simulate(fake, model.rates(st, costs, keeps_pool=False))) / 1e6
    once = model.simulated_ms(schedules.once, st, costs, recorded.n_buffers, keeps_pool=True)
    return f"the simulator expects {mine / once:.2f}x the buffers-allocated-once pipeline"


def check_stream_ordered_time(schedule: Callable[[Any], None], *, buffers: int = 2, rounds: int = 3) -> None:
    """Live, 1 GiB in 64 MiB windows: your schedule within ONCE_FACTOR of the pipeline whose buffers are allocated
    once, timed in the same run on the same GPU (the release threshold at its default 0). Offline: pending a GPU."""
    assert_own_schedule(schedule)
    recorded = traced(schedule, TIMED_TOTAL_BYTES // TIMED_WINDOW, buffers, TIMED_WINDOW)
    answers.asked()
    found = stream_ordered_problems(recorded)
    assert not found, f"the schedule that would be timed is wrong, so its time does not count: {found[0]}"
    if not gpu_available():
        try:
            expected = _simulated_ratio(recorded)
        except UsageError as exc:  # the shipped profile missing: the verdict is pending all the same
            expected = f"no simulation ({exc})"
        raise PendingGPU(pending_message(f"timing needs the GPU ({expected}, within {ONCE_FACTOR:.2f}x to pass)"))
    (mine, once, done), shared = measured.once(
        "day55 stream-ordered time",
        measured.digest(recorded.to_json(), rounds),
        lambda: _live_times(recorded, rounds),
        list,
        tuple,
    )
    where = f"1 GiB in 64 MiB windows, {buffers} buffers, live, medians of {done} rounds"
    where += f"; {measured.SHARED}" if shared else ""
    assert mine <= ONCE_FACTOR * once, (
        f"your schedule takes {mine:.2f} ms, {mine / once:.3f}x the {once:.2f} ms of allocating once ({where}): more "
        f"than {ONCE_FACTOR:.2f}x; something in it makes the device wait"
    )
    say(f"{mine:.2f} ms, {mine / once:.3f}x allocating once ({once:.2f} ms) <= {ONCE_FACTOR:.2f}x ({where})")


# -- exercise 1: the cost of cudaMalloc per chunk, in your own arithmetic -------------------------------------


PREDICTION = public.Expectation(  # the visible cases, and the model's time at each (labcore.public)
    "day55",
    "malloc prediction",
    [(19.6, 5.4, 19.5, 16, 0.05, 0.08), (19.6, 5.4, 19.5, 256, 0.01, 0.02), (4.0, 30.0, 4.0, 8, 1, 2)],
    lambda case: per_chunk_malloc_ms(Stages(*case[:4]), case[4], case[5]),
)


def check_malloc_prediction(predict_ms: Callable[..., float], *, tolerance: float = 0.01, cases=None) -> None:
    """Your predict_malloc_ms gives the model's time of cudaMalloc/cudaFree per chunk on each case, within
    `tolerance` (relative)."""
    assert_own_function(
        predict_ms,
        n_params=6,
        what="predict_malloc_ms",
        references=(per_chunk_malloc_ms,),
        forbidden=("per_chunk_malloc_ms", "model", "Stages"),
        hint="work it out yourself",
    )
    checking.check_predicted(
        predict_ms,
        ("predict_malloc_ms", "day55 predict"),
        cases or PREDICTION.cases,
        PREDICTION.want,
        lambda c: (
            f"stages {c[0]}, {c[1]}, {c[2]} ms over {c[3]} chunks, cudaMalloc {c[4]} ms and cudaFree {c[5]} ms a pair"
        ),
        tolerance,
    )


# -- exercise 3: what goes wrong where --------------------------------------------------------------------------

VERDICTS = ("correct", "race", "serializes", "returns memory")
PITFALL_ANSWER = "a dict like {'A': 'race', 'B': ..., ...} with one of " + ", ".join(map(repr, VERDICTS))
LETTERS = ("A", "B", "C", "D", "E")


@answers.reference(recordable=False)
def pitfall_key() -> dict[str, str]:
    """Exercise 3's answers (withheld from students' code, and never recorded: it is the answer whatever is asked)."""
    return {"A": "race", "B": "serializes", "C": "returns memory", "D": "correct", "E": "correct"}


def check_pitfalls(answer: Any) -> None:
    """Your verdict for each of the schedules A-E of exercise 3: one of VERDICTS each."""
    named = answers.answer("your verdicts for the schedules A-E", ("day55 pitfalls",), answers.ask_value, answer)
    answers.asked()
    assert isinstance(named, dict), f"your answer is a {type(named).__name__}; give {PITFALL_ANSWER}"
    mine = {}
    for key, verdict in named.items():
        letter = key.strip().upper() if isinstance(key, str) else key
        assert letter in LETTERS, f"{key!r} is not one of the schedules; give {PITFALL_ANSWER}"
        spelled = verdict.strip().lower().replace("_", " ").replace("-", " ") if isinstance(verdict, str) else None
        assert spelled in VERDICTS, f"schedule {letter}: {verdict!r} is not one of {', '.join(VERDICTS)}"
        mine[letter] = spelled
    missing = [letter for letter in LETTERS if letter not in mine]
    assert not missing, f"your answer gives no verdict for {', '.join(missing)}; give {PITFALL_ANSWER}"
    key = checking.answer_key(
        pitfall_key, f"a verdict for each of the {len(LETTERS)} schedules, each one of {', '.join(VERDICTS)}"
    )
    right = [letter for letter in LETTERS if mine[letter] == key[letter]]
    assert len(right) == len(LETTERS), (
        f"{len(right)} of {len(LETTERS)} right: replay each schedule on a RecordingContext(…, allocated=False) and "
        "read its problems(), and ask where the host waits and what the pool holds at each wait"
    )
    say("all five right: " + ", ".join(f"{letter} {mine[letter]}" for letter in LETTERS))


def prepare() -> None:
    """Read the shipped profile once, if there is one (a warm grading process calls this first)."""
    try:
        shipped_profile()
    except UsageError:  # no profile recorded yet: the checks that need it say so themselves
        pass


verdicts(globals())
