"""The checks autograded notebook cells call. Each raises AssertionError with the measured numbers.

Every check says how it decided: live on the GPU it measures (fresh random
input, repeats and medians, events cross-checked against a host clock);
without a GPU it simulates the submitted trace on the course's recorded H200
stage times (labcore.pipeline.simulate), and says so. The nsys exports a student's own
run left beside the notebook (`day54_run_*.csv`) never earn a point: offline
they are compared with the trace (a contradiction fails the check) and what
they measured is shown as unverified.

The configurations the correctness, reuse and practice checks record a
schedule at (chunk counts, buffers, windows) are drawn for each grading run
from the grading seed (labcore.answers.fresh_seed), fresh on every run in a
student's own kernel; each check's docstring gives the ranges.

A schedule is judged on its trace (labcore.pipeline.trace), and every call into the
student's code goes through labcore.answers: while grading, the sandbox
records the traces and values and the trusted checker judges them, running
nothing of the student's. Each check asks all its questions before it judges
anything, so the two ask the same ones whatever the checker's GPU.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import pickle
import random
import secrets
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from day54 import DOMAIN, pitfalls, report, schedules
from day54.config import MiB, PassKey
from day54.model import Stages, chain_ms, fill_drain_ms, predict
from day54.replay import COPY_SLACK_BYTES, from_exports, shipped_profile
from labcore import answers
from labcore.checking import assert_own_function, say, verdicts
from labcore.device import gpu_available
from labcore.errors import UsageError
from labcore.exports import Exports
from labcore.gpulock import gpu_turn
from labcore.pipeline import trace
from labcore.pipeline.context import LEGACY, CupyContext, HostArrays
from labcore.pipeline.recording import RecordingContext
from labcore.pipeline.simulate import Rates, simulate, simulated_ms
from labcore.pipeline.verify import bit_exact_check, check_bit_exact
from labcore.record import Record
from labcore.timing import time_pass

RUN_PREFIX = "day54_run"
KiB = 1 << 10
HOST_CLOCK_SLACK = 1.25  # host clock after a device sync may exceed the events by launch latency, not more


def assert_own_schedule(schedule: Callable[[Any], None]) -> None:
    """In the student's kernel, a quick hint: the schedule is written in the notebook, not imported from day54.

    While grading the sandbox withholds the reference schedules themselves (labcore.answers.reference), which
    catches them under any name; this name check is only the early word in the student's own run.
    """
    if answers.grading():
        return
    assert_own_function(
        schedule,
        n_params=1,
        what="schedule",
        references=(schedules.naive, schedules.pipelined),
        forbidden=("schedules", "pipelined"),
        hint="enqueue the copies and launches yourself",
    )


# -- correctness ------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Case:
    """One configuration a schedule is recorded at: chunks, buffer pairs (one stream each) and the window."""

    n_chunks: int
    buffers: int
    window: int

    def describe(self) -> str:
        return f"{self.n_chunks}x{self.buffers} at {format_window(self.window)}"


CASES = 8  # configurations drawn for the correctness check, beside the cell's own
MAX_CALLS_PER_CHUNK = 16  # a trace with more calls than this per chunk is refused before anything replays it


def _draws(name: str) -> random.Random:
    """The configurations' generator for one check: from the grading seed while grading (the sandbox and the
    checker draw the same), fresh on every call in a student's own kernel; never a list in the package."""
    return random.Random(answers.fresh_seed(f"day54 configurations: {name}"))


def _window(rng: random.Random, low: int = 4 * KiB, high: int = 256 * MiB) -> int:
    """A window log-uniform in [low, high], a whole number of 4 KiB pages (so not always a power of two)."""
    return max(low, min(high, round(2 ** rng.uniform(math.log2(low), math.log2(high)) / (4 * KiB)) * 4 * KiB))


def _not_divisible(rng: random.Random, buffers: int, low: int = 5, high: int = 60) -> int:
    """A chunk count the buffers do not divide (the last round of pairs is partial)."""
    return rng.choice([n for n in range(low, high + 1) if n % buffers] or list(range(low, high + 1)))  # 1 divides all


def drawn_cases(name: str, *, buffers: int | None = None, count: int = CASES, many: int = 400) -> list[Case]:
    """`count` configurations for the check `name`, drawn anew every grading run (and every run in your kernel).

    Ranges, every draw covering each edge: buffers 2, 3 and one of 4-6 always, the rest 2-6 (or all `buffers`);
    chunk counts 1, an odd count 3-31, one the buffers do not divide (5-60), many (100-`many`), the rest 1-64;
    windows 4 KiB to 256 MiB log-uniform in whole 4 KiB pages, always one of at most 4 MiB and one of 256 MiB.
    """
    rng = _draws(name)
    depths = [2, 3, rng.randint(4, 6)] + [rng.randint(2, 6) for _ in range(count - 3)]
    depths = [buffers] * count if buffers is not None else depths
    rng.shuffle(depths)
    counts = [1, rng.randrange(3, 32, 2), _not_divisible(rng, depths[2]), rng.randint(100, many)]
    counts += [rng.randint(1, 64) for _ in range(count - 4)]
    windows = [_window(rng, high=4 * MiB), 256 * MiB] + [_window(rng) for _ in range(count - 2)]
    rng.shuffle(windows)
    return [Case(n, b, w) for n, b, w in zip(counts[:count], depths, windows[:count], strict=True)]


def live_cases(name: str) -> list[Case]:
    """The configurations run on the GPU on fresh random input: 1 chunk, an odd count, one the buffers do not
    divide and many (100-256), buffers as drawn_cases draws them, windows 64 KiB-1 MiB in whole 4 KiB pages (so
    at most 256 MiB of pinned input and as much output)."""
    rng = _draws(f"{name} live")
    return [
        Case(case.n_chunks, case.buffers, _window(rng, 64 * KiB, 1 * MiB))
        for case in drawn_cases(f"{name} live", count=4, many=256)
    ]


def traced(
    schedule: Callable[[Any], None],
    n_chunks: int,
    buffers: int,
    window: int = 64 * MiB,
    streams: int | None = None,
) -> trace.Trace:
    """The schedule's trace at one configuration: recorded here, or in the grading sandbox and read back.

    `streams` None means one stream per buffer pair (the lesson's contexts); the challenge picks its own.
    """
    question = f"your schedule's calls at {n_chunks} chunks x {buffers} buffers, {format_window(window)} windows"
    inputs: tuple[Any, ...] = ("day54 trace", n_chunks, buffers, window)
    if streams is not None:
        question += f", {streams} streams"
        inputs += (streams,)
    text = answers.answer(question, inputs, ask_trace, schedule, n_chunks, buffers, window, streams)
    if answers.planning():
        return None
    return _trace_of(text, question, (n_chunks, buffers, streams or buffers, window))


@answers.asker
def ask_trace(schedule: Callable[[Any], None], n_chunks: int, buffers: int, window: int, streams: int | None) -> str:
    """The schedule's trace at one configuration, as JSON text (what `traced` asks)."""
    return trace.record(schedule, n_chunks, buffers, n_streams=streams, window_bytes=window).to_json()


def format_window(window: int) -> str:
    """64 MiB, 12 KiB, 1000 B."""
    for unit, scale in (("MiB", MiB), ("KiB", KiB)):
        if window >= scale and window % scale == 0:
            return f"{window // scale} {unit}"
    return f"{window} B"


def _shape(recorded: trace.Trace) -> str:
    """16 chunks, 2 buffers, 64 MiB windows."""
    return f"{recorded.n_chunks} chunks, {recorded.n_buffers} buffers, {format_window(recorded.window_bytes)} windows"


@functools.lru_cache(maxsize=4)
def _on_fake(recorded: trace.Trace) -> RecordingContext:
    """A recorded trace replayed on the recording fake (AssertionError naming a bad call); the last few kept, since
    a check reads one trace's replay several times (problems, reuse, practices, the simulator). Read only."""
    fake = RecordingContext(recorded.n_chunks, recorded.n_buffers, n_streams=recorded.n_streams)
    try:
        recorded.replay(fake)
    except IndexError as exc:  # a chunk, pair or stream outside the context's range
        raise AssertionError(f"{_shape(recorded)}: {exc}") from None
    return fake


def _fake_problems(recorded: trace.Trace) -> str | None:
    """What CUDA's ordering rules say is wrong with a trace (recording fake)."""
    try:
        fake = _on_fake(recorded)
    except AssertionError as exc:
        return str(exc)
    problems = fake.problems()
    if not problems:
        return None
    return f"{_shape(recorded)}: {len(problems)} problem(s); first bad chunk {problems[0].chunk}: {problems[0].message}"


def _expected_output(host: HostArrays, ctx: CupyContext) -> Any:
    """Naive's output for the host's input, kept on the device (ctx.expected_output); the host output poisoned."""
    with gpu_turn():  # untimed, but it would disturb a neighbour's timed pass
        expected = ctx.expected_output()
        host.poison()
    return expected


def _live_correct(recorded: trace.Trace) -> str:
    """Replay a trace on the GPU on fresh random input, output poisoned first, against naive bit for bit."""
    n_chunks, buffers, window = recorded.n_chunks, recorded.n_buffers, recorded.window_bytes
    host = HostArrays(window * n_chunks)
    host.fill_random(secrets.randbelow(2**31))
    ctx = CupyContext(host, window, buffers, 512)
    reference = _expected_output(host, ctx)
    with gpu_turn():
        recorded.replay(ctx)
        ctx.synchronize()
    check = check_bit_exact("your schedule", host.device_view(host.h_out), reference, ctx.chunk_elems)
    assert check.ok, f"live, {n_chunks} chunks, {buffers} buffers, {format_window(window)}: {check.detail}"
    return check.detail


def check_schedule_correct(schedule: Callable[[Any], None], *, buffers: int = 2, n_chunks: int = 16) -> None:
    """Right output at every configuration: by CUDA's ordering rules, and live on fresh input with a GPU.

    Judged at the cell's own configuration (n_chunks x buffers at 64 MiB) and at CASES more drawn for this grading
    run (drawn_cases: 1 chunk, odd, not divisible by the buffers, many; 2 to 6 buffers; 4 KiB to 256 MiB windows)
    and four more (live_cases), which a GPU also runs. Every unordered access to the same bytes fails it.
    """
    assert_own_schedule(schedule)
    cases = [Case(n_chunks, buffers, 64 * MiB), *drawn_cases("correct")]
    recorded = [traced(schedule, c.n_chunks, c.buffers, c.window) for c in cases]
    live = live_cases("correct")
    live_traces = [traced(schedule, c.n_chunks, c.buffers, c.window) for c in live]
    if answers.collecting():
        return
    for one in recorded + live_traces:  # the live ones too: offline they are four more configurations
        problem = _fake_problems(one)
        assert problem is None, problem
    shown = ", ".join(c.describe() for c in cases + live)
    if not gpu_available():
        say(
            f"offline: every chunk's output comes from its own input and no access to the same bytes is unordered "
            f"at {shown} (chunks x buffers at a window; recording fake, no GPU to run it on)"
        )
        return
    for one in live_traces:
        _live_correct(one)
    say(f"by the ordering rules at {shown}; live on fresh random input at {', '.join(c.describe() for c in live)}")


def check_no_early_reuse(schedule: Callable[[Any], None], *, buffers: int = 2) -> None:
    """No buffer pair takes a new chunk before the copy out of its previous chunk is ordered before it.

    At two configurations of `buffers` drawn for this grading run (drawn_cases): a chunk count the buffers do not
    divide (5-60) and many (100-200), windows 4 KiB to 256 MiB.
    """
    for case in drawn_cases(f"reuse {buffers}", buffers=buffers, count=4, many=200)[2:4]:
        recorded = traced(schedule, case.n_chunks, buffers, case.window)
        if answers.collecting():
            continue
        problem = _fake_problems(recorded)
        assert problem is None, problem
        ctx = _on_fake(recorded)
        last_out: dict[int, Any] = {}
        for rec in ctx.ops:
            if rec.op == "h2d" and rec.pair in last_out:
                assert ctx.ordered(last_out[rec.pair], rec), (
                    f"{case.describe()}: chunk {rec.chunk} enters pair {rec.pair} before chunk "
                    f"{last_out[rec.pair].chunk} left it"
                )
            if rec.op == "d2h":
                last_out[rec.pair] = rec
    if not answers.collecting():
        say(f"{buffers} buffers: every pair is reused only after its previous chunk was copied out")


def practice_problems(recorded: trace.Trace) -> list[str]:
    """Practices that stop a pipeline overlapping, read from what a schedule enqueues (any GPU or none)."""
    ctx = _on_fake(recorded)
    found = [f"{rec.describe()} is on the legacy default stream" for rec in ctx.ops if rec.stream == LEGACY]
    found += [
        f"a device-wide synchronize after operation {at} of {len(ctx.ops)}: the host stops the pipeline mid-loop"
        for at, kind in ctx.syncs
        if kind == "device" and at < len(ctx.ops)
    ]
    return found


def check_good_practice(schedule: Callable[[Any], None], *, buffers: int = 2) -> None:
    """No operation on the legacy default stream and no device-wide synchronize inside the loop, in a schedule that
    works (an empty or wrong schedule keeps every practice trivially and earns nothing for it).

    At one configuration drawn for this grading run: 20 to 64 chunks (a loop longer than the lesson's 16, with a
    middle for a mid-loop synchronize to show in) of a window from 64 to 256 MiB.
    """
    assert_own_schedule(schedule)
    rng = _draws(f"practice {buffers}")
    recorded = traced(schedule, rng.randint(20, 64), buffers, _window(rng, 64 * MiB))
    if answers.collecting():
        return
    problem = _fake_problems(recorded)
    assert problem is None, f"practices count only in a schedule that does the work, and this one does not: {problem}"
    found = practice_problems(recorded)
    at = f"{recorded.n_chunks} chunks x {buffers} buffers"
    assert not found, f"{at}: {len(found)} practice problem(s), each of which serializes the streams: {found[0]}" + (
        f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    )
    say(f"{at}: worker streams only, and the host waits only after the loop")


# -- timing -----------------------------------------------------------------------------------------

TIMED_TOTAL_BYTES = 1 << 30  # the lesson's array: what the live, exported and simulated timings all move
REFERENCE_FACTOR = 1.05  # your pipelined time may exceed the reference pipeline's, same run and GPU, by this much
# A live pass this far (a factor) inside both thresholds after one round is decided: more than twice the spread of one
# round's median on the H200 (0.562-0.567 for the 64 MiB ratio over 20 rounds). A fail always takes every round.
CLEAR_MARGIN = 1.025


@dataclasses.dataclass(frozen=True)
class Timing:
    """Naive, the reference pipeline and your schedule, measured (or simulated) together, and how."""

    naive_ms: float
    reference_ms: float
    mine_ms: float
    how: str

    @property
    def ratio(self) -> float:
        return self.mine_ms / self.naive_ms

    @property
    def over_reference(self) -> float:
        return self.mine_ms / self.reference_ms


def _timed_against(host: HostArrays, expected: Any, chunk_elems: int) -> Callable[[str], dict[str, Any]]:
    """time_pass hooks that verify the last timed run of a pass: its output poisoned just before it, and checked
    against `expected` on the GPU (and poisoned again) once it is done. Yours must be bit-exact; the course's own
    runs must be too, or the grading machine is at fault. What is timed is a replay of a recorded trace, the same
    operations on the same streams every run, judged race-free on the fake first, so one verified run stands for
    every run of the pass; the verify costs a pass over the link, about a run's time, so verifying every run
    would double the GPU time of a check."""

    def hooks(name: str) -> dict[str, Any]:
        def after() -> None:
            check = bit_exact_check(name, host.verify_and_poison(expected, chunk_elems), host.h_out.size // chunk_elems)
            if name == "yours":
                assert check.ok, f"the output of a timed run of your schedule is wrong: {check.detail}"
            elif not check.ok:
                raise RuntimeError(f"the course's {name} schedule gave a wrong output on this GPU: {check.detail}")

        return dict(before_last=host.poison, after_last=after)

    return hooks


def _live_timing(recorded: trace.Trace, rounds: int, clear: Callable[[Timing], bool] | None = None) -> Timing:
    """Naive, reference and yours on one GPU in the same run; each one's last run of every round verified.

    Yours is the trace, replayed: what is timed is what the checks judged. With `clear`, the rounds stop early
    once the medians so far give a verdict that `clear` calls beyond doubt (a class's GPU time goes to the
    schedules near a threshold)."""
    window, buffers = recorded.window_bytes, recorded.n_buffers
    host = HostArrays(TIMED_TOTAL_BYTES)
    host.fill_random(secrets.randbelow(2**31))
    ctx = CupyContext(host, window, buffers, 512)
    hooks = _timed_against(host, _expected_output(host, ctx), ctx.chunk_elems)
    medians: dict[str, list[float]] = {"naive": [], "reference": [], "yours": []}
    runs = {
        "naive": lambda: schedules.naive(ctx.with_buffers(1)),
        "reference": lambda: schedules.pipelined(ctx),
        "yours": lambda: recorded.replay(ctx),
    }
    for done in range(1, rounds + 1):
        for name, fn in runs.items():
            found = time_pass(
                fn,
                key=f"grader {name}",
                name=name,
                params={},
                domain="grader",
                repeats=3,
                warmup=1 if done == 1 else 0,  # later rounds follow a run of the same work
                **hooks(name),
            )
            host_ms = statistics.median(found.host_ms)
            assert host_ms <= found.median_ms * HOST_CLOCK_SLACK + 1.0, (
                f"{name}: events say {found.median_ms:.2f} ms but the host clock after a device synchronize says "
                f"{host_ms:.2f} ms: work ran outside the blocking streams the events wait for"
            )
            medians[name].append(found.median_ms)
        naive, reference, mine = (statistics.median(medians[n]) for n in ("naive", "reference", "yours"))
        rounds_text = f"{done} round{'s' if done > 1 else ''}"
        timing = Timing(naive, reference, mine, f"live, medians of {rounds_text}, verified every round")
        if clear is not None and clear(timing):
            break
    return timing


def _recorded_sequences(recorded: trace.Trace) -> list:
    """What a trace enqueues on each stream, (kind, bytes) in order; streams in order of first use."""
    window = recorded.window_bytes
    ctx = RecordingContext(recorded.n_chunks, recorded.n_buffers, n_streams=recorded.n_streams, window_bytes=window)
    recorded.replay(ctx)
    by_stream: dict[int, list[tuple[str, int]]] = {}
    for rec in ctx.ops:
        by_stream.setdefault(rec.stream, []).append((rec.op, 0 if rec.op == "kernel" else window))
    return list(by_stream.values())


def _exported_sequences(ops: Any, window: int) -> list:
    """The same from one exported range instance (issue order is the CUDA correlation id)."""
    by_stream: dict[int, list[tuple[str, int]]] = {}
    for row in ops.sort_values("corr_id").itertuples(index=False):
        size = 0 if row.kind == "kernel" else window if abs(int(row.bytes) - window) <= COPY_SLACK_BYTES else row.bytes
        by_stream.setdefault(int(row.stream), []).append((row.kind, int(size)))
    return list(by_stream.values())


def _student_exports(recorded: trace.Trace, directory: Path) -> str | None:
    """What your own run's nsys exports say about the trace being timed: a line of feedback, never a time that
    counts. Exports that contradict the trace (per stream another sequence of operations than it enqueues) or
    that are not one consistent run fail the check, saying so; exports of another configuration are only named."""
    if not any(directory.glob(f"{RUN_PREFIX}_*.csv")):
        return None
    window, buffers, n_chunks = recorded.window_bytes, recorded.n_buffers, recorded.n_chunks
    try:
        exports = Exports(directory, DOMAIN)
        record = from_exports(directory, exports=exports)
    except UsageError as exc:  # NsysFormatError too: exports of two runs, or edited ones
        raise AssertionError(
            f"your run's exports ({RUN_PREFIX}_*.csv) are not one consistent run: {exc}; record your run again "
            f"with the notebook's cell, or hand in none"
        ) from None
    key = PassKey("student", window, buffers)
    if not record.has_pass(key) or record.config["total_bytes"] != window * n_chunks:
        return f"your run's exports hold no '{key}' pass of {n_chunks} chunks: nothing of them compared here"
    exported = _exported_sequences(exports.by_key[str(key)][0], window)
    expected = _recorded_sequences(recorded)
    if exported != expected:
        counts = [len(s) for s in exported], [len(s) for s in expected]
        raise AssertionError(
            f"your exports are not a run of the schedule in this notebook: per stream they hold "
            f"{counts[0]} operations in another order than the {counts[1]} your schedule enqueues "
            f"({n_chunks} chunks, {buffers} buffers); record your run again with this schedule, or hand in none"
        )
    naive, reference = (
        report.measured(record, name, window, depth) for name, depth in (("naive", 1), ("pipelined", buffers))
    )
    mine = record.pass_times(key).median_ms
    return (
        f"your run measured {mine:.2f} ms, pipelined/naive = {mine / naive:.3f}, {mine / reference:.3f}x the "
        f"reference pipeline ({RUN_PREFIX}_*.csv; unverified: shown, not graded)"
    )


@functools.cache
def _simulated_course(window: int, buffers: int, n_chunks: int, rates: Rates) -> tuple[float, float]:
    """Naive and the reference pipeline simulated: the same for every submission a warm checker grades."""
    return (
        simulated_ms(schedules.naive, n_chunks, 1, rates),
        simulated_ms(schedules.pipelined, n_chunks, buffers, rates),
    )


def _simulated_timing(recorded: trace.Trace, record: Record) -> Timing:
    """Naive, the reference and the submitted trace simulated on the record's stage times (the pipeline's simulator)."""
    window, buffers = recorded.window_bytes, recorded.n_buffers
    stages = report.stages(record, window)
    assert stages.n_chunks == recorded.n_chunks, f"the record has {stages.n_chunks} chunks at this window"
    rates = Rates.from_stages(stages, report.link_floor_ms(record))
    naive, reference = _simulated_course(window, buffers, stages.n_chunks, rates)
    mine = max((o.end_ns for o in simulate(_on_fake(recorded), rates)), default=0) / 1e6
    return Timing(
        naive,
        reference,
        mine,
        f"offline, simulated on the recorded {record.device.name} stage times "
        f"(naive {naive:.2f} ms, yours {mine:.2f} ms simulated)",
    )


def measure_schedule(
    schedule: Callable[[Any], None],
    *,
    window: int = 64 * MiB,
    buffers: int = 2,
    rounds: int = 3,
    directory: str | Path = ".",
) -> Timing:
    """Naive, the reference pipeline and yours: live on a GPU, else simulated on the recorded stage times. Your own
    run's exports in `directory` are only compared with the trace (a contradiction fails) and shown."""
    recorded = traced(schedule, TIMED_TOTAL_BYTES // window, buffers, window)
    return _timing(recorded, rounds, Path(directory))


def _timing(
    recorded: trace.Trace, rounds: int, directory: Path, clear: Callable[[Timing], bool] | None = None
) -> Timing:
    """Live, or offline: the simulator on the course's recorded stage times, never the student's own exports."""
    if gpu_available():
        return _live_timing(recorded, rounds, clear)
    said = _student_exports(recorded, directory)
    if said is not None:
        say(said)
    return _simulated_timing(recorded, shipped_profile())


def check_pipelined_ratio(
    schedule: Callable[[Any], None], *, window: int = 64 * MiB, buffers: int = 2, threshold: float = 0.70
) -> None:
    """At most `threshold` of naive and within REFERENCE_FACTOR of the reference pipeline, both in the same run."""
    assert_own_schedule(schedule)
    recorded = traced(schedule, TIMED_TOTAL_BYTES // window, buffers, window)
    if answers.collecting():
        return
    problem = _fake_problems(recorded)
    assert problem is None, f"the schedule that would be timed is wrong, so its time does not count: {problem}"

    def clear(timing: Timing) -> bool:  # both passes beyond a round's noise: more rounds would not change them
        return max(timing.ratio / threshold, timing.over_reference / REFERENCE_FACTOR) < 1 / CLEAR_MARGIN

    timing = _timing(recorded, 3, Path("."), clear)  # the very calls just checked
    where = f"at {window // MiB} MiB with {buffers} buffers ({timing.how})"
    assert timing.ratio <= threshold, (
        f"pipelined/naive = {timing.ratio:.3f} {where}, above the {threshold:.2f} threshold"
    )
    assert timing.over_reference <= REFERENCE_FACTOR, (
        f"your schedule takes {timing.over_reference:.3f}x the reference pipeline's time {where}: more than "
        f"{REFERENCE_FACTOR:.2f}x; something in it serializes what the reference overlaps"
    )
    say(
        f"pipelined/naive = {timing.ratio:.3f} <= {threshold:.2f}, {timing.over_reference:.3f}x the reference "
        f"pipeline <= {REFERENCE_FACTOR:.2f}x {where}"
    )


# -- the challenge: the fastest correct schedule, against the link floor ---------------------------------

CHALLENGE_FACTOR = 1.05  # the challenge is met at most this far above the link floor measured in the same run
CHALLENGE_MAX_BUFFERS = 8
CHALLENGE_MAX_STREAMS = 16
# The link's duplex rate wanders by a few percent over seconds, so the probe and yours alternate one run each, and
# the verdict is the median of the rounds' ratios: 15 rounds at most, stopping early once 5 or more all lie this far
# (a fraction) on the same side of the factor.
CHALLENGE_ROUNDS = 15
CHALLENGE_EARLY_ROUNDS = 5
CHALLENGE_DECIDED = 0.005
LINK_WINDOW = 64 * MiB  # the duplex probe always runs as in the lesson: 64 MiB copies, one stream per direction


@dataclasses.dataclass(frozen=True)
class ChallengeSettings:
    """The challenge's free choices: window (bytes), buffer pairs and streams."""

    window: int
    buffers: int
    streams: int

    @property
    def n_chunks(self) -> int:
        return TIMED_TOTAL_BYTES // self.window

    def describe(self) -> str:
        chunks = f"{format_window(self.window)} windows ({self.n_chunks} chunks)"
        return f"{chunks}, {self.buffers} buffers, {self.streams} streams"


def challenge_settings(settings: Any) -> ChallengeSettings:
    """Read {'window': bytes, 'buffers': n, 'streams': n (optional, default buffers)}, saying what is wrong."""
    expected = "a dict like {'window': 32 * MiB, 'buffers': 4, 'streams': 4}"
    assert isinstance(settings, dict), f"the challenge settings should be {expected}, not {type(settings).__name__}"
    unknown = sorted(str(k) for k in settings if k not in ("window", "buffers", "streams"))
    assert not unknown, f"the challenge settings have unknown keys {unknown}; expected {expected}"
    values = {}
    for name, default in (("window", None), ("buffers", None), ("streams", settings.get("buffers"))):
        value = settings.get(name, default)
        assert isinstance(value, int) and not isinstance(value, bool), (
            f"challenge setting {name!r} is {value!r}; expected a whole number ({expected})"
        )
        values[name] = value
    window, buffers, streams = values["window"], values["buffers"], values["streams"]
    sizes = [1 << s for s in range(20, 29)]
    assert window in sizes, (
        f"challenge window {window} bytes: choose a power of two from 1 MiB to 256 MiB, so that it divides the "
        f"1 GiB array (e.g. 32 * MiB)"
    )
    assert 1 <= buffers <= CHALLENGE_MAX_BUFFERS, f"challenge buffers {buffers}: choose 1..{CHALLENGE_MAX_BUFFERS}"
    assert buffers <= streams <= CHALLENGE_MAX_STREAMS, (
        f"challenge streams {streams}: choose {buffers}..{CHALLENGE_MAX_STREAMS} (at least one per buffer pair, "
        f"since an operation without stream= goes to its pair's stream)"
    )
    return ChallengeSettings(window, buffers, streams)


def challenge_counts() -> list[list[int]]:
    """For every buffer count the settings may choose (index 1..CHALLENGE_MAX_BUFFERS), the chunk counts drawn for
    this grading run (1, an odd count 3-31, one those buffers do not divide 5-60): drawn on the trusted side and
    handed to the question, since the sandbox holds no grading seed."""
    return [
        [] if buffers == 0 else [c.n_chunks for c in drawn_cases("challenge", buffers=buffers, count=4)[:3]]
        for buffers in range(CHALLENGE_MAX_BUFFERS + 1)
    ]


@answers.asker
def ask_challenge(schedule: Callable[[Any], None], settings: Any, counts_by_buffers: list[list[int]]) -> dict[str, Any]:
    """The challenge's one question: the settings, and the schedule's traces at them (at the timed chunk count, then
    at the drawn counts for its buffers); settings that are not valid come back alone, for the check to say why."""
    try:
        picked = challenge_settings(settings)
    except AssertionError:
        return {"settings": settings}
    counts = (picked.n_chunks, *counts_by_buffers[picked.buffers])
    return {
        "settings": settings,
        "traces": [ask_trace(schedule, n, picked.buffers, picked.window, picked.streams) for n in counts],
    }


def _trace_of(text: Any, question: str, want: tuple[int, int, int, int]) -> trace.Trace:
    """A trace that came back as an answer, refused unless of the configuration asked (chunks, buffers, streams,
    window) and of a few calls per chunk."""
    assert isinstance(text, str), f"{question}: the answer is not a trace"
    found = trace.Trace.from_json(text)
    shape = (found.n_chunks, found.n_buffers, found.n_streams, found.window_bytes)
    assert shape == want, f"{question}: the trace is of another configuration {shape}"
    limit = MAX_CALLS_PER_CHUNK * want[0] + 64
    assert len(found.events) <= limit, (
        f"{question}: {len(found.events)} calls, more than {limit}; a schedule makes a few per chunk"
    )
    return found


@dataclasses.dataclass(frozen=True)
class ChallengeTiming:
    mine_ms: float
    link_floor_ms: float
    over_floor: float
    how: str


def _challenge_decided(ratios: list[float]) -> bool:
    """Whether the rounds so far settle the verdict: enough of them, all clearly on one side of the factor."""
    above, below = CHALLENGE_FACTOR * (1 + CHALLENGE_DECIDED), CHALLENGE_FACTOR * (1 - CHALLENGE_DECIDED)
    return len(ratios) >= CHALLENGE_EARLY_ROUNDS and (min(ratios) >= above or max(ratios) <= below)


def _challenge_live(recorded: trace.Trace, rounds: int) -> ChallengeTiming:
    """Yours and the duplex probe alternating, one run each a round, on one GPU; yours verified in the first round
    and the last.

    The link's duplex rate drifts by several percent over seconds, so each round's ratio compares two runs taken
    back to back, and the verdict is the median of the rounds' ratios. Once CHALLENGE_EARLY_ROUNDS rounds all lie on
    one side of the factor, each by CHALLENGE_DECIDED or more, the rest would not move the median across it: one
    more round (verified) ends it. On a quiet H200 one schedule's verdicts agree within 0.3%; on a busy one its
    rounds spread by +-6% and all of them run.
    """
    host = HostArrays(TIMED_TOTAL_BYTES)
    host.fill_random(secrets.randbelow(2**31))
    base = CupyContext(host, LINK_WINDOW, 2, 512)
    hooks = _timed_against(host, _expected_output(host, base), base.chunk_elems)
    mine_ctx = CupyContext(host, recorded.window_bytes, recorded.n_buffers, 512, n_streams=recorded.n_streams)
    ratios, mine_all, floor_all = [], [], []
    for done in range(1, rounds + 1):
        last = done == rounds or _challenge_decided(ratios)
        timed = dict(params={}, domain="grader", repeats=1, warmup=1 if done == 1 else 0)
        verified = done == 1 or last  # and the probe's run then follows the same poison pass as yours
        floor = time_pass(
            lambda: schedules.duplex(base),
            key="grader duplex",
            name="duplex",
            before_last=host.poison if verified else None,
            **timed,
        ).median_ms
        mine = time_pass(
            lambda: recorded.replay(mine_ctx),
            key="grader challenge",
            name="challenge",
            **timed,
            **(hooks("yours") if verified else {}),
        ).median_ms
        ratios.append(mine / floor)
        mine_all.append(mine)
        floor_all.append(floor)
        if last:
            break
    return ChallengeTiming(
        statistics.median(mine_all),
        statistics.median(floor_all),
        statistics.median(ratios),
        f"live, median of {len(ratios)} rounds of (yours / link floor), one run each back to back, yours verified",
    )


def _challenge_rates(record: Record, window: int) -> Rates:
    """Per-chunk stage times at any window from a record: per-byte rates plus a fixed cost per operation.

    The record's smallest and largest windows give both: a pass of N chunks costs N x (bytes/rate + fixed).
    """
    windows = report.windows(record)
    small, large = min(windows), max(windows)
    total = TIMED_TOTAL_BYTES
    per_chunk = []
    for name in ("h2d", "kernel", "d2h"):
        t_small, t_large = (report.measured(record, name, w, 1) for w in (small, large))
        n_small, n_large = total // small, total // large
        fixed = max(0.0, (t_small - t_large) / (n_small - n_large)) if n_small != n_large else 0.0
        streaming = t_large - n_large * fixed
        per_chunk.append(streaming * window / total + fixed)
    link = report.link_floor_ms(record)
    main = report.stages(record, report.main_window(record, None))
    stretch = 1.0 if link is None else max(1.0, link / max(main.h2d_ms, main.d2h_ms))
    return Rates(*per_chunk, duplex_stretch=stretch)


def _challenge_simulated(recorded: trace.Trace, record: Record) -> ChallengeTiming:
    link = report.link_floor_ms(record)
    assert link is not None, f"the record from {record.source} has no duplex probe, so no link floor"
    rates = _challenge_rates(record, recorded.window_bytes)
    mine = simulated_ms(recorded.replay, recorded.n_chunks, recorded.n_buffers, rates, n_streams=recorded.n_streams)
    return ChallengeTiming(
        mine,
        link,
        mine / link,
        f"offline, simulated on the recorded {record.device.name} stage times with a fixed cost per operation "
        f"(yours {mine:.2f} ms simulated, link floor {link:.2f} ms recorded)",
    )


def check_challenge(schedule: Callable[[Any], None], settings: Any) -> None:
    """Optional: your fastest correct schedule's time over the link floor measured in the same run.

    Met at CHALLENGE_FACTOR or less. Correct first: the schedule is judged by the ordering rules at the timed
    configuration and at three chunk counts drawn for this grading run with the same buffers, streams and window
    (1, an odd count 3-31, one the buffers do not divide 5-60), and live its timed runs of the first and the last
    round are verified. Prints the ratio and returns nothing (a value shown by a graded cell
    would be nbgrader's partial credit, and this cell is worth no points).
    """
    assert_own_schedule(schedule)
    counts_by_buffers = challenge_counts()  # drawn once: in your own kernel every draw is fresh
    asked = answers.answer(
        "your challenge settings and your schedule's calls at them",
        ("day54 challenge",),
        ask_challenge,
        schedule,
        settings,
        counts_by_buffers,
    )
    if answers.collecting():
        return
    assert isinstance(asked, dict) and "settings" in asked, "the challenge's answer is not settings and traces"
    picked = challenge_settings(asked["settings"])
    texts = asked.get("traces")
    counts = counts_by_buffers[picked.buffers]
    assert isinstance(texts, list) and len(texts) == len(counts) + 1, "the challenge's traces are missing"
    timed, *others = (
        _trace_of(
            text,
            f"your schedule's calls at {n} chunks, {picked.describe()}",
            (n, picked.buffers, picked.streams, picked.window),
        )
        for text, n in zip(texts, (picked.n_chunks, *counts), strict=True)
    )
    for one in [timed, *others]:
        problem = _fake_problems(one)
        assert problem is None, f"the challenge counts only a correct schedule, and this one is not: {problem}"
    found = (
        _challenge_live(timed, CHALLENGE_ROUNDS) if gpu_available() else _challenge_simulated(timed, shipped_profile())
    )
    where = f"{picked.describe()} ({found.how})"
    assert found.over_floor <= CHALLENGE_FACTOR, (
        f"your schedule takes {found.mine_ms:.2f} ms, {found.over_floor:.3f}x the link floor "
        f"({found.link_floor_ms:.2f} ms) at {where}; the challenge asks for at most {CHALLENGE_FACTOR:.2f}x"
    )
    say(
        f"challenge met: {found.mine_ms:.2f} ms, {found.over_floor:.3f}x the link floor ({found.link_floor_ms:.2f} ms) "
        f"<= {CHALLENGE_FACTOR:.2f}x at {where}"
    )


# -- analysis functions the student writes --------------------------------------------------------------


def _scaled(record: Record, factor: dict[str, float]) -> Record:
    """A copy of a record whose pass times are scaled per pass name: fresh numbers no one could hard-code."""
    clone = pickle.loads(pickle.dumps(record))  # a deep copy, 20x faster than through to_dict and from_dict
    for p in clone.passes:
        p.times_ms = [t * factor.get(p.name, 1.0) for t in p.times_ms]
    return clone


def check_sweep_ratios(
    sweep_ratios: Callable[[Record, int], dict[int, float]], record: Record, *, buffers: int = 2
) -> dict[int, float]:
    """The student's sweep function returns pipelined/naive per window, on this record and on a rescaled one.

    While grading, the record is the lesson's shipped profile, whatever the notebook's `record` holds.
    """
    if answers.grading():
        record = shipped_profile()
    records = (
        (record, "this run's record"),
        (_scaled(record, SWEEP_RESCALED), "a rescaled record"),
    )
    got = [
        answers.answer(
            f"sweep_ratios on {label} with {buffers} buffers",
            ("day54 sweep", label, buffers),
            ask_sweep,
            sweep_ratios,
            buffers,
            scaled,
            None if answers.grading() else record,
        )
        for scaled, (rec, label) in enumerate(records)
    ]
    if answers.collecting():
        return got[0]
    for (rec, label), mine in zip(records, got, strict=True):
        want = {w: report.ratio(rec, w, buffers) for w in report.windows(rec)}
        assert isinstance(mine, dict), f"on {label}: sweep_ratios returned a {type(mine).__name__}, not a dict"
        assert set(mine) == set(want), f"on {label}: windows {sorted(mine)} but the record has {sorted(want)}"
        for w, value in want.items():
            assert isinstance(mine[w], (int, float)), f"on {label}: the ratio at {w} is {mine[w]!r}"
            assert abs(mine[w] - value) <= 1e-6 * value, (
                f"on {label}: ratio at {w // MiB} MiB is {mine[w]:.4f}, the record says {value:.4f}"
            )
    result = got[0]
    say("ratios: " + ", ".join(f"{w // MiB} MiB {r:.3f}" for w, r in sorted(result.items())))
    return result


SWEEP_RESCALED = {"pipelined": 0.9, "naive": 1.1}


@answers.asker
def ask_sweep(
    sweep_ratios: Callable[[Record, int], Any], buffers: int, scaled: int, record: Record | None = None
) -> Any:
    """The student's sweep on a record (while grading the shipped profile), rescaled when `scaled`."""
    record = shipped_profile() if record is None else record
    return sweep_ratios(_scaled(record, SWEEP_RESCALED) if scaled else record, buffers)


def check_worst_window(result: dict[int, float]) -> None:
    """Of the sweep, the largest window has the worst (highest) ratio, as the edge argument predicts."""
    if answers.collecting():
        return
    assert isinstance(result, dict) and result, f"expected the sweep's ratios per window, got {result!r}"
    worst = max(result, key=result.get)
    assert worst == max(result), f"the worst ratio is at {worst // MiB} MiB, not the largest window"
    say(f"the worst ratio is at {worst // MiB} MiB, the largest window")


def check_prediction(
    predict_ms: Callable[..., float],
    *,
    tolerance: float = 0.01,
    cases: list[tuple[float, float, float, int, int, float | None]] | None = None,
) -> None:
    """The student's cost model gives the model's bound on each case, within `tolerance` (relative)."""
    if not answers.grading():  # while grading, the sandbox withholds the model itself
        assert_own_function(
            predict_ms,
            n_params=6,
            what="predict_pipelined_ms",
            references=(predict, chain_ms, fill_drain_ms),
            forbidden=("predict", "chain_ms", "fill_drain_ms", "Stages", "model"),
            hint="work the bounds out yourself",
        )
    cases = cases or [
        (19.56, 5.40, 19.55, 16, 2, 22.38),
        (87.81, 43.70, 82.44, 16, 2, None),
        (19.40, 5.24, 19.49, 4, 3, 22.0),
    ]
    got_all = [
        answers.answer(
            f"predict_pipelined_ms{tuple(case)}", ("day54 predict", case), answers.ask_call, predict_ms, *case
        )
        for case in cases
    ]
    if answers.collecting():
        return
    for (h2d, kernel, d2h, n_chunks, n_buffers, link), got in zip(cases, got_all, strict=True):
        want = predict(Stages(h2d, kernel, d2h, n_chunks), n_buffers, link).bound_ms
        assert isinstance(got, (int, float)) and not isinstance(got, bool), f"you predict {got!r}, not a number"
        assert abs(got - want) <= tolerance * want, (
            f"h2d {h2d}, kernel {kernel}, d2h {d2h} ms, {n_chunks} chunks, {n_buffers} buffers, link floor {link}: "
            f"you predict {got:.3f} ms, the model {want:.3f} ms"
        )
    say(f"{len(cases)} cases within {tolerance:.0%} of the model")


# -- name the pitfall: which pitfall each unlabelled timeline A-E shows (day54.plots.unlabelled_pitfalls) ----------


PITFALL_ANSWER = "a dict like {'A': 'pageable', 'B': ..., ...} with one pitfall name for each of A, B, C, D, E"


def _pitfall_letters(named: Any) -> dict[str, Any]:
    """{letter: name} from a student's dict, letters in any case; AssertionError saying what was expected."""
    assert isinstance(named, dict), f"your answer is a {type(named).__name__}; give {PITFALL_ANSWER}"
    letters: dict[str, Any] = {}
    for key, name in named.items():
        letter = key.strip().upper() if isinstance(key, str) else key
        assert letter in tuple(pitfalls.LETTERS), f"{key!r} is not one of the timelines; give {PITFALL_ANSWER}"
        assert letter not in letters, f"your answer names timeline {letter} twice; give {PITFALL_ANSWER}"
        letters[letter] = name
    missing = [letter for letter in pitfalls.LETTERS if letter not in letters]
    assert not missing, f"your answer names no pitfall for {', '.join(missing)}; give {PITFALL_ANSWER}"
    return letters


def check_pitfall_names(answer: Any) -> None:
    """Your names for the timelines A-E of plots.unlabelled_pitfalls: each the pitfall it shows.

    Names are the lesson's (legacy-launch, sync-in-loop, more-streams-than-buffers, pageable, timing-the-enqueue),
    in any case, with spaces, underscores or hyphens.
    """
    named = answers.answer(
        "your names for the pitfall timelines A-E", ("day54 pitfall names",), answers.ask_value, answer
    )
    if answers.collecting():
        return
    letters = _pitfall_letters(named)
    chosen = {}
    for letter in pitfalls.LETTERS:
        name = letters[letter]
        spelled = pitfalls.normalized(name) if isinstance(name, str) else None
        assert spelled in pitfalls.NAMES, (
            f"timeline {letter}: {name!r} is not one of the five pitfalls; choose from {', '.join(pitfalls.NAMES)}"
        )
        chosen[letter] = spelled
    key = pitfalls.pitfall_key()
    right = sum(chosen[letter] == key[letter] for letter in pitfalls.LETTERS)
    twice = sorted({name for name in chosen.values() if list(chosen.values()).count(name) > 1})
    assert right == len(pitfalls.LETTERS), (
        f"{right} of {len(pitfalls.LETTERS)} timelines named right"
        + (f" (you named {twice[0]} more than once, and each pitfall is one timeline)" if twice else "")
        + ": compare each with the correct pipeline beside it: which streams it uses, where the GPU waits, "
        "how long it takes, and where the host clock stopped"
    )
    say("all five named right: " + ", ".join(f"{letter} {chosen[letter]}" for letter in pitfalls.LETTERS))


def prepare() -> None:
    """Read the shipped profile once (a second of parsing): a warm grading process calls this before its first
    submission, and every check that reads the profile while grading then gets a copy (grader.zygote)."""
    shipped_profile()


verdicts(globals())  # in the student's kernel a failed check shows one verdict, not a traceback (labcore.checking)
