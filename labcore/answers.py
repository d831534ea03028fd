"""Answers as data: the one seam between a student's code and the checks that grade it.

A check never judges what a student's function does by trusting the process it ran in. Every call a check
makes into student code is a question, `answer(question, inputs, asker, *args)`: `asker` is a module-level function
of a course module marked `@asker`, and `args` its arguments, data or the student's names (the placeholders
`Answer(name)` that the grading processes bind them to). What happens depends on the process's role, a `Role`
that the process which grades passes explicitly (`act(role)`, or `with acting(role):`), never read from the
environment, so nothing a student's code sets in it changes what a check means:

    OWN              the student's own kernel (every process starts so): asker(*args) runs and its value is judged
                     on the spot (visible tests, self-checks; nothing here counts for a grade)
    Role.plan(FILE, seed)     the trusted side (grader.checker) runs the test cells, visible and hidden, with the
                     student's names as placeholders: each question is appended to FILE as data (key, asker's
                     qualified name, arguments with `{"student": name}` for a student's name), nothing is computed
                     (the answer is UNANSWERED), and the check ends at `asked()`; the question list is all the
                     sandbox learns of the tests
    ASK              the grading sandbox (grader.zygote's child, which it marks before any student code runs with
                     LABCORE_ANSWERS=ask: the one mark read from the environment, and no check runs there) runs
                     the student's cells, then answers each planned question with `ask(question, namespace)`: the
                     answers go to the zygote over a pipe opened before any student code ran, never to a file
    Role.collect(FILE, seed)  checks ask their questions, compute each answer as a student's kernel would and file
                     it in FILE, judging nothing (the lessons' tests of what their checks ask and what answers carry)
    Role.judge(FILE, seed)    the trusted checker (grader.checker), which never runs student code: the value is
                     read back from the answers file by the same key and judged

Values travel as JSON (numbers, strings, lists, dicts with any keys, NumPy arrays of numbers as their raw
bytes in base64), never as pickles, so reading them back cannot run code. What a sandbox sent is only ever data
to be judged: a forged value is judged exactly as if the student's function had returned it. Every value
round-trips through the same encoding in all roles, so the student's own kernel sees what the checker will see.

The inputs are the trusted side's: random inputs come from `fresh_seed(name)`, fresh on every call in a
student's kernel and, while grading, derived from the role's seed (new for every grading run) in the planner and
the checker, which build the same inputs; the sandbox gets them as the questions' arguments. While grading, a check
reads the lesson's data from the shipped profile (`lesson_data`), never from a variable of the student's notebook.

A check reads the same in every role: it asks all its questions, says they are asked, then judges. What a role
needs is done here, never branched on in a lesson's checks:

    got = [answer(question, inputs, ask_call, fn, *case) for case in asked_cases(drawn, OWN_CASES)]
    asked()          # planning or collecting, the check ends here (CheckEnds); judging or own, it goes on
    for case, value in zip(...): assert ...

    answer(..., read=parse)       parse(value) of a real answer (a trace's JSON into a Trace); the planner's
                                  UNANSWERED is never parsed
    asked_cases(drawn, own)       the cases asked: drawn() for this grading run, `own` (public ones) in the student's
    lesson_data(given, shipped)   the record judged on: shipped() while grading, the notebook's own `given` else
                                  (without `shipped`: None while grading, a question's argument, whose asker reads
                                  the shipped profile itself)
    labcore.checking.answer_key   the withheld key a check judges against while grading; in the student's own
                                  kernel the check ends there, saying the rest is decided when graded
    labcore.checking.assert_own_function   the early word that an answer is the student's own (own kernel only)
    labcore.public.Expectation.judges(case)  whether this process judges a case (grading: every one; the
                                  student's own kernel: the visible ones its public file answers)

`CheckEnds` is no failure: `labcore.checking.verdicts(globals())`, at the end of every lesson's checks module,
makes each check return None on it.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import functools
import hashlib
import importlib
import inspect
import json
import math
import os
import secrets
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NotRequired, TypedDict, TypeVar

import numpy as np

from labcore import lessons

SANDBOX_ENV = "LABCORE_ANSWERS"  # grader.zygote marks the sandbox's child with SANDBOX_ENV=ask (see ASK)
MAX_FILE_BYTES = 256 << 20  # an answers file larger than this is refused whole
REFUSED = "#refused"  # where _answers keeps an answers file's {"refused": why} line (the zygote refused the run's)
RECORD_ENV = "LABCORE_RECORD_REFERENCES"  # a folder: the instructors' checkout records what its references gave
RECORDED_DIR = Path(__file__).with_name("recorded")  # the student bundle's copy of such a folder (grader.bundle)
RECORDED_CALLS = "references.jsonl"


class NoAnswer(AssertionError):
    """The checker found no answer to a question (an AssertionError: the check fails, saying why)."""


class CheckEnds(BaseException):
    """A check ends here, having done all this process's role lets it (`asked`, labcore.checking.answer_key): not a
    failure. labcore.checking.verdicts makes a check return None on it; like pytest's outcomes it is no Exception,
    so no `except Exception` on its way swallows it."""


class AnswerRaised(AssertionError):
    """The student's code raised instead of answering (an AssertionError: the check fails, naming the error)."""


class ReferenceWithheld(RuntimeError):
    """Raised by a lesson's reference answer where its body is withheld: the student bundle, the grading sandbox."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"{name} is the lesson's reference answer to an exercise, withheld from students' code (the student "
            "edition and the grading sandbox hold no copy of it): write your own"
        )


F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


def reference(fn: F | None = None, *, recordable: bool = True) -> Any:
    """Mark a lesson's reference answer to an exercise (`@reference`, or `@reference(recordable=False)`).

    It works as written in the instructors' checkout only. The student bundle and the grading sandbox get copies of
    the lesson packages in which the body of every function marked so is replaced by a call of
    `recorded_reference` (grader.withhold): the student bundle answers there only the calls its lesson cells make
    on the shipped profile, with the results the checkout recorded (`python -m grader bundle`, with RECORD_ENV
    set); the sandbox has no record at all. So a student's answer that calls a reference, under any name, fails.
    `recordable=False` keeps even those results out of the bundle: a reference that *is* an answer whatever its
    arguments (the pitfall key).
    """

    def mark(found: F) -> F:
        folder = os.environ.get(RECORD_ENV)
        return _recording(found, Path(folder)) if folder and recordable else found

    return mark if fn is None else mark(fn)


def _recording(fn: F, folder: Path) -> F:
    """fn, filing each call's result under its arguments in folder (calls whose arguments are no data: not)."""
    signature = inspect.signature(fn)
    name = f"{fn.__module__}.{fn.__qualname__}"

    @functools.wraps(fn)
    def recording(*args: Any, **kwargs: Any) -> Any:
        value = fn(*args, **kwargs)
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        try:
            line = {"key": _recorded_key(name, bound.arguments), "value": _record_encode(value)}
        except TypeError:  # a context, a stream: a live call, which no replay repeats
            return value
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / RECORDED_CALLS, "a") as out:
            out.write(json.dumps(line, sort_keys=True) + "\n")
        return value

    return recording  # type: ignore[return-value]


def _record_encode(value: Any) -> Any:
    """`encode`, and dataclasses (the model's Stages and Prediction) by their class name and fields."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: _record_encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"dataclass": type(value).__qualname__, "fields": fields}
    if isinstance(value, (list, tuple)):
        return {"tuple" if isinstance(value, tuple) else "list": [_record_encode(v) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[_record_encode(k), _record_encode(v)] for k, v in value.items()]}
    return encode(value)


def _record_decode(data: Any, module: str) -> Any:
    """What `_record_encode` was given; a dataclass is looked up in the reference's own module only."""
    if isinstance(data, dict) and set(data) == {"dataclass", "fields"}:
        cls = getattr(importlib.import_module(module), data["dataclass"], None)
        if cls is None or not dataclasses.is_dataclass(cls):
            raise TypeError(f"{module} has no dataclass {data['dataclass']!r}")
        return cls(**{k: _record_decode(v, module) for k, v in data["fields"].items()})
    if isinstance(data, dict) and len(data) == 1 and next(iter(data)) in ("list", "tuple"):
        ((tag, body),) = data.items()
        items = [_record_decode(v, module) for v in body]
        return tuple(items) if tag == "tuple" else items
    if isinstance(data, dict) and len(data) == 1 and "dict" in data:
        return {_hashable(_record_decode(k, module)): _record_decode(v, module) for k, v in data["dict"]}
    return decode(data)


def _recorded_key(name: str, arguments: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(_record_encode(dict(arguments)), sort_keys=True).encode()).hexdigest()
    return f"{name} #{digest[:32]}"


@functools.cache
def _recorded_calls() -> dict[str, Any]:
    path = RECORDED_DIR / RECORDED_CALLS
    if not path.is_file():
        return {}
    found = {}
    for text in path.read_text().splitlines():
        line = json.loads(text)
        found.setdefault(line["key"], line["value"])
    return found


_SAID: set[str] = set()


RECORDED_SAID = "the course's recorded result for the shipped profile"  # what a withheld reference's answer says


def recorded_reference(module: str, name: str, arguments: dict[str, Any]) -> Any:
    """A withheld reference's body (grader.withhold): the recorded result of this very call, or ReferenceWithheld.

    The first recorded answer of each reference says once that it is the course's recorded result."""
    full = f"{module}.{name}"
    try:
        key = _recorded_key(full, arguments)
    except TypeError:
        key = ""
    found = _recorded_calls().get(key)
    if found is None:
        raise ReferenceWithheld(full)
    if full not in _SAID:
        _SAID.add(full)
        print(f"({full} is an exercise's answer, not in the student edition: what it gives here is {RECORDED_SAID})")
    return _record_decode(found, module)


def withheld(fn: Any) -> bool:
    """Whether fn is a reference whose body is withheld here (the student bundle, the grading sandbox)."""
    code = getattr(inspect.unwrap(fn), "__code__", None)
    return code is not None and recorded_reference.__name__ in code.co_names


def yours(name: str, probe: Callable[[Any], Any]) -> Any | None:
    """The student's own answer `name` from the notebook's namespace (`__main__`, IPython's), or None while it is
    missing or still the stub (probe(answer) raises NotImplementedError) or fails on probe: a lesson cell then shows
    the course's recorded result instead."""
    found = getattr(sys.modules.get("__main__"), name, None)
    if found is None:
        return None
    try:
        probe(found)
    except Exception:  # the stub's NotImplementedError, or an answer not working yet: the lesson does not use it
        return None
    return found


@contextlib.contextmanager
def standing_in(replacements: dict[Any, Any], packages: tuple[str, ...]) -> Iterator[None]:
    """While inside, each withheld reference (a key) is replaced by the student's answer standing in for it (its
    value) in every loaded module of `packages` that holds it: a lesson cell runs the student's answer where the
    student edition has no reference."""
    patched = []
    for module in [m for n, m in list(sys.modules.items()) if n.split(".")[0] in packages and m is not None]:
        for attr, value in list(vars(module).items()):
            for original, new in replacements.items():
                if value is original:
                    setattr(module, attr, new)
                    patched.append((module, attr, original))
    try:
        yield
    finally:
        for module, attr, original in patched:
            setattr(module, attr, original)


def recording_folder() -> Path | None:
    """Where the instructors' checkout records what the lesson shows from references (None: not recording)."""
    folder = os.environ.get(RECORD_ENV)
    return Path(folder) if folder else None


class Answer:
    """What a student's name stands for in the checker: a placeholder that only names the answer."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}: an answer read back from the sandbox>"

    def __call__(self, *args: Any) -> Any:
        """What the student's function of this name returned for args, read back (see `call`)."""
        return call(self.name, self, *args)


FILED = ("plan", "collect", "judge")  # the kinds of role with an answers file (and a grading run's seed)


@dataclasses.dataclass(frozen=True)
class Role:
    """What this process does with a question (see the module's docstring): its kind, the answers file of a kind
    that has one, and the grading run's seed that the trusted inputs are drawn from."""

    kind: str = "own"
    path: Path | None = None
    seed: str = "0"

    def __post_init__(self) -> None:
        if self.kind not in ("own", "ask", *FILED):
            raise ValueError(f"a role is own, ask, {', '.join(FILED)}; not {self.kind!r}")
        if (self.kind in FILED) != (self.path is not None):
            raise ValueError(f"a role {self.kind!r} {'needs an' if self.kind in FILED else 'takes no'} answers file")

    @classmethod
    def plan(cls, path: Path, seed: object) -> Role:
        return cls("plan", Path(path), str(seed))

    @classmethod
    def collect(cls, path: Path, seed: object = "0") -> Role:
        return cls("collect", Path(path), str(seed))

    @classmethod
    def judge(cls, path: Path, seed: object) -> Role:
        return cls("judge", Path(path), str(seed))


OWN, ASK = Role(), Role("ask")
role = OWN  # this process's role: set by the process that grades (act), never by the environment


def act(new: Role) -> Role:
    """Make `new` this process's role (the grading process that owns it says so); the role it had."""
    global role
    if not isinstance(new, Role):
        raise TypeError(f"a role is a labcore.answers.Role, not {type(new).__name__}")
    old, role = role, new
    return old


@contextlib.contextmanager
def acting(new: Role) -> Iterator[Role]:
    """`new` as this process's role while inside, the one before it after."""
    old = act(new)
    try:
        yield new
    finally:
        act(old)


def _role() -> Role:
    """The role acted, or ASK in the process grader.zygote marked as the sandbox's child."""
    if role is OWN and os.environ.get(SANDBOX_ENV) == "ask":
        return ASK
    return role


def collecting() -> bool:
    """True where checks ask their questions and judge nothing: planning them, or collecting their answers."""
    return _role().kind in ("plan", "collect")


def asked() -> None:
    """A check's questions are all asked: planning or collecting them, the check ends here (CheckEnds) before it
    judges anything; judging, or in the student's own kernel, it goes on."""
    if collecting():
        raise CheckEnds("asked")


def asked_cases(drawn: Callable[[], list[Any]], own: list[Any]) -> list[Any]:
    """The cases a check asks: drawn for this grading run while grading (`drawn()`, from the run's seed), else the
    fixed `own` ones, which the lesson's public file answers in the student's kernel (labcore.public)."""
    return drawn() if grading() else list(own)


def lesson_data(given: T, shipped: Callable[[], T] | None = None) -> T | None:
    """The lesson's data a check judges on (a record): the notebook's `given` in the student's own kernel; while
    grading the shipped profile (`shipped()`), never a variable of the student's notebook. Without `shipped`, None
    while grading: a question's argument, which must be data, and whose asker reads the shipped profile itself."""
    if not grading():
        return given
    return None if shipped is None else shipped()


def grading() -> bool:
    """True in every grading process: inputs are the trusted side's, data comes from shipped profiles."""
    return _role().kind != "own"


def run_seed() -> str | None:
    """The grading run's seed where this process plans, collects or judges its questions; None elsewhere."""
    now = _role()
    return now.seed if now.kind in FILED else None


def fresh_seed(name: str) -> int:
    """A seed for a check's random input: fresh each call in a student's kernel, shared by sandbox and checker."""
    if not grading():
        return secrets.randbelow(2**31)
    base = _role().seed
    return int.from_bytes(hashlib.sha256(f"{base}/{name}".encode()).digest()[:4], "little") & 0x7FFFFFFF


# -- the encoding ---------------------------------------------------------------------------------------------


def encode(value: Any) -> Any:
    """A JSON-able form of a value that `decode` turns back into an equal one."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if np.isfinite(value) else {"float": repr(value)}
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise TypeError(f"an array of {value.dtype} is not an answer the checker can read")
        # the raw bytes, base64: a 50,000-row answer costs a millisecond to file and read, not a tenth of a second
        raw = base64.b64encode(np.ascontiguousarray(value).tobytes()).decode("ascii")
        return {"array": value.dtype.str, "shape": list(value.shape), "bytes": raw}
    if isinstance(value, (list, tuple)):
        return {"tuple" if isinstance(value, tuple) else "list": [encode(v) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[encode(k), encode(v)] for k, v in value.items()]}
    raise TypeError(f"a {type(value).__name__} is not an answer the checker can read")


def decode(data: Any) -> Any:
    """The value `encode` was given; TypeError on anything else (a forged or damaged answer)."""
    if data is None or isinstance(data, (bool, str, int, float)):
        return data
    if isinstance(data, dict) and len(data) == 1:
        ((tag, body),) = data.items()
        if tag == "float":
            return float(body)
        if tag in ("list", "tuple"):
            items = [decode(v) for v in body]
            return tuple(items) if tag == "tuple" else items
        if tag == "dict":
            return {_hashable(decode(k)): decode(v) for k, v in body}
    if isinstance(data, dict) and set(data) == {"array", "shape", "bytes"}:
        return _array(data["array"], data["shape"], data["bytes"])
    raise TypeError(f"not an encoded answer: {str(data)[:80]}")


def _array(kind: Any, shape: Any, text: Any) -> np.ndarray:
    """An encoded array: numbers only, and exactly as many bytes as its shape holds (ValueError, TypeError else)."""
    dtype = np.dtype(kind) if isinstance(kind, str) else None
    if dtype is None or dtype.kind not in "biuf":
        raise TypeError(f"an array of {kind!r}")
    if not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape) or not isinstance(text, str):
        raise TypeError(f"an array of shape {str(shape)[:40]}")
    raw = base64.b64decode(text, validate=True)
    if len(raw) != math.prod(shape) * dtype.itemsize:
        raise ValueError(f"{len(raw):,} bytes for an array of {dtype} and shape {tuple(shape)}")
    if dtype.kind == "b":  # a byte other than 0 or 1 is no bool numpy compares as one
        return (np.frombuffer(raw, dtype=np.uint8) != 0).reshape(shape)
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def _hashable(key: Any) -> Any:
    if isinstance(key, list):
        return tuple(key)
    return key


def key_of(question: str, inputs: Any) -> str:
    """The key an answer is filed under: the question and a digest of its (trusted) inputs."""
    digest = hashlib.sha256(json.dumps(encode(inputs), sort_keys=True).encode()).hexdigest()[:24]
    return f"{question} #{digest}"


# -- askers: what a question runs of the student's ------------------------------------------------------------

_ASKERS: dict[str, Callable[..., Any]] = {}


def asker(fn: F) -> F:
    """Mark a module-level function of a course module as one the grading sandbox may run to answer a question:
    its arguments are data and the student's objects, its value the answer."""
    _ASKERS[f"{fn.__module__}.{fn.__qualname__}"] = fn
    return fn


def asker_named(name: str) -> Callable[..., Any]:
    """The asker of this qualified name, its module imported; LookupError for any other name."""
    module = name.rsplit(".", 1)[0]
    if name not in _ASKERS and module.split(".")[0] in asker_packages():
        importlib.import_module(module)
    if name not in _ASKERS:
        raise LookupError(f"{name} is not an asker of the course")
    return _ASKERS[name]


def asker_packages() -> tuple[str, ...]:
    """The packages a question's asker may come from: labcore and the listed lessons."""
    return ("labcore", *lessons.names())


@asker
def ask_call(fn: Callable[..., Any], *args: Any) -> Any:
    """The student's function applied to args."""
    return fn(*args)


@asker
def ask_value(value: Any) -> Any:
    """The student's value itself (a dict of settings, CUDA source)."""
    return value


class Unanswered:
    """What a question gives in the planner: no answer yet, an object like any other (equal to itself only, with no
    arithmetic and no truth value), so a check that used it instead of stopping after its questions fails loudly.
    A check asks all its questions, then ends at `asked()` where it plans or collects, before it judges anything."""

    def __repr__(self) -> str:
        return "<an answer the sandbox has not given yet>"

    def __bool__(self) -> bool:
        raise TypeError("an answer the sandbox has not given yet has no truth value: the check judged while planning")


UNANSWERED = Unanswered()


class PlannedQuestion(TypedDict):
    """One question as the planner files it and the sandbox gets it (grader.hops: what crosses each hop)."""

    key: str  # key_of(question, inputs)
    question: str  # what is asked, in words
    asker: str  # an @asker's qualified name
    args: list[Any]  # each encoded, or {"student": name} for a student's name
    hidden: NotRequired[bool]  # asked only by a hidden test (grader.checker); never sent to the sandbox


class AnswerLine(TypedDict):
    """One answer as the sandbox sends it and the checker reads it: the question's key and the encoded value, or
    what the student's code raised instead."""

    key: str
    value: NotRequired[Any]
    raised: NotRequired[str]


def _planned_arg(value: Any) -> Any:
    """A question's argument as the plan holds it: a student's name by name, data encoded."""
    if isinstance(value, Answer):
        return {"student": value.name}
    return encode(value)


# -- the roles --------------------------------------------------------------------------------------------------


def answer(
    question: str, inputs: Any, ask_with: Callable[..., Any], *args: Any, read: Callable[[Any], Any] | None = None
) -> Any:
    """The student's answer to one question: computed here, planned, computed and filed, or read back.

    `question` says in words what is asked (it appears in messages), `inputs` are the trusted values the question
    was asked with (they key the answer), and `ask_with(*args)` computes it from the student's code: an `@asker`.
    Errors the student's code raises become AnswerRaised; a value that cannot travel as data is refused the same way.
    `read`, where given, turns a real answer into what the check judges (AssertionError where it cannot); the
    planner's UNANSWERED is given back as it is.
    """
    now = _role()
    kind, path = now.kind, now.path
    key = key_of(question, inputs)
    if kind == "plan":
        name = f"{ask_with.__module__}.{ask_with.__qualname__}"
        assert _ASKERS.get(name) is ask_with, f"{name} is not an @asker: a question must name one"
        _file(path, PlannedQuestion(key=key, question=question, asker=name, args=[_planned_arg(a) for a in args]))
        return UNANSWERED
    if kind == "ask":
        raise RuntimeError("the grading sandbox answers planned questions (labcore.answers.ask); it runs no check")
    if kind == "judge":
        value = _read_back(path, key, question)
    else:
        line = _computed(key, lambda: ask_with(*args))
        if kind == "collect":
            _file(path, line)
        value = _value_of(line, question)
    return value if read is None else read(value)


def _computed(key: str, compute: Callable[[], Any]) -> AnswerLine:
    """{"key", "value"} (encoded as filed), or {"key", "raised": what the student's code raised}."""
    try:
        return {"key": key, "value": json.loads(json.dumps(encode(compute())))}
    except Exception as exc:  # the student's code failed: the check fails on it, in every role
        return {"key": key, "raised": f"{type(exc).__name__}: {exc}"}


def _value_of(line: AnswerLine, question: str) -> Any:
    if "raised" in line:
        raise AnswerRaised(f"{question}: {_raised(str(line['raised'])[:500])}")
    return decode(line["value"])


def ask(planned: PlannedQuestion, namespace: dict[str, Any]) -> AnswerLine:
    """One planned question answered in the grading sandbox: the line to send ({"key", "value"} or {"key", "raised"}).

    The student's names in its arguments are looked up in the namespace their cells ran in (a name their cells did
    not bind is their NameError, as in a notebook)."""

    def resolved() -> Any:
        args = []
        for arg in planned["args"]:
            if isinstance(arg, dict) and set(arg) == {"student"}:
                if arg["student"] not in namespace:
                    raise NameError(f"name {arg['student']!r} is not defined")
                args.append(namespace[arg["student"]])
            else:
                args.append(decode(arg))
        return asker_named(planned["asker"])(*args)

    return _computed(str(planned["key"]), resolved)


def _raised(text: str) -> str:
    """What a failure of the student's code says: a stub's NotImplementedError means not written yet."""
    if text.startswith("NotImplementedError"):
        return "not answered yet (your code still raises the stub's NotImplementedError: write the exercise)"
    return f"your code raised {text}"


def call(name: str, fn: Callable[..., Any], *args: Any) -> Any:
    """The student's function `name` applied to args, as an answer: for test cells that call one directly.

        assert call("clamp", clamp, 5, 0, 10) == 5

    The name, not the function's __name__, keys the answer, so it is the same in the sandbox (where fn is the
    student's function) and in the checker (where it is an Answer placeholder and is never called).
    """
    return answer(f"{name}{args!r}", ("call", name, args), ask_call, fn, *args)


def _file(path: Path | None, line: AnswerLine | PlannedQuestion) -> None:
    assert path is not None
    with open(path, "a") as out:
        out.write(json.dumps(line, separators=(",", ":")) + "\n")


@functools.cache
def _answers(path: Path) -> dict[str, dict[str, Any]]:
    """The first well-formed line filed under each key; lines that are not answers are ignored."""
    if not path.is_file():
        return {}
    if path.stat().st_size > MAX_FILE_BYTES:
        raise NoAnswer(f"the answers file is over {MAX_FILE_BYTES >> 20} MiB; no answer in it is read")
    found: dict[str, dict[str, Any]] = {}
    with open(path) as lines:
        for text in lines:
            try:
                line = json.loads(text)
            except ValueError:
                continue
            if isinstance(line, dict) and isinstance(line.get("refused"), str):
                found.setdefault(REFUSED, line)
            if isinstance(line, dict) and isinstance(line.get("key"), str) and ("value" in line or "raised" in line):
                found.setdefault(line["key"], line)
    return found


def _read_back(path: Path | None, key: str, question: str) -> Any:
    assert path is not None
    filed = _answers(path)
    line = filed.get(key)
    if REFUSED in filed:
        raise NoAnswer(f"{question}: no answer of this run counts: {str(filed[REFUSED]['refused'])[:300]}")
    if line is None:
        raise NoAnswer(
            f"{question}: no answer came back from running your notebook (the cell that asks it did not run, "
            f"or your code stopped the answer being recorded)"
        )
    if "raised" in line:
        raise AnswerRaised(f"{question}: {_raised(str(line['raised'])[:500])}")
    try:
        return decode(line["value"])
    except (TypeError, ValueError) as exc:
        raise NoAnswer(f"{question}: the answer that came back is not readable ({exc})") from None
