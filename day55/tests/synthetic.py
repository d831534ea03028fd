"""A synthetic day-55 record for tests of the offline code (report, plots, replay of a results.json, checks): every
pass time simulated from made-up stage times and call costs, and said so in its source. It is never a profile:
nothing ships it, and the shipped profile is recorded on the H200 (day55/record.sh)."""

from __future__ import annotations

from day55 import live, model, schedules
from day55.config import COMPONENTS, VARIANTS, Config, PassKey
from labcore.device import DeviceFacts
from labcore.pipeline.recording import RecordingContext
from labcore.pipeline.simulate import simulate
from labcore.pipeline.stages import Stages
from labcore.record import Check, Op, PassTimes, Record
from labcore.sizes import format_size

MiB = 1 << 20
# made up, of the order of an H200's: per 64 MiB chunk, ms
PER_CHUNK_64 = (1.22, 0.34, 1.22)
CALLS = {"malloc_ms": 0.12, "free_ms": 0.20, "async_ms": 0.004, "grow_ms": 0.60}


def _times(ms: float) -> list[float]:
    return [ms * f for f in (1.0, 1.01, 0.995, 1.003, 1.002)]


def record(windows=(4 * MiB, 64 * MiB), buffers: int = 2) -> Record:
    cfg = Config(windows=list(windows), buffers=buffers, seed=1)
    rec = Record(
        lesson="day55",
        mode="replay",
        source="synthetic test record (simulated, not a profile)",
        device=DeviceFacts(name="synthetic GPU"),
        config=cfg.as_dict(),
    )
    rec.extra.update({live.PROBE: {}, live.RESERVED: {}, live.CUPY_HELD: {}, live.THRESHOLDS: {}})
    rec.extra[live.RACE] = live.race_shown()
    rec.checks.append(Check("naive vs float64 closed form", True, "max error 0 <= tolerance 1e-5"))
    for window in cfg.all_windows:
        n = cfg.total_bytes // window
        scale = window / (64 * MiB)
        per = [t * scale for t in PER_CHUNK_64]
        st = Stages(*(t * n for t in per), n)
        costs = model.CallCosts(**CALLS)
        rec.extra[live.PROBE][format_size(window)] = dict(CALLS)
        for name, t in zip(COMPONENTS, (st.h2d_ms, st.kernel_ms, st.d2h_ms), strict=True):
            rec.passes.append(PassTimes(str(PassKey(name, window, 1)), name, {"window_bytes": window}, _times(t)))
        rec.passes.append(
            PassTimes(str(PassKey("naive", window, 1)), "naive", {"window_bytes": window}, _times(st.sum_ms + 0.3))
        )
        for name in VARIANTS:
            key = PassKey(name, window, buffers)
            rec.checks.append(Check(f"{key} vs naive", True, f"all {n} chunks bit-identical to naive"))
            keeps = name.endswith("-keep") or not name.startswith("async")
            schedule = schedules.for_variant(name)
            ctx = RecordingContext(n, buffers, allocated=False)
            schedule(ctx)
            ops = simulate(ctx, model.rates(st, costs, keeps_pool=keeps), key=str(key))
            end = max(o.end_ns for o in ops) / 1e6
            rec.passes.append(PassTimes(str(key), name, {"window_bytes": window, "buffers": buffers}, _times(end)))
            held = 2 * buffers * window if keeps and name.startswith("async") else 0
            rec.extra[live.RESERVED][str(key)] = held
            rec.extra[live.CUPY_HELD][str(key)] = 2 * buffers * window if name.startswith("cupy") else 0
            if window == cfg.window_bytes:
                rec.trace += [
                    Op(str(key), o.op, o.chunk, o.stream, o.start_ns, o.duration_ns, buffer=o.buffer)
                    for o in ops
                    if o.op in COMPONENTS
                ]
    return rec
