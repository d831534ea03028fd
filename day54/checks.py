"""The checks autograded notebook cells call. Each raises AssertionError with the measured numbers.

Every check says how it decided, and a timing check records what it measured as data (labcore.checking.Result),
its sentence rendered from that. The four timing sources are one module each: live on the GPU
(day54.timing_live: fresh random input, repeats and medians, events cross-checked against a host clock);
without a GPU, the submitted trace simulated on the course's recorded H200 stage times (day54.timing_sim); the
nsys exports a student's own run left beside the notebook (day54.timing_exports: `day54_run_*.csv`, never a
point: offline they are compared with the trace, a contradiction fails the check, and what they measured is
shown as unverified); the shipped recorded profile the analysis checks judge on (day54.timing_recorded). What
they share is day54.timings. This module asks the questions and judges.

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
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from day54 import pitfalls, report, schedules
from day54.config import MiB
from day54.model import Stages, chain_ms, fill_drain_ms, predict
from day54.replay import shipped_profile
from day54.timing_exports import RUN_PREFIX as RUN_PREFIX
from day54.timing_exports import student_exports as _student_exports
from day54.timing_live import challenge_live as _challenge_live
from day54.timing_live import challenge_rounds as challenge_rounds
from day54.timing_live import live_correct as _live_correct
from day54.timing_live import live_timing as _live_timing
from day54.timing_recorded import scaled as _scaled
from day54.timing_sim import challenge_simulated as _challenge_simulated
from day54.timing_sim import simulated_timing as _simulated_timing
from day54.timings import CHALLENGE_DECIDED as CHALLENGE_DECIDED
from day54.timings import CHALLENGE_EARLY_ROUNDS as CHALLENGE_EARLY_ROUNDS
from day54.timings import (
    CHALLENGE_FACTOR,
    CHALLENGE_FLOOR_NOISE,
    CHALLENGE_MAX_BUFFERS,
    CHALLENGE_MAX_STREAMS,
    CHALLENGE_NOISE,
    CHALLENGE_ROUNDS,
    COURSE_BEST,
    TIMED_TOTAL_BYTES,
    ChallengeSettings,
    ChallengeTiming,
    KiB,
    Timing,
    format_window,
)
from day54.timings import LINK_WINDOW as LINK_WINDOW
from day54.timings import challenge_decided as challenge_decided
from labcore import answers, checking, measured, public
from labcore.checking import Case, Result, assert_own_function, decided_when_graded, rounds_decided, say, verdicts
from labcore.device import gpu_available
from labcore.pipeline import trace
from labcore.pipeline.context import LEGACY
from labcore.pipeline.recording import RecordingContext
from labcore.record import Record


def assert_own_schedule(schedule: Callable[[Any], None]) -> None:
    """In the student's kernel, a quick hint: the schedule is written in the notebook, not imported from day54.

    While grading the sandbox withholds the reference schedules themselves (labcore.answers.reference), which
    catches them under any name; this name check is only the early word in the student's own run.
    """
    checking.assert_own_schedule(
        schedule, references=(schedules.naive, schedules.pipelined), forbidden=("schedules", "pipelined")
    )


# -- correctness ------------------------------------------------------------------------------------------------


CASES = 8  # configurations drawn for the correctness check, beside the cell's own


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
    question, read = checking.trace_question(n_chunks, buffers, window, streams)
    inputs = ("day54 trace", n_chunks, buffers, window, *(() if streams is None else (streams,)))
    return answers.answer(question, inputs, ask_trace, schedule, n_chunks, buffers, window, streams, read=read)


@answers.asker
def ask_trace(schedule: Callable[[Any], None], n_chunks: int, buffers: int, window: int, streams: int | None) -> str:
    """The schedule's trace at one configuration, as JSON text (what `traced` asks)."""
    return trace.record(schedule, n_chunks, buffers, n_streams=streams, window_bytes=window).to_json()


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
    answers.asked()
    checking.judge_correct(  # the live ones too: offline they are four more configurations
        recorded + live_traces,
        cases,
        live,
        _fake_problems,
        _live_correct,
        (
            "offline: every chunk's output comes from its own input and no access to the same bytes is unordered at "
            "{shown} (chunks x buffers at a window; recording fake, no GPU to run it on)",
            "by the ordering rules at {shown}; live on fresh random input at {live}",
        ),
    )


def check_no_early_reuse(schedule: Callable[[Any], None], *, buffers: int = 2) -> None:
    """No buffer pair takes a new chunk before the copy out of its previous chunk is ordered before it.

    At two configurations of `buffers` drawn for this grading run (drawn_cases): a chunk count the buffers do not
    divide (5-60) and many (100-200), windows 4 KiB to 256 MiB.
    """
    cases = drawn_cases(f"reuse {buffers}", buffers=buffers, count=4, many=200)[2:4]
    recorded_all = [traced(schedule, case.n_chunks, buffers, case.window) for case in cases]
    answers.asked()
    for case, recorded in zip(cases, recorded_all, strict=True):
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
    answers.asked()
    problem = _fake_problems(recorded)
    assert problem is None, f"practices count only in a schedule that does the work, and this one does not: {problem}"
    found = practice_problems(recorded)
    at = f"{recorded.n_chunks} chunks x {buffers} buffers"
    assert not found, f"{at}: {len(found)} practice problem(s), each of which serializes the streams: {found[0]}" + (
        f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    )
    say(f"{at}: worker streams only, and the host waits only after the loop")


# -- timing -----------------------------------------------------------------------------------------

REFERENCE_FACTOR = 1.05  # your pipelined time may exceed the reference pipeline's, same run and GPU, by this much
# A live pass this far (a factor) inside both thresholds after one round is decided: more than twice the spread of one
# round's median on the H200 (0.562-0.567 for the 64 MiB ratio over 20 rounds). Otherwise at least three rounds, and
# more until the verdict is decided (ratio_decided), up to MAX_RATIO_ROUNDS, then judged on the medians of all: in a
# live class of 120 on the H200 (2026-12-05) copies of the reference measured 0.965-1.062x the reference at 4 MiB
# after three rounds, and one missed the 1.05x bar.
CLEAR_MARGIN = 1.025
RATIO_ROUNDS = 3
MAX_RATIO_ROUNDS = 9
DECIDED_Z = 3.0  # standard errors between the rounds' median and the bar that decide a verdict (ratio_decided)
MIN_NOISE = 0.002  # the least standard error assumed: three rounds can agree closer than the link ever does


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
    recorded: trace.Trace,
    rounds: int,
    directory: Path,
    decided: Callable[[Timing, int], bool] | None = None,
    what: str | None = None,
) -> Timing:
    """Live, or offline: the simulator on the course's recorded stage times, never the student's own exports. Live
    with `what` (the check and its bar), a trace timed once in a grading run serves every identical one
    (labcore.measured)."""
    if gpu_available():
        if what is None:
            return _live_timing(recorded, rounds, decided)
        timing, shared = measured.once(
            what,
            measured.digest(recorded.to_json(), rounds),
            lambda: _live_timing(recorded, rounds, decided),
            dataclasses.asdict,
            lambda data: Timing(**data),
        )
        return dataclasses.replace(timing, how=f"{timing.how}; {measured.SHARED}") if shared else timing
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
    twin = traced(schedule, timed_twin(buffers), buffers, window)  # the timed shape never changes: this one does
    answers.asked()
    problem = _fake_problems(recorded) or _fake_problems(twin)
    assert problem is None, f"the schedule that would be timed is wrong, so its time does not count: {problem}"

    def decided(timing: Timing, done: int) -> bool:
        return ratio_decided(worst_rounds(timing, threshold), done)

    what = f"day54 ratio {threshold} {REFERENCE_FACTOR}"
    timing = _timing(recorded, MAX_RATIO_ROUNDS, Path("."), decided, what)  # the very calls just checked
    ratio, over = (None if r is None else checking.record(r) for r in ratio_results(timing, window, buffers, threshold))
    where = f"at {window // MiB} MiB with {buffers} buffers ({timing.how})"
    assert ratio.passed, f"pipelined/naive = {ratio.value:.3f} {where}, above the {threshold:.2f} threshold"
    if over is None:  # the student's kernel, where the reference pipeline is withheld
        decided_when_graded(
            f"pipelined/naive = {ratio.value:.3f} <= {threshold:.2f} {where}",
            f"within {REFERENCE_FACTOR:.2f}x of the reference pipeline timed beside yours",
            "the reference pipeline",
        )
        return
    assert over.passed, (
        f"your schedule takes {over.value:.3f}x the reference pipeline's time {where}: more than "
        f"{REFERENCE_FACTOR:.2f}x; something in it serializes what the reference overlaps"
    )
    say(
        f"pipelined/naive = {ratio.value:.3f} <= {threshold:.2f}, {over.value:.3f}x the reference "
        f"pipeline <= {REFERENCE_FACTOR:.2f}x {where}"
    )


def timed_twin(buffers: int) -> int:
    """The chunk count a timed schedule is also recorded (and judged) at, beside the timed shape, which never
    changes: drawn for this grading run, one the buffers do not divide (17-64, past every count the checks once
    used but 256, and cheap to record), so no answer made at home fits it."""
    return _not_divisible(_draws(f"timed twin {buffers}"), buffers, 17, 64)


def worst_rounds(timing: Timing, threshold: float) -> list[float]:
    """Each round's nearer number to its bar, as a fraction of it (at most 1 passes): yours / naive over the
    threshold, yours / the reference over REFERENCE_FACTOR (the reference withheld: the first alone)."""
    return [
        max(mine / naive / threshold, 0.0 if reference is None else mine / reference / REFERENCE_FACTOR)
        for naive, reference, mine in timing.rounds
    ]


def ratio_decided(worst: list[float], done: int) -> bool:
    """Whether the ratio check's rounds may stop after `done` rounds (`worst`: each round's worst_rounds), a
    sequential test: a clear pass after one round (CLEAR_MARGIN, more than twice one round's spread); from
    RATIO_ROUNDS on, once the median of the rounds lies more than DECIDED_Z standard errors of a median (from the
    rounds' own spread, at least MIN_NOISE) from the bar, on either side. At most MAX_RATIO_ROUNDS - RATIO_ROUNDS +
    1 looks at z = 3 each: a verdict the noise decided wrong at under 1% (Bonferroni). Undecided after
    MAX_RATIO_ROUNDS, the medians of all rounds judge."""
    if done != len(worst):
        return False
    return rounds_decided(
        worst, first_margin=CLEAR_MARGIN, least_rounds=RATIO_ROUNDS, z=DECIDED_Z, least_noise=MIN_NOISE
    )


def ratio_results(timing: Timing, window: int, buffers: int, threshold: float) -> tuple[Result, Result | None]:
    """check_pipelined_ratio's two numbers as data: pipelined/naive, and yours over the reference pipeline (None where
    the reference is withheld: the student's kernel)."""
    setting = f"{format_window(window)}, {buffers} buffers"
    reference = "withheld" if timing.reference_ms is None else f"{timing.reference_ms:.2f} ms"
    times = f"naive {timing.naive_ms:.2f} ms, the reference {reference}, yours {timing.mine_ms:.2f} ms"
    mine = Result(
        "day54 pipelined/naive",
        setting,
        "pipelined / naive",
        timing.ratio,
        "x",
        timing.source,
        reference=None if timing.reference_ms is None else timing.reference_ms / timing.naive_ms,
        threshold=threshold,
        noise=timing.noise(0),
        detail=times,
    )
    if timing.over_reference is None:
        return mine, None
    return (
        mine,
        Result(
            "day54 yours / the reference pipeline",
            setting,
            "x the reference pipeline",
            timing.over_reference,
            "x",
            timing.source,
            reference=1.0,
            threshold=REFERENCE_FACTOR,
            noise=timing.noise(1),
            detail=times,
        ),
    )


# -- the challenge: the fastest correct schedule, against the course's best --------------------------------


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


def challenge_results(found: ChallengeTiming, picked: ChallengeSettings) -> tuple[Result | None, Result]:
    """The challenge's two numbers as data: yours over the course's best (judged; None where the course's best is
    withheld, the student's kernel) and over the link floor (shown, and what the class report ranks by)."""
    live = found.source == "live"
    best_ms = "withheld" if found.best_ms is None else f"{found.best_ms:.2f} ms"
    detail = (
        f"yours {found.mine_ms:.2f} ms, the course's best {best_ms}, the link floor "
        f"{found.link_floor_ms:.2f} ms ({found.how})"
    )
    floor = Result(
        "day54 challenge: yours / the link floor",
        "your settings",
        "x the link floor",
        found.over_floor,
        "x",
        found.source,
        reference=None if found.best_ms is None else found.best_ms / found.link_floor_ms,
        noise=CHALLENGE_FLOOR_NOISE if live else None,
        detail=f"{picked.describe()}: {detail}",
        ranked=True,
    )
    if found.over_best is None:
        return None, floor
    best = Result(
        "day54 challenge: yours / the course's best",
        "your settings",
        "x the course's best",
        found.over_best,
        "x",
        found.source,
        reference=1.0,
        threshold=CHALLENGE_FACTOR,
        noise=CHALLENGE_NOISE if live else None,
        detail=f"{picked.describe()}: {detail}",
    )
    return best, floor


def challenge_words(best: Result, floor: Result) -> str:
    """The challenge's sentence, rendered from its results."""
    noise = f" (noise +-{best.noise:.1%})" if best.noise is not None else ""
    return (
        f"{best.value:.3f}x the course's best{noise}, {floor.value:.3f}x the link floor (the course's best "
        f"{floor.reference:.3f}x) at {best.detail}"
    )


def _challenge_found(timed: trace.Trace) -> ChallengeTiming:
    """The challenge's numbers: live (timed once in a grading run for identical work, labcore.measured), or
    simulated on the shipped profile."""
    if not gpu_available():
        return _challenge_simulated(timed, shipped_profile())
    found, shared = measured.once(
        "day54 challenge",
        measured.digest(timed.to_json(), CHALLENGE_ROUNDS),
        lambda: _challenge_live(timed, CHALLENGE_ROUNDS),
        dataclasses.asdict,
        lambda data: ChallengeTiming(**data),
    )
    return dataclasses.replace(found, how=f"{found.how}; {measured.SHARED}") if shared else found


def check_challenge(schedule: Callable[[Any], None], settings: Any) -> None:
    """Optional: your fastest correct schedule's time over the course's best schedule measured in the same rounds.

    Met at CHALLENGE_FACTOR or less (its noise CHALLENGE_NOISE beside it); your time over the link floor is shown
    too, and ranks you in the class report. Correct first: the schedule is judged by the ordering rules at the timed
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
    answers.asked()
    assert isinstance(asked, dict) and "settings" in asked, "the challenge's answer is not settings and traces"
    picked = challenge_settings(asked["settings"])
    texts = asked.get("traces")
    counts = counts_by_buffers[picked.buffers]
    assert isinstance(texts, list) and len(texts) == len(counts) + 1, "the challenge's traces are missing"
    timed, *others = (
        checking.trace_of(
            text,
            f"your schedule's calls at {n} chunks, {picked.describe()}",
            (n, picked.buffers, picked.streams, picked.window),
        )
        for text, n in zip(texts, (picked.n_chunks, *counts), strict=True)
    )
    for one in [timed, *others]:
        problem = _fake_problems(one)
        assert problem is None, f"the challenge counts only a correct schedule, and this one is not: {problem}"
    found = _challenge_found(timed)
    best, floor = (None if r is None else checking.record(r) for r in challenge_results(found, picked))
    if best is None:  # the student's kernel, where the course's best schedule is withheld
        decided_when_graded(
            f"yours {floor.value:.3f}x the link floor at {floor.detail}",
            f"at most {CHALLENGE_FACTOR:.2f}x the course's best timed beside yours",
            "the course's best schedule",
        )
        return
    assert best.passed, (
        f"your schedule takes {challenge_words(best, floor)}\nthe challenge asks for at most {CHALLENGE_FACTOR:.2f}x "
        f"the course's best ({COURSE_BEST.describe()}, measured in the same rounds)"
    )
    say(f"challenge met, at most {CHALLENGE_FACTOR:.2f}x the course's best: {challenge_words(best, floor)}")


# -- analysis functions the student writes --------------------------------------------------------------


def check_sweep_ratios(
    sweep_ratios: Callable[[Record, int], dict[int, float]], record: Record, *, buffers: int = 2
) -> dict[int, float]:
    """The student's sweep function returns pipelined/naive per window, on this record and on a rescaled one.

    While grading, the record is the lesson's shipped profile, whatever the notebook's `record` holds.
    """
    record = answers.lesson_data(record, shipped_profile)
    scale = sweep_scale(buffers)
    records = (
        (record, "this run's record", None),
        (_scaled(record, scale), "a rescaled record", scale),
    )
    got = [
        answers.answer(
            f"sweep_ratios on {label} with {buffers} buffers",
            ("day54 sweep", label, buffers, factors),
            ask_sweep,
            sweep_ratios,
            buffers,
            factors,
            answers.lesson_data(record),
        )
        for rec, label, factors in records
    ]
    answers.asked()
    for (rec, label, _), mine in zip(records, got, strict=True):
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


def sweep_scale(buffers: int) -> dict[str, float]:
    """The rescaled record's factors per pass, drawn for this grading run (fresh in your own kernel): the shipped
    profile never changes, so an answer made at home could fit it, never this one. The checker recomputes the
    ratios on the same rescaled record."""
    rng = _draws(f"sweep rescale {buffers}")
    return {"pipelined": round(rng.uniform(0.75, 0.95), 4), "naive": round(rng.uniform(1.05, 1.3), 4)}


@answers.asker
def ask_sweep(
    sweep_ratios: Callable[[Record, int], Any], buffers: int, scale: dict | None, record: Record | None = None
) -> Any:
    """The student's sweep on a record (while grading the shipped profile), rescaled by `scale` when given."""
    record = shipped_profile() if record is None else record
    return sweep_ratios(_scaled(record, scale) if scale else record, buffers)


def check_worst_window(result: dict[int, float]) -> None:
    """Of the sweep, the largest window has the worst (highest) ratio, as the edge argument predicts."""
    answers.asked()  # it asks nothing; what it judges is the sweep check's answer, which planning has not got
    assert isinstance(result, dict) and result, f"expected the sweep's ratios per window, got {result!r}"
    worst = max(result, key=result.get)
    assert worst == max(result), f"the worst ratio is at {worst // MiB} MiB, not the largest window"
    say(f"the worst ratio is at {worst // MiB} MiB, the largest window")


PREDICTION = public.Expectation(  # the visible cases, and the model's bound at each (labcore.public)
    "day54",
    "prediction",
    [(19.56, 5.40, 19.55, 16, 2, 22.38), (87.81, 43.70, 82.44, 16, 2, None), (19.40, 5.24, 19.49, 4, 3, 22.0)],
    lambda case: predict(Stages(*case[:4]), case[4], case[5]).bound_ms,
)


def check_prediction(
    predict_ms: Callable[..., float],
    *,
    tolerance: float = 0.01,
    cases: list[tuple[float, float, float, int, int, float | None]] | None = None,
) -> None:
    """The student's cost model gives the model's bound on each case, within `tolerance` (relative)."""
    assert_own_function(
        predict_ms,
        n_params=6,
        what="predict_pipelined_ms",
        references=(predict, chain_ms, fill_drain_ms),
        forbidden=("predict", "chain_ms", "fill_drain_ms", "Stages", "model"),
        hint="work the bounds out yourself",
    )
    checking.check_predicted(
        predict_ms,
        ("predict_pipelined_ms", "day54 predict"),
        cases or PREDICTION.cases,
        PREDICTION.want,
        lambda c: f"h2d {c[0]}, kernel {c[1]}, d2h {c[2]} ms, {c[3]} chunks, {c[4]} buffers, link floor {c[5]}",
        tolerance,
    )


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
    answers.asked()
    letters = _pitfall_letters(named)
    chosen = {}
    for letter in pitfalls.LETTERS:
        name = letters[letter]
        spelled = pitfalls.normalized(name) if isinstance(name, str) else None
        assert spelled in pitfalls.NAMES, (
            f"timeline {letter}: {name!r} is not one of the five pitfalls; choose from {', '.join(pitfalls.NAMES)}"
        )
        chosen[letter] = spelled
    twice = sorted({name for name in chosen.values() if list(chosen.values()).count(name) > 1})
    key = checking.answer_key(
        pitfalls.pitfall_key,
        "five timelines, five different pitfall names, each one of the lesson's",
        mistake=f"you named {twice[0]} more than once, and each pitfall is one timeline" if twice else None,
    )
    right = sum(chosen[letter] == key[letter] for letter in pitfalls.LETTERS)
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
