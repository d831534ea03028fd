"""What the zero-copy notebook's cells call (zero_copy/solutions/zero_copy.ipynb): one record per section, live
on a GPU or replayed, saying which; predictions beside the measured numbers; the device facts once.

The cells also read `zero_copy.plots` (figures) and, in graded cells, `zero_copy.checks`.

In the student edition (`python -m grader bundle`) the exercises' reference answers are withheld: the break-even
formula, the gather's grid and id order, the mailbox kernel's publish step. Offline the lesson shows the course's
recorded results for the shipped profile (labcore.answers.recorded_reference). Live, an experiment that needs one
runs the student's own answer once it is written (`break_even_reads`, `gather_launch` and `order_ids`), and until
then, like the mailbox always there, replays the course's recorded run of it, saying which.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from labcore import answers
from labcore.answers import ReferenceWithheld
from labcore.device import device_facts
from labcore.mode import FROM_PROFILE, Mode, live_line
from labcore.predictions import LEDGER, Quantity
from labcore.record import Record
from zero_copy import LESSON, gather, kernel, live, model, plots, replay
from zero_copy.config import EXPERIMENTS, Config
from zero_copy.kernel import KERNEL_PATH
from zero_copy.mapped import (
    alloc_mapped,
    driver_memory_type,
    page_aligned_empty,
    read_support,
    register_mapped,
)
from zero_copy.report import (
    access_verdict,
    both_ways_verdict,
    breakeven_verdict,
    device_lines,
    gather_verdict,
    mailbox_verdict,
    not_recorded,
    not_recorded_line,
    rates,
    record_support,
    report,
    reread_verdict,
    saxpy_verdict,
    streaming_verdict,
)


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


PROBES = "probes"  # a part `show` prints besides the experiments: the table of the model's inputs, L and H


def _picked(only: str, *, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    known = (*extra, *EXPERIMENTS)
    picked = EXPERIMENTS if only == "all" else tuple(name.strip() for name in only.split(",") if name.strip())
    unknown = [name for name in picked if name not in known]
    if unknown or not picked:
        raise ValueError(f"unknown experiment {', '.join(unknown) or '(none)'}; choose from {', '.join(known)}")
    return picked


def measure(only: str = "all", *, repeats: int = 5, profile: str | Path | None = None) -> Record:
    """Run the picked experiments live when a GPU is here (printing which), else replay the recorded profile."""
    picked = _picked(only)
    mode = Mode.decide(profile)
    missing = [name for name in picked if _needs_answer(name)] if mode.live else []
    if missing:
        record = replay.load_profile()
        replay.require_experiments(record, picked)
        print(
            f"{LESSON}: replay of {_shown(Path(record.source))}, recorded {record.recorded_at} on "
            f"{record.device.summary()}: live, {', '.join(missing)} needs an exercise's answer, which is not in the "
            "student edition: these are the course's recorded numbers"
            + ("" if missing == ["mailbox"] else " until your answer is written (then run this cell again)")
        )
        return record
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
    mine = _stand_ins()
    names = sorted(STAND_IN_NAMES[ref] for ref in mine)
    print(live_line(LESSON) + (f": with your {', '.join(names)} for the student edition's references" * bool(mine)))
    with answers.standing_in(mine, ("zero_copy",)):
        return live.run_live(cfg, facts, host, command=f"zero_copy.notebook.measure({only!r}, repeats={repeats})")


# -- the student's answers standing in for the withheld references (the student edition) ---------------------------


def _your_break_even() -> Any | None:
    """The student's break_even_reads as the model's crossover_reads (zero-copy loads at their own rate too)."""
    mine = answers.yours("break_even_reads", lambda fn: float(fn(25.0, 1500.0)))
    if mine is None:
        return None

    def crossover_reads(link_gbps: float, hbm_gbps: float, zero_copy_gbps: float | None = None) -> float:
        # r* = (1/L) / (1/Lz - 1/H) = (Lz / L) * r*(Lz, H): the student's formula at the zero-copy rate, rescaled
        rate = zero_copy_gbps or link_gbps
        return rate / link_gbps * float(mine(rate, hbm_gbps))

    return crossover_reads


def _your_gather() -> tuple[Any, Any] | None:
    launch = answers.yours("gather_launch", lambda fn: fn(1000))
    order = answers.yours("order_ids", lambda fn: fn(np.arange(4, dtype=np.int64)[::-1].copy()))
    return None if launch is None or order is None else (launch, order)


STAND_IN_NAMES = {
    model.crossover_reads: "break_even_reads",
    kernel.gather_grid: "gather_launch",
    gather.sorted_order: "order_ids",
}


def _stand_ins() -> dict[Any, Any]:
    """Each withheld reference -> the student's written answer standing in for it (for `answers.standing_in`)."""
    found: dict[Any, Any] = {}
    if answers.withheld(model.crossover_reads) and (crossover := _your_break_even()) is not None:
        found[model.crossover_reads] = crossover
    if answers.withheld(kernel.gather_grid) and (pair := _your_gather()) is not None:
        found[kernel.gather_grid], found[gather.sorted_order] = pair
    return found


def _needs_answer(experiment: str) -> bool:
    """Whether a live run of this experiment needs a withheld reference that no written answer stands in for."""
    if experiment == "mailbox":
        return withheld_kernel()
    needed = {"breakeven": model.crossover_reads, "gather": kernel.gather_grid}.get(experiment)
    return needed is not None and answers.withheld(needed) and needed not in _stand_ins()


def withheld_kernel() -> bool:
    """Whether the lesson's CUDA file lacks its reference region (the mailbox kernel's publish step)."""
    return "BEGIN REFERENCE" not in KERNEL_PATH.read_text()


def show(record: Record, parts: str = "all") -> None:
    """The tables and verdicts of these experiments (`probes` among them: the table of L and H, else one line).

    The device facts are not repeated here: `api_demo` prints them once, and `python -m zero_copy` at its top.
    """
    picked = _picked(parts, extra=(PROBES,))
    experiments = [name for name in picked if name != PROBES]
    _or_recorded(lambda rec: print(report(rec, experiments, facts=False, probe_table=PROBES in picked)), record)


def _or_recorded(show: Callable[[Record], Any], record: Record) -> Any:
    """show(record) with the student's answers standing in; where that needs a withheld reference no written answer
    stands in for, show(the course's recorded run), saying so."""
    try:
        with answers.standing_in(_stand_ins(), ("zero_copy",)):
            return show(record)
    except ReferenceWithheld as withheld:
        shipped = replay.load_profile()
        print(f"({withheld}.) Shown instead for the course's recorded run ({shipped.recorded_at}).")
        return show(shipped)


def _per_read(record: Record) -> dict[str, Any]:
    return breakeven_verdict(record)["per_reads"][-1]


def _of(verdict: Callable[[Record], dict[str, Any]], key: str) -> Callable[[Record], Any]:
    """One number of a verdict of the record."""
    return lambda record: verdict(record)[key]


def _both(key: str) -> Callable[[Record], Any]:
    """A number of the both-ways verdict; None (shown as "-") for a record made before the experiment existed."""
    return lambda record: both_ways_verdict(record)[key] if "both_ways" in record.extra else None


def _read_while_running(record: Record) -> str:
    verdict = mailbox_verdict(record)
    return "yes" if verdict["good_rounds"] == verdict["rounds"] else "no"


# Every number a prediction cell asks for, read from the same verdicts the tables and plots print.
QUANTITIES: dict[str, Quantity] = {
    "link_gbps": Quantity("pinned H2D copy, GB/s (L)", lambda r: rates(r).h2d_gbps),
    "hbm_over_link": Quantity("HBM copy rate over L (H/L)", lambda r: rates(r).hbm_gbps / rates(r).h2d_gbps),
    "zero_copy_read_once_gbps": Quantity(
        "kernel reading mapped memory once, GB/s", _of(streaming_verdict, "zero_copy_gbps")
    ),
    "write_combined_over_mapped": Quantity(
        "write-combined / ordinary mapped GB/s", _of(streaming_verdict, "write_combined_over_mapped")
    ),
    "pipeline_fraction_of_link": Quantity(
        "chunked copy pipeline GB/s over L", _of(streaming_verdict, "pipeline_fraction_of_link")
    ),
    "scattered_over_coalesced": Quantity(
        "scattered / coalesced useful GB/s", _of(access_verdict, "scattered_over_coalesced")
    ),
    "breakeven_reads": Quantity("measured break-even r*", _of(breakeven_verdict, "crossover_measured")),
    "zero_copy_over_copy_at_max_r": Quantity(
        "zero-copy / copy time at the largest r", lambda r: _per_read(r)["zero_copy_ms"] / _per_read(r)["copy_ms"]
    ),
    "gather_fraction_of_copy": Quantity("sorted gather / pinned copy, GB/s", _of(gather_verdict, "fraction_of_copy")),
    "unsorted_over_sorted": Quantity("unsorted / sorted gather time", _of(gather_verdict, "unsorted_over_sorted")),
    "gather_speedup_over_cpu": Quantity("CPU take + copy / GPU gather time", _of(gather_verdict, "speedup_over_cpu")),
    "flag_latency_us": Quantity("launch to flag seen by the host, us", _of(mailbox_verdict, "flag_latency_us")),
    "read_while_running": Quantity("payload read while the kernel ran, every round", _read_while_running),
    "reread_mapped_over_hbm": Quantity("far re-reads, mapped / HBM time", _of(reread_verdict, "mapped_over_hbm")),
    "near_reread_buffers": Quantity(
        "near re-reads' time, in buffers over the link", _of(reread_verdict, "near_buffers_crossed")
    ),
    "saxpy_sync_over_mapped": Quantity(
        "SAXPY, synchronous copies / mapped time", _of(saxpy_verdict, "sync_over_mapped")
    ),
    "saxpy_async_over_mapped": Quantity(
        "SAXPY, chunked async copies / mapped time", _of(saxpy_verdict, "async_over_mapped")
    ),
    "both_floor_ms": Quantity("link floor: B in and B out at once, ms", _both("floor_ms")),
    "both_mapped_over_floor": Quantity("mapped both ways (best grid) / link floor", _both("mapped_over_floor")),
    "both_pipeline_over_floor": Quantity("day 54's pipeline / link floor", _both("pipeline_over_floor")),
    "both_faster": Quantity('faster: "mapped" or "pipeline"', _both("faster")),
    "both_grid_spread": Quantity("mapped both ways, slowest / fastest grid", _both("grid_spread")),
}


def compare(predictions: dict[str, float | str | None], record: Record) -> None:
    """Each prediction beside the run's number and measured/yours; remembered for closing_table(). Under the
    table, a line for each experiment they ask about that the record was made too early to hold."""

    def table(rec: Record) -> None:
        print(LEDGER.compare(predictions, QUANTITIES, rec))
        asked = ["both_ways"] if any(key.startswith("both_") for key in predictions) else []
        for name in not_recorded(rec, asked):
            print(not_recorded_line(rec, name))

    _or_recorded(table, record)


def figure(name: str, record: Record) -> Any:
    """One of zero_copy.plots' figures of a record (`figure("breakeven", run)`), as `_or_recorded` draws it."""
    return _or_recorded(getattr(plots, name), record)


def closing_table() -> None:
    """Every prediction compared in this session (this notebook's kernel), in one table."""
    print(LEDGER.closing())


# (system, L GB/s, H GB/s): illustrative, not measured
OTHER_SYSTEMS = [
    ("PCIe Gen4 x16, illustrative", 25.0, 1500.0),
    ("NVLink-C2C one way, illustrative", 450.0, 4000.0),
    ("integrated, shared DRAM, illustrative", 100.0, 100.0),
]


def _reads(value: float | None) -> str:
    return "never (copying never wins)" if value is None or math.isinf(value) else f"{value:.3f}"


def other_systems(record: Record) -> None:
    """The model's break-even on this run's L and H and on illustrative other systems (section 8)."""
    _or_recorded(_other_systems, record)


def _other_systems(record: Record) -> None:
    link = rates(record)
    print(
        f"{'this run (measured)':<40} L {link.h2d_gbps:7.1f}  H {link.hbm_gbps:7.0f} GB/s  ->  r* = "
        f"{_reads(breakeven_verdict(record)['crossover_model'])}"
    )
    for system, link_gbps, hbm_gbps in OTHER_SYSTEMS:
        print(
            f"{system:<40} L {link_gbps:7.1f}  H {hbm_gbps:7.0f} GB/s  ->  r* = "
            f"{_reads(model.crossover_reads(link_gbps, hbm_gbps))}"
        )


def _yours(break_even_reads: Callable[[float, float], Any], link_gbps: float, hbm_gbps: float) -> str:
    """What the student's function gives, in words; whatever it does, never an exception."""
    try:
        value = break_even_reads(link_gbps, hbm_gbps)
    except NotImplementedError:
        return "not written yet (it raised NotImplementedError)"
    except Exception as exc:  # the student's code: say what it raised, and go on
        return f"it raised {type(exc).__name__}: {exc}"
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return f"not a number: {value!r}"[:120]
    return _reads(float(value))


def your_break_even(break_even_reads: Callable[[float, float], Any], record: Record) -> None:
    """Your break_even_reads beside the model and the measurement: this run's L and H, then the other systems."""
    verdict = breakeven_verdict(record)
    link, hbm = verdict["link_gbps"], verdict["hbm_gbps"]
    print(
        f"this run, L {link:.1f} and H {hbm:.0f} GB/s: yours r* = {_yours(break_even_reads, link, hbm)}; "
        f"the model's {_reads(verdict['crossover_model'])}; measured {_reads(verdict['crossover_measured'])}"
    )
    for system, link_gbps, hbm_gbps in OTHER_SYSTEMS:
        print(f"{system:<40} yours r* = {_yours(break_even_reads, link_gbps, hbm_gbps)}")


def api_demo() -> None:
    """The device facts, once; live, also allocate, register, ask for device pointers and let the GPU write host
    memory. Offline: the recorded run's device facts."""
    if not Mode.decide().live:
        record = replay.load_profile()
        print(
            f"{LESSON}: no GPU here, so nothing is mapped; the device facts of the recorded run ({record.recorded_at}):"
        )
        print("\n".join(device_lines(record.device, record_support(record))))
        return
    import cupy as cp  # optional: only a live demo reaches here, and offline readers need not install CuPy

    print(live_line(LESSON))
    facts = device_facts()
    print("\n".join(device_lines(facts, read_support(facts))))
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
