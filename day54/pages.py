"""The Markdown blocks the course's website shows from the shipped profile (site/_ext/course_figures.py): the
seed-style table at the main window, the sweep and the verdicts, each computed from a record by this lesson's
report, so the site retypes no number (every one is also printed by `python -m day54`)."""

from __future__ import annotations

from collections.abc import Callable

from day54 import LESSON, report
from day54.replay import shipped_profile
from labcore.markdown import origin, row
from labcore.record import Record
from labcore.sizes import format_size

load = shipped_profile  # the record the blocks are computed from


def main(record: Record) -> list[str]:
    """The seed-style table at the main window: stages, bounds, link floor, naive and pipelined."""
    window = report.main_window(record)
    st = report.stages(record, window)
    total = record.config["total_bytes"]
    p = {n: record.pass_times(report.PassKey(n, window, 1)) for n in ("h2d", "kernel", "d2h")}
    link = report.link_floor_ms(record)
    naive = report.measured(record, "naive", window, 1)
    depths = report.buffers(record)
    pipes = [report.measured(record, "pipelined", window, b) for b in depths]
    ratios = [report.ratio(record, window, b) for b in depths]
    off = (naive / st.sum_ms - 1) * 100
    fmas = record.config.get("fmas")
    lines = [
        origin(LESSON, record),
        "",
        row(f"{format_size(window)} window, {format_size(total)}, {fmas} FMAs", "median ms", ""),
        row("---", "---", "---"),
        row(
            "h2d only / kernel only / d2h only",
            f"{st.h2d_ms:.3f} / {st.kernel_ms:.3f} / {st.d2h_ms:.3f}",
            f"copies {p['h2d'].gbps():.2f} / {p['d2h'].gbps():.2f} GB/s",
        ),
        row("naive bound (sum) / pipeline floor (max)", f"{st.sum_ms:.3f} / {st.max_ms:.3f}", ""),
    ]
    if link is not None:
        lines.append(
            row("link floor (duplex probe)", f"{link:.3f}", f"{2 * total / (link * 1e-3) / 1e9:.2f} GB/s both ways")
        )
    lines += [
        row("measured naive", f"{naive:.3f}", f"{off:+.1f}% from the sum"),
        row(
            "measured pipelined, " + " / ".join(str(b) for b in depths) + " buffers",
            " / ".join(f"{x:.3f}" for x in pipes),
            "ratios " + " / ".join(f"{x:.3f}" for x in ratios),
        ),
    ]
    return lines


def sweep(record: Record) -> list[str]:
    """Pipelined over naive for every window and depth; the worst window of each depth marked."""
    depths = report.buffers(record)
    wins = report.windows(record)
    worst = {b: max(wins, key=lambda w, b=b: report.ratio(record, w, b)) for b in depths}
    lines = [row("window", "chunks", *(f"ratio, {b} buffers" for b in depths)), row(*["---"] * (2 + len(depths)))]
    for w in wins:
        cells = [f"{report.ratio(record, w, b):.3f}" + (" (worst)" if worst[b] == w else "") for b in depths]
        lines.append(row(format_size(w), str(record.config["total_bytes"] // w), *cells))
    return lines


def verdicts(record: Record) -> list[str]:
    """The four predictions, the model beside the pipelines, and the pitfalls, each as one bullet."""
    window = report.main_window(record)
    lines = [
        f"- Prediction {v.number} {v.outcome}: {v.claim} ({v.numbers})." for v in report.predictions(record, window)
    ]
    for b in report.buffers(record):
        model = report.model_for(record, window, b)
        got = report.measured(record, "pipelined", window, b)
        lines.append(
            f"- {b} buffers: {got:.3f} ms, {(got / model.bound_ms - 1) * 100:+.0f}% from the model ({model.explain()})."
        )
    good_depth = None
    for item in record.extra.get("pitfalls", []):
        times = record.pass_times(item["key"])
        good_depth = times.params["buffers"]
        good = report.measured(record, "pipelined", window, good_depth)
        order = report.ordering_verdict(item["name"], record.config["total_bytes"] // window, good_depth)
        output = "output bit-identical to naive" if item["ok"] else "output wrong"
        lines.append(
            f"- Pitfall *{item['name']}*: {times.median_ms:.3f} ms, {times.median_ms / good:.2f}x the correct "
            f"pipeline; CUDA ordering: {order}; {output} on this run."
        )
    enq = report.enqueue_ms(record)
    if enq is not None and good_depth is not None:
        good = report.measured(record, "pipelined", window, good_depth)
        lines.append(f"- Timing the enqueue reads {enq:.3f} ms: {good / enq:.0f}x too fast.")
    return lines


BLOCKS: dict[str, Callable[[Record], list[str]]] = {"main": main, "sweep": sweep, "verdicts": verdicts}
