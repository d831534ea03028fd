"""Every lesson's solutions notebook runs top to bottom, live on a GPU; offline, tests/test_course_e2e.py runs them
(graded by nbgrader: no cell raises, the mode line says replay), so they are not executed twice here.

The untouched release, run once per lesson (offline it replays the shipped profiles; on a GPU it runs live): Run All
reaches the end, a failed check is one verdict of a few lines, the whole lesson (every measurement, table and plot)
is there, and only the exercises' stubs fail.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from nbclient import NotebookClient

from grader.course import RAISES_TAG, raises_untouched
from labcore import answers
from labcore.checking import MAX_FOUND_LINES, verdict, verdicts
from labcore.device import DeviceFacts
from labcore.lessons import lesson, names
from labcore.record import Record

from installed import draws_plot, executed_release

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = [lesson(n).solutions for n in names()]
CELL_TIMEOUT_S = 600


@pytest.mark.gpu
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.relative_to(ROOT).as_posix() for p in NOTEBOOKS])
def test_solution_notebook_runs(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No cell raises; every cell finishes within its timeout; timings per cell are printed."""
    nb = nbformat.read(path, as_version=4)
    folder = tmp_path / path.stem  # the run files a live run leaves must not land in solutions/
    shutil.copytree(path.parent, folder)
    client = NotebookClient(
        nb, timeout=CELL_TIMEOUT_S, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
    )
    started = time.perf_counter()
    client.execute()
    errors = [
        (cell.get("id"), out.get("ename"), out.get("evalue"))
        for cell in nb.cells
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
    assert not errors, errors
    mode = next(
        (
            out
            for cell in nb.cells
            for out in cell.get("outputs", [])
            if out.get("output_type") == "stream" and ("replay of" in out["text"] or "live on" in out["text"])
        ),
        None,
    )
    assert mode is not None, "no cell printed a mode line (live on ... / replay of ...)"
    with capsys.disabled():
        print(f"\n{path.relative_to(ROOT)}: {time.perf_counter() - started:.1f} s")


def test_notebooks_are_committed_without_outputs() -> None:
    """The solutions notebooks and course/ carry no outputs or execution counts."""
    for path in NOTEBOOKS + sorted(ROOT.glob("course/*/*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        dirty = [c.get("id") for c in nb.cells if c.cell_type == "code" and (c.outputs or c.execution_count)]
        assert not dirty, f"{path.relative_to(ROOT)} has outputs in cells {dirty}"


# -- the student's side of the release: Run All goes to the end, a failed check is one verdict ---------------------

RELEASES = sorted((ROOT / "course").glob("*/*.ipynb"))
ANSI = re.compile(r"\x1b\[[0-9;]*m")
VERDICT_LINES = 2 + MAX_FOUND_LINES  # the verdict, what was found, what to try next


def is_graded_test(cell: nbformat.NotebookNode) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return bool(meta.get("grade") and not meta.get("solution"))


@pytest.mark.parametrize("path", RELEASES, ids=[p.relative_to(ROOT).as_posix() for p in RELEASES])
def test_only_cells_that_raise_untouched_are_tagged(path: Path) -> None:
    """Every graded test cell and every answer cell whose stub raises at top level carries `raises-exception`;
    no lesson cell does, so an error in the lesson still stops Run All."""
    nb = nbformat.read(path, as_version=4)
    tagged = {c.id for c in nb.cells if RAISES_TAG in c.metadata.get("tags", [])}
    tests = {c.id for c in nb.cells if is_graded_test(c)}
    stubs = {c.id for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution") and "\nraise " in f"\n{c.source}"}
    assert tests and tests <= tagged and stubs <= tagged
    assert tagged == {c.id for c in nb.cells if raises_untouched(c)}
    assert not [c.id for c in nb.cells if c.id in tagged and not c.metadata.get("nbgrader", {})]


@pytest.fixture(scope="module", params=RELEASES, ids=[p.relative_to(ROOT).as_posix() for p in RELEASES])
def run_all(request, tmp_path_factory) -> SimpleNamespace:
    """The untouched release executed once with every cell run (errors allowed): what Run All shows where it reaches
    the end, and, where a cell not tagged raised, the cell where Run All stops (test_run_all_reaches_the_last_cell).
    One kernel per release a run serves every test below (and a lesson's own release tests)."""
    name = request.param.parent.name
    nb, seconds = executed_release(tmp_path_factory, name, CELL_TIMEOUT_S)
    return SimpleNamespace(lesson=name, nb=nb, seconds=seconds)


def errors_of(cell: nbformat.NotebookNode) -> list[str]:
    return [f"{o.ename}: {o.evalue}" for o in cell.get("outputs", []) if o.output_type == "error"]


def test_run_all_reaches_the_last_cell(run_all) -> None:
    """Run All stops at the first error of a cell not tagged `raises-exception`: none raised, so it reaches the last
    code cell; and every graded test cell failed on its stub (the exercises are not written)."""
    code = [c for c in run_all.nb.cells if c.cell_type == "code"]
    stops = [(c.id, errors_of(c)) for c in code if errors_of(c) and RAISES_TAG not in c.metadata.get("tags", [])]
    assert not stops, f"Run All stops at {stops[0]}"
    assert code[-1].execution_count is not None and all(c.execution_count is not None for c in code)
    tests = [c for c in code if is_graded_test(c)]
    assert all(any(o.output_type == "error" for o in c.outputs) for c in tests), [c.id for c in tests]


def test_a_failed_check_shows_one_verdict(run_all) -> None:
    """Each failing test cell shows at most a few lines: its docstring, what was found, what to try; no traceback
    through the package, and the error keeps its name and message (nbgrader reads those)."""
    for cell in (c for c in run_all.nb.cells if c.cell_type == "code" and is_graded_test(c)):
        (error,) = [o for o in cell.outputs if o.output_type == "error"]
        lines = ANSI.sub("", "\n".join(error.traceback)).splitlines()
        docstring = cell.source.split('"""')[1]
        assert len(lines) <= VERDICT_LINES and lines[0] == f"✗ not passed: {docstring}", (cell.id, lines)
        assert lines[-1].startswith("  next:  ") and lines[1].startswith("  found: "), (cell.id, lines)
        assert error.ename in ("AssertionError", "AnswerRaised") and error.evalue.startswith(lines[1][9:40])
        assert not any(word in line for line in lines for word in ("Traceback", ".py", "File ")), (cell.id, lines)


# -- Run All on the untouched release: the whole lesson, and only exercise cells may fail ----------------------
# A reader who runs every cell without writing anything sees every measurement, table and plot; the exercises come
# after the lesson, and their stubs raising is all they may do.

STUB_ERRORS = ("NotImplementedError", "AnswerRaised", "AssertionError", "NoAnswer")  # a stub's, or a check's on it


def is_exercise(cell: nbformat.NotebookNode) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return bool(meta.get("solution") or meta.get("grade"))


def images_of(cell: nbformat.NotebookNode) -> int:
    return sum("image/png" in o.get("data", {}) for o in cell.get("outputs", []))


def test_no_lesson_cell_raises(run_all) -> None:
    """Every cell that is not an exercise runs without an error on the untouched release."""
    name, nb, seconds = run_all.lesson, run_all.nb, run_all.seconds
    failed = {cell.get("id"): errors_of(cell) for cell in nb.cells if not is_exercise(cell) and errors_of(cell)}
    assert not failed, f"{name}: lesson cells raised: {failed}"
    print(f"\n{name}: Run All on the untouched release took {seconds:.1f} s")


def test_every_lesson_plot_is_drawn(run_all) -> None:
    """Each lesson cell that calls the lesson's plots shows a picture; a plot cell without one is a lost figure."""
    name, nb = run_all.lesson, run_all.nb
    plot_cells = [c for c in nb.cells if c.cell_type == "code" and not is_exercise(c) and draws_plot(c.source)]
    assert plot_cells, f"{name}: no lesson cell draws a plot"
    missing = [c.get("id") for c in plot_cells if images_of(c) == 0]
    assert not missing, f"{name}: plot cells without a picture: {missing}"


def test_only_stubs_fail_in_the_exercises(run_all) -> None:
    """The exercise cells that fail, fail on the stubs (not yet written), never inside the course's own code."""
    name, nb = run_all.lesson, run_all.nb
    stray = {
        cell.get("id"): errs
        for cell in nb.cells
        if is_exercise(cell)
        for errs in [errors_of(cell)]
        if errs and not any(e.startswith(STUB_ERRORS) for e in errs)
    }
    assert not stray, f"{name}: exercise cells failed otherwise than on a stub: {stray}"


def test_the_lesson_comes_before_the_exercises(run_all) -> None:
    """No lesson measurement or plot sits after the first exercise cell: exercises never feed the lesson."""
    name, nb = run_all.lesson, run_all.nb
    first = next(i for i, c in enumerate(nb.cells) if is_exercise(c))
    late = [
        c.get("id") for c in nb.cells[first:] if c.cell_type == "code" and not is_exercise(c) and "measure(" in c.source
    ]
    assert not late, f"{name}: measurements after the exercises began: {late}"


def test_run_all_seconds_are_printed(run_all, capsys) -> None:
    """The release's Run All wall time, printed for the CI log (timings are reported, never asserted)."""
    name, nb, seconds = run_all.lesson, run_all.nb, run_all.seconds
    with capsys.disabled():
        print(f"\ncourse/{name}/{name}.ipynb, Run All offline with errors allowed: {seconds:.1f} s")
    assert nb.cells and seconds > 0


def _failing_check(namespace_name: str) -> Callable[..., None]:
    def check_thing(answer: object, record: object = None) -> None:
        assert answer == 3, f"your thing gave {answer!r}; expected 3"

    check_thing.__module__ = namespace_name
    namespace = {"__name__": namespace_name, "check_thing": check_thing}
    verdicts(namespace)
    return namespace["check_thing"]


def test_verdicts_change_nothing_while_grading(monkeypatch, tmp_path) -> None:
    """In the sandbox and the checker a failed check raises exactly as before: no verdict is attached."""
    check = _failing_check("fake_lesson.checks")
    monkeypatch.setattr(answers, "role", answers.Role.judge(tmp_path / "answers.jsonl", 0))
    with pytest.raises(AssertionError, match="your thing gave 2; expected 3") as raised:
        check(2)
    assert not hasattr(raised.value, "_render_traceback_")
    monkeypatch.setattr(answers, "role", answers.OWN)
    with pytest.raises(AssertionError, match="your thing gave 2; expected 3") as raised:
        check(2)
    assert ANSI.sub("", raised.value._render_traceback_()[1]) == "  found: your thing gave 2; expected 3"


def test_a_verdict_names_the_answers_not_the_lessons_records() -> None:
    """'next' names the student's names the cell hands the check, not the lesson's record; the docstring leads."""
    cell = '"""Your sweep is right."""\nchecks.check_sweep_ratios(sweep_ratios, record, buffers=2)\n'
    record = Record(lesson=names()[0], mode="replay", source="x", device=DeviceFacts(name="gpu"), config={}, passes=[])
    lines = [
        ANSI.sub("", line) for line in verdict(AssertionError("off by 2"), cell, "check_sweep_ratios", (len, record))
    ]
    assert lines == [
        "✗ not passed: Your sweep is right.",
        "  found: off by 2",
        "  next:  change sweep_ratios in the exercise cell above, run that cell, then this one again",
    ]
    unwritten = verdict(AssertionError("f(1): not answered yet (stub)"), cell, "check_sweep_ratios", (len, record))
    assert "write sweep_ratios in the exercise cell above (where it says YOUR CODE HERE)" in unwritten[-1]
    crashed = verdict(TypeError("'int' object is not iterable"), "", "check_sweep_ratios")
    assert ANSI.sub("", crashed[0]) == "✗ not passed: check_sweep_ratios"
    assert "could not use your answer: TypeError: 'int' object is not iterable" in crashed[1]
