"""The multi-GPU section on real GPUs: one GPU runs what it can and says what it cannot; two or more run it all.

Sizes are cut to 256 MiB in 16 MiB windows so that the module takes seconds; the claims are the lesson's: outputs
checked bit for bit first, pipelining still pays, GPUs timed together really overlap, double-buffered staging
overlaps its two copies, and a peer copy that misses a chunk is caught.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from day54 import multi_gpu
from day54.config import Config
from labcore.device import cupy_or_none, gpu_count
from labcore.record import Record

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
MiB = 1 << 20
TWO = pytest.mark.skipif(gpu_count() < 2, reason="needs two GPUs")


def small() -> Config:
    return Config(
        total_bytes=256 * MiB,
        window_bytes=16 * MiB,
        windows=[16 * MiB],
        buffers=[2, 3],
        repeats=3,
        seed=54,
        pitfalls=False,
    )


@pytest.fixture(scope="module")
def gpu0() -> Record:
    """Experiment (a) on GPU 0 alone."""
    cfg = small()
    record = Record(lesson=multi_gpu.SECTION, mode="live", source="live", device=None, config=cfg.as_dict())
    multi_gpu.side_by_side(cfg, [0], record, lambda label: None)
    return record


def test_one_gpu_alone_is_verified_before_it_is_timed(gpu0):
    """Closed form, then pipelined at 2 and 3 buffers bit for bit against its own naive: all pass, GPU 0 named."""
    names = [c.name for c in gpu0.checks]
    assert names == [
        "GPU 0: naive vs float64 closed form",
        "GPU 0: pipelined b=2 alone vs its naive",
        "GPU 0: pipelined b=3 alone vs its naive",
    ]
    assert all(c.ok for c in gpu0.checks), [c.detail for c in gpu0.checks]
    assert all("bit-identical" in c.detail for c in gpu0.checks[1:])


def test_one_gpu_alone_pipelines_and_times_nothing_together(gpu0):
    """Pipelining pays on GPU 0 alone (ratio between 0.2 and 0.9), and no 'together' pass exists with one GPU."""
    for b in (2, 3):
        assert 0.2 < multi_gpu.ratio(gpu0, 0, False, b) < 0.9
    assert not [p for p in gpu0.passes if p.params["together"]]
    assert {p.key for p in gpu0.passes} == {
        "naive GPU 0 alone w=16MiB b=1",
        "pipelined GPU 0 alone w=16MiB b=2",
        "pipelined GPU 0 alone w=16MiB b=3",
    }


def test_the_command_on_one_gpu_runs_alone_and_says_a_peer_copy_needs_two():
    """`python -m day54 --gpus` with one GPU visible: live on 1 GPU, the alone table, and the two lines it owes."""
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0] or "0"
    done = subprocess.run(
        [sys.executable, "-m", "day54", "--gpus", "--total", "256MiB", "--window", "16MiB", "--repeats", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": first},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("day54 --gpus: live on 1 GPU: GPU 0 ")
    assert multi_gpu.NO_NEIGHBOUR in done.stderr and multi_gpu.NO_NEIGHBOUR in done.stdout
    assert "GPU to GPU: a peer copy needs two GPUs; this machine has 1" in done.stderr
    assert "FAIL" not in done.stdout and "PASS  GPU 0: pipelined b=3 alone vs its naive" in done.stdout


@TWO
def test_every_gpu_keeps_verified_output_and_runs_at_once():
    """All GPUs: every check passes (alone, together, both copies); together the GPUs overlap (span under 1.25x the
    slowest GPU) and each keeps a pipelining ratio under 0.9; both copies moved 256 MiB."""
    record = multi_gpu.run_live(small())
    n = gpu_count()
    assert all(c.ok for c in record.checks), [c.detail for c in record.checks if not c.ok]
    together = [c.name for c in record.checks if "together" in c.name]
    assert len(together) == 3 * n  # naive, 2 and 3 buffers on every GPU
    assert {c.name for c in record.checks} >= {
        "peer GPU 0->GPU 1 vs the source",
        "staged GPU 0->GPU 1 w=16MiB b=2 vs the source",
    }
    for b in (2, 3):
        span, slowest = multi_gpu.together_span_ms(record, "pipelined", b)
        assert multi_gpu.at_once(span, slowest), (span, slowest)
        for gpu in range(n):
            assert 0.2 < multi_gpu.ratio(record, gpu, True, b) < 0.9
    peer, staged = multi_gpu.copy_times(record, "peer"), multi_gpu.copy_times(record, "staged")
    assert peer.bytes_moved == staged.bytes_moved == 256 * MiB
    assert record.extra["peer_access"]["source"] == 0 and record.extra["peer_access"]["dest"] == 1


@TWO
def test_double_buffered_staging_overlaps_its_two_copies():
    """Two staging buffers beat one (where the copy out of GPU 0 and the copy into GPU 1 take turns) by 1.3x."""
    cfg = small()
    times = {}
    for buffers in (1, 2):
        transfer = multi_gpu.make_transfer(cfg, 0, 1, staging_buffers=buffers)
        transfer.poison()
        transfer.staged()
        multi_gpu.synchronize_all([0, 1])
        assert transfer.check("staged").ok
        key = multi_gpu.CopyKey("staged", 0, 1, cfg.window_bytes, buffers)
        with multi_gpu.turns([0, 1]):
            times[buffers] = multi_gpu.time_copy(transfer, transfer.staged, key, cfg).median_ms
        del transfer
    assert times[1] > 1.3 * times[2], times


@TWO
def test_a_copy_that_misses_chunks_is_caught_at_the_first_missed_chunk():
    """A peer copy of the first half only leaves poison in the second: the check fails at chunk 8 of 16."""
    cp = cupy_or_none()
    cfg = small()
    multi_gpu.enable_peer_access(0, 1)
    transfer = multi_gpu.make_transfer(cfg, 0, 1)
    transfer.poison()
    with cp.cuda.Device(0):
        cp.cuda.runtime.memcpyPeerAsync(transfer.d_dst.data.ptr, 1, transfer.d_src.data.ptr, 0, transfer.nbytes // 2, 0)
    multi_gpu.synchronize_all([0, 1])
    check = transfer.check("half a peer copy")
    assert not check.ok and check.first_bad_chunk == 8, check.detail
    assert "8 of 16 chunks differ from the source" in check.detail
