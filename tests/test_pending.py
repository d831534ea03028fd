"""'Pending a GPU' (labcore.pending): a check's verdict offline, read back by its name on every grader surface.

A cell whose check raised PendingGPU scores 0 like any error, but the autograde table, the CSV status, the feedback
page and the class report say it is pending a GPU, never that it failed. The whole pipeline (a real class graded
offline, the export's status) is tests/test_corpus.py's zc-values-pending; here each surface on its own.
"""

from __future__ import annotations

import nbformat
import pytest

from grader import autograde, cli, feedback, preprocessors, report_data, report_html
from grader.grading import GradingDir
from grader.layout import PENDING_GPU, TIMED_OUT
from grader.outputs import error_output
from labcore.pending import PendingGPU, pending_message

WHY = pending_message("offline, the order is proved, but the analysis could not compute payload word 0's value")


def _test_cell(grade_id: str, points: float, *outputs) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("checks.check_mailbox_publish(MY_PUBLISH)")
    cell.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": grade_id, "points": points}
    cell.outputs = list(outputs)
    return cell


@pytest.fixture
def autograded(tmp_path) -> GradingDir:
    """DIR/autograded/ann/zc/zc.ipynb: one cell pending a GPU, one failed, one timed out, one passed."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        _test_cell("test_publish", 3, error_output(PENDING_GPU, WHY)),
        _test_cell("test_gather", 2, error_output("AssertionError", "rows differ")),
        _test_cell("test_slow", 1, error_output(TIMED_OUT, "cell test_slow ran past the 20 s limit")),
        _test_cell("test_break_even", 2),
    ]
    folder = tmp_path / "autograded" / "ann" / "zc"
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / "zc.ipynb")
    return GradingDir(tmp_path, must_exist=False)


def test_the_exception_is_named_as_the_grader_reads_it():
    assert PendingGPU.__name__ == PENDING_GPU == "PendingGPU"
    assert not issubclass(PendingGPU, AssertionError)  # not a failed check: neither passed nor failed
    assert WHY.startswith("pending a GPU: offline") and WHY.endswith("this cell counts 0 until it is graded on a GPU")


def test_the_cells_pending_are_found_by_the_error_name_with_their_points(autograded):
    assert report_data.pending_gpu(autograded, "zc", ["zc"], "ann") == {"test_publish": 3.0}
    assert report_data.pending_gpu(autograded, "zc", ["zc"], "bob") == {}  # no autograded notebook: nothing pending
    assert report_data.pending_gpu_words({"test_publish": 3.0}) == "pending a GPU: test_publish (3 points)"
    assert report_data.pending_gpu_words({}) == ""


def test_the_table_names_them_apart_from_the_failures(autograded):
    """_cell_notes: a failed cell and a timed-out one, not the pending one; the notes column says it."""
    nb = nbformat.read(autograded.root / "autograded" / "ann" / "zc" / "zc.ipynb", as_version=4)
    timed_out, failed, notes = autograde._cell_notes([("zc", nb)])
    assert (timed_out, failed, notes) == (["test_slow"], ["test_gather"], [])
    outcome = autograde.Outcome("ann", score=2, max_score=8, failed=failed, timed_out=timed_out)
    outcome.pending_gpu = {"test_publish": 3.0}
    assert cli._notes(outcome) == (
        "timed out: test_slow; failed: test_gather; pending a GPU: test_publish (3 points, 0 until graded on a GPU)"
    )
    assert cli._score(outcome) == "2 / 8"  # the points kept, the pending cell's 0 among them


def test_the_feedback_says_it_atop_the_page_and_in_the_hidden_tests_verdict():
    line = feedback.pending_gpu_line({"test_publish": 3.0})
    assert line == (
        "Pending a GPU: 1 cell (test_publish; 3 points) could not be verified on the grading machine, which has no "
        "GPU; until graded on a GPU they count 0 in the score below."
    )
    assert feedback.pending_gpu_line({}) == ""
    cell = _test_cell("test_publish", 3, error_output(PENDING_GPU, WHY))
    assert preprocessors.verdict(cell, first_hidden=2) == f"not decided without a GPU ({WHY})"


def test_the_class_report_counts_them_apart_from_full_marks_and_zeros():
    """The scores table's 'pending a GPU' column, the total row's students with any, and a table naming them."""
    import pandas as pd

    cells = pd.DataFrame(
        [("zc", "zc", "test_publish", 3.0, False, 0), ("zc", "zc", "test_gather", 2.0, False, 1)],
        columns=["assignment", "notebook", "cell", "points", "written", "order"],
    )
    grades = pd.DataFrame(
        [
            ("zc", "zc", "test_publish", "ann", 0.0, False, False, False, True),
            ("zc", "zc", "test_publish", "bob", 3.0, False, False, False, False),
            ("zc", "zc", "test_gather", "ann", 2.0, False, False, False, False),
            ("zc", "zc", "test_gather", "bob", 0.0, False, False, True, False),
        ],
        columns=["assignment", "notebook", "cell", "student", "score", "by_hand", "unanswered", "failed", "gpu"],
    )
    states = pd.DataFrame([("zc", s, "graded") for s in ("ann", "bob")], columns=["assignment", "student", "state"])
    failures = pd.DataFrame(columns=["assignment", "cell", "student", "reason", "example"])
    data = report_data.ClassData(cells, grades, states, failures, [])
    scores = {row[0]: row[1:] for row in report_html._score_rows(data, "zc")}
    # points, graded, full marks, 0, in between, pending a GPU, mean
    assert scores["<code>test_publish</code>"] == ["#3", "#2", "#1", "#0", "#0", "#1", "#1.50"]
    assert scores["<code>test_gather</code>"] == ["#2", "#2", "#1", "#1", "#0", "#0", "#1.00"]
    assert scores["<b>autograded total</b>"][5] == "#1"  # one student has a cell pending
    page = report_html.render("class", data, {})
    assert '<table id="pending-gpu-zc">' in page and "<h3>Pending a GPU</h3>" in page
    pending_table = page.split('<table id="pending-gpu-zc">', 1)[1].split("</table>", 1)[0]
    assert "<code>test_publish</code>" in pending_table and "ann" in pending_table and "bob" not in pending_table


def test_each_feedback_page_names_its_cells_pending_a_gpu_at_the_top(autograded, monkeypatch):
    """finish_pages puts the line right after <body>, beside the written answers' line, from the autograded notebook."""
    import contextlib

    import nbgrader.api

    monkeypatch.setattr(nbgrader.api, "Gradebook", lambda *args: contextlib.nullcontext(None))
    monkeypatch.setattr(feedback, "pending", lambda *args: {"why_two_buffers": 2.0})
    page = autograded.root / "feedback" / "ann" / "zc" / "zc.html"
    page.parent.mkdir(parents=True)
    page.write_text("<html><body class='x'><p>the page</p></body></html>")
    feedback.finish_pages(autograded, "zc")
    text = page.read_text()
    written = feedback.pending_line({"why_two_buffers": 2.0})
    gpu = feedback.pending_gpu_line({"test_publish": 3.0})
    assert text.startswith(
        f'<html><body class=\'x\'><p class="pending-written" style="font-weight:bold">{written}</p>'
        f'<p class="pending-gpu" style="font-weight:bold">{gpu}</p><p>the page</p>'
    ), text


def test_the_feedback_page_shows_what_the_checks_measured(autograded, monkeypatch):
    """A test cell's results (labcore.checking.Result as display_data) become lines atop the student's page."""
    import contextlib

    import nbgrader.api

    from labcore.checking import Result, outputs

    path = autograded.root / "autograded" / "ann" / "zc" / "zc.ipynb"
    nb = nbformat.read(path, as_version=4)
    best = Result(
        "the challenge: yours / the course's best",
        "your settings",
        "x the course's best",
        1.012,
        "x",
        "live",
        reference=1.0,
        threshold=1.03,
        noise=0.014,
    )
    nb.cells.append(_test_cell("test_challenge", 0, *map(nbformat.from_dict, outputs([best]))))
    nbformat.write(nb, path)
    monkeypatch.setattr(nbgrader.api, "Gradebook", lambda *args: contextlib.nullcontext(None))
    monkeypatch.setattr(feedback, "pending", lambda *args: {})
    page = autograded.root / "feedback" / "ann" / "zc" / "zc.html"
    page.parent.mkdir(parents=True)
    page.write_text("<html><body><p>the page</p></body></html>")
    feedback.finish_pages(autograded, "zc")
    text = page.read_text()
    assert (
        "<li>the challenge: yours / the course&#x27;s best (your settings): 1.012 x the course&#x27;s best, met: "
        "at most 1.03, the reference 1.000, noise +-1.4%, live</li>"
    ) in text
