"""The course's nbgrader preprocessors, run in-process on small notebooks built here: no nbgrader command, no kernel."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbgrader", reason="the course extra (nbgrader) is not installed")

from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output  # noqa: E402
from nbgrader.preprocessors import Execute  # noqa: E402
from traitlets.config import Config  # noqa: E402

from grader.preprocessors import NOT_GRADED, ExecuteOrReplay, HideHiddenTests, mark_not_graded  # noqa: E402

STUDENT, ASSIGNMENT, NOTEBOOK = "ada", "toy", "toy"
RESOURCES = {"nbgrader": {"student": STUDENT, "assignment": ASSIGNMENT, "notebook": NOTEBOOK}}
SECRET = "hidden-7f3a"
HIDDEN_TEST = f'''"""clamp handles the upper edge (some checks are hidden)."""
assert clamp(10, 0, 10) == 10
### BEGIN HIDDEN TESTS
SECRET = "{SECRET}"
assert clamp(11.5, 0, 10) == 10, SECRET
### END HIDDEN TESTS'''
FIRST_HIDDEN_LINE = 3  # of HIDDEN_TEST: the BEGIN marker


def submission() -> nbformat.NotebookNode:
    """A student's notebook as nbgrader hands it to the Execute step: sources, no outputs."""
    return new_notebook(
        cells=[
            new_markdown_cell("# Toy"),
            new_code_cell("def clamp(x, lo, hi):\n    return x"),
            new_code_cell("assert clamp(5, 0, 10) == 5"),
        ]
    )


def recorded(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """What phase 1 left for this notebook: the same sources, executed."""
    ran = nbformat.from_dict(json.loads(json.dumps(nb)))
    for count, cell in enumerate(ran.cells):
        if cell.cell_type == "code":
            cell.execution_count = count
            cell.outputs = [new_output("stream", name="stdout", text=f"ran cell {count}\n")]
    return ran


def scratch_for(root: Path) -> Path:
    """The scratch folder phase 1 uses for this student."""
    return root / STUDENT


def write_recorded(root: Path, nb: nbformat.NotebookNode) -> None:
    folder = scratch_for(root) / "autograded" / STUDENT / ASSIGNMENT
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{NOTEBOOK}.ipynb")


def replayer(root: Path) -> ExecuteOrReplay:
    """ExecuteOrReplay configured as phase 2 configures it (--ExecuteOrReplay.replay_root=...)."""
    return ExecuteOrReplay(config=Config({"ExecuteOrReplay": {"replay_root": str(root)}}))


def not_graded_errors(nb: nbformat.NotebookNode) -> list[str]:
    """The evalue of each code cell's only output, which must be a not-graded error."""
    found = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert len(cell.outputs) == 1 and cell.outputs[0].output_type == "error", cell.outputs
            assert cell.outputs[0].ename == NOT_GRADED
            found.append(cell.outputs[0].evalue)
    return found


# -- ExecuteOrReplay ---------------------------------------------------------------------------------------------


def test_replay_copies_the_recorded_outputs_and_execution_counts(tmp_path):
    """Sources equal to phase 1's: each code cell gets phase 1's outputs and count; markdown is left alone."""
    nb = submission()
    markdown = copy.deepcopy(nb.cells[0])
    ran = recorded(nb)
    write_recorded(tmp_path, ran)
    out, resources = replayer(tmp_path).preprocess(nb, RESOURCES)
    assert resources is RESOURCES
    assert [c.get("outputs") for c in out.cells] == [None, ran.cells[1].outputs, ran.cells[2].outputs]
    assert [c.get("execution_count") for c in out.cells] == [None, 1, 2]
    assert out.cells[0] == markdown


def test_replay_refuses_outputs_of_other_sources(tmp_path):
    """A recorded notebook whose sources differ is not copied: every code cell gets the reason and scores 0."""
    nb = submission()
    ran = recorded(nb)
    ran.cells[2].source = "assert True  # not what was submitted"
    write_recorded(tmp_path, ran)
    out, _ = replayer(tmp_path).preprocess(nb, RESOURCES)
    reason = (
        "this notebook could not be graded: the executed notebook does not match the submission; "
        "every autograded cell scores 0"
    )
    assert not_graded_errors(out) == [reason, reason]
    assert "ran cell" not in json.dumps(out)


def test_replay_gives_the_reason_phase_one_left(tmp_path):
    """No executed notebook but a reason.txt: its text is the reason every code cell carries."""
    scratch_for(tmp_path).mkdir()
    (scratch_for(tmp_path) / "reason.txt").write_text("it ran past its 2 s budget and was stopped\n")
    out, _ = replayer(tmp_path).preprocess(submission(), RESOURCES)
    assert (
        not_graded_errors(out)
        == [
            "this notebook could not be graded: it ran past its 2 s budget and was "
            "stopped; every autograded cell scores 0"
        ]
        * 2
    )
    assert out.cells[2].outputs[0].traceback == [f"{NOT_GRADED}: {out.cells[2].outputs[0].evalue}"]


def test_replay_without_outputs_or_reason_says_it_was_not_executed(tmp_path):
    """Phase 1 left nothing for this student: the reason says so."""
    out, _ = replayer(tmp_path).preprocess(submission(), RESOURCES)
    assert (
        not_graded_errors(out)
        == ["this notebook could not be graded: it was not executed; every autograded cell scores 0"] * 2
    )


def test_without_replay_root_it_executes_as_nbgrader_does(tmp_path, monkeypatch):
    """Unconfigured, it is nbgrader's Execute: the notebook goes to Execute.preprocess, nothing is replayed."""
    calls = []

    def execute(self, nb, resources):
        calls.append((type(self), nb, resources))
        return nb, resources

    monkeypatch.setattr(Execute, "preprocess", execute)
    nb = submission()
    out, _ = ExecuteOrReplay().preprocess(nb, RESOURCES)
    assert calls == [(ExecuteOrReplay, nb, RESOURCES)]
    assert out is nb and all(not c.get("outputs") for c in out.cells)


# -- HideHiddenTests ---------------------------------------------------------------------------------------------


def graded_cell(
    outputs: list, *, points: float | None = 2, score: float | None = 0, execution_count: int = 7
) -> nbformat.NotebookNode:
    """An autograded test cell holding a hidden region, with outputs and (after GetGrades) its grade."""
    meta = {"grade": True, "solution": False, "locked": True, "grade_id": "test_clamp", "schema_version": 3}
    if points is not None:
        meta |= {"points": points, "score": score}
    return new_code_cell(HIDDEN_TEST, metadata={"nbgrader": meta}, outputs=outputs, execution_count=execution_count)


def error(ename: str, evalue: str, line: int | None, execution_count: int = 7) -> nbformat.NotebookNode:
    """An error output with IPython's coloured traceback naming the line it was raised from."""
    frames = (
        [
            f"\x1b[36mCell\x1b[39m\x1b[36m \x1b[39m\x1b[32mIn[{execution_count}]\x1b[39m\x1b[32m, line {line}"
            f"\x1b[39m\n----> {line} {HIDDEN_TEST.splitlines()[line - 1]}\n"
        ]
        if line
        else []
    )
    return new_output(
        "error",
        ename=ename,
        evalue=evalue,
        traceback=[
            "\x1b[31m---------------------------------------------------------------------------\x1b[39m",
            f"\x1b[31m{ename}\x1b[39m                               Traceback (most recent call last)",
            *frames,
            f"\x1b[31m{ename}\x1b[39m: {evalue}",
        ],
    )


@pytest.fixture
def preprocessor() -> HideHiddenTests:
    return HideHiddenTests()


def hide(preprocessor: HideHiddenTests, *cells: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The feedback notebook HideHiddenTests makes of these cells."""
    out, _ = preprocessor.preprocess(new_notebook(cells=list(cells)), {})
    return out


def only_line(cell: nbformat.NotebookNode) -> str:
    """The text of a cell's single output, which must be one stdout line."""
    assert len(cell.outputs) == 1 and cell.outputs[0].output_type == "stream" and cell.outputs[0].name == "stdout"
    text = cell.outputs[0].text
    assert text.endswith("\n") and text.count("\n") == 1, text
    return text.rstrip("\n")


def assert_nothing_hidden(nb: nbformat.NotebookNode) -> None:
    text = json.dumps(nb)
    assert SECRET not in text and "11.5" not in text and "HIDDEN TESTS" not in text, text


def test_the_hidden_region_becomes_one_comment_line(preprocessor):
    """The visible lines stay as they were; the region, markers included, is one placeholder line."""
    nb = hide(preprocessor, graded_cell([], score=2))
    assert nb.cells[0].source == (
        '"""clamp handles the upper edge (some checks are hidden)."""\n'
        "assert clamp(10, 0, 10) == 10\n# hidden tests: not shown"
    )
    assert_nothing_hidden(nb)


def test_an_indented_region_keeps_its_indentation(preprocessor):
    """A region inside a block is replaced at the block's indentation, so the cell still reads as code."""
    cell = graded_cell([])
    cell.source = (
        "for x in (1, 2):\n    assert x\n    ### BEGIN HIDDEN TESTS\n    assert x < 3\n    ### END HIDDEN TESTS"
    )
    assert hide(preprocessor, cell).cells[0].source == "for x in (1, 2):\n    assert x\n    # hidden tests: not shown"


def test_passed_cells_say_passed_with_their_score(preprocessor):
    """No error: whatever the cell printed is replaced by 'passed' and the points."""
    nb = hide(preprocessor, graded_cell([new_output("stream", name="stdout", text=f"{SECRET}\n")], score=2))
    assert only_line(nb.cells[0]) == "hidden tests: passed -- score 2 / 2"
    assert_nothing_hidden(nb)


def test_a_failed_hidden_assert_says_failed_and_quotes_nothing(preprocessor):
    """The traceback and message of a hidden assert quote hidden code: only 'failed' and the score remain."""
    nb = hide(preprocessor, graded_cell([error("AssertionError", SECRET, line=5)]))
    assert only_line(nb.cells[0]) == "hidden tests: failed -- score 0 / 2"
    assert_nothing_hidden(nb)


def test_a_failed_visible_check_says_the_hidden_tests_did_not_run(preprocessor):
    """An error raised above the region names that visible error: the hidden tests never ran."""
    nb = hide(preprocessor, graded_cell([error("AssertionError", "clamp(10, 0, 10) returned 11", line=2)]))
    assert only_line(nb.cells[0]) == (
        "hidden tests: not run (a visible check before them failed: AssertionError: "
        "clamp(10, 0, 10) returned 11) -- score 0 / 2"
    )
    assert_nothing_hidden(nb)


def test_an_error_of_an_earlier_execution_is_not_read_as_this_cells_line(preprocessor):
    """Only the traceback frame of this cell's execution counts; another cell's line 2 says nothing here."""
    nb = hide(preprocessor, graded_cell([error("AssertionError", SECRET, line=2, execution_count=3)]))
    assert only_line(nb.cells[0]) == "hidden tests: failed -- score 0 / 2"


def test_writing_to_stderr_counts_as_failing(preprocessor):
    """nbgrader fails a cell that wrote to stderr; the verdict says so without showing what was written."""
    nb = hide(preprocessor, graded_cell([new_output("stream", name="stderr", text=f"warning: {SECRET}\n")]))
    assert (
        only_line(nb.cells[0]) == "hidden tests: failed (the cell wrote to stderr, which counts as failing) "
        "-- score 0 / 2"
    )
    assert_nothing_hidden(nb)


def test_a_timed_out_cell_says_it_was_stopped(preprocessor):
    """nbgrader records the interrupt and then a CellTimeoutError: the verdict is the timeout."""
    outputs = [
        error("KeyboardInterrupt", "", line=5),
        new_output(
            "error",
            ename="CellTimeoutError",
            evalue="",
            traceback=["\x1b[0;31mCellTimeoutError\x1b[0m: No reply from kernel before timeout"],
        ),
    ]
    nb = hide(preprocessor, graded_cell(outputs))
    assert only_line(nb.cells[0]) == (
        "hidden tests: not passed (the cell ran past the time limit and was stopped) -- score 0 / 2"
    )
    assert_nothing_hidden(nb)


def test_a_notebook_that_was_not_graded_gives_the_reason(preprocessor):
    """After ExecuteOrReplay gave up on a notebook, the hidden tests' line carries its reason."""
    nb = new_notebook(cells=[graded_cell([])])
    mark_not_graded(nb, "it was not executed")
    nb = hide(preprocessor, *nb.cells)
    assert only_line(nb.cells[0]) == (
        "hidden tests: not run (this notebook could not be graded: it was not executed; "
        "every autograded cell scores 0) -- score 0 / 2"
    )
    assert_nothing_hidden(nb)


def test_a_cell_without_a_grade_gets_no_score(preprocessor):
    """Before GetGrades (or without points) the verdict line has no score part."""
    assert only_line(hide(preprocessor, graded_cell([], points=None)).cells[0]) == "hidden tests: passed"


def test_cells_without_a_hidden_region_are_left_alone(preprocessor):
    """Visible tests keep their source and their full outputs, tracebacks included."""
    visible = new_code_cell(
        "assert clamp(5, 0, 10) == 5",
        execution_count=4,
        outputs=[error("AssertionError", "clamp(5, 0, 10) returned 0", line=1)],
    )
    text = new_markdown_cell("Why two buffers?")
    before = copy.deepcopy([visible, text])
    nb = hide(preprocessor, visible, text)
    assert nb.cells == before and len(nb.cells[0].outputs[0].traceback) == 4


def test_a_markdown_cell_loses_its_hidden_region_too(preprocessor):
    """Hidden text in a markdown cell is cut the same way; markdown has no outputs to replace."""
    cell = new_markdown_cell(
        f"Visible.\n### BEGIN HIDDEN TESTS\n{SECRET}\n### END HIDDEN TESTS",
        metadata={"nbgrader": {"grade": True, "solution": False, "grade_id": "m", "points": 1}},
    )
    nb = hide(preprocessor, cell)
    assert nb.cells[0].source == "Visible.\n# hidden tests: not shown" and "outputs" not in nb.cells[0]
    assert_nothing_hidden(nb)


def test_the_release_delimiters_configured_for_nbgrader_apply():
    """Delimiters configured for ClearHiddenTests (release generation) are the ones feedback hides."""
    config = Config({"ClearHiddenTests": {"begin_test_delimeter": "BEGIN SECRET", "end_test_delimeter": "END SECRET"}})
    cell = graded_cell([], score=2)
    cell.source = f"assert True\n# BEGIN SECRET\n{SECRET}\n# END SECRET"
    nb = hide(HideHiddenTests(config=config), cell)
    assert nb.cells[0].source == "assert True\n# hidden tests: not shown"
    assert only_line(nb.cells[0]) == "hidden tests: passed -- score 2 / 2"
    assert SECRET not in json.dumps(nb)
