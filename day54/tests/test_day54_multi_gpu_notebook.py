"""Section 7 of the day-54 notebook (several GPUs) offline: what its cells call, and the release's cells run.

Records are test fixtures (day54/tests/multi_gpu_fixture.py), never shipped. The release cells run
with CUDA_VISIBLE_DEVICES empty and COURSE_PROFILES pointing at a temporary folder: offline on any machine, with
or without the two-GPU profile that the test puts there.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from matplotlib.figure import Figure
from nbclient import NotebookClient

from day54 import multi_gpu, notebook
from day54.tests.multi_gpu_fixture import fixture_record, ship

ROOT = Path(__file__).resolve().parents[2]


def test_measure_gpus_with_nothing_to_show_prints_one_line_and_returns_none(monkeypatch, capsys, tmp_path):
    """No GPU and no profile: one line, None, and the section's other calls print and draw nothing."""
    monkeypatch.setattr(notebook, "gpu_count", lambda: 0)
    monkeypatch.setattr(multi_gpu, "SHIPPED", tmp_path / "absent.json")
    record = notebook.measure_gpus()
    notebook.show_gpus(record)
    notebook.compare_gpus({"ratio_alone": 0.5}, record)
    assert record is None and notebook.gpus_figure(record) is None
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("day54-multi-gpu: no GPU here, and no two-GPU profile is recorded yet")
    assert out[0].endswith("this section has nothing to show")


def test_measure_gpus_on_one_gpu_replays_the_profile_and_says_why(monkeypatch, capsys, tmp_path):
    """One GPU and a shipped profile: the recorded two-GPU numbers, saying they are recorded and why."""
    monkeypatch.setattr(notebook, "gpu_count", lambda: 1)
    monkeypatch.setattr(multi_gpu, "SHIPPED", fixture_record().save(tmp_path / multi_gpu.PROFILE_NAME))
    record = notebook.measure_gpus()
    line = capsys.readouterr().out.strip()
    assert record is not None and record.mode == "replay"
    assert line.startswith("day54-multi-gpu: replay of") and line.endswith(
        "; one GPU here, so these are recorded numbers"
    )
    assert isinstance(notebook.gpus_figure(record), Figure)


def test_the_section_s_predictions_read_the_record(capsys):
    """Each quantity from the fixture: GPU 0 alone 0.600, worst together 0.720 (GPU 1), 429.5 and 53.7 GB/s, 8x."""
    record = fixture_record()
    read = {key: q.read(record) for key, q in notebook.GPU_QUANTITIES.items()}
    assert read == pytest.approx(
        {
            "ratio_alone": 0.6,
            "ratio_together": 0.72,
            "peer_gbps": 429.4967,
            "staged_gbps": 53.6871,
            "peer_over_staged": 8.0,
        },
        rel=1e-4,
    )
    one = {key: q.read(fixture_record(1)) for key, q in notebook.GPU_QUANTITIES.items()}
    assert one["ratio_alone"] == pytest.approx(0.6) and [one[k] for k in list(one)[1:]] == [None] * 4
    notebook.compare_gpus({"ratio_together": 0.6}, record)
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("ratio_together"))
    assert row.split()[-3:] == ["0.6", "0.72", "1.20"]


def _section_cells() -> nbformat.NotebookNode:
    """The release notebook cut to its setup and section 7 (locked cells and the prediction cell)."""
    nb = nbformat.read(ROOT / "course" / "day54" / "day54.ipynb", as_version=4)
    ids = [c.get("id") for c in nb.cells]
    wanted = ["setup", "md-15", "predictions_gpus", "measure_gpus", "gpus_compare", "md-16"]
    assert set(wanted) <= set(ids), "section 7 is missing from the release"
    assert ids.index("md-16") < ids.index("md-14"), "section 7 sits after the Summary"
    nb.cells = [nb.cells[ids.index(i)] for i in wanted]
    return nb


def _run_section(monkeypatch, profiles: Path) -> dict[str, nbformat.NotebookNode]:
    monkeypatch.setenv("COURSE_PROFILES", str(profiles))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # offline even on a GPU machine
    nb = _section_cells()
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(profiles)}}).execute()
    cells = {c.get("id"): c for c in nb.cells}
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, errors
    return cells


def _text(cell: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def _images(cell: nbformat.NotebookNode) -> int:
    return sum("image/png" in o.get("data", {}) for o in cell.outputs)


def test_the_release_section_without_a_profile_prints_its_line_and_moves_on(monkeypatch, profiles):
    """No profile: the measure cell prints one line, the figure cell shows nothing, no cell raises."""
    cells = _run_section(monkeypatch, profiles)
    assert _text(cells["measure_gpus"]).strip().endswith("this section has nothing to show")
    assert len(_text(cells["measure_gpus"]).strip().splitlines()) == 1
    assert _images(cells["gpus_compare"]) == 0 and _text(cells["gpus_compare"]) == ""


def test_the_release_section_with_a_profile_shows_its_tables_and_its_figure(monkeypatch, profiles):
    """A shipped profile: the replay line and both tables, the predictions beside the record, and one picture."""
    ship(profiles, fixture_record())
    cells = _run_section(monkeypatch, profiles)
    shown = _text(cells["measure_gpus"])
    assert shown.startswith("day54-multi-gpu: replay of") and "Moving 1GiB from GPU 0 to GPU 1" in shown
    assert "ratio_together" in _text(cells["gpus_compare"])
    assert _images(cells["gpus_compare"]) == 1
