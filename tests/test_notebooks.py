"""Every solutions/ notebook runs top to bottom, live on a GPU; offline, tests/test_course_e2e.py runs them
(graded by nbgrader: no cell raises, the mode line says replay), so they are not executed twice here."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "solutions").glob("*/*.ipynb"))
CELL_TIMEOUT_S = 600


@pytest.mark.gpu
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.relative_to(ROOT).as_posix() for p in NOTEBOOKS])
def test_solution_notebook_runs(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No cell raises; every cell finishes within its timeout; timings per cell are printed."""
    nb = nbformat.read(path, as_version=4)
    folder = tmp_path / path.parent.name  # the run files a live run leaves must not land in solutions/
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
    """solutions/ and course/ carry no outputs or execution counts."""
    for path in sorted(ROOT.glob("solutions/*/*.ipynb")) + sorted(ROOT.glob("course/*/*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        dirty = [c.get("id") for c in nb.cells if c.cell_type == "code" and (c.outputs or c.execution_count)]
        assert not dirty, f"{path.relative_to(ROOT)} has outputs in cells {dirty}"
