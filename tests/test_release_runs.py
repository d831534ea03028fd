"""Run All on the untouched release: the lesson runs to the end, and only exercise cells may fail.

A reader who opens a release notebook and runs every cell without writing anything must see the whole lesson:
every measurement, every table, every plot. The exercises (solution cells and the test cells that grade them)
come after the lesson; their stubs raise, which is all they may do. Offline this replays the shipped profiles;
on a GPU the same test runs the lessons live.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from labcore.lessons import names

from installed import draws_plot

ROOT = Path(__file__).resolve().parents[1]
LESSONS = names()
CELL_TIMEOUT_S = 600
STUB_ERRORS = ("NotImplementedError", "AnswerRaised", "AssertionError", "NoAnswer")  # a stub's, or a check's on it


def is_exercise(cell: nbformat.NotebookNode) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return bool(meta.get("solution") or meta.get("grade"))


def errors_of(cell: nbformat.NotebookNode) -> list[str]:
    return [f"{o.ename}: {o.evalue}" for o in cell.get("outputs", []) if o.output_type == "error"]


def images_of(cell: nbformat.NotebookNode) -> int:
    return sum("image/png" in o.get("data", {}) for o in cell.get("outputs", []))


@pytest.fixture(scope="module", params=LESSONS)
def ran(request, tmp_path_factory) -> tuple[str, nbformat.NotebookNode, float]:
    lesson = request.param
    folder = tmp_path_factory.mktemp(lesson)
    shutil.copytree(ROOT / "course" / lesson, folder, dirs_exist_ok=True)
    nb = nbformat.read(folder / f"{lesson}.ipynb", as_version=4)
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(folder)}},
    )
    started = time.perf_counter()
    client.execute()
    return lesson, nb, time.perf_counter() - started


def test_no_lesson_cell_raises(ran) -> None:
    """Every cell that is not an exercise runs without an error on the untouched release."""
    lesson, nb, seconds = ran
    failed = {cell.get("id"): errors_of(cell) for cell in nb.cells if not is_exercise(cell) and errors_of(cell)}
    assert not failed, f"{lesson}: lesson cells raised: {failed}"
    print(f"\n{lesson}: Run All on the untouched release took {seconds:.1f} s")


def test_every_lesson_plot_is_drawn(ran) -> None:
    """Each lesson cell that calls the lesson's plots shows a picture; a plot cell without one is a lost figure."""
    lesson, nb, _ = ran
    plot_cells = [c for c in nb.cells if c.cell_type == "code" and not is_exercise(c) and draws_plot(c.source)]
    assert plot_cells, f"{lesson}: no lesson cell draws a plot"
    missing = [c.get("id") for c in plot_cells if images_of(c) == 0]
    assert not missing, f"{lesson}: plot cells without a picture: {missing}"


def test_only_stubs_fail_in_the_exercises(ran) -> None:
    """The exercise cells that fail, fail on the stubs (not yet written), never inside the course's own code."""
    lesson, nb, _ = ran
    stray = {
        cell.get("id"): errs
        for cell in nb.cells
        if is_exercise(cell)
        for errs in [errors_of(cell)]
        if errs and not any(e.startswith(STUB_ERRORS) for e in errs)
    }
    assert not stray, f"{lesson}: exercise cells failed otherwise than on a stub: {stray}"


def test_the_lesson_comes_before_the_exercises(ran) -> None:
    """No lesson measurement or plot sits after the first exercise cell: exercises never feed the lesson."""
    lesson, nb, _ = ran
    first = next(i for i, c in enumerate(nb.cells) if is_exercise(c))
    late = [
        c.get("id") for c in nb.cells[first:] if c.cell_type == "code" and not is_exercise(c) and "measure(" in c.source
    ]
    assert not late, f"{lesson}: measurements after the exercises began: {late}"


def test_run_all_seconds_are_printed(ran, capsys) -> None:
    """The release's Run All wall time, printed for the CI log (timings are reported, never asserted)."""
    lesson, nb, seconds = ran
    with capsys.disabled():
        print(f"\ncourse/{lesson}/{lesson}.ipynb, Run All offline with errors allowed: {seconds:.1f} s")
    assert nb.cells and seconds > 0
