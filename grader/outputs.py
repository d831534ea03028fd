"""Cell outputs that grading writes: safe to record whatever a submission printed, and errors in one line.

A submission's outputs come back from the sandbox as data, and anything a student printed is in them: lone
surrogates ("\\ud800", or the "\\udcff" that undecodable bytes become), characters XML cannot hold, megabytes.
Before any of it reaches a stored result, an autograded notebook or a feedback page it goes through `safe_outputs`:

- text is valid Unicode that UTF-8 and XML can hold: surrogate pairs joined, a lone surrogate, a noncharacter or
  a control character (but tab, newline, carriage return and the escape of ANSI colours) becomes U+FFFD;
- a cell's printed text (its streams and plain-text results) is cut at MAX_CELL_CHARS characters in all, with a
  line saying so; its rich data (images, HTML) at MAX_RICH_CHARS; every error output stays (a failing test must
  still fail), its message and traceback cut at MAX_ERROR_CHARS.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nbformat.notebooknode import NotebookNode

MAX_CELL_CHARS = 100_000  # a cell's printed text, all its streams together (what grader.cells keeps of a stream)
MAX_RICH_CHARS = 4_000_000  # a cell's images and HTML (a few plots, base64)
MAX_ERROR_CHARS = 20_000  # one error output's message and traceback
REPLACEMENT = "\ufffd"
# C0 controls but \t \n \r and ESC (ANSI colours in tracebacks), and the noncharacters U+FFFE/U+FFFF: not in XML
_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\ufffe\uffff]")


def cut_note(limit: int) -> str:
    """The line that ends a cut text."""
    return f"\n... output cut at {limit:,} characters\n"


def clean_text(text: Any) -> str:
    """`text` as a str that UTF-8 and XML can hold: pairs of surrogates joined, anything else unsafe as U+FFFD."""
    text = text if isinstance(text, str) else str(text)
    if text.isascii() and not _UNSAFE.search(text):
        return text
    # UTF-16 holds every code point, lone surrogates included (surrogatepass): decoding it back joins each pair
    # and replaces each lone one
    text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return _UNSAFE.sub(REPLACEMENT, text)


def clean_data(value: Any) -> Any:
    """A copy of JSON-like data (dicts, lists, strings, numbers) with every string and key clean_text'ed."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(k): clean_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_data(v) for v in value]
    return value


def _joined(text: Any) -> str:
    """A notebook's multiline string (a str or a list of lines) as one str."""
    return "".join(map(str, text)) if isinstance(text, list) else str(text)


def _cut(text: str, budget: int, limit: int) -> tuple[str, int]:
    """(text within what is left of the budget, what is left after it), the cut said at the end."""
    if len(text) <= budget:
        return text, budget - len(text)
    return text[:budget] + cut_note(limit), 0


def _error(output: dict[str, Any]) -> dict[str, Any]:
    evalue, left = _cut(clean_text(output.get("evalue", "")), MAX_ERROR_CHARS, MAX_ERROR_CHARS)
    lines = output.get("traceback")
    traceback = []
    for line in lines if isinstance(lines, list) else []:
        if not left:
            traceback.append(cut_note(MAX_ERROR_CHARS).strip())
            break
        kept, left = _cut(clean_text(line), left, MAX_ERROR_CHARS)
        traceback.append(kept)
    return {**output, "ename": clean_text(output.get("ename", "")), "evalue": evalue, "traceback": traceback}


def safe_outputs(outputs: list[Any]) -> list[dict[str, Any]]:
    """One cell's outputs as plain data, safe to record: text cleaned, printed text and rich data capped (said in
    a last line where cut); later text past the cap is left out, every error output kept."""
    found: list[dict[str, Any]] = []
    text_left, rich_left = MAX_CELL_CHARS, MAX_RICH_CHARS
    for output in outputs:
        if not isinstance(output, dict):
            continue
        output = clean_data(dict(output))
        kind = output.get("output_type")
        if kind == "error":
            found.append(_error(output))
        elif kind == "stream":
            if text_left:
                output["text"], text_left = _cut(_joined(output.get("text", "")), text_left, MAX_CELL_CHARS)
                found.append(output)
        elif kind in ("display_data", "execute_result") and isinstance(output.get("data"), dict):
            data, dropped = {}, 0
            for mime, value in output["data"].items():
                text = None if isinstance(value, dict) else _joined(value)  # a dict: JSON data (application/json)
                if mime == "text/plain" and text is not None:
                    if text_left:
                        data[mime], text_left = _cut(text, text_left, MAX_CELL_CHARS)
                    else:
                        dropped = MAX_CELL_CHARS
                    continue
                size = len(text) if text is not None else len(str(value))
                if size <= rich_left:
                    data[mime], rich_left = (value if text is None else text), rich_left - size
                else:
                    dropped = MAX_RICH_CHARS
            if dropped and "text/plain" not in data:
                data["text/plain"] = cut_note(dropped).strip()
            found.append({**output, "data": data})
    return found


def safe_cells(nb: NotebookNode) -> NotebookNode:
    """nb with every code cell's outputs made safe (safe_outputs), in place; nb."""
    import nbformat  # seconds to import (jsonschema's format checks): `python -m grader --help` does not wait for it

    for cell in nb.cells:
        if cell.get("cell_type") == "code":
            cell.outputs = [nbformat.from_dict(o) for o in safe_outputs(cell.get("outputs", []))]
    return nb


def error_output(ename: str, evalue: str) -> NotebookNode:
    """An error output whose whole traceback is one line, 'ename: evalue'."""
    import nbformat  # seconds to import (jsonschema's format checks): `python -m grader --help` does not wait for it

    ename, evalue = clean_text(ename), clean_text(evalue)
    return nbformat.v4.new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])
