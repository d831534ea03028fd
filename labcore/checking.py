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
import functools
import linecache
import sys
from collections.abc import Callable, Iterable
from types import FrameType
from typing import Any

from labcore import answers
from labcore.record import Record

MAX_FOUND_LINES = 3  # a message longer than this is cut: a verdict is a few lines
RED, BOLD, RESET = "\x1b[31m", "\x1b[1m", "\x1b[0m"


def say(message: str) -> None:
    """Checks print how they decided, so feedback shows it."""
    print(f"[check] {message}")


def assert_own_function(
    fn: Any,
    *,
    n_params: int,
    what: str,
    references: Iterable[Callable[..., Any]] = (),
    forbidden: Iterable[str] = (),
    hint: str = "write it yourself",
) -> None:
    """The graded function was written in the notebook: the right arity, not a reference, calling none of them."""
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


def verdicts(namespace: dict[str, Any], prefix: str = "check_") -> None:
    """Make every check defined in a checks module (`verdicts(globals())` at its end) fail in one verdict."""
    module = namespace["__name__"]
    for name, fn in list(namespace.items()):
        if name.startswith(prefix) and callable(fn) and getattr(fn, "__module__", None) == module:
            namespace[name] = _speaks_in_verdicts(fn)


def _speaks_in_verdicts(check: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(check)
    def checked(*args: Any, **kwargs: Any) -> Any:
        try:
            return check(*args, **kwargs)
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
    """The lines a failed check shows in the student's kernel: what was checked, what was found, what to try."""
    asked, names = _asked(cell, check, args)
    message = str(exc).strip()
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
