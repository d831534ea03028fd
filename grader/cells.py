"""Run notebook cells in this process, IPython's way, and keep what each printed or raised as notebook outputs.

The warm grading processes use it (grader.zygote in the sandbox, grader.checker outside it): no Jupyter kernel,
no ZeroMQ, one IPython shell made once per process and a fresh namespace for every submission. Magics and shell
lines work as in a notebook, but `%matplotlib`: grading has no display, matplotlib draws with Agg.
"""

from __future__ import annotations

import contextlib
import gc
import io
import traceback
from collections.abc import Callable
from typing import Any

from labcore import answers, checking

MAX_TEXT = 100_000  # characters of a cell's printed text kept (the rest is cut, saying so)


def shell() -> Any:
    """This process's IPython shell (made once: a few hundred milliseconds)."""
    from IPython.core.interactiveshell import InteractiveShell

    made = InteractiveShell.instance(colors="NoColor")
    made.history_manager.enabled = False
    # IPython prints a failing cell's traceback on stdout; here it becomes the cell's error output instead
    made.showtraceback = made.showsyntaxerror = made.showindentationerror = lambda *args, **kwargs: None
    return made


def keep_forever() -> None:
    """What this process made before its first submission (imports, shipped profiles, the shell) lives as long as
    the process: the collector need not walk it again (IPython's reset between submissions runs a full
    collection, a quarter of a second over those objects otherwise)."""
    gc.freeze()


def fresh_namespace(ip: Any) -> None:
    """Forget every name the last submission bound."""
    ip.reset(new_session=False)


def _source(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("%matplotlib"))


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"\n[... {len(text) - MAX_TEXT} characters cut]\n"


def error(ename: str, evalue: str, lines: list[str] | None = None) -> dict[str, Any]:
    """An error output as nbformat writes one."""
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": lines or [f"{ename}: {evalue}"]}


def run_cell(ip: Any, source: str, count: int) -> list[dict[str, Any]]:
    """Run one cell as In [count]; its outputs: what it printed (stdout, stderr), what its checks measured (as data:
    labcore.checking.outputs), then the error it raised, if any, with the traceback a notebook's kernel would show
    ("Cell In[count], line L": feedback reads the line)."""
    checking.drain()  # a result belongs to the cell whose check recorded it
    out, err = io.StringIO(), io.StringIO()
    ip.execution_count = count  # the number IPython names the cell by in tracebacks
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        result = ip.run_cell(_source(source), silent=True, store_history=False)
    outputs: list[dict[str, Any]] = []
    for name, buffer in (("stdout", out), ("stderr", err)):
        if buffer.getvalue():
            outputs.append({"output_type": "stream", "name": name, "text": _cut(buffer.getvalue())})
    outputs += checking.outputs(checking.drain())
    exc = result.error_before_exec or result.error_in_exec
    if exc is not None:
        if isinstance(exc, SyntaxError):  # IPython's own would show the frame of its compiler
            lines = [f"Cell In[{count}], line {exc.lineno}", *traceback.format_exception_only(type(exc), exc)]
        else:
            lines = ip.InteractiveTB.structured_traceback(type(exc), exc, exc.__traceback__, tb_offset=1)
        outputs.append(error(type(exc).__name__, _cut(str(exc)), [_cut("\n".join(lines))]))
    return outputs


def ask_cell(ip: Any, questions: list[dict[str, Any]], send: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
    """A test cell's place in the grading sandbox: each of its planned questions answered from the namespace the
    student's cells made (labcore.answers.ask) and sent; its outputs: what the student's code printed meanwhile, and
    an interrupt or exit that stopped it (the cell's remaining questions are then not answered)."""
    out, err = io.StringIO(), io.StringIO()
    stopped = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            for question in questions:
                send(answers.ask(question, ip.user_ns))
        except (KeyboardInterrupt, SystemExit) as exc:  # the time limit's SIGINT, or the student's code exiting
            stopped = exc
    outputs: list[dict[str, Any]] = []
    for name, buffer in (("stdout", out), ("stderr", err)):
        if buffer.getvalue():
            outputs.append({"output_type": "stream", "name": name, "text": _cut(buffer.getvalue())})
    if stopped is not None:
        outputs.append(error(type(stopped).__name__, _cut(str(stopped))))
    return outputs


def placeholders(names: list[str]) -> str:
    """A cell binding each name to a placeholder that only names it (labcore.answers.Answer)."""
    return "from labcore.answers import Answer as _Answer\n" + "".join(f"{n} = _Answer({n!r})\n" for n in names)
