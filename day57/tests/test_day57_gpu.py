"""Day 57 live on a GPU, at the lesson's own size (1 GiB in 64 MiB windows): every output bit-exact, no pass faster
than the link allows for the bytes the lesson's model says it moves, and the lesson's claims judged on the run."""

from __future__ import annotations

import pytest

from day57 import model, report
from day57.config import MANAGED, Config
from day57.live import run_live

pytestmark = pytest.mark.gpu

GT_PER_S = {3: 8, 4: 16, 5: 32, 6: 64}  # PCIe transfers per lane a second, by generation (128b/130b encoded)


def link_bytes_per_ms(device) -> float:
    """One direction's raw peak of the GPU's PCIe link, bytes a millisecond (the idle link may report a lower
    generation than it trains to under load: the higher of the two is the bound)."""
    gen = max(device.pcie_gen or 0, device.pcie_gen_max or 0)
    return GT_PER_S[gen] * 1e9 * 128 / 130 / 8 * device.pcie_width / 1e3


@pytest.fixture(scope="module")
def record():
    return run_live(Config(repeats=3))


def test_every_output_is_right(record):
    """The closed form, the pinned pipeline, and each managed pass before and after its timing: eight checks."""
    assert [c.name for c in record.checks if not c.ok] == []
    assert len(record.checks) == 8
    assert [p.name for p in record.passes] == ["pipeline", "duplex", *MANAGED]


def test_no_pass_beats_the_link(record):
    """A run without advice moves model.bytes_moved(total, 1, False) across the link (in and out, both ways at once
    at best); an advised re-run moves what the model adds for one more run (its output, one way)."""
    if record.device.pcie_width is None:
        pytest.skip("nvidia-smi gave no PCIe link for this GPU")
    peak = link_bytes_per_ms(record.device)
    total = record.config["total_bytes"]
    one_run = model.bytes_moved(total, 1, False)
    re_run = model.bytes_moved(total, 2, True) - model.bytes_moved(total, 1, True)
    assert re_run == total and one_run == 2 * total
    for name in ("pipeline", "duplex", "faults", "prefetch"):
        assert report.ms(record, name) >= one_run / (2 * peak), name
    assert report.ms(record, "advised") >= re_run / peak


def test_the_lessons_claims_hold(record):
    """Faulting costs more than prefetching, which costs more than the advised re-run; the three claims held, the
    advised re-run under the duplex floor because it moves half the bytes."""
    faults, prefetch, advised = (report.ms(record, n) for n in MANAGED)
    assert faults > prefetch > advised, (faults, prefetch, advised)
    verdicts = report.predictions(record)
    assert [(v.number, v.outcome) for v in verdicts] == [(1, "held"), (2, "held"), (3, "held")], verdicts
    assert report.ratio(record, "advised", "duplex") < 1.0
