"""What graded checks share: saying how they decided, refusing the package's own code as an answer, and failing
in one verdict.

In the student's own kernel a failing check shows a verdict of a few lines instead of a traceback through the
lesson's modules, read off the test cell and the failure:

    ✗ not passed: Your schedule's output is bit-exact against naive (2 buffers, fresh random input).
      found: your schedule's calls at 16 chunks x 2 buffers, 64 MiB windows: not answered yet (...)
      next:  write my_pipelined in its exercise cell above (where it says YOUR CODE HERE), run that cell, then this one

It is still the same exception (AssertionError and its kind, the same message): the cell ends in an error, so
nbgrader scores it 0 and Run All goes on only past cells tagged `raises-exception`. IPython shows an exception's
`_render_traceback_()` in place of its traceback; `%tb` in the next cell prints the whole traceback. While
grading (labcore.answers.grading()) nothing changes: the grader words its own errors.
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import functools
import linecache
import math
import statistics
import sys
from collections.abc import Callable, Iterable, Mapping
from types import FrameType
from typing import Any, TypeVar

from labcore import answers
from labcore.device import gpu_available
from labcore.gpulock import gpu_turn
from labcore.pending import PENDING_GPU
from labcore.pipeline.trace import Trace
from labcore.record import Record

MAX_FOUND_LINES = 3  # a message longer than this is cut: a verdict is a few lines
RED, BOLD, RESET = "\x1b[31m", "\x1b[1m", "\x1b[0m"


def say(message: str) -> None:
    """Checks print how they decided, so feedback shows it."""
    print(f"[check] {message}")


# -- what a check measured, as data ------------------------------------------------------------------------------

SOURCES = ("live", "exports", "simulated", "recorded")  # where a number came from
RESULT_MIME = "application/vnd.labcore.result+json"  # a test cell's output that carries one Result
RECORDED_MAX = 64  # results kept for the grader to collect; a student's own kernel keeps only the last ones


@dataclasses.dataclass(frozen=True)
class Result:
    """One number a check measured and judged: what, at which setting, its value, the reference's value in the same
    run, the threshold, the unit, the relative noise of the measurement, and where the number came from (SOURCES:
    live on the GPU, the student's own nsys exports, simulated on recorded stage times, or a recorded profile).

    The check that measured it records it (`record`); the grader turns it into an output of the test cell
    (`outputs`), which the class report, its CSV and the feedback read back (`results_in`); the sentence a student
    sees is rendered from it by the check."""

    check: str  # the check and what it compares: "day54 challenge: yours / the course's best"
    setting: str  # "16 MiB windows (64 chunks), 6 buffers, 6 streams"
    quantity: str  # the axis: "x the course's best"
    value: float
    unit: str  # "x", "ms", "fraction"
    source: str
    reference: float | None = None  # the reference's value, measured the same way in the same run
    threshold: float | None = None  # None: shown, not judged
    passes_below: bool = True  # passes at or below the threshold (else at or above)
    noise: float | None = None  # the measurement's own relative spread (0.014: +-1.4%), where the check knows it
    detail: str = ""  # what else the check says of the number (its settings, the times behind a ratio)
    ranked: bool = False  # the class report ranks the class by this number (a leaderboard), ties within the noise

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"a result's source is one of {', '.join(SOURCES)}, not {self.source!r}")
        for name in ("value", "reference", "threshold", "noise"):
            number = getattr(self, name)
            if number is not None and (isinstance(number, bool) or not math.isfinite(float(number))):
                raise ValueError(f"a result's {name} is a finite number, not {number!r}")

    @property
    def passed(self) -> bool | None:
        """Whether the value is on the threshold's passing side (None: nothing to pass)."""
        if self.threshold is None:
            return None
        return self.value <= self.threshold if self.passes_below else self.value >= self.threshold

    @property
    def figure(self) -> str:
        """One histogram per check and setting: a file name's stem."""
        text = f"{self.check} {self.setting}".lower()
        return "-".join("".join(c if c.isalnum() else " " for c in text).split())

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Result:
        """A result read back from data; ValueError (or TypeError) for anything that is not one."""
        if not isinstance(data, Mapping):
            raise TypeError(f"a result is a mapping, not {type(data).__name__}")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"a result has no field {unknown[0]!r}")
        texts = ("check", "setting", "quantity", "unit", "source")
        if not isinstance(data.get("detail", ""), str):
            raise TypeError("a result's detail is text")
        for name in texts:
            if not isinstance(data.get(name), str):
                raise TypeError(f"a result's {name} is text, not {type(data.get(name)).__name__}")
        numbers = {
            name: None if data.get(name) is None else float(data[name])
            for name in ("value", "reference", "threshold", "noise")
            if name in data
        }
        if numbers.get("value") is None:
            raise ValueError("a result has no value")
        return cls(
            **{n: data[n] for n in texts},
            **numbers,
            passes_below=bool(data.get("passes_below", True)),
            detail=data.get("detail", ""),
            ranked=bool(data.get("ranked", False)),
        )


_recorded: collections.deque[Result] = collections.deque(maxlen=RECORDED_MAX)


def record(result: Result) -> Result:
    """Keep what a check measured for the grader to collect (grader.cells adds it to the test cell's outputs)."""
    _recorded.append(result)
    return result


def drain() -> list[Result]:
    """The results recorded since the last drain, oldest first; forgotten here."""
    found = list(_recorded)
    _recorded.clear()
    return found


def outputs(results: Iterable[Result]) -> list[dict[str, Any]]:
    """Notebook outputs (display_data) carrying results as data: what a graded test cell's outputs hold."""
    return [
        {"output_type": "display_data", "data": {RESULT_MIME: result.to_dict()}, "metadata": {}} for result in results
    ]


def results_in(cell_outputs: Iterable[Any]) -> list[Result]:
    """The results among a cell's outputs, in order; an output that is not a well-formed result is skipped."""
    found = []
    for output in cell_outputs:
        data = output.get("data") if output.get("output_type") == "display_data" else None
        if not isinstance(data, Mapping) or RESULT_MIME not in data:
            continue
        try:
            found.append(Result.from_dict(data[RESULT_MIME]))
        except (TypeError, ValueError):
            continue
    return found


def assert_own_function(
    fn: Any,
    *,
    n_params: int,
    what: str,
    references: Iterable[Callable[..., Any]] = (),
    forbidden: Iterable[str] = (),
    hint: str = "write it yourself",
) -> None:
    """The graded function was written in the notebook: the right arity, not a reference, calling none of them. An
    early word in the student's own kernel only: while grading the sandbox withholds the lesson's references
    themselves, under any name (labcore.answers.reference), and the checker holds a placeholder for `fn`."""
    if answers.grading():
        return
    assert callable(fn), f"expected a function for {what}, got {type(fn).__name__}"
    code = getattr(fn, "__code__", None)
    assert code is not None and code.co_argcount == n_params, (
        f"{what} takes {n_params} argument(s); yours takes {code.co_argcount if code else '?'}"
    )
    for ref in references:
        owner = ref.__module__.split(".")[0]
        assert ref.__code__ is not code, f"this is {owner}'s own {what}: write your own in the notebook"
    used = [name for name in forbidden if name in code.co_names or name in code.co_freevars]
    assert not used, f"your {what} calls {', '.join(used)} from the package; {hint}"


def rounds_decided(
    fractions: list[float],
    *,
    first_margin: float | None = None,
    least_rounds: int = 3,
    z: float = 3.0,
    least_noise: float = 0.002,
) -> bool:
    """Whether alternating timed rounds may stop, a sequential test on each round's number as a fraction of its bar
    (at most 1 passes): after one round, a pass `first_margin` inside the bar; from `least_rounds` on, once the
    median lies more than `z` standard errors of a median (1.25 x 1.48 x the rounds' median absolute deviation /
    sqrt(rounds), at least `least_noise`) from the bar, on either side. Undecided, the caller runs another round, up
    to its own limit, and judges the median of all."""
    if len(fractions) == 1 and first_margin is not None:
        return fractions[0] < 1 / first_margin
    if len(fractions) < least_rounds:
        return False
    middle = statistics.median(fractions)
    spread = statistics.median(abs(f - middle) for f in fractions)
    return abs(middle - 1.0) > z * max(least_noise, 1.2533 * 1.4826 * spread / math.sqrt(len(fractions)))


def decided_when_graded(checked: str, rest: str = "whether each is right", withheld: str = "the key") -> None:
    """In the student's kernel, a check that needs a withheld answer says what it checked and that the rest waits."""
    say(f"{checked}; {rest} is decided when your notebook is graded ({withheld} is not in your copy)")


K = TypeVar("K")


def answered_calls(fn: Any, what: str, question: str, cases: Iterable[tuple[Any, ...]]) -> list[Any]:
    """The student's `what`(*case) at each case, asked as data (labcore.answers.answer, keyed by `question` and the
    case), every one before the check judges any (answers.asked: planning or collecting, the check ends here)."""
    got = [answers.answer(f"{what}{tuple(case)}", (question, case), answers.ask_call, fn, *case) for case in cases]
    answers.asked()
    return got


def answer_key(key: Callable[[], K], checked: str, *, mistake: str | None = None) -> K:
    """The withheld answer key (`key()`, a lesson's `@reference`) a check judges against while grading. In the
    student's own kernel, which holds no key, the check ends here (labcore.answers.CheckEnds): failing on a `mistake`
    found without the key, else saying what it checked and that the rest is decided when graded."""
    if answers.grading():
        return key()
    assert mistake is None, mistake
    decided_when_graded(checked)
    raise answers.CheckEnds("decided when graded")


def verdicts(namespace: dict[str, Any], prefix: str = "check_") -> None:
    """Make every check defined in a checks module (`verdicts(globals())` at its end) fail in one verdict, and end
    quietly where its role ends it (labcore.answers.CheckEnds)."""
    module = namespace["__name__"]
    for name, fn in list(namespace.items()):
        if name.startswith(prefix) and callable(fn) and getattr(fn, "__module__", None) == module:
            namespace[name] = _speaks_in_verdicts(fn)


def _speaks_in_verdicts(check: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(check)
    def checked(*args: Any, **kwargs: Any) -> Any:
        try:
            return check(*args, **kwargs)
        except answers.CheckEnds:  # all this process's role lets the check do is done: no verdict
            return None
        except Exception as exc:
            if not answers.grading() and not hasattr(exc, "_render_traceback_"):
                lines = verdict(exc, _cell_source(sys._getframe(1)), check.__name__, args)
                exc._render_traceback_ = lambda: lines  # type: ignore[attr-defined]
            raise

    return checked


def _cell_source(frame: FrameType | None) -> str:
    """The source of the notebook cell that called the check (empty outside a notebook)."""
    while frame is not None and frame.f_globals.get("__name__") != "__main__":
        frame = frame.f_back
    if frame is None:
        return ""
    return "".join(linecache.getlines(frame.f_code.co_filename))


def verdict(exc: BaseException, cell: str, check: str, args: tuple[Any, ...] = ()) -> list[str]:
    """The lines a failed check shows in the student's kernel: what was checked, what was found, what to try; a
    check pending a GPU shows its one line."""
    message = str(exc).strip()
    if type(exc).__name__ == PENDING_GPU:  # neither passed nor failed: one line, nothing to fix
        return [f"{BOLD}⧗{RESET} " + " ".join(message.split())]
    asked, names = _asked(cell, check, args)
    if not isinstance(exc, AssertionError):  # the check could not read the answer at all
        message = f"the check could not use your answer: {type(exc).__name__}: {message}"
    found = message.splitlines()[:MAX_FOUND_LINES] or [f"{type(exc).__name__} in {check}, without a message"]
    yours = " and ".join(names) or "your answer"
    if "not answered yet" in message:
        step = f"write {yours} in the exercise cell above (where it says YOUR CODE HERE), run that cell, then this one"
    elif "your code raised" in message or not isinstance(exc, AssertionError):
        step = f"call {yours} in a new cell to see where it fails; fix it, run its cell, then this one (%tb: details)"
    else:
        step = f"change {yours} in the exercise cell above, run that cell, then this one again"
    return [
        f"{RED}{BOLD}✗ not passed{RESET}{RED}: {asked or check}{RESET}",
        *(f"  {'found:' if i == 0 else '      '} {line}" for i, line in enumerate(found)),
        f"  next:  {step}",
    ]


def _asked(cell: str, check: str, args: tuple[Any, ...]) -> tuple[str, list[str]]:
    """The test cell's one-line docstring, and the names of the answers it hands `check` (not the lesson's records)."""
    try:
        tree = ast.parse(cell)
    except SyntaxError:
        return "", []
    doc = (ast.get_docstring(tree) or "").strip().splitlines()
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == check
    ]
    given = calls[0].args if calls else []
    names = [
        arg.id
        for arg, value in zip(given, (*args, *[None] * len(given)), strict=False)
        if isinstance(arg, ast.Name) and not isinstance(value, Record)
    ]
    return (doc[0] if doc else ""), names


# -- what the schedule checks share ------------------------------------------------------------------------------


def format_window(window: int) -> str:
    """64 MiB, 12 KiB, 1000 B."""
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if window >= scale and window % scale == 0:
            return f"{window // scale} {unit}"
    return f"{window} B"


@dataclasses.dataclass(frozen=True)
class Case:
    """One configuration a schedule is recorded at: chunks, buffer pairs (one stream each) and the window."""

    n_chunks: int
    buffers: int
    window: int

    def describe(self) -> str:
        return f"{self.n_chunks}x{self.buffers} at {format_window(self.window)}"


MAX_CALLS_PER_CHUNK = 16  # a trace with more calls than this per chunk (and 64 to set up) is refused unreplayed


def trace_of(text: Any, question: str, want: tuple[int, int, int, int]) -> Trace:
    """A trace that came back as an answer, refused unless of the configuration asked (chunks, buffers, streams,
    window) and of a few calls per chunk."""
    assert isinstance(text, str), f"{question}: the answer is a {type(text).__name__}, not a trace"
    found = Trace.from_json(text)
    shape = (found.n_chunks, found.n_buffers, found.n_streams, found.window_bytes)
    assert shape == want, f"{question}: the trace is of another configuration {shape}"
    limit = MAX_CALLS_PER_CHUNK * want[0] + 64
    assert len(found.events) <= limit, (
        f"{question}: {len(found.events)} calls, more than {limit}; a schedule makes a few per chunk"
    )
    return found


def trace_question(
    n_chunks: int, buffers: int, window: int, streams: int | None = None
) -> tuple[str, Callable[[Any], Trace]]:
    """A trace question's words and its reader (labcore.answers.answer's `read`): the answer as a Trace of this
    configuration (`streams` None: one stream per buffer pair), or AssertionError (trace_of)."""
    question = f"your schedule's calls at {n_chunks} chunks x {buffers} buffers, {format_window(window)} windows"
    question += "" if streams is None else f", {streams} streams"
    want = (n_chunks, buffers, streams or buffers, window)
    return question, lambda text: trace_of(text, question, want)


def judge_correct(
    recorded: list[Trace],
    cases: list[Case],
    live: list[Case],
    problem: Callable[[Trace], str | None],
    run_live: Callable[[Trace], Any],
    said: tuple[str, str],
) -> None:
    """A schedule's correctness, judged on its traces at `cases` and then at `live`: each free of `problem` (the
    recording fake's verdict), and with a GPU each live one run on fresh input (`run_live`, AssertionError on a
    wrong output). `said` words the pass offline and live, with {shown} (every case) and {live} (the live ones)."""
    for one in recorded:
        found = problem(one)
        assert found is None, found
    shown = ", ".join(c.describe() for c in cases + live)
    if not gpu_available():
        say(said[0].format(shown=shown))
        return
    for one in recorded[len(cases) :]:
        run_live(one)
    say(said[1].format(shown=shown, live=", ".join(c.describe() for c in live)))


def expected_output(host: Any, ctx: Any) -> Any:
    """Naive's output for the host's input, kept on the device (ctx.expected_output); the host output poisoned."""
    with gpu_turn():  # untimed, but it would disturb a neighbour's timed pass
        expected = ctx.expected_output()
        host.poison()
    return expected


def assert_own_schedule(
    schedule: Callable[[Any], None],
    *,
    references: tuple[Callable[..., Any], ...],
    forbidden: tuple[str, ...],
    hint: str = "enqueue the copies and launches yourself",
) -> None:
    """In the student's own kernel, an early word: the schedule is written in the notebook, not the lesson's. While
    grading the sandbox withholds the lesson's schedules themselves (labcore.answers.reference), under any name."""
    assert_own_function(schedule, n_params=1, what="schedule", references=references, forbidden=forbidden, hint=hint)


def check_predicted(
    predict_ms: Callable[..., float],
    asked: tuple[str, str],
    cases: list[Any],
    want: Callable[[list[Any]], float],
    where: Callable[[Any], str],
    tolerance: float,
) -> None:
    """The student's prediction gives the model's time (`want`) on each case, within `tolerance` (relative); `asked`
    is (the function's name, the key its questions are filed under), `where` words a case in a failure. Every case
    is asked before any is judged (labcore.answers)."""
    name, key = asked
    for case, got in zip(cases, answered_calls(predict_ms, name, key, cases), strict=True):
        expected = want(list(case))
        assert isinstance(got, (int, float)) and not isinstance(got, bool), f"you predict {got!r}, not a number"
        assert abs(got - expected) <= tolerance * expected, (
            f"{where(case)}: you predict {got:.3f} ms, the model {expected:.3f} ms"
        )
    say(f"{len(cases)} cases within {tolerance:.0%} of the model")
