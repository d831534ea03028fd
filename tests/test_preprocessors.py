"""The course's nbgrader preprocessors, run in-process on small notebooks built here: no nbgrader command, no kernel."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbgrader", reason="the course extra (nbgrader) is not installed")

from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output  # noqa: E402
from nbgrader.preprocessors import Execute, SaveAutoGrades  # noqa: E402
from nbgrader.utils import determine_grade  # noqa: E402
from traitlets.config import Config  # noqa: E402

from grader.config import configure_grading  # noqa: E402
from grader.preprocessors import (  # noqa: E402
    NOT_GRADED,
    DropDuplicateIds,
    HideHiddenTests,
    Replay,
    StderrToStdout,
    mark_not_graded,
)

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
PASSES = "assert clamp(5, 0, 10) == 5"


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
    """What the grading engine left for this notebook: the same sources, executed."""
    ran = nbformat.from_dict(json.loads(json.dumps(nb)))
    for count, cell in enumerate(ran.cells):
        if cell.cell_type == "code":
            cell.execution_count = count
            cell.outputs = [new_output("stream", name="stdout", text=f"ran cell {count}\n")]
    return ran


def scratch_for(root: Path) -> Path:
    """The scratch folder recording reads for this student."""
    return root / STUDENT


def write_recorded(root: Path, nb: nbformat.NotebookNode) -> None:
    folder = scratch_for(root) / "autograded" / STUDENT / ASSIGNMENT
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{NOTEBOOK}.ipynb")


def replayer(root: Path) -> Replay:
    """Replay configured as recording configures it (--Replay.replay_root=...)."""
    return Replay(config=Config({"Replay": {"replay_root": str(root)}}))


def not_graded_errors(nb: nbformat.NotebookNode) -> list[str]:
    """The evalue of each code cell's only output, which must be a not-graded error."""
    found = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert len(cell.outputs) == 1 and cell.outputs[0].output_type == "error", cell.outputs
            assert cell.outputs[0].ename == NOT_GRADED
            found.append(cell.outputs[0].evalue)
    return found


# -- Replay ---------------------------------------------------------------------------------------------------


def test_replay_copies_the_recorded_outputs_and_execution_counts(tmp_path):
    """Sources equal to the graded ones: each code cell gets their outputs and count; markdown is left alone."""
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


def test_without_replay_root_it_refuses_and_runs_nothing(monkeypatch):
    """A grading directory's plain `nbgrader autograde` (no replay root) grades nobody: nbgrader records nothing for
    the submission rather than zeros, and the error names the command that grades."""

    def no_kernel(*args, **kwargs):
        raise AssertionError("executed in nbgrader's process")

    monkeypatch.setattr(Execute, "preprocess", no_kernel)
    with pytest.raises(RuntimeError, match="grades with `python -m grader autograde`"):
        Replay().preprocess(submission(), RESOURCES)


# -- StderrToStdout ----------------------------------------------------------------------------------------------


def stderr_cell(*outputs: nbformat.NotebookNode, grade: bool = True, solution: bool = False) -> nbformat.NotebookNode:
    """A code cell with these outputs; a graded test cell unless told otherwise."""
    meta = {"grade": grade, "solution": solution, "locked": True, "grade_id": "test_bar", "points": 2}
    return new_code_cell(PASSES, metadata={"nbgrader": meta | {"schema_version": 3}}, outputs=list(outputs))


def to_stdout(*cells: nbformat.NotebookNode) -> nbformat.NotebookNode:
    out, _ = StderrToStdout().preprocess(new_notebook(cells=list(cells)), {})
    return out


def test_a_passing_test_that_writes_to_stderr_keeps_its_points_and_its_text():
    """nbgrader scores such a cell 0 (checked here on its own determine_grade); after the move, full points and
    the same text, in the same order, as ordinary output."""
    outputs = [
        new_output("stream", name="stdout", text="checking\n"),
        new_output("stream", name="stderr", text="\r 50%|#####     |\r100%|##########|\n"),
        new_output("stream", name="stderr", text="UserWarning: slow path\n"),
    ]
    cell = stderr_cell(*copy.deepcopy(outputs))
    assert determine_grade(cell) == (0, 2.0)  # the false fail: nbgrader/utils.py determine_grade
    moved = to_stdout(cell).cells[0]
    assert determine_grade(moved) == (2.0, 2.0)
    assert [(o.name, o.text) for o in moved.outputs] == [("stdout", o.text) for o in outputs]


def test_writing_to_stderr_does_not_rescue_a_failing_test():
    """An assert that fails is an error output, which stays: 0 points, with or without stderr."""
    failing = error("AssertionError", "clamp(11, 0, 10) returned 11", line=1)
    moved = to_stdout(stderr_cell(new_output("stream", name="stderr", text="progress\n"), failing)).cells[0]
    assert determine_grade(moved) == (0, 2.0) and moved.outputs[1] == failing


def test_only_graded_test_cells_are_touched():
    """An answer cell's or an ungraded cell's stderr is still stderr: nbgrader does not score those outputs."""
    line = new_output("stream", name="stderr", text="progress\n")
    answer = stderr_cell(copy.deepcopy(line), grade=False, solution=True)
    plain = new_code_cell("print(1)", outputs=[copy.deepcopy(line)])
    nb = to_stdout(answer, plain, new_markdown_cell("text"))
    assert [c.outputs[0].name for c in nb.cells[:2]] == ["stderr", "stderr"]


def test_grading_runs_it_after_execution_and_before_nbgrader_scores(tmp_path):
    """configure_grading: Replay in Execute's place, StderrToStdout right before SaveAutoGrades."""
    config = Config()
    configure_grading(config, root=str(tmp_path), repo=str(tmp_path))
    chain = config.Autograde.autograde_preprocessors
    assert Execute not in chain and chain.index(Replay) == 0
    assert chain.index(StderrToStdout) + 1 == chain.index(SaveAutoGrades)


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
    """With StderrToStdout disabled, nbgrader fails a cell that wrote to stderr; the verdict says so, quietly."""
    nb = hide(preprocessor, graded_cell([new_output("stream", name="stderr", text=f"warning: {SECRET}\n")]))
    assert (
        only_line(nb.cells[0]) == "hidden tests: failed (the cell wrote to stderr, which counts as failing) "
        "-- score 0 / 2"
    )
    assert_nothing_hidden(nb)


def test_a_timed_out_cell_says_it_was_stopped(preprocessor):
    """The sandbox's interrupt and then the engine's CellTimeoutError: the verdict is the timeout."""
    timed_out = "cell test_clamp ran past the 4 s limit and was interrupted"
    outputs = [
        error("KeyboardInterrupt", "", line=5),
        new_output("error", ename="CellTimeoutError", evalue=timed_out, traceback=[f"CellTimeoutError: {timed_out}"]),
    ]
    nb = hide(preprocessor, graded_cell(outputs))
    assert only_line(nb.cells[0]) == f"hidden tests: not passed ({timed_out}) -- score 0 / 2"
    assert_nothing_hidden(nb)


@pytest.mark.parametrize(
    "ename, evalue, said",
    [
        ("DeadKernelError", "the kernel died (exit status 3) in cell test_clamp", "not passed"),
        (
            "UnresponsiveKernelError",
            "cell test_clamp ran past the 4 s limit and did not stop when interrupted",
            "not passed",
        ),
        ("NotRun", "the kernel died (killed by SIGKILL) in cell clamp", "not run"),
    ],
)
def test_a_lost_kernel_gives_its_reason(preprocessor, ename, evalue, said):
    """The cell the kernel was lost in is 'not passed', a later one 'not run', each with the engine's reason."""
    nb = hide(
        preprocessor,
        graded_cell([new_output("stream", name="stdout", text=f"{SECRET}\n"), error(ename, evalue, line=None)]),
    )
    assert only_line(nb.cells[0]) == f"hidden tests: {said} ({evalue}) -- score 0 / 2"
    assert_nothing_hidden(nb)


def test_a_notebook_that_was_not_graded_gives_the_reason(preprocessor):
    """After Replay gave up on a notebook, the hidden tests' line carries its reason."""
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


def test_checked_schemas_validate_as_jsonschema_does():
    """grader.config.CheckedSchemas, which nbgrader's metadata check uses in a grading directory, accepts and
    refuses what jsonschema.validate does, with the same message, checking each schema once."""
    import jsonschema
    from nbgrader.nbgraderformat.v3 import MetadataValidatorV3

    from grader.config import CheckedSchemas

    good = {"grade": True, "grade_id": "t", "locked": True, "points": 1.0, "schema_version": 3, "solution": False}
    bad = {**good, "points": "ten"}
    checked = CheckedSchemas()
    for _ in range(2):  # a new schema object each time, as nbgrader reads it anew for every notebook
        schema = MetadataValidatorV3().schema
        checked.validate(good, schema)
        jsonschema.validate(good, schema)
        with pytest.raises(jsonschema.ValidationError) as ours:
            checked.validate(bad, schema)
        with pytest.raises(jsonschema.ValidationError) as theirs:
            jsonschema.validate(bad, schema)
        assert str(ours.value) == str(theirs.value)
    assert len(checked._validators) == 1


# -- DropDuplicateIds --------------------------------------------------------------------------------------------


def test_a_copied_locked_cell_becomes_a_plain_cell():
    """Of two cells with one grade id, all but the last lose their nbgrader metadata entirely (nbgrader keeps the
    last; no `nbgrader: {}` is left for nbgrader's metadata check to abort the class on)."""
    meta = {"grade_id": "setup", "locked": True, "grade": False, "solution": False, "schema_version": 3}
    nb = new_notebook(cells=[new_code_cell("import os"), new_code_cell("print('copy')")])
    for cell in nb.cells:
        cell.metadata["nbgrader"] = dict(meta)
    out, _ = DropDuplicateIds().preprocess(nb, {})
    assert "nbgrader" not in out.cells[0].metadata and out.cells[1].metadata["nbgrader"]["grade_id"] == "setup"
