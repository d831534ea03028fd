"""Run notebook cells in this process, IPython's way, and keep what each printed or raised as notebook outputs.

The warm grading processes use it (grader.zygote in the sandbox, grader.checker outside it): no Jupyter kernel,
no ZeroMQ, one IPython shell made once per process and a fresh namespace for every submission. Magics and shell
lines work as in a notebook, but `%matplotlib`: grading has no display, matplotlib draws with Agg.

A cell run `rich` (the lesson's and the student's cells of a whole notebook, `--feedback now`) also keeps what a
notebook's kernel would show besides its printed text: its last expression's value (execute_result), what it
displayed (display_data), and every figure left open at its end as a PNG, as the inline backend shows them.
"""

from __future__ import annotations

import base64
import contextlib
import gc
import io
import sys
import traceback
from collections.abc import Callable
from typing import Any

from labcore import answers, checking

MAX_TEXT = 100_000  # characters of a cell's printed text kept (the rest is cut, saying so)


def shell() -> Any:
    """This process's IPython shell (made once: a few hundred milliseconds)."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    # no history file at all: an open one (even deleted) would be a file every job forked from this process shares
    config = Config()
    config.HistoryManager.enabled = False
    config.HistoryManager.hist_file = ":memory:"
    made = InteractiveShell.instance(colors="NoColor", config=config)
    # IPython prints a failing cell's traceback on stdout; here it becomes the cell's error output instead
    made.showtraceback = made.showsyntaxerror = made.showindentationerror = lambda *args, **kwargs: None
    _keep_rich(made)
    return made


_RICH: list[list[dict[str, Any]]] = []  # while a rich cell runs: the one list its rich outputs go to


def _keep_rich(ip: Any) -> None:
    """Route displays and shown values into the running rich cell's outputs (IPython's own way otherwise)."""
    publish = ip.display_pub.publish
    hook = ip.displayhook
    prompt, write = hook.write_output_prompt, hook.write_format_data

    def published(data: dict, metadata: dict | None = None, *args: Any, **kwargs: Any) -> None:
        if not _RICH:
            return publish(data, metadata, *args, **kwargs)
        _RICH[-1].append({"output_type": "display_data", "data": dict(data), "metadata": dict(metadata or {})})
        return None

    def prompted() -> None:
        return None if _RICH else prompt()

    def written(format_dict: dict, md_dict: dict | None = None) -> None:
        if not _RICH:
            return write(format_dict, md_dict)
        result = {"output_type": "execute_result", "data": dict(format_dict), "metadata": dict(md_dict or {})}
        _RICH[-1].append({**result, "execution_count": ip.execution_count})
        return None

    ip.display_pub.publish, hook.write_output_prompt, hook.write_format_data = published, prompted, written


def _figures_as_png(ip: Any) -> None:
    """A figure shown (a cell's value, or displayed) as a PNG, as `%matplotlib inline` has it: set once, on the first
    rich cell (a process that runs none never renders one)."""
    if getattr(ip, "_grader_png", False):
        return
    from IPython.core.pylabtools import select_figure_formats

    select_figure_formats(ip, {"png"}, bbox_inches="tight")
    ip._grader_png = True


def _figures(shown_already: Any) -> list[dict[str, Any]]:
    """Every pyplot figure left open but the one already shown as the cell's value, as a PNG display (then all
    closed), as the inline backend shows a cell's figures."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return []
    shown = []
    for number in plt.get_fignums():
        figure = plt.figure(number)
        if figure is shown_already:
            continue
        png = io.BytesIO()
        figure.savefig(png, format="png", bbox_inches="tight")
        data = {"image/png": base64.b64encode(png.getvalue()).decode(), "text/plain": repr(figure)}
        shown.append({"output_type": "display_data", "data": data, "metadata": {}})
    plt.close("all")
    return shown


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


def run_cell(ip: Any, source: str, count: int, *, rich: bool = False) -> list[dict[str, Any]]:
    """Run one cell as In [count]; its outputs: what it printed (stdout, stderr), with `rich` what it showed (see
    above), what its checks measured (as data: labcore.checking.outputs), then the error it raised, if any, with the
    traceback a notebook's kernel would show ("Cell In[count], line L": feedback reads the line)."""
    checking.drain()  # a result belongs to the cell whose check recorded it
    out, err = io.StringIO(), io.StringIO()
    ip.execution_count = count  # the number IPython names the cell by in tracebacks
    shown: list[dict[str, Any]] = []
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        if rich:
            _figures_as_png(ip)
            _RICH.append(shown)
        try:
            result = ip.run_cell(_source(source), silent=not rich, store_history=False)
            if rich:
                shown += _figures(result.result)
        finally:
            if rich:
                _RICH.pop()
    outputs: list[dict[str, Any]] = []
    for name, buffer in (("stdout", out), ("stderr", err)):
        if buffer.getvalue():
            outputs.append({"output_type": "stream", "name": name, "text": _cut(buffer.getvalue())})
    outputs += shown
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
