"""grader.outputs: whatever a submission printed becomes outputs that UTF-8, nbformat, nbgrader and HTML can hold."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")

from grader.classgrade import filled  # noqa: E402
from grader.outputs import (  # noqa: E402
    MAX_CELL_CHARS,
    MAX_ERROR_CHARS,
    MAX_RICH_CHARS,
    clean_text,
    cut_note,
    safe_outputs,
)


def stream(text: str, name: str = "stdout") -> dict:
    return {"output_type": "stream", "name": name, "text": text}


def test_invalid_unicode_becomes_the_replacement_character():
    """Lone surrogates (and undecodable bytes as surrogateescape makes them) become U+FFFD, a pair becomes its
    character, controls XML refuses become U+FFFD; tab, newline, CR and ANSI colours stay."""
    assert clean_text("a\ud800b\udcff") == "a\ufffdb\ufffd"
    assert clean_text("\ud83d\ude00") == "\U0001f600"
    assert clean_text("\udc80\ud800") == "\ufffd\ufffd"  # a low surrogate first is no pair
    assert clean_text("nul\x00 ff\x0c nonchar\uffff") == "nul\ufffd ff\ufffd nonchar\ufffd"
    assert clean_text("ok\t\r\n\x1b[31mred\x1b[0m é") == "ok\t\r\n\x1b[31mred\x1b[0m é"
    clean_text("\ud800" * 10).encode("utf-8")  # encodes: no error


def test_a_cells_text_is_cut_at_the_cap_saying_so_and_errors_stay():
    """Printed text past MAX_CELL_CHARS (all streams together) is cut with one line saying so, later streams are
    left out, and an error after them stays, its message cut at MAX_ERROR_CHARS."""
    error = {"output_type": "error", "ename": "AssertionError", "evalue": "e" * 50_000, "traceback": ["t\ud800"] * 3}
    found = safe_outputs([stream("x" * 60_000), stream("y" * 60_000, "stderr"), stream("z"), error])
    assert [o["output_type"] for o in found] == ["stream", "stream", "error"]
    assert found[0]["text"] == "x" * 60_000
    assert found[1]["text"] == "y" * (MAX_CELL_CHARS - 60_000) + cut_note(MAX_CELL_CHARS)
    assert cut_note(MAX_CELL_CHARS) == "\n... output cut at 100,000 characters\n"
    assert found[2]["evalue"] == "e" * MAX_ERROR_CHARS + cut_note(MAX_ERROR_CHARS)
    assert found[2]["traceback"] == ["... output cut at 20,000 characters"]
    assert safe_outputs([stream(["a", "b\ud800"])]) == [stream("ab\ufffd")]  # nbformat's list of lines too


def test_rich_outputs_are_capped_and_say_so():
    """An image past MAX_RICH_CHARS is left out, a text/plain line says so; a small one is kept."""
    small = {"output_type": "display_data", "metadata": {}, "data": {"image/png": "iVBOR" * 10}}
    big = {"output_type": "display_data", "metadata": {}, "data": {"image/png": "A" * (MAX_RICH_CHARS + 1)}}
    found = safe_outputs([small, big])
    assert found[0] == small
    assert found[1]["data"] == {"text/plain": cut_note(MAX_RICH_CHARS).strip()}


def test_filled_leaves_an_autograded_notebook_that_writes(tmp_path: Path):
    """A result whose cell printed a lone surrogate and 1 MB fills a notebook nbformat writes and reads back, cut and
    cleaned."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("print(...)")]
    printed = {"output_type": "stream", "name": "stdout", "text": "\ud800" + "w" * 1_000_000}
    result = {"extracted": {"cells": {"0": [printed]}}, "checked": {"verdicts": {}}, "timeout_s": 20}
    nbformat.write(filled(nb, result), tmp_path / "out.ipynb")
    text = nbformat.read(tmp_path / "out.ipynb", as_version=4).cells[0].outputs[0].text
    assert text == "\ufffd" + "w" * (MAX_CELL_CHARS - 1) + cut_note(MAX_CELL_CHARS)
