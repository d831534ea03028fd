"""A made-up multi-GPU results record for the offline tests: round numbers on a "Fixture GPU", never shipped."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from day54 import multi_gpu
from labcore.device import DeviceFacts
from labcore.record import Check, PassTimes, Record

MiB, GiB = 1 << 20, 1 << 30
WINDOW = 64 * MiB
# Made-up medians: GPU 1 loses more beside GPU 0 than GPU 0 beside it, so "the worst GPU" is not GPU 0.
NAIVE_MS = 50.0
PIPELINED_MS = {2: 30.0, 3: 25.0}
TOGETHER_SLOWDOWN = {0: 1.10, 1: 1.20}
PEER_MS, STAGED_MS = 2.5, 20.0


def _pass(key: object, name: str, ms: float, *, moved: int, host_ms: list[float] | None = None, **params) -> PassTimes:
    return PassTimes(
        key=str(key),
        name=name,
        params=params,
        times_ms=[ms * 0.99, ms, ms * 1.02],
        host_ms=host_ms or [],
        bytes_moved=moved,
    )


def fixture_record(n_gpus: int = 2, *, span_factor: float = 1.05, peer_enabled: bool = True) -> Record:
    """A record shaped like run_live's: every GPU alone (and together with several), and the copies with two.
    `span_factor` sets the together span against the slowest GPU (about 2 on two GPUs: they took turns)."""
    facts = DeviceFacts(name="Fixture GPU", compute_capability="9.0", async_engine_count=3, driver="1.0")
    record = Record(
        lesson=multi_gpu.SECTION,
        mode="live",
        source="live",
        device=facts,
        config={"total_bytes": GiB, "window_bytes": WINDOW, "buffers": [2, 3], "fmas": 512, "gpus": n_gpus},
        extra={"gpus": [dataclasses.asdict(facts)] * n_gpus},
    )
    runs = [("naive", 1, NAIVE_MS)] + [("pipelined", b, ms) for b, ms in PIPELINED_MS.items()]
    for together in (False, True) if n_gpus > 1 else (False,):
        for name, b, ms in runs:
            slowest = max(ms * (TOGETHER_SLOWDOWN[g] if together and name == "pipelined" else 1) for g in range(n_gpus))
            for gpu in range(n_gpus):
                slow = TOGETHER_SLOWDOWN[gpu] if together and name == "pipelined" else 1.0
                key = multi_gpu.PipelineKey(name, gpu, together, WINDOW, b)
                params = {"gpu": gpu, "together": together, "window_bytes": WINDOW, "buffers": b}
                span = [slowest * span_factor] * 3 if together else None
                record.passes.append(_pass(key, name, ms * slow, moved=2 * GiB, host_ms=span, **params))
            record.checks.append(Check(f"{name} b={b} {'together' if together else 'alone'}", True, "fixture"))
    if n_gpus > 1:
        record.extra["peer_access"] = {"source": 0, "dest": 1, "enabled": peer_enabled}
        for key, ms in (
            (multi_gpu.CopyKey("peer", 0, 1), PEER_MS),
            (multi_gpu.CopyKey("staged", 0, 1, WINDOW, 2), STAGED_MS),
        ):
            params = {"source": 0, "dest": 1, "window_bytes": key.window_bytes, "buffers": key.buffers}
            record.passes.append(_pass(key, key.method, ms, moved=GiB, **params))
    return record


def ship(profiles: Path, record: Record) -> Path:
    """Put `record` where the shipped two-GPU profile goes, in a COURSE_PROFILES folder (<gpu>/<lesson>/)."""
    return record.save(profiles / multi_gpu.GPUS / multi_gpu.LESSON / multi_gpu.PROFILE_NAME)
