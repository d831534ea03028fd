"""Every lesson's solutions notebook runs top to bottom, live on a GPU; offline, tests/test_course_e2e.py runs them
(graded by nbgrader: no cell raises, the mode line says replay), so they are not executed twice here."""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from grader.course import RAISES_TAG, raises_untouched
from labcore import answers
from labcore.checking import MAX_FOUND_LINES, verdict, verdicts
from labcore.device import DeviceFacts
from labcore.lessons import lesson, names
from labcore.record import Record

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
def run_all(request, tmp_path_factory) -> nbformat.NotebookNode:
    """The untouched release executed as Run All does: stopping at the first error of a cell not tagged."""
    path = request.param
    folder = tmp_path_factory.mktemp(path.parent.name)
    shutil.copytree(path.parent, folder, dirs_exist_ok=True)
    nb = nbformat.read(folder / path.name, as_version=4)
    client = NotebookClient(
        nb, timeout=CELL_TIMEOUT_S, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
    )
    client.execute()  # allow_errors is False: a raise in an untagged cell fails the test here
    return nb


def test_run_all_reaches_the_last_cell(run_all) -> None:
    """The last code cell ran, and every graded test cell failed on its stub (the exercises are not written)."""
    code = [c for c in run_all.cells if c.cell_type == "code"]
    assert code[-1].execution_count is not None and all(c.execution_count is not None for c in code)
    tests = [c for c in code if is_graded_test(c)]
    assert all(any(o.output_type == "error" for o in c.outputs) for c in tests), [c.id for c in tests]


def test_a_failed_check_shows_one_verdict(run_all) -> None:
    """Each failing test cell shows at most a few lines: its docstring, what was found, what to try; no traceback
    through the package, and the error keeps its name and message (nbgrader reads those)."""
    for cell in (c for c in run_all.cells if c.cell_type == "code" and is_graded_test(c)):
        (error,) = [o for o in cell.outputs if o.output_type == "error"]
        lines = ANSI.sub("", "\n".join(error.traceback)).splitlines()
        docstring = cell.source.split('"""')[1]
        assert len(lines) <= VERDICT_LINES and lines[0] == f"✗ not passed: {docstring}", (cell.id, lines)
        assert lines[-1].startswith("  next:  ") and lines[1].startswith("  found: "), (cell.id, lines)
        assert error.ename in ("AssertionError", "AnswerRaised") and error.evalue.startswith(lines[1][9:40])
        assert not any(word in line for line in lines for word in ("Traceback", ".py", "File ")), (cell.id, lines)


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
