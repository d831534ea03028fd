"""What the zero-copy notebook's lesson cells call: one record per section, live on a GPU or replayed, saying which.

The cells also read `zero_copy.report` (verdicts), `zero_copy.plots` (figures)
and, in graded cells, `zero_copy.checks`.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path

import numpy as np

from labcore.mode import FROM_PROFILE, Mode, live_line
from labcore.record import Record
from zero_copy import LESSON, live, replay
from zero_copy.config import EXPERIMENTS, Config, planned_rows, read_key
from zero_copy.kernel import KERNEL_PATH
from zero_copy.mapped import (
    MappingSupport,
    alloc_mapped,
    driver_memory_type,
    page_aligned_empty,
    register_mapped,
)
from zero_copy.report import breakeven_verdict, gather_verdict, rates, report


def _shown(path: Path) -> str:
    """A path relative to the working directory's repository when it is inside it."""
    try:
        return str(path.resolve().relative_to(KERNEL_PATH.parents[2]))
    except ValueError:
        return str(path)


def kernel_source(name: str) -> str:
    """One kernel of kernels/zero_copy.cu with the comment above it, as the GPU runs it."""
    text = KERNEL_PATH.read_text()
    start = text.index(f'extern "C" __global__ void {name}(')
    comment = text.rfind("\n\n", 0, start) + 2
    return text[comment : text.index("\n}\n", start) + 2]


def _picked(only: str) -> tuple[str, ...]:
    picked = EXPERIMENTS if only == "all" else tuple(name.strip() for name in only.split(",") if name.strip())
    unknown = [name for name in picked if name not in EXPERIMENTS]
    if unknown or not picked:
        raise ValueError(f"unknown experiment {', '.join(unknown) or '(none)'}; choose from {', '.join(EXPERIMENTS)}")
    return picked


def measure(only: str = "all", *, repeats: int = 5, profile: str | Path | None = None) -> Record:
    """Run the picked experiments live when a GPU is here (printing which), else replay the recorded profile."""
    picked = _picked(only)
    mode = Mode.decide(profile)
    if not mode.live:
        record = replay.load_profile(mode.profile)
        replay.require_experiments(record, picked)
        why = "" if mode.reason == FROM_PROFILE else f"; {mode.reason}, so these are recorded numbers"
        print(
            f"{LESSON}: replay of {_shown(Path(record.source))}, recorded {record.recorded_at} on "
            f"{record.device.summary()}{why}"
        )
        return record
    cfg = Config(only=picked, repeats=repeats)
    cfg.validate()
    facts, host = live.check_machine(cfg)
    print(live_line(LESSON))
    return live.run_live(cfg, facts, host, command=f"zero_copy.notebook.measure({only!r}, repeats={repeats})")


def show(record: Record, only: str = "all") -> None:
    """Print what `python -m zero_copy --only ...` prints for these experiments: tables, then verdicts."""
    print(report(record, None if only == "all" else _picked(only)))


def _pass_ms(record: Record, section: str, **match: str) -> float:
    row = next(r for r in planned_rows(record.extra[section]) if all(r.params.get(k) == v for k, v in match.items()))
    return record.pass_times(row.key).median_ms


def _per_read(record: Record, reads: int | None = None) -> dict:
    rows = breakeven_verdict(record)["per_reads"]
    return rows[-1] if reads is None else next(r for r in rows if r["reads"] == reads)


# name: (what it is, how to read it from a record)
MEASURED: dict[str, tuple[str, Callable[[Record], float]]] = {
    "link_gbps": ("pinned H2D copy, GB/s (L)", lambda r: rates(r).h2d_gbps),
    "hbm_over_link": ("HBM copy rate over L (H/L)", lambda r: rates(r).hbm_gbps / rates(r).h2d_gbps),
    "zero_copy_read_once_gbps": (
        "kernel reading mapped memory once, GB/s",
        lambda r: r.extra["streaming"]["nbytes"] / (_pass_ms(r, "streaming", path="zero-copy") * 1e6),
    ),
    "scattered_over_coalesced": (
        "scattered / coalesced useful GB/s",
        lambda r: _pass_ms(r, "access", pattern="coalesced") / _pass_ms(r, "access", pattern="scattered"),
    ),
    "breakeven_reads": ("measured break-even r*", lambda r: breakeven_verdict(r)["crossover_measured"]),
    "zero_copy_over_copy_at_max_r": (
        "zero-copy / copy time at the largest r",
        lambda r: _per_read(r)["zero_copy_ms"] / _per_read(r)["copy_ms"],
    ),
    "gather_fraction_of_copy": ("sorted gather / pinned copy, GB/s", lambda r: gather_verdict(r)["fraction_of_copy"]),
    "unsorted_over_sorted": ("unsorted / sorted gather time", lambda r: gather_verdict(r)["unsorted_over_sorted"]),
    "gather_speedup_over_cpu": ("CPU take + copy / GPU gather time", lambda r: gather_verdict(r)["speedup_over_cpu"]),
    "flag_latency_us": (
        "launch to flag seen by the host, us",
        lambda r: statistics.median(r.pass_times(read_key(r.extra["mailbox"]["key"])).times_ms) * 1e3,
    ),
    "reread_mapped_over_hbm": (
        "re-read loop, mapped / HBM time",
        lambda r: (
            _pass_ms(r, "reread", spacing="far", memory="mapped")
            / _pass_ms(r, "reread", spacing="far", memory="device")
        ),
    ),
    "saxpy_sync_over_mapped": (
        "SAXPY, synchronous copies / mapped time",
        lambda r: _pass_ms(r, "saxpy", path="sync-copies") / _pass_ms(r, "saxpy", path="mapped"),
    ),
}


def compare(predictions: dict[str, float | None], record: Record) -> None:
    """Print each prediction beside the measured number and their ratio (keys: those of MEASURED)."""
    unknown = [key for key in predictions if key not in MEASURED]
    if unknown:
        raise KeyError(f"no measurement called {', '.join(unknown)}; known: {', '.join(MEASURED)}")
    print(f"{'quantity':<30}{'what':<42}{'yours':>10}{'measured':>10}{'measured/yours':>16}")
    for key, guess in predictions.items():
        what, read = MEASURED[key]
        value = read(record)
        ratio = f"{value / guess:.2f}" if guess and value is not None else "-"
        shown = ["-" if v is None else f"{v:.3g}" for v in (guess, value)]
        print(f"{key:<30}{what:<42}{shown[0]:>10}{shown[1]:>10}{ratio:>16}")


def api_demo() -> None:
    """Live: allocate, register, ask for device pointers, let the GPU write host memory. Offline: the recorded facts."""
    if not Mode.decide().live:
        record = replay.load_profile()
        support = MappingSupport.from_dict(record.extra["support"])
        print(
            f"zero_copy: no GPU here; the mapping facts of the recorded {record.device.name} run "
            f"({record.recorded_at}):\n{support.line()}"
        )
        print("\n".join(f"  - {note}" for note in support.notes()))
        return
    import cupy as cp  # optional: only a live demo reaches here, and offline readers need not install CuPy

    print(live_line(LESSON))
    with alloc_mapped(1 << 20, np.float32) as buf:
        buf.h[:] = 1.0
        d_view = buf.d
        d_view *= 3.0  # a CuPy kernel loads from and stores to host memory through the device pointer
        cp.cuda.Device().synchronize()
        del d_view  # views must not outlive the buffer
        print(
            f"cudaHostAlloc(Mapped): {buf}; device pointer == host pointer: {buf.pointers_equal}; "
            f"the host now reads {buf.h[:3]} (the GPU wrote it)"
        )
    h_data = page_aligned_empty(1 << 20, np.float32)
    with register_mapped(h_data) as reg:
        print(f"cudaHostRegister(Mapped) of a NumPy array: {reg}; driver says {driver_memory_type(reg.host_ptr)}")
    print(f"after cudaHostUnregister the driver says {driver_memory_type(h_data.ctypes.data)}")
