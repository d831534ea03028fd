"""Answers as data: the one seam between a student's code and the checks that grade it.

A check never judges what a student's function does by trusting the process it ran in. Every call a check
makes into student code goes through `answer(question, inputs, compute)`, which behaves by the process's
role, read once from LABCORE_ANSWERS:

    (unset)          the student's own kernel: compute() runs and its value is judged on the spot (visible
                     tests, self-checks; nothing here counts for a grade)
    collect:FILE     the grading sandbox (grader.sandbox): compute() runs and its value, or the error it
                     raised, is appended to FILE as one JSON line keyed by (question, inputs); the check
                     then stops (`collecting()`), judging nothing
    judge:FILE       the trusted checker (grader.judge), which never runs student code: compute() is not
                     called; the value is read back from FILE by the same key and judged

Values travel as JSON (numbers, strings, lists, dicts with any keys, NumPy arrays of numbers as their raw
bytes in base64), never as pickles, so reading them back cannot run code. What a sandbox wrote is only ever data
to be judged: a forged value is judged exactly as if the student's function had returned it. Every value
round-trips through the same encoding in all three roles, so the student's own kernel sees what the checker will
see.

The inputs are the trusted side's: random inputs come from `fresh_seed(name)`, fresh on every call in a
student's kernel and, while grading, derived from LABCORE_SEED (new for every grading run, the same in the
sandbox and the checker), so both sides build the same inputs. While grading, a check reads the lesson's
data from the shipped profile (`grading()`), never from a variable of the student's notebook.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import math
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

ENV = "LABCORE_ANSWERS"
SEED_ENV = "LABCORE_SEED"
MAX_FILE_BYTES = 256 << 20  # an answers file larger than this is refused whole


class NoAnswer(AssertionError):
    """The checker found no answer to a question (an AssertionError: the check fails, saying why)."""


class AnswerRaised(AssertionError):
    """The student's code raised instead of answering (an AssertionError: the check fails, naming the error)."""


class ReferenceWithheld(RuntimeError):
    """Raised by a lesson's reference answer in the grading sandbox, where its body is withheld."""

    def __init__(self, name: str) -> None:
        super().__init__(f"{name} is the lesson's reference answer, withheld while grading: write your own")


F = TypeVar("F", bound=Callable[..., Any])


def reference(fn: F) -> F:
    """Mark a lesson's reference answer to an exercise.

    It works as written everywhere but in the grading sandbox, whose copy of the lesson packages has the body of
    every function marked so replaced by `raise ReferenceWithheld(...)` (grader.withhold): a student's answer
    that calls it, under any name, fails there, while the lesson keeps it for its own runs.
    """
    return fn


class Answer:
    """What a student's name stands for in the checker: a placeholder that only names the answer."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}: an answer read back from the sandbox>"

    def __call__(self, *args: Any) -> Any:
        """What the student's function of this name returned for args, read back (see `call`)."""
        return call(self.name, self, *args)


def _role() -> tuple[str, Path | None]:
    value = os.environ.get(ENV, "")
    if not value:
        return "own", None
    role, _, path = value.partition(":")
    if role not in ("collect", "judge") or not path:
        raise ValueError(f"{ENV}={value!r}: expected collect:FILE or judge:FILE")
    return role, Path(path)


def collecting() -> bool:
    """True in the grading sandbox: checks ask their questions and judge nothing."""
    return _role()[0] == "collect"


def grading() -> bool:
    """True in the sandbox and in the checker: inputs are the trusted side's, data comes from shipped profiles."""
    return _role()[0] != "own"


def fresh_seed(name: str) -> int:
    """A seed for a check's random input: fresh each call in a student's kernel, shared by sandbox and checker."""
    if not grading():
        return secrets.randbelow(2**31)
    base = os.environ.get(SEED_ENV, "0")
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


# -- the three roles ------------------------------------------------------------------------------------------


def answer(question: str, inputs: Any, compute: Callable[[], Any]) -> Any:
    """The student's answer to one question: computed here, computed and filed, or read back from the file.

    `question` says in words what is asked (it appears in messages), `inputs` are the trusted values the
    question was asked with, and `compute` calls the student's code. Errors the student's code raises
    become AnswerRaised; a value that cannot travel as data is refused the same way.
    """
    role, path = _role()
    key = key_of(question, inputs)
    if role == "judge":
        return _read_back(path, key, question)
    try:
        encoded = json.loads(json.dumps(encode(compute())))  # what the file holds, and the checker reads
        value = decode(encoded)
    except AnswerRaised:
        raise
    except Exception as exc:  # the student's code failed: the check fails on it, in every role
        text = f"{type(exc).__name__}: {exc}"
        if role == "collect":
            _file(path, {"key": key, "raised": text})
        raise AnswerRaised(f"{question}: {_raised(text)}") from None
    if role == "collect":
        _file(path, {"key": key, "value": encoded})
    return value


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
    return answer(f"{name}{args!r}", ("call", name, args), lambda: fn(*args))


def _file(path: Path | None, line: dict[str, Any]) -> None:
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
            if isinstance(line, dict) and isinstance(line.get("key"), str) and ("value" in line or "raised" in line):
                found.setdefault(line["key"], line)
    return found


def _read_back(path: Path | None, key: str, question: str) -> Any:
    assert path is not None
    line = _answers(path).get(key)
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
