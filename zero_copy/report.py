"""Tables and verdicts, computed only from a results record, so a live run and its replay print the same."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from labcore.device import DeviceFacts
from labcore.record import PassTimes, Record
from labcore.sizes import format_size
from zero_copy import model
from zero_copy.config import ADDED_ON, EXPERIMENTS, PassKey, Planned, planned_rows, read_key
from zero_copy.mapped import MappingSupport
from zero_copy.verify import round_ok

CLOSE_MARGIN = 0.10  # the model calls a race closer than this a tie
CROSSOVER_TOLERANCE = 0.25  # measured crossover within this (relative, or absolute reads) of the model's
GATHER_LINK_FRACTION = 0.85
GATHER_SPEEDUP = 10.0
LINK_SPEED_BAND = (0.75, 1.10)  # a loop "runs at link speed" when its load rate is this fraction of L
TIE_MARGIN = 0.02  # two paths closer than this are a tie: the link's rate drifts about that much between rounds
TITLES = {"both_ways": "mapped both ways"}  # what a "not recorded" line calls an experiment a record may lack


def _ms(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:.3f}" if value < 10 else f"{value:.2f}" if value < 100 else f"{value:.1f}"


def _gbps(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:.1f}" if value < 1000 else f"{value:.0f}"


def _ratio(measured: float | None, predicted: float | None) -> str:
    return "—" if not measured or not predicted else f"{measured / predicted:.2f}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Column-aligned text; the first column left-aligned, the rest right-aligned."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        first = str(cells[0]).ljust(widths[0])
        rest = [str(c).rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True)]
        return "  " + "  ".join([first, *rest]).rstrip()

    return [line(headers), *(line(row) for row in rows)]


def _pass(record: Record, key: PassKey) -> PassTimes | None:
    return record.pass_times(key) if record.has_pass(key) else None


def _median(record: Record, key: PassKey) -> float | None:
    found = _pass(record, key)
    return found.median_ms if found else None


def _spread(found: PassTimes | None) -> str:
    if found is None:
        return "—"
    low, high = found.spread_ms
    return f"{_ms(low)}..{_ms(high)}"


def rates(record: Record) -> model.Rates:
    """The probe rates the run measured (L each way, H)."""
    return model.Rates(**record.extra["probes"]["rates"])


def _timed_row(record: Record, row: Planned, model_ms: float | None = None) -> list[str]:
    found = _pass(record, row.key)
    predicted = row.model_ms if model_ms is None else model_ms
    return [
        row.label,
        _ms(found.median_ms if found else None),
        _spread(found),
        _gbps(found.gbps() if found else None),
        _ms(predicted),
        _ratio(found.median_ms if found else None, predicted),
    ]


_TIMED_HEADERS = ("path", "median ms", "min..max ms", "GB/s", "model ms", "meas/model")


# -- sections ------------------------------------------------------------------


def device_lines(dev: DeviceFacts, support: MappingSupport | None) -> list[str]:
    """The device facts a reader needs once: device, driver and versions, link, and what it says about mapping."""
    arch = f" (sm_{dev.compute_capability.replace('.', '')})" if dev.compute_capability else ""
    driver_cuda = getattr(dev, "driver_cuda", None)
    lines = [
        f"device: {dev.name}{arch}, driver {dev.driver or '?'}"
        + (f" (CUDA {driver_cuda})" if driver_cuda else "")
        + f", CUDA runtime {dev.cuda_runtime or '?'}, CuPy {dev.cupy or '?'}, {dev.link_text()}"
    ]
    if support is not None:
        lines.append(f"mapping: {support.line()}")
        lines += [f"  - {note}" for note in support.notes()]
    return lines


def record_support(record: Record) -> MappingSupport | None:
    """What the recorded device said about mapping, when the record holds it."""
    return MappingSupport.from_dict(record.extra["support"]) if "support" in record.extra else None


def _run_line(record: Record) -> str:
    cfg = record.config
    return f"run: {cfg.get('repeats')} timed repeats after {cfg.get('warmup')} warm-up, medians shown"


def _header(record: Record) -> list[str]:
    took = record.extra.get("wall_s")
    return [
        *device_lines(record.device, record_support(record)),
        f"{_run_line(record)}; recorded {record.recorded_at}" + (f"; took {took:.0f} s" if took else ""),
    ]


def _probes_line(record: Record) -> list[str]:
    """The run's model inputs in one line, for a report that leaves out the device facts and the probe table."""
    link = rates(record)
    return [
        f"{_run_line(record)}; this run's probes: L {_gbps(link.h2d_gbps)} GB/s (pinned H2D copy), "
        f"H {_gbps(link.hbm_gbps)} GB/s (HBM copy)"
    ]


def _probes(record: Record) -> list[str]:
    plan = record.extra["probes"]
    rows = []
    for row in planned_rows(plan):
        found = _pass(record, row.key)
        size = format_size(row.params.get("copy_bytes", row.nbytes))
        rows.append(
            [
                row.label,
                size,
                _ms(found.median_ms if found else None),
                _spread(found),
                _gbps(found.gbps() if found else None),
            ]
        )
    return ["link and HBM, the model's inputs", *_table(("probe", "copy", "median ms", "min..max ms", "GB/s"), rows)]


def _streaming(record: Record) -> list[str]:
    plan = record.extra["streaming"]
    return [
        f"streaming: read {format_size(plan['nbytes'])} once (float32), result to HBM",
        *_table(_TIMED_HEADERS, [_timed_row(record, row) for row in planned_rows(plan)]),
        "  model: zero-copy B/L; copy then kernel B/L + 2B/H; pipeline B/L + 2c/H (the last chunk's kernel)",
    ]


def _breakeven(record: Record) -> list[str]:
    plan, verdict = record.extra["breakeven"], breakeven_verdict(record)
    rows = []
    for item in verdict["per_reads"]:
        model_says = f"close ({item['model_margin']:.0%})" if item["model_close"] else item["model_winner"]
        rows.append(
            [
                str(item["reads"]),
                _ms(item["zero_copy_ms"]),
                _ms(item["zero_copy_model_ms"]),
                _ms(item["copy_ms"]),
                _ms(item["copy_model_ms"]),
                item["winner"],
                model_says,
            ]
        )
    fit = verdict["fit"]
    return [
        f"break-even: {format_size(plan['nbytes'])}, a kernel reads every byte r times",
        *_table(("r", "zero-copy ms", "model", "copy+kernel ms", "model", "faster", "model says"), rows),
        f"  model: copy B/L + r·B/H, zero-copy r·B/L -> crossover r* = {_reads(verdict['crossover_model'])}",
        f"  measured: zero-copy {_ms(fit['zero_copy_ms_per_read'])} ms per read, copy "
        f"{_ms(fit['copy_fixed_ms'])} ms + {_ms(fit['copy_ms_per_read'])} ms per read "
        f"-> crossover r* = {_reads(verdict['crossover_measured'])}",
    ]


def _reads(value: float | None) -> str:
    return "never (zero-copy never wins)" if value is None or not math.isfinite(value) else f"{value:.2f}"


def _access(record: Record) -> list[str]:
    plan = record.extra["access"]
    rows = []
    for row in planned_rows(plan):
        found = _pass(record, row.key)
        measured = found.gbps() if found else None
        model_gbps = row.params["model_gbps"]
        rows.append(
            [
                row.label,
                _ms(found.median_ms if found else None),
                _spread(found),
                _gbps(measured),
                _gbps(model_gbps),
                _ratio(measured, model_gbps),
            ]
        )
    return [
        f"access shape: 4-byte loads from {format_size(plan['nbytes'])} of mapped memory",
        *_table(("pattern", "median ms", "min..max ms", "useful GB/s", "model GB/s", "meas/model"), rows),
        "  model: coalesced at L; scattered at most L·4/32, if each 4-byte load costs a 32-byte sector",
    ]


def _gather(record: Record) -> list[str]:
    plan = record.extra["gather"]
    planned = planned_rows(plan)
    take = _median(record, next(r.key for r in planned if r.key.path == "cpu-take"))
    copy_model = model.transfer_ms(plan["batch_bytes"], rates(record).h2d_gbps)
    rows = []
    for row in planned:
        predicted = take + copy_model if row.key.path == "cpu-take+copy" and take else None
        rows.append(_timed_row(record, row, predicted))
    lines = [
        f"sparse gather: {plan['n_rows']:,} rows x {format_size(plan['row_bytes'])} "
        f"({plan['batch_bytes'] / 1e6:.1f} MB) from a {format_size(plan['table_bytes'])} mapped table",
        *_table(_TIMED_HEADERS, rows),
        "  model: the GPU gather takes the batch's copy time, batch/L; the CPU path adds its measured take",
    ]
    fill = _pass(record, read_key(plan["fill_key"]))
    if fill and plan.get("pin_ms"):
        lines.append(
            f"  pinning the table took {plan['pin_ms'] / 1e3:.2f} s; the GPU filled it over the link at "
            f"{_gbps(fill.gbps())} GB/s"
        )
    return lines


def _mailbox(record: Record) -> list[str]:
    plan = record.extra["mailbox"]
    rows = []
    for result in plan["results"]:
        warm = " (warm-up)" if result["round"] <= plan["warmup"] else ""
        rows.append(
            [
                f"{result['round']}{warm}",
                _ms(result["flag_seen_ms"]),
                "exact" if result["payload_ok"] else "WRONG",
                "yes" if result["running_when_read"] else "NO",
                f"{result['kernel_waited_us']:.1f}",
                "timed out" if result["timed_out"] else "released" if result["acked"] else "NO ACK",
            ]
        )
    return [
        "host-visible results: payload, __threadfence_system(), flag; the kernel then waits for the host",
        *_table(
            ("round", "flag seen after ms", "payload", "kernel running when read", "kernel waited us", "kernel end"),
            rows,
        ),
        "  the host reads the payload, sees the stream still busy, and only then releases the kernel",
    ]


def _saxpy(record: Record) -> list[str]:
    plan = record.extra["saxpy"]
    flags = "cudaHostRegisterMapped" + ("|ReadOnly" if plan.get("read_only") else "")
    return [
        f"mapped SAXPY: {plan['n_floats']:,} floats (x, y in, a·x + y out; {3 * plan['nbytes'] / 1e9:.2f} GB moved)",
        *_table(_TIMED_HEADERS, [_timed_row(record, row) for row in planned_rows(plan)]),
        "  model: mapped 2B/L (writes overlap the reads); sync 2B/L + 3B/H + B/L_d2h; async 2B/L + c/L_d2h",
        f"  x and y are NumPy arrays registered with {flags}: 2 x {format_size(plan['nbytes'])} in "
        f"{plan.get('register_ms', 0):.0f} ms, done once and never per batch",
    ]


def _reread(record: Record) -> list[str]:
    plan = record.extra["reread"]
    rows = [_timed_row(record, row) for row in planned_rows(plan)]
    return [
        f"failure mode: a loop re-reads each float4 k={plan['k']} times ({format_size(plan['nbytes'])}); "
        f"GB/s counts every load",
        *_table(_TIMED_HEADERS, rows),
        "  model: k·B/L from mapped memory (nothing cached you can rely on), k·B/H from HBM; nsys shows no copy",
    ]


def _both_ways(record: Record) -> list[str]:
    plan, floor = record.extra["both_ways"], both_ways_verdict(record)["floor_ms"]
    rows = []
    for row in planned_rows(plan):
        found = _pass(record, row.key)
        rows.append([*_timed_row(record, row), _ratio(found.median_ms if found else None, floor)])
    return [
        f"mapped both ways: day 54's job, {format_size(plan['nbytes'])} in, {plan['fmas']} chained FMAs per float, "
        f"{format_size(plan['nbytes'])} out; GB/s counts both directions",
        *_table((*_TIMED_HEADERS, "/ floor"), rows),
        "  model: every path at best the link floor, max(B/L, B/L_d2h); the pipeline one chunk each way more, "
        "c/L + c/L_d2h (its overhang)",
        f"  {plan['sm_count']} SMs, {plan['threads']} threads a block; timed in alternating rounds, one run of each "
        "path a round; each output checked first, bit for bit, against day 54's naive one",
    ]


SECTIONS = {
    "streaming": _streaming,
    "breakeven": _breakeven,
    "access": _access,
    "gather": _gather,
    "mailbox": _mailbox,
    "saxpy": _saxpy,
    "reread": _reread,
    "both_ways": _both_ways,
}


# -- verdicts ------------------------------------------------------------------


def breakeven_verdict(record: Record) -> dict[str, Any]:
    """Did the copy-vs-zero-copy crossover fall where B/L + r·B/H = r·B/L puts it? With the numbers why not."""
    plan, link = record.extra["breakeven"], rates(record)
    per_reads = []
    for row in plan["rows"]:
        zc_row, cp_row = Planned.from_dict(row["zero_copy"]), Planned.from_dict(row["copy"])
        zc, cp = _median(record, zc_row.key), _median(record, cp_row.key)
        zc_model, cp_model = zc_row.model_ms, cp_row.model_ms
        margin = abs(zc_model - cp_model) / min(zc_model, cp_model)
        per_reads.append(
            {
                "reads": row["reads"],
                "zero_copy_ms": zc,
                "copy_ms": cp,
                "zero_copy_model_ms": zc_model,
                "copy_model_ms": cp_model,
                "winner": "zero-copy" if zc < cp else "copy",
                "model_winner": "zero-copy" if zc_model < cp_model else "copy",
                "model_margin": margin,
                "model_close": margin < CLOSE_MARGIN,
            }
        )
    fit = model.fit_breakeven(
        [p["reads"] for p in per_reads], [p["zero_copy_ms"] for p in per_reads], [p["copy_ms"] for p in per_reads]
    )
    zero_copy_gbps = plan["nbytes"] / (fit["zero_copy_ms_per_read"] * 1e6)
    predicted = plan["crossover_model"]
    measured = fit["crossover_reads"] if math.isfinite(fit["crossover_reads"]) else None
    winners_agree = all(p["winner"] == p["model_winner"] or p["model_close"] for p in per_reads)
    if predicted is None or measured is None:
        crossover_agrees = predicted is None and measured is None
    else:
        crossover_agrees = abs(measured - predicted) <= CROSSOVER_TOLERANCE * max(1.0, predicted)
    refined = model.crossover_reads(link.h2d_gbps, link.hbm_gbps, zero_copy_gbps)
    return {
        "held": winners_agree and crossover_agrees,
        "winners_agree": winners_agree,
        "crossover_agrees": crossover_agrees,
        "crossover_model": predicted,
        "crossover_measured": measured,
        "crossover_with_zero_copy_rate": refined if math.isfinite(refined) else None,
        "zero_copy_gbps": zero_copy_gbps,
        "link_gbps": link.h2d_gbps,
        "hbm_gbps": link.hbm_gbps,
        "fit": fit,
        "per_reads": per_reads,
    }


def gather_verdict(record: Record) -> dict[str, Any]:
    """Sorted GPU gather against the pinned copy of the same batch (>= 0.85) and the CPU path (>= 10x)."""
    plan = record.extra["gather"]
    by_path = {row.key.path: _pass(record, row.key) for row in planned_rows(plan)}
    gathered, copied, cpu = by_path["sorted"], by_path["copy"], by_path["cpu-take+copy"]
    fraction = gathered.gbps() / copied.gbps()
    fraction_of_l = gathered.gbps() / rates(record).h2d_gbps
    speedup = cpu.median_ms / gathered.median_ms
    unsorted = by_path["unsorted"]
    return {
        "passed": fraction >= GATHER_LINK_FRACTION and speedup >= GATHER_SPEEDUP,
        "gather_gbps": gathered.gbps(),
        "copy_gbps": copied.gbps(),
        "fraction_of_copy": fraction,
        "fraction_of_link": fraction_of_l,
        "speedup_over_cpu": speedup,
        "unsorted_over_sorted": unsorted.median_ms / gathered.median_ms if unsorted else None,
    }


def mailbox_verdict(record: Record) -> dict[str, Any]:
    """Every round: payload exact and read while the kernel ran, kernel ended by the host's release."""
    plan = record.extra["mailbox"]
    results = plan["results"]
    good = sum(round_ok(r) for r in results)
    timed = record.pass_times(read_key(plan["key"]))  # the rounds after the warm-up
    return {
        "passed": good == len(results),
        "good_rounds": good,
        "rounds": len(results),
        "flag_latency_us": timed.median_ms * 1e3,
        "timed_rounds": len(timed.times_ms),
    }


def _verdict_lines(record: Record, picked: Sequence[str]) -> list[str]:
    lines = ["verdicts"]
    failed = [c for c in record.checks if not c.ok]
    lines.append(
        f"  correctness: {len(record.checks) - len(failed)} of {len(record.checks)} checks passed"
        + ("" if not failed else "; FAILED: " + "; ".join(f"{c.name} ({c.detail})" for c in failed))
    )
    if "breakeven" in picked:
        lines += _breakeven_lines(breakeven_verdict(record))
    if "gather" in picked:
        g = gather_verdict(record)
        lines.append(
            f"  gather: {'PASS' if g['passed'] else 'FAIL'}: sorted gather moved {_gbps(g['gather_gbps'])} "
            f"GB/s = {g['fraction_of_copy']:.2f} of the pinned copy of the same batch "
            f"({_gbps(g['copy_gbps'])} GB/s; needs >= {GATHER_LINK_FRACTION}) and "
            f"{g['fraction_of_link']:.2f} of L; {g['speedup_over_cpu']:.1f}x faster than CPU take + copy "
            f"(needs >= {GATHER_SPEEDUP:.0f}x)"
            + (f"; unsorted ids took {g['unsorted_over_sorted']:.2f}x as long" if g["unsorted_over_sorted"] else "")
        )
    if "mailbox" in picked:
        m = mailbox_verdict(record)
        lines.append(
            f"  mailbox: {'PASS' if m['passed'] else 'FAIL'}: payload seen while the kernel was still "
            f"running in {m['good_rounds']} of {m['rounds']} rounds; the host saw the flag a median "
            f"{m['flag_latency_us']:.0f} us after the launch call ({m['timed_rounds']} rounds after the warm-up)"
        )
    lines += _other_lines(record, picked)
    return lines


def _breakeven_lines(v: dict[str, Any]) -> list[str]:
    agree = [str(p["reads"]) for p in v["per_reads"] if p["winner"] == p["model_winner"] and not p["model_close"]]
    close = [p for p in v["per_reads"] if p["model_close"]]
    differ = [p for p in v["per_reads"] if p["winner"] != p["model_winner"] and not p["model_close"]]
    lines = [
        f"  break-even: {'HELD' if v['held'] else 'DID NOT HOLD'}: model crossover r* = "
        f"{_reads(v['crossover_model'])} (L {_gbps(v['link_gbps'])}, H {_gbps(v['hbm_gbps'])} GB/s), "
        f"measured r* = {_reads(v['crossover_measured'])}"
    ]
    if agree:
        lines.append(f"    measured winner = model's at r = {', '.join(agree)}")
    for p in close:
        apart = abs(p["zero_copy_ms"] - p["copy_ms"]) / min(p["zero_copy_ms"], p["copy_ms"])
        lines.append(
            f"    at r = {p['reads']} the model calls it close ({p['model_margin']:.0%} apart); measured: "
            f"{p['winner']} by {apart:.0%}"
        )
    for p in differ:
        lines.append(
            f"    at r = {p['reads']} the model picks {p['model_winner']} but {p['winner']} won: "
            f"zero-copy {_ms(p['zero_copy_ms'])} ms (model {_ms(p['zero_copy_model_ms'])}), copy "
            f"{_ms(p['copy_ms'])} ms (model {_ms(p['copy_model_ms'])})"
        )
    lines.append(
        f"    why the measured crossover differs: zero-copy loads ran at {_gbps(v['zero_copy_gbps'])} GB/s "
        f"(fit), {v['zero_copy_gbps'] / v['link_gbps']:.2f} of the copy's L; with that rate the model's "
        f"crossover is r* = {_reads(v['crossover_with_zero_copy_rate'])}"
    )
    return lines


def reread_verdict(record: Record) -> dict[str, Any]:
    """The re-read loop: far re-reads of mapped memory against L and HBM; how much of the near re-reads crossed."""
    plan, link = record.extra["reread"], rates(record).h2d_gbps
    by = {(r.params["spacing"], r.params["memory"]): _pass(record, r.key) for r in planned_rows(plan)}
    far_mapped, far_device, near = by[("far", "mapped")], by[("far", "device")], by[("near", "mapped")]
    low, high = LINK_SPEED_BAND
    fraction = far_mapped.gbps() / link
    return {
        "k": plan["k"],
        "far_mapped_gbps": far_mapped.gbps(),
        "far_fraction_of_link": fraction,
        "at_link_speed": low <= fraction <= high,
        "mapped_over_hbm": far_mapped.median_ms / far_device.median_ms,
        # the near loop's time in buffers' worth of link time: how many times B it could have moved over the link
        "near_buffers_crossed": near.median_ms * link * 1e6 / plan["nbytes"],
    }


def access_verdict(record: Record) -> dict[str, Any]:
    """Scattered 4-byte loads against coalesced ones, and the link bytes each scattered load cost."""
    coalesced, scattered = (_pass(record, r.key) for r in planned_rows(record.extra["access"]))
    return {
        "scattered_over_coalesced": scattered.gbps() / coalesced.gbps(),
        "model": model.WORD_BYTES / model.SECTOR_BYTES,
        "link_bytes_per_load": model.WORD_BYTES * rates(record).h2d_gbps / scattered.gbps(),
    }


def saxpy_verdict(record: Record) -> dict[str, Any]:
    """Mapped SAXPY's time, and each copying version's time over it."""
    by = {r.key.path: _pass(record, r.key) for r in planned_rows(record.extra["saxpy"])}
    mapped = by["mapped"].median_ms
    return {
        "mapped_ms": mapped,
        "sync_over_mapped": by["sync-copies"].median_ms / mapped,
        "async_over_mapped": by["async-copies"].median_ms / mapped,
    }


def streaming_verdict(record: Record) -> dict[str, Any]:
    """Reading 1 GiB once: the fastest path, each path's GB/s over L, write-combined over ordinary mapped pages."""
    by = {r.key.path: _pass(record, r.key) for r in planned_rows(record.extra["streaming"])}
    link = rates(record).h2d_gbps
    best = min(by, key=lambda path: by[path].median_ms)
    return {
        "fastest": best,
        "fastest_ms": by[best].median_ms,
        "zero_copy_gbps": by["zero-copy"].gbps(),
        "zero_copy_fraction_of_link": by["zero-copy"].gbps() / link,
        "pipeline_fraction_of_link": by["pipeline"].gbps() / link,
        "write_combined_over_mapped": by["zero-copy-wc"].gbps() / by["zero-copy"].gbps(),
    }


def both_ways_verdict(record: Record) -> dict[str, Any]:
    """Mapped both ways (its fastest grid) and day 54's pipeline against the duplex link floor measured beside
    them; how much the grid mattered; each path's time over the floor, the pipeline's overhang among it."""
    plan = record.extra["both_ways"]
    rows = planned_rows(plan)
    mapped = [(row.params["blocks"], _pass(record, row.key)) for row in rows if row.key.path == "mapped"]
    by = {row.key.path: _pass(record, row.key) for row in rows if row.key.path != "mapped"}
    pipeline, floor = by["pipeline"], by["duplex"]
    blocks, best = min(mapped, key=lambda item: item[1].median_ms)
    slowest = max(found.median_ms for _, found in mapped)
    apart = best.median_ms / pipeline.median_ms
    faster = "mapped≈pipeline" if abs(apart - 1) < TIE_MARGIN else "mapped" if apart < 1 else "pipeline"
    return {
        "floor_ms": floor.median_ms,
        "floor_gbps": floor.gbps(),
        "mapped_ms": best.median_ms,
        "mapped_blocks": blocks,
        "mapped_gbps": best.gbps(),
        "mapped_over_floor": best.median_ms / floor.median_ms,
        "pipeline_ms": pipeline.median_ms,
        "pipeline_over_floor": pipeline.median_ms / floor.median_ms,
        "mapped_over_pipeline": apart,
        "faster": faster,
        "grid_spread": slowest / best.median_ms,
        "grids": len(mapped),
        "pipeline_overhang_ms": pipeline.median_ms - floor.median_ms,
        "overhang_model_ms": plan["overhang_model_ms"],
        "mapped_excess_ms": best.median_ms - floor.median_ms,
    }


def _both_ways_line(v: dict[str, Any]) -> str:
    winner = {"mapped": "mapped memory was faster", "pipeline": "the pipeline was faster"}.get(
        v["faster"], f"a tie (within {TIE_MARGIN:.0%})"
    )
    return (
        f"  both ways: {winner}: mapped both ways {v['mapped_ms']:.2f} ms at best ({v['mapped_blocks']} blocks), "
        f"{v['mapped_over_floor']:.2f}x the duplex link floor ({v['floor_ms']:.2f} ms), "
        f"{_gbps(v['mapped_gbps'])} GB/s both ways; the pipeline {v['pipeline_ms']:.2f} ms, "
        f"{v['pipeline_over_floor']:.2f}x; the {v['grids']} grids' medians within {v['grid_spread']:.2f}x of each "
        f"other. Over the floor: the pipeline {v['pipeline_overhang_ms']:+.2f} ms (its overhang, modelled "
        f"{v['overhang_model_ms']:.2f} ms), mapped memory, which has none, {v['mapped_excess_ms']:+.2f} ms"
    )


def _other_lines(record: Record, picked: Sequence[str]) -> list[str]:
    lines = []
    if "both_ways" in picked:
        lines.append(_both_ways_line(both_ways_verdict(record)))
    if "reread" in picked:
        v = reread_verdict(record)
        lines.append(
            f"  re-read loop: far re-reads of mapped memory ran at {_gbps(v['far_mapped_gbps'])} GB/s of loads "
            f"= {v['far_fraction_of_link']:.2f} of L ({'link speed' if v['at_link_speed'] else 'not link speed'}), "
            f"{v['mapped_over_hbm']:.0f}x slower than from HBM; near re-reads: {v['k']} loads per byte took the "
            f"time of {v['near_buffers_crossed']:.1f} x B over the link, so most never crossed it"
        )
    if "access" in picked:
        v = access_verdict(record)
        lines.append(
            f"  access: scattered 4-byte loads delivered {v['scattered_over_coalesced']:.3f} of the coalesced rate "
            f"(model {v['model']:.3f}): each one held the link as long as {v['link_bytes_per_load']:.0f} bytes "
            f"at L, not {model.SECTOR_BYTES}"
        )
    if "saxpy" in picked:
        v = saxpy_verdict(record)
        lines.append(
            f"  saxpy: mapped {v['mapped_ms']:.2f} ms; synchronous copies {v['sync_over_mapped']:.2f}x and "
            f"asynchronous copies {v['async_over_mapped']:.2f}x as long"
        )
    if "streaming" in picked:
        v = streaming_verdict(record)
        lines.append(
            f"  streaming: fastest {v['fastest']} ({v['fastest_ms']:.2f} ms); zero-copy "
            f"{v['zero_copy_fraction_of_link']:.2f} of L, pipeline {v['pipeline_fraction_of_link']:.2f} of L; "
            f"write-combined pages {v['write_combined_over_mapped']:.2f}x the ordinary mapped GB/s"
        )
    return lines


def picked_experiments(record: Record, only: Sequence[str] | None = None) -> list[str]:
    """The experiments the record holds, in lesson order, limited to `only` when given."""
    ran = [name for name in EXPERIMENTS if name in record.extra]
    return [name for name in ran if only is None or name in only]


def predates(record: Record, name: str) -> bool:
    """Whether the record lacks this experiment because it was recorded before the lesson had it."""
    return name not in record.extra and name in ADDED_ON and record.recorded_at[:10] < ADDED_ON[name]


def not_recorded(record: Record, only: Sequence[str] | None = None) -> list[str]:
    """The experiments (picked, or all when `only` is None) that the record was made before the lesson had."""
    return [name for name in (EXPERIMENTS if only is None else only) if predates(record, name)]


def not_recorded_line(record: Record, name: str) -> str:
    """One plain line for an experiment the record predates: what, since when, and how to get it."""
    return (
        f"{TITLES.get(name, name)}: not recorded in this run (recorded {record.recorded_at[:10]}; the experiment "
        f"came on {ADDED_ON[name]}); on a GPU, python -m zero_copy --only {name} measures it"
    )


def report(record: Record, only: Sequence[str] | None = None, *, facts: bool = True, probe_table: bool = True) -> str:
    """Every table and verdict of a run, from its record alone (no mode line: the caller prints that).

    `facts=False` leaves out the device facts (a notebook prints them once); `probe_table=False` gives the probes
    in one line instead of their table.
    """
    picked = picked_experiments(record, only)
    if facts:
        opening = [_header(record), _probes(record)]
    elif probe_table:
        opening = [[_run_line(record)], _probes(record)]
    else:
        opening = [_probes_line(record)]
    missing = not_recorded(record, only)
    blocks = [
        *opening,
        *(SECTIONS[name](record) for name in picked),
        *([[not_recorded_line(record, name) for name in missing]] if missing else []),
        _verdict_lines(record, picked),
    ]
    return "\n\n".join("\n".join(block) for block in blocks)
