"""Day 57 live on a GPU: every output bit-exact, and the three managed passes in the order the lesson claims."""

from __future__ import annotations

import pytest

from day57 import report
from day57.config import Config
from day57.live import run_live

pytestmark = pytest.mark.gpu


def test_a_small_live_run_is_right_and_ordered():
    """256 MiB in 4 chunks: faulting costs more than prefetching, which costs more than the advised re-run."""
    record = run_live(Config(total_bytes=256 << 20, n_chunks=4, repeats=2))
    assert [c.name for c in record.checks if not c.ok] == []
    assert len(record.checks) == 8
    faults, prefetch, advised = (report.ms(record, n) for n in ("faults", "prefetch", "advised"))
    assert faults > prefetch > advised, (faults, prefetch, advised)
    assert report.ratio(record, "advised", "duplex") < 1.0
