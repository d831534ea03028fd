"""Feedback pages as students read them (grader.preprocessors.HideHiddenTests, grader.feedback_page).

A cell pending a GPU is one line saying so, labelled "pending a GPU" beside its score; a failing cell keeps its
verdict; output lines wrap in their box; math is drawn into the page and nothing is fetched from the network. The
last tests render a page with nbgrader's own feedback template (no gradebook: the scores GetGrades would write are
set by hand), in about a second.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from grader import feedback_page
from grader.layout import PENDING_GPU, TIMED_OUT
from grader.preprocessors import HideHiddenTests
from labcore.pending import pending_message

WHY = pending_message("timing needs the GPU (the simulator expects 0.99x, within 1.10x to pass)")
VERDICT = (
    "\x1b[31m\x1b[1m✗ not passed\x1b[0m: the pipeline is timed; call it in a new cell to see where it fails; fix it"
)
REMOTE = re.compile(r"<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)\s*=\s*[\"']?(?:https?:)?//", re.I)


def _error(ename: str, evalue: str) -> nbformat.NotebookNode:
    """An error output with a traceback of IPython's shape, as the checker's notebook holds one."""
    frames = ["Cell In[10], line 2", "----> 2 checks.check_stream_ordered_time(my_stream_ordered, buffers=2)"]
    lines = ["-" * 20, f"{ename}   Traceback (most recent call last)", *frames, f"{ename}: {evalue}"]
    return new_output("error", ename=ename, evalue=evalue, traceback=lines)


def _graded(grade_id: str, outputs: list, source: str = "checks.check(my_answer)", score: float = 0):
    """A test cell as GetGrades leaves it: its points and score in nbgrader's metadata."""
    cell = new_code_cell(source, execution_count=10, outputs=outputs)
    cell.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": grade_id, "points": 2, "score": score}
    return cell


def _pending_cell() -> nbformat.NotebookNode:
    """A visible test cell the check left pending a GPU, after printing a line of its own."""
    printed = new_output("stream", name="stdout", text=f"{VERDICT}\n")
    return _graded("test_time", [printed, _error(PENDING_GPU, WHY)])


def _hidden(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook as the feedback preprocessor leaves it."""
    return HideHiddenTests().preprocess(nb, {})[0]


def _text(cell: nbformat.NotebookNode) -> str:
    """All a cell's outputs say: printed text and tracebacks."""
    return "".join(o.get("text", "") + "".join(o.get("traceback", [])) for o in cell.outputs)


def test_a_pending_cell_is_one_line_saying_so():
    cell = _hidden(new_notebook(cells=[_pending_cell()])).cells[0]
    assert [o.output_type for o in cell.outputs] == ["stream"] and cell.outputs[0].name == "stdout"
    assert cell.outputs[0].text == WHY + "\n"
    assert "Traceback" not in _text(cell) and "✗" not in _text(cell) and "fix it" not in _text(cell)


def test_a_pending_message_without_the_words_gets_them():
    cell = _hidden(new_notebook(cells=[_graded("test_time", [_error(PENDING_GPU, "timing needs the GPU")])])).cells[0]
    assert cell.outputs[0].text == pending_message("timing needs the GPU") + "\n"


def test_failing_and_other_cells_keep_their_verdicts():
    """A failed visible check keeps its traceback; a hidden one its verdict line; a timed-out cell that also raised
    PendingGPU failed by its timeout (as grader.report_data reads it); a cell that is not a test cell is left as is."""
    failed = _graded("test_gather", [_error("AssertionError", "rows differ")])
    hidden = _graded("test_hidden", [_error("AssertionError", "no")], source="x = 1\n### BEGIN HIDDEN TESTS\n...")
    hidden.source += "\n### END HIDDEN TESTS"
    timed_out = _graded("test_slow", [_error(PENDING_GPU, WHY), _error(TIMED_OUT, "cell test_slow ran past 20 s")])
    lesson = new_code_cell("checks.check(x)", outputs=[_error(PENDING_GPU, WHY)])
    nb = _hidden(new_notebook(cells=[failed, hidden, timed_out, lesson]))
    assert "AssertionError   Traceback" in _text(nb.cells[0]) and "rows differ" in nb.cells[0].outputs[0].evalue
    assert _text(nb.cells[1]) == "hidden tests: failed -- score 0 / 2\n"
    assert len(nb.cells[2].outputs) == 2 and len(nb.cells[3].outputs[0].traceback) == 5


# nbgrader's feedback template, as it writes the list at the top and a cell's heading
PAGE = """<html><head><style>pre { word-break: break-all; }</style>
<!-- Load mathjax -->
<script src="https://cdnjs.cloudflare.com/ajax/libs/mathjax/2.7.7/latest.js?config=TeX-AMS_CHTML-full,Safe"> </script>
<script type="text/x-mathjax-config">init_mathjax();</script>
<!-- End of mathjax configuration -->
</head><body>
<li><a href="#timed">Test cell</a> (Score: 0.0 / 2.0)</li>
<li><a href="#gather">Test cell</a> (Score: 0.0 / 2.0)</li>
<a name="timed"></a><div class="panel-heading"><span class="nbgrader-label">Grade cell: <code>timed</code></span>
<span class="pull-right">
      Score: 0.0 / 2.0 <a href="#top">(Top)</a>
</span></div>
<a name="gather"></a><div class="panel-heading"><span class="nbgrader-label">Grade cell: <code>gather</code></span>
<span class="pull-right">
      Score: 0.0 / 2.0 <a href="#top">(Top)</a>
</span></div>
<p>It takes $t = \\frac{n}{B} &lt; 3$ s, and <code>$x$</code> stays code; $x_{$ cannot be read.</p>
<p>$$\\sum_{k=0}^{n} k \\le n$$</p><pre>$1 and $2 printed</pre>
</body></html>"""


def test_pending_cells_are_labelled_beside_their_score_and_no_other():
    page = feedback_page.finished(PAGE, ["timed"])
    label = '<span class="pending-gpu-label">pending a GPU</span>'
    assert f'<a href="#timed">Test cell</a> (Score: 0.0 / 2.0, {label})</li>' in page
    assert f'Score: 0.0 / 2.0, {label} <a href="#top">(Top)</a>' in page
    assert page.count(label) == 2 and '<a href="#gather">Test cell</a> (Score: 0.0 / 2.0)</li>' in page


def test_output_lines_wrap_in_their_box():
    page = feedback_page.finished(PAGE, [])
    style = page.split("</head>")[0].rsplit("<style", 1)[1]  # the last style of the head: it wins
    assert "div.output_subarea pre" in style and "white-space: pre-wrap" in style
    assert "overflow-wrap: anywhere" in style and "word-break: normal" in style


def _drawn(page: str) -> dict[str, str]:
    """{TeX: the SVG drawn for it} of each formula drawn on a page."""
    found = re.findall(r'<img class="math" alt="([^"]*)" style="[^"]*" src="data:image/svg\+xml;base64,([^"]+)">', page)
    return {html.unescape(tex): base64.b64decode(data).decode() for tex, data in found}


def test_math_is_drawn_in_the_page_and_nothing_is_fetched():
    """Each formula an SVG image inside the page, its TeX the text alternative; code, printed text and TeX that
    mathtext cannot read are left as they are; no MathJax, nothing remote."""
    page = feedback_page.finished(PAGE, [])
    assert not REMOTE.search(page) and "mathjax" not in page.split("<body")[0].lower()
    drawn = _drawn(page)
    assert list(drawn) == ["t = \\frac{n}{B} < 3", "\\sum_{k=0}^{n} k \\le n"]
    assert all(svg.lstrip().startswith("<?xml") and "<svg" in svg and "<path" in svg for svg in drawn.values())
    assert "display: block" in page.split('alt="\\sum', 1)[1].split(">", 1)[0]  # display math: a line of its own
    assert "<code>$x$</code>" in page and "$x_{$ cannot be read" in page and "<pre>$1 and $2 printed</pre>" in page


def _nbgrader_html(nb: nbformat.NotebookNode) -> str:
    """The page nbgrader's generate_feedback writes for a graded notebook: its exporter, template and settings, the
    course's feedback preprocessor."""
    import nbgrader
    from nbconvert.exporters import HTMLExporter
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor

    formgrader = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader"
    exporter = HTMLExporter(
        template_name="feedback",
        extra_template_basedirs=[str(formgrader / "templates")],
        extra_template_paths=[str(formgrader / "static" / "node_modules" / "bootstrap" / "dist" / "css")],
    )
    for preprocessor in (CSSHTMLHeaderPreprocessor, HideHiddenTests):
        exporter.register_preprocessor(preprocessor, enabled=True)
    resources = {"nbgrader": {"notebook": "an_assignment", "score": 2.0, "max_score": 6.0, "late_penalty": 0}}
    return exporter.from_notebook_node(nb, resources=resources)[0]


def _notebook() -> nbformat.NotebookNode:
    """Three test cells (pending, failed, passed) and a written answer with a formula."""
    answer = new_markdown_cell("Each chunk costs $t = n / B$.")
    answer.metadata["nbgrader"] = {"grade": True, "solution": True, "grade_id": "why", "points": 2, "score": 0}
    passed = _graded("test_pass", [new_output("stream", name="stdout", text="[check] " + "ok, " * 60 + "\n")], score=2)
    failed = _graded("test_gather", [_error("AssertionError", "rows differ")])
    return new_notebook(cells=[_pending_cell(), failed, passed, answer])


@pytest.fixture(scope="module")
def raw_page() -> str:
    """nbgrader's page of `_notebook`, before finish_pages."""
    return _nbgrader_html(_notebook())


@pytest.fixture(scope="module")
def page(raw_page) -> str:
    """The page as finish_pages finishes it."""
    return feedback_page.finished(raw_page, ["test_time"])


def test_a_real_page_shows_the_pending_cell_as_one_line(page):
    cell = page.split('id="cell-id=', 1)[1].split('<div class="cell ', 1)[0]
    assert "Grade cell: <code>test_time</code>" in cell and "pending a GPU</span> <a href" in cell
    outputs = re.findall(r'<div class="output_subarea[^"]*">\s*<pre>(.*?)</pre>', cell, re.S)
    assert outputs == [WHY + "\n"], outputs
    assert "Traceback" not in cell and "✗" not in cell and "fix it" not in cell
    assert '<a href="#test_time">Test cell</a> (Score: 0.0 / 2.0, <span class="pending-gpu-label">' in page


def test_a_real_page_keeps_the_failing_verdict_wraps_and_fetches_nothing(page):
    assert "AssertionError   Traceback" in page and "AssertionError: rows differ" in page
    assert "white-space: pre-wrap; word-break: normal; overflow-wrap: anywhere;" in page
    assert not REMOTE.search(page), REMOTE.search(page)
    assert "cdnjs" not in page and list(_drawn(page)) == ["t = n / B"]


def test_finish_pages_labels_the_cells_the_autograded_notebook_left_pending(tmp_path, raw_page, monkeypatch):
    """finish_pages reads the pending cells from DIR/autograded/ (as the line atop the page) and finishes the page."""
    import contextlib

    import nbgrader.api

    from grader import feedback
    from grader.grading import GradingDir

    folder = tmp_path / "autograded" / "ann" / "an_assignment"
    folder.mkdir(parents=True)
    nbformat.write(_notebook(), folder / "an_assignment.ipynb")
    page = tmp_path / "feedback" / "ann" / "an_assignment" / "an_assignment.html"
    page.parent.mkdir(parents=True)
    page.write_text(raw_page)
    monkeypatch.setattr(nbgrader.api, "Gradebook", lambda *args: contextlib.nullcontext(None))
    monkeypatch.setattr(feedback, "pending", lambda *args: {})
    feedback.finish_pages(GradingDir(tmp_path, must_exist=False), "an_assignment")
    text = page.read_text()
    assert text.count('<span class="pending-gpu-label">pending a GPU</span>') == 2
    assert '<p class="pending-gpu" style="font-weight:bold">Pending a GPU: 1 cell (test_time; 2 points)' in text
    assert "overflow-wrap: anywhere" in text and not REMOTE.search(text) and list(_drawn(text)) == ["t = n / B"]
