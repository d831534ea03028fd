"""The report of a day-55 record, as text: verdicts, the stages, what each way of allocating cost against the model,
what the pools held, the allocation calls' costs, the window sweep, and the lesson's claims with their verdicts.

Every number comes from the record (live, or replayed from a profile); the model's are simulated from the same
record's stage times and call costs, and say so.
"""

from __future__ import annotations

import dataclasses

from day55 import live, model, schedules
from day55.config import COMPONENTS, VARIANTS, PassKey
from labcore.answers import ReferenceWithheld
from labcore.errors import UsageError
from labcore.kit.verdicts import Verdict, held
from labcore.pipeline.stages import Stages
from labcore.record import Record
from labcore.sizes import format_size

MiB = 1 << 20


def windows(record: Record) -> list[int]:
    """The windows the record timed, smallest first."""
    return sorted({p.params["window_bytes"] for p in record.passes if p.name == "h2d"})


def main_window(record: Record, asked: int | None = None) -> int:
    """The window the tables show: the one asked for when the record has it (UsageError otherwise), else the run's."""
    have = windows(record)
    if asked is not None:
        if asked not in have:
            raise UsageError(f"--window {format_size(asked)}: the record has {', '.join(format_size(w) for w in have)}")
        return asked
    configured = record.config.get("window_bytes")
    return configured if configured in have else have[-1]


def buffers(record: Record) -> int:
    """The buffer pairs the variants ran with."""
    return int(record.config.get("buffers", 2))


def measured(record: Record, name: str, window: int, n_buffers: int | None = None) -> float:
    """A pass's median, ms (components and naive have 1 pair, the variants the record's)."""
    b = 1 if name in (*COMPONENTS, "naive") else (n_buffers or buffers(record))
    return record.pass_times(PassKey(name, window, b)).median_ms


def has(record: Record, name: str, window: int) -> bool:
    b = 1 if name in (*COMPONENTS, "naive") else buffers(record)
    return record.has_pass(PassKey(name, window, b))


def stages(record: Record, window: int) -> Stages:
    """The three stages alone at one window."""
    total = int(record.config.get("total_bytes", 1 << 30))
    h, k, d = (measured(record, name, window) for name in COMPONENTS)
    return Stages(h, k, d, total // window)


def calls(record: Record, window: int) -> model.CallCosts | None:
    """The allocation calls' probed costs at one window, or None when the record has none."""
    found = record.extra.get(live.PROBE, {}).get(format_size(window))
    return model.CallCosts.from_dict(found) if found else None


def simulated(record: Record, name: str, window: int) -> float | None:
    """The model's time for a variant at one window (simulated on the record's stages and calls), or None."""
    costs = calls(record, window)
    if costs is None or name.startswith("cupy"):
        return None
    keeps = name.endswith("-keep") or name in ("once", "malloc")
    try:
        return model.simulated_ms(
            schedules.for_variant(name), stages(record, window), costs, buffers(record), keeps_pool=keeps
        )
    except ReferenceWithheld:  # the student edition, before the student's own schedule stands in
        return None


def checks_text(record: Record) -> str:
    lines = [f"{'ok' if c.ok else 'FAILED':>6}  {c.name}: {c.detail}" for c in record.checks]
    return "correctness (before any timing)\n" + ("\n".join(lines) if lines else "  (the record holds no verdicts)")


def stages_text(record: Record, window: int) -> str:
    st = stages(record, window)
    return (
        f"stages alone at {format_size(window)} ({st.n_chunks} chunks): copy in {st.h2d_ms:.2f} ms, kernel "
        f"{st.kernel_ms:.2f} ms, copy out {st.d2h_ms:.2f} ms; sum {st.sum_ms:.2f} ms, max {st.max_ms:.2f} ms; "
        f"naive (one stream, allocated once) {measured(record, 'naive', window):.2f} ms"
    )


def calls_text(record: Record, window: int) -> str:
    costs = calls(record, window)
    if costs is None:
        return f"allocation calls at {format_size(window)}: not probed in this record"
    return (
        f"one pair's two {format_size(window)} buffers, host time of the calls (medians): cudaMalloc "
        f"{costs.malloc_ms:.3f} ms, cudaFree {costs.free_ms:.3f} ms (device idle), cudaMallocAsync from a warm pool "
        f"{costs.async_ms:.3f} ms, growing the pool {costs.grow_ms:.3f} ms"
    )


def _held(record: Record, key: str) -> str:
    reserved = record.extra.get(live.RESERVED, {}).get(key)
    held = record.extra.get(live.CUPY_HELD, {}).get(key)
    parts = []
    if reserved is not None:
        parts.append(f"pool {reserved / MiB:.0f} MiB")
    if held:
        parts.append(f"CuPy {held / MiB:.0f} MiB")
    return ", ".join(parts) or "-"


def table(record: Record, window: int) -> str:
    """Every way of allocating at one window: measured median and spread, x allocated once, the model's time."""
    once = measured(record, "once", window)
    rows = [f"{'pass':<16}{'median ms':>10}{'min-max':>16}{'x once':>8}{'model ms':>10}  held after   what"]
    for name, what in VARIANTS.items():
        if not has(record, name, window):
            continue
        p = record.pass_times(PassKey(name, window, buffers(record)))
        lo, hi = p.spread_ms
        sim = simulated(record, name, window)
        rows.append(
            f"{name:<16}{p.median_ms:>10.2f}{f'{lo:.2f}-{hi:.2f}':>16}{p.median_ms / once:>8.2f}"
            f"{'-' if sim is None else f'{sim:.2f}':>10}  {_held(record, p.key):<12} {what}"
        )
    rows.append(
        "(model ms: simulated from this record's stage times and call costs; held after: what the default "
        "pool and CuPy's pool held once the pass's last synchronize returned)"
    )
    return "\n".join(rows)


def sweep_text(record: Record) -> str:
    ws = windows(record)
    head = f"{'x once':<16}" + "".join(f"{format_size(w):>10}" for w in ws)
    rows = [head]
    for name in VARIANTS:
        if name == "once" or not all(has(record, name, w) for w in ws):
            continue
        rows.append(
            f"{name:<16}" + "".join(f"{measured(record, name, w) / measured(record, 'once', w):>10.2f}" for w in ws)
        )
    return "window sweep (each pass / allocated once, same window)\n" + "\n".join(rows)


def _or(simulated_ms: float | None, measured_ms: float) -> str:
    """A simulated time, or (no call costs in the record) the measured one, saying which."""
    return f"{measured_ms:.2f} ms measured" if simulated_ms is None else f"{simulated_ms:.2f} ms"


def claims(record: Record, window: int) -> list[Verdict]:
    """The lesson's claims at one window, each with the model's prediction and the measurement."""
    st, once = stages(record, window), measured(record, "once", window)
    found = []
    malloc = measured(record, "malloc", window)
    costs = calls(record, window)
    try:
        predicted = model.per_chunk_malloc_ms(st, costs.malloc_ms, costs.free_ms) if costs else st.sum_ms
    except ReferenceWithheld:  # the student edition where no result was recorded: the floor alone
        predicted = st.sum_ms
    found.append(
        _claim(
            "cudaMalloc/cudaFree per chunk serializes the device: at least the one-stream sum of the stages",
            f"{predicted:.2f} ms, >= sum {st.sum_ms:.2f} ms",
            f"{malloc:.2f} ms",
            malloc >= 0.97 * st.sum_ms,
        )
    )
    keep = measured(record, "async-keep", window)
    found.append(
        _claim(
            "cudaMallocAsync/cudaFreeAsync on the chunk's stream keeps the pipeline: within 10% of allocating once",
            _or(simulated(record, "async-keep", window), once),
            f"{keep:.2f} ms ({keep / once:.2f}x once)",
            keep <= 1.10 * once,
        )
    )
    zero = measured(record, "async", window)
    found.append(
        _claim(
            "with no synchronize inside the loop the release threshold hardly matters: threshold 0 within 10% of "
            "UINT64_MAX",
            f"{_or(simulated(record, 'async', window), zero)} vs {_or(simulated(record, 'async-keep', window), keep)}",
            f"{zero:.2f} ms vs {keep:.2f} ms",
            zero <= 1.10 * keep,
        )
    )
    if has(record, "async-sync", window) and has(record, "async-sync-keep", window):
        waits, waits_keep = measured(record, "async-sync", window), measured(record, "async-sync-keep", window)
        grown = (simulated(record, "async-sync", window) or 0) - (simulated(record, "async-sync-keep", window) or 0)
        found.append(
            _claim(
                "with the host waiting every round, threshold 0 hands the pool back at each wait and the loop pays to "
                "grow it again: slower than UINT64_MAX",
                f"{grown:+.2f} ms",
                f"{waits - waits_keep:+.2f} ms ({waits:.2f} vs {waits_keep:.2f})",
                waits > waits_keep,
            )
        )
    if has(record, "cupy", window):
        cupy = measured(record, "cupy", window)
        found.append(
            _claim(
                "CuPy's pool hides the cost: cupy.empty per chunk, pool warm, within 10% of allocating once",
                "the pool serves every chunk from blocks it kept: no cudaMalloc, no cudaFree",
                f"{cupy:.2f} ms ({cupy / once:.2f}x once)",
                cupy <= 1.10 * once,
            )
        )
    return [dataclasses.replace(v, number=n) for n, v in enumerate(found, 1)]


def _claim(text: str, predicted: str, measured_as: str, holds: bool) -> Verdict:
    """One claim: the model's prediction beside the measurement (numbered in claims' order)."""
    return Verdict(0, text, held(holds), f"predicted {predicted}; measured {measured_as}")


def render(record: Record, window: int | None = None) -> str:
    """What `python -m day55` prints."""
    w = main_window(record, window)
    parts = [checks_text(record)]
    if not all(c.ok for c in record.checks) or not record.passes:
        return parts[0]
    parts += [stages_text(record, w), calls_text(record, w), table(record, w)]
    if len(windows(record)) > 1:
        parts.append(sweep_text(record))
    parts.append(
        "claims, each predicted by the model before it was measured\n" + "\n".join(c.line() for c in claims(record, w))
    )
    return "\n\n".join(parts)
