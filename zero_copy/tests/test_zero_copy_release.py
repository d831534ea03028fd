"""The zero-copy release as a reader meets it: Run All on the untouched student notebook, offline.

The lesson (every explanation, measurement, plot and prediction table) runs to the end on the stubs; the exercises
come after it, and their cells fail only as an unwritten exercise does, with a message saying what was expected.
Offline this replays the shipped H200 profile; the same notebook runs live on a GPU.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client import KernelManager

from zero_copy import notebook

from installed import executed_release

ROOT = Path(__file__).resolve().parents[2]
RELEASE = ROOT / "course" / "zero_copy" / "zero_copy.ipynb"
SOURCE = ROOT / "zero_copy" / "solutions" / "zero_copy.ipynb"
CELL_TIMEOUT_S = 600
MAX_PROSE_WORDS = 2300  # 2,000 until section 7 (day 54's job through mapped memory both ways) came
STUB_ERRORS = ("NotImplementedError",)  # what a solution cell's stub raises
TEST_ERRORS = ("AssertionError", "AnswerRaised", "NoAnswer")  # what a test cell says of an unwritten answer


def is_exercise(cell: nbformat.NotebookNode) -> bool:
    """A solution cell or a graded cell (a test, or a written answer)."""
    meta = cell.metadata.get("nbgrader", {})
    return bool(meta.get("solution") or meta.get("grade"))


def errors_of(cell: nbformat.NotebookNode) -> list[tuple[str, str]]:
    return [(o.ename, o.evalue) for o in cell.get("outputs", []) if o.output_type == "error"]


def printed(cell: nbformat.NotebookNode) -> str:
    """What the cell printed (stdout): a library's warnings on stderr (matplotlib's font cache, say) are not the
    lesson's output."""
    return "".join(o.text for o in cell.get("outputs", []) if o.output_type == "stream" and o.name == "stdout")


def code_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if c.cell_type == "code"]


RUN_SECONDS: list[float] = []


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> nbformat.NotebookNode:
    """The release, executed in a copy of its folder by this Python's kernel, errors kept as outputs: once a run, the
    run tests/test_notebooks.py reads too."""
    # the kernel spec's `python` is this interpreter: the venv, with the lesson packages installed
    assert KernelManager(kernel_name="python3").format_kernel_cmd()[0] == sys.executable
    nb, seconds = executed_release(tmp_path_factory, "zero_copy", CELL_TIMEOUT_S)
    RUN_SECONDS.append(seconds)
    return nb


def test_run_all_time_is_printed(ran, capsys):
    """The release's Run All wall time, printed (timings are reported, never asserted as absolute seconds)."""
    with capsys.disabled():
        print(f"\ncourse/zero_copy/zero_copy.ipynb, Run All offline: {RUN_SECONDS[-1]:.1f} s")
    assert RUN_SECONDS


def test_no_lesson_cell_raises(ran):
    """Every cell that is not an exercise runs without an error on the untouched release."""
    failed = {c.get("id"): errors_of(c) for c in ran.cells if not is_exercise(c) and errors_of(c)}
    assert not failed, f"lesson cells raised: {failed}"


def test_every_lesson_plot_is_drawn(ran):
    """Each lesson cell that calls the lesson's plots (itself, or through notebook.figure) shows its figure."""
    drawing = ("plots.", "notebook.figure(")
    plot_cells = [c for c in code_cells(ran) if not is_exercise(c) and any(d in c.source for d in drawing)]
    assert len(plot_cells) == 3  # the break-even, the gather and mapped both ways
    images = {c.get("id"): sum("image/png" in o.get("data", {}) for o in c.outputs) for c in plot_cells}
    assert images == dict.fromkeys(images, 1), f"image/png outputs per plot cell: {images}"


def test_exercises_fail_only_as_unwritten_exercises_with_a_message(ran):
    """A stub raises NotImplementedError; a test cell fails with an assertion saying what it expected."""
    for cell in code_cells(ran):
        meta = cell.metadata.get("nbgrader", {})
        for ename, evalue in errors_of(cell):
            if meta.get("solution"):
                assert ename in STUB_ERRORS, (cell.get("id"), ename, evalue)
            else:
                assert meta.get("grade") and ename in TEST_ERRORS, (cell.get("id"), ename, evalue)
                assert "not answered yet" in evalue or "still holds the exercise's stub" in evalue, evalue
    graded = [c for c in code_cells(ran) if c.metadata.get("nbgrader", {}).get("grade")]
    assert len(graded) == 4 and all(errors_of(c) for c in graded), "every test cell fails on the stubs"


def test_the_lesson_comes_before_the_exercises(ran):
    """No measurement, plot or prediction follows the first exercise cell; the closing table ends the lesson."""
    first = next(i for i, c in enumerate(ran.cells) if is_exercise(c))
    late = [
        c.get("id")
        for c in ran.cells[first:]
        if c.cell_type == "code" and re.search(r"measure\(|plots\.|compare\(|predictions_", c.source)
    ]
    assert not late, f"lesson cells after the exercises began: {late}"
    closing = next(c for c in code_cells(ran) if "closing_table()" in c.source)
    assert ran.cells.index(closing) < first
    assert [line.split()[0] for line in printed(closing).splitlines()[1:-1]] == list(notebook.QUANTITIES)
    assert printed(closing).splitlines()[-1] == f"0 of {len(notebook.QUANTITIES)} predicted"


def test_each_measurement_has_a_prediction_before_it_and_a_table_after_it(ran):
    """predictions_x, then the measurement, then compare(predictions_x, ...); every quantity is asked for."""
    cells = code_cells(ran)
    asked = []
    for index, cell in enumerate(cells):
        if "notebook.measure(" not in cell.source:
            continue
        before, after = cells[index - 1], cells[index + 1]
        name = re.match(r"(predictions_\w+) = \{", before.source)
        assert name, f"no prediction cell before {cell.get('id')}"
        assert f"notebook.compare({name.group(1)}, " in after.source, f"no compare after {cell.get('id')}"
        assert printed(after).startswith("quantity "), printed(after)
        asked += re.findall(r'^\s+"(\w+)": None', before.source, re.M)
    assert sorted(asked) == sorted(notebook.QUANTITIES)


def test_the_device_facts_are_printed_once(ran):
    """The ~10 lines of device, versions and mapping facts appear once, not in every measurement cell."""
    text = "".join(printed(c) for c in code_cells(ran))
    assert text.count("\ndevice: NVIDIA H200") == 1 and text.count("mapping: canMapHostMemory=") == 1
    assert text.count("link and HBM, the model's inputs") == 1


def prose_words(path: Path) -> int:
    """Words of the markdown cells, solution regions (the written answers' model answers) left out."""
    nb = nbformat.read(path, as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    return len(re.sub(r"### BEGIN SOLUTION.*?### END SOLUTION", "", text, flags=re.S).split())


def test_the_prose_stays_short():
    """At most 2,300 words of prose, in the source and in the release."""
    assert prose_words(SOURCE) <= MAX_PROSE_WORDS
    assert prose_words(RELEASE) <= MAX_PROSE_WORDS
