"""Tables, ratios and the lesson's four predictions, computed only from a results record."""

from __future__ import annotations

import statistics

from day54 import schedules
from day54.config import PassKey
from day54.model import Prediction, Stages, predict
from labcore.answers import ReferenceWithheld
from labcore.errors import UsageError
from labcore.kit.verdicts import Verdict, checks_text, held
from labcore.pipeline.recording import RecordingContext
from labcore.record import Record
from labcore.sizes import format_size

TRACE_REPEAT = "trace_repeat"  # record.extra: {pass key: which timed repeat (from 0) its trace is}; absent: another run
SEVERAL = 3.0  # "several times the kernel pass": at least this many
SPEEDUP_BAR = 1.6
NAIVE_TOLERANCE = 0.10


def windows(record: Record) -> list[int]:
    """Windows that have component passes in this record, smallest first."""
    return sorted({p.params["window_bytes"] for p in record.passes if p.name == "h2d"})


def buffers(record: Record) -> list[int]:
    """Pipeline depths measured in this record."""
    return sorted({p.params["buffers"] for p in record.passes if p.name == "pipelined"})


def main_window(record: Record, window: int | None = None) -> int:
    """The window the table is about: the asked one if the record has it, else the run's own."""
    have = windows(record)
    chosen = window if window is not None else record.config.get("window_bytes", have[len(have) // 2])
    if chosen not in have:
        listed = ", ".join(format_size(w) for w in have) or "none"
        raise UsageError(f"--window {format_size(chosen)} is not in the record from {record.source} (it has {listed})")
    return chosen


def stages(record: Record, window: int) -> Stages:
    """Component pass medians for one window."""
    med = {name: record.pass_times(PassKey(name, window, 1)).median_ms for name in ("h2d", "kernel", "d2h")}
    return Stages(med["h2d"], med["kernel"], med["d2h"], record.config["total_bytes"] // window)


def link_floor_ms(record: Record) -> float | None:
    """The duplex probe's median time, if the record has one."""
    duplex = [p for p in record.passes if p.name == "duplex"]
    return duplex[0].median_ms if duplex else None


def measured(record: Record, name: str, window: int, depth: int) -> float:
    return record.pass_times(PassKey(name, window, depth)).median_ms


def ratio(record: Record, window: int, depth: int) -> float:
    """Pipelined over naive at one window, from the same run."""
    return measured(record, "pipelined", window, depth) / measured(record, "naive", window, 1)


def model_for(record: Record, window: int, depth: int) -> Prediction:
    return predict(stages(record, window), depth, link_floor_ms(record))


def enqueue_ms(record: Record) -> float | None:
    """The median host-clock time of the pipelined loop without a synchronize (the "timing the enqueue" pitfall)."""
    times = record.extra.get("enqueue_ms")
    return statistics.median(times) if times else None


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def table(record: Record, window: int) -> str:
    """The seed-style table: components, bounds, and measured schedules."""
    st = stages(record, window)
    total = record.config["total_bytes"]
    rows: list[tuple[str, float | None, float | None, str, float | None]] = []
    for label, name, depth in (("h2d only", "h2d", 1), ("kernel only", "kernel", 1), ("d2h only", "d2h", 1)):
        p = record.pass_times(PassKey(name, window, depth))
        rows.append((label, p.mean_ms, p.median_ms, "{:.3f}-{:.3f}".format(*p.spread_ms), p.gbps()))
    rows.append(("naive bound (sum)", None, st.sum_ms, "", None))
    rows.append(("pipeline floor (max)", None, st.max_ms, "", None))
    link = link_floor_ms(record)
    if link is not None:
        duplex = next(p for p in record.passes if p.name == "duplex")
        rows.append(
            (
                "link floor (duplex)",
                duplex.mean_ms,
                link,
                "{:.3f}-{:.3f}".format(*duplex.spread_ms),
                2 * total / (link * 1e-3) / 1e9,
            )
        )
    for label, name, depth in [("measured naive", "naive", 1)] + [
        (f"measured pipelined, {b} buffers", "pipelined", b) for b in buffers(record)
    ]:
        p = record.pass_times(PassKey(name, window, depth))
        rows.append((label, p.mean_ms, p.median_ms, "{:.3f}-{:.3f}".format(*p.spread_ms), None))
    head = f"{'Pass':<32}{'Mean ms':>10}{'Median ms':>11}{'Spread ms':>17}{'GB/s':>8}"
    lines = [
        f"Window {format_size(window)}: {st.n_chunks} chunks of {format_size(window)}, {format_size(total)} each way",
        head,
        "-" * len(head),
    ]
    for label, mean, median, spread, gbps in rows:
        lines.append(f"{label:<32}{_fmt(mean):>10}{_fmt(median):>11}{spread:>17}{_fmt(gbps, '.2f'):>8}")
    lines.append("")
    for b in buffers(record):
        model = model_for(record, window, b)
        got = measured(record, "pipelined", window, b)
        lines.append(
            f"model, {b} buffers: {model.explain()}; measured {got:.2f} ms ({(got / model.bound_ms - 1) * 100:+.0f}%)"
        )
    return "\n".join(lines)


def sweep_table(record: Record) -> str:
    """Pipelined-to-naive ratios for every window and depth, beside the model's."""
    depths = buffers(record)
    head = f"{'Window':>8}{'Chunks':>8}{'Naive ms':>10}" + "".join(
        f"{f'b={b} ms':>10}{f'ratio b={b}':>11}{f'model b={b}':>11}" for b in depths
    )
    lines = ["Window sweep (pipelined / naive; lower is better)", head, "-" * len(head)]
    for window in windows(record):
        naive = measured(record, "naive", window, 1)
        line = f"{format_size(window):>8}{record.config['total_bytes'] // window:>8}{naive:>10.3f}"
        for b in depths:
            line += (
                f"{measured(record, 'pipelined', window, b):>10.3f}{ratio(record, window, b):>11.3f}"
                f"{model_for(record, window, b).bound_ms / naive:>11.3f}"
            )
        lines.append(line)
    if len(windows(record)) > 1:
        lines.append("")
        for b in depths:
            worst = max(windows(record), key=lambda w, b=b: ratio(record, w, b))
            lines.append(
                f"worst window at {b} buffers: {format_size(worst)} "
                f"(ratio {ratio(record, worst, b):.3f}); the model's edge argument expects the largest"
            )
    return "\n".join(lines)


def _naive_claim(record: Record, window: int) -> Verdict:
    st, naive = stages(record, window), measured(record, "naive", window, 1)
    off = naive / st.sum_ms - 1
    return Verdict(
        1,
        "measured naive lands within 10% of the sum of the three components",
        held(abs(off) <= NAIVE_TOLERANCE),
        f"naive {naive:.3f} ms vs sum {st.sum_ms:.3f} ms ({off * 100:+.1f}%)",
        "one stream serializes its copies and kernels exactly"
        if abs(off) <= NAIVE_TOLERANCE
        else "something in the naive pass overlapped or stalled; capture a timeline",
    )


def _bounds_claim(record: Record, window: int, depth: int) -> Verdict:
    st, pipe = stages(record, window), measured(record, "pipelined", window, depth)
    h_c, _, d_c = st.per_chunk()
    ceiling = st.max_ms + h_c + d_c
    model = model_for(record, window, depth)
    inside = st.max_ms <= pipe <= ceiling
    return Verdict(
        2,
        f"pipelined ({depth} buffers) lands between the slowest stage and it plus one chunk in and one out",
        held(inside),
        f"pipelined {pipe:.3f} ms; window [{st.max_ms:.3f}, {ceiling:.3f}] ms; {model.explain()}",
        "the edges are the only serial residue"
        if inside
        else f"the max-plus-edges model misses what {depth} buffers cannot hide: the {model.binding} "
        f"({model.bound_ms:.3f} ms) sits above the max floor",
    )


def _copies_claim(record: Record, window: int) -> Verdict:
    st = stages(record, window)
    copies_slowest = min(st.h2d_ms, st.d2h_ms) > st.kernel_ms
    times = min(st.h2d_ms, st.d2h_ms) / st.kernel_ms if st.kernel_ms else float("inf")
    outcome = "held" if copies_slowest and times >= SEVERAL else "half held" if copies_slowest else "failed"
    return Verdict(
        3,
        f"the copies are the two slowest stages, each several (>= {SEVERAL:g}x) times the kernel pass",
        outcome,
        f"h2d {st.h2d_ms:.3f}, d2h {st.d2h_ms:.3f}, kernel {st.kernel_ms:.3f} ms (copies {times:.1f}x the kernel)",
        {
            "held": "this link is slow next to this kernel",
            "half held": "the copies are slowest but the kernel is heavier relative to this link",
            "failed": "the kernel is a slowest stage here; overlap hides copies behind it",
        }[outcome],
    )


def _speedup_claim(record: Record, window: int, depth: int) -> Verdict:
    speedup = measured(record, "naive", window, 1) / measured(record, "pipelined", window, depth)
    engines = record.device.async_engine_count
    return Verdict(
        4,
        f"pipelined ({depth} buffers) beats naive by at least {SPEEDUP_BAR}x (needs 2+ copy engines)",
        held(speedup >= SPEEDUP_BAR),
        f"speed-up {speedup:.2f}x; asyncEngineCount {engines}",
        "copy in of one chunk overlaps copy out of another"
        if speedup >= SPEEDUP_BAR
        else (
            "one copy engine: both directions share a lane"
            if engines < 2
            else "the overlap is smaller than the bet; see prediction 2's bounds"
        ),
    )


def predictions(record: Record, window: int) -> list[Verdict]:
    """The lesson's four predictions, judged on this record's numbers at one window."""
    depth = 2 if 2 in buffers(record) else buffers(record)[0]
    return [
        _naive_claim(record, window),
        _bounds_claim(record, window, depth),
        _copies_claim(record, window),
        _speedup_claim(record, window, depth),
    ]


def ordering_verdict(name: str, n_chunks: int, depth: int) -> str:
    """What CUDA's ordering rules guarantee for a pitfall, from the recording fake (no GPU needed)."""
    ctx = RecordingContext(n_chunks, depth, n_streams=depth + 1 if name == "more-streams-than-buffers" else None)
    try:
        schedules.PITFALLS.get(name, schedules.pipelined)(ctx)
    except ReferenceWithheld:  # in the grading sandbox, where the pitfalls (the reference with a flaw) are withheld
        return "withheld"
    races = ctx.races()
    return f"RACE ({len(races)} unordered)" if races else "safe"


def pitfalls_table(record: Record) -> str | None:
    """Each pitfall's time beside the correct pipelined pass, and whether its output was right."""
    found = record.extra.get("pitfalls")
    if not found:
        return None
    first = record.pass_times(found[0]["key"])
    window, depth = first.params["window_bytes"], first.params["buffers"]
    good = measured(record, "pipelined", window, depth)
    head = f"{'Pitfall':<28}{'Median ms':>11}{'x pipelined':>13}  {'CUDA ordering':<22}Output on this run"
    lines = [
        f"Pitfalls at {format_size(window)}, {depth} buffers (correct pipelined: {good:.3f} ms)",
        head,
        "-" * (len(head) + 30),
    ]
    for item in found:
        median = record.pass_times(item["key"]).median_ms
        verdict = "bit-identical to naive" if item["ok"] else f"WRONG: {item['detail']}"
        order = ordering_verdict(item["name"], record.config["total_bytes"] // window, depth)
        lines.append(f"{item['name']:<28}{median:>11.3f}{median / good:>13.2f}  {order:<22}{verdict}")
    enq = enqueue_ms(record)
    if enq is not None:
        lines.append(
            f"{'timing the enqueue':<28}{enq:>11.3f}{enq / good:>13.2f}  "
            f"{'-':<22}host clock without a synchronize: {good / enq:.0f}x too fast"
        )
    lines.append(
        "A race that leaves the output intact on one run is still a race: the fake shows what CUDA does not promise."
    )
    return "\n".join(lines)


def render(record: Record, window: int | None = None) -> str:
    """Everything `python -m day54` prints after its mode line."""
    window = main_window(record, window)
    parts = [checks_text(record), table(record, window), sweep_table(record)]
    if (text := pitfalls_table(record)) is not None:
        parts.append(text)
    parts += [
        f"Predictions at {format_size(window)} (the lesson's four, on this run's numbers)",
        "\n".join(v.line() for v in predictions(record, window)),
    ]
    return "\n\n".join(parts)
