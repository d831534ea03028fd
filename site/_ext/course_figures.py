"""The shipped profiles' figures as site text, computed at build time by the lessons' own readers and reports.

`{course-figures} NAME` in a page becomes the Markdown that `markdown(NAME)` returns: nothing is retyped, so a
new profile changes the site when it is rebuilt. Every number here is also printed by `python -m day54` or
`python -m zero_copy` replaying the same profile (tests/test_site_numbers.py checks that).
"""

from __future__ import annotations

from collections.abc import Callable

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

from day54 import replay as day54_replay
from day54 import report as day54_report
from labcore.profiles import default_profile
from labcore.record import Record
from labcore.sizes import format_size
from zero_copy import replay as zero_copy_replay
from zero_copy import report as zero_copy_report


def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def _origin(lesson: str, record: Record) -> str:
    """Where the numbers come from, as a path of the repository (never one of the machine that built the site)."""
    dev = record.device
    where = default_profile(lesson)
    return (
        f"From the shipped profile `profiles/{where.parent.name}/{where.name}/`: {dev.name}, "
        f"PCIe Gen{dev.pcie_gen} x{dev.pcie_width}, "
        f"driver {dev.driver}, CUDA {dev.cuda_runtime}, CuPy {dev.cupy}."
    )


def day54_main(record: Record) -> list[str]:
    """The seed-style table at the main window: stages, bounds, link floor, naive and pipelined."""
    window = day54_report.main_window(record)
    st = day54_report.stages(record, window)
    total = record.config["total_bytes"]
    p = {n: record.pass_times(day54_report.PassKey(n, window, 1)) for n in ("h2d", "kernel", "d2h")}
    link = day54_report.link_floor_ms(record)
    naive = day54_report.measured(record, "naive", window, 1)
    depths = day54_report.buffers(record)
    pipes = [day54_report.measured(record, "pipelined", window, b) for b in depths]
    ratios = [day54_report.ratio(record, window, b) for b in depths]
    off = (naive / st.sum_ms - 1) * 100
    fmas = record.config.get("fmas")
    lines = [
        _origin("day54", record),
        "",
        _row(f"{format_size(window)} window, {format_size(total)}, {fmas} FMAs", "median ms", ""),
        _row("---", "---", "---"),
        _row(
            "h2d only / kernel only / d2h only",
            f"{st.h2d_ms:.3f} / {st.kernel_ms:.3f} / {st.d2h_ms:.3f}",
            f"copies {p['h2d'].gbps():.2f} / {p['d2h'].gbps():.2f} GB/s",
        ),
        _row("naive bound (sum) / pipeline floor (max)", f"{st.sum_ms:.3f} / {st.max_ms:.3f}", ""),
    ]
    if link is not None:
        lines.append(
            _row("link floor (duplex probe)", f"{link:.3f}", f"{2 * total / (link * 1e-3) / 1e9:.2f} GB/s both ways")
        )
    lines += [
        _row("measured naive", f"{naive:.3f}", f"{off:+.1f}% from the sum"),
        _row(
            "measured pipelined, " + " / ".join(str(b) for b in depths) + " buffers",
            " / ".join(f"{x:.3f}" for x in pipes),
            "ratios " + " / ".join(f"{x:.3f}" for x in ratios),
        ),
    ]
    return lines


def day54_sweep(record: Record) -> list[str]:
    """Pipelined over naive for every window and depth; the worst window of each depth marked."""
    depths = day54_report.buffers(record)
    wins = day54_report.windows(record)
    worst = {b: max(wins, key=lambda w, b=b: day54_report.ratio(record, w, b)) for b in depths}
    lines = [_row("window", "chunks", *(f"ratio, {b} buffers" for b in depths)), _row(*["---"] * (2 + len(depths)))]
    for w in wins:
        cells = [f"{day54_report.ratio(record, w, b):.3f}" + (" (worst)" if worst[b] == w else "") for b in depths]
        lines.append(_row(format_size(w), str(record.config["total_bytes"] // w), *cells))
    return lines


def day54_verdicts(record: Record) -> list[str]:
    """The four predictions, the model beside the pipelines, and the pitfalls, each as one bullet."""
    window = day54_report.main_window(record)
    lines = [
        f"- Prediction {v.number} {v.outcome}: {v.claim} ({v.numbers})."
        for v in day54_report.predictions(record, window)
    ]
    for b in day54_report.buffers(record):
        model = day54_report.model_for(record, window, b)
        got = day54_report.measured(record, "pipelined", window, b)
        lines.append(
            f"- {b} buffers: {got:.3f} ms, {(got / model.bound_ms - 1) * 100:+.0f}% from the model ({model.explain()})."
        )
    good_depth = None
    for item in record.extra.get("pitfalls", []):
        times = record.pass_times(item["key"])
        good_depth = times.params["buffers"]
        good = day54_report.measured(record, "pipelined", window, good_depth)
        order = day54_report.ordering_verdict(item["name"], record.config["total_bytes"] // window, good_depth)
        output = "output bit-identical to naive" if item["ok"] else "output wrong"
        lines.append(
            f"- Pitfall *{item['name']}*: {times.median_ms:.3f} ms, {times.median_ms / good:.2f}x the correct "
            f"pipeline; CUDA ordering: {order}; {output} on this run."
        )
    enq = day54_report.enqueue_ms(record)
    if enq is not None and good_depth is not None:
        good = day54_report.measured(record, "pipelined", window, good_depth)
        lines.append(f"- Timing the enqueue reads {enq:.3f} ms: {good / enq:.0f}x too fast.")
    return lines


def zero_copy_verdicts(record: Record) -> list[str]:
    """The zero-copy lesson's verdicts, each as one bullet."""
    be = zero_copy_report.breakeven_verdict(record)
    ga = zero_copy_report.gather_verdict(record)
    mb = zero_copy_report.mailbox_verdict(record)
    rr = zero_copy_report.reread_verdict(record)
    return [
        _origin("zero_copy", record),
        "",
        f"- Break-even: the model's crossover r* = {be['crossover_model']:.2f} reads per byte, "
        f"measured {be['crossover_measured']:.2f} ({'held' if be['held'] else 'failed'}).",
        f"- Gather: the sorted gather moved {ga['gather_gbps']:.1f} GB/s, {ga['fraction_of_copy']:.2f} of the pinned "
        f"copy of the same batch, {ga['speedup_over_cpu']:.1f}x faster than a CPU gather plus copy.",
        f"- Mailbox: the host read the payload while the kernel was still running in {mb['good_rounds']} of "
        f"{mb['rounds']} rounds.",
        f"- Re-read loop: mapped memory re-read at {rr['far_mapped_gbps']:.1f} GB/s, {rr['mapped_over_hbm']:.0f}x "
        "slower than the same loop from HBM.",
    ]


FIGURES: dict[str, tuple[Callable[[], Record], Callable[[Record], list[str]]]] = {
    "day54-main": (day54_replay.shipped_profile, day54_main),
    "day54-sweep": (day54_replay.shipped_profile, day54_sweep),
    "day54-verdicts": (day54_replay.shipped_profile, day54_verdicts),
    "zero_copy-verdicts": (zero_copy_replay.load_profile, zero_copy_verdicts),
}


def markdown(name: str) -> str:
    """One named figure block as Markdown, computed from its lesson's shipped profile."""
    load, render = FIGURES[name]
    return "\n".join(render(load()))


class CourseFigures(SphinxDirective):
    """`{course-figures} NAME`: the Markdown of one figure block, parsed in place."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        if name not in FIGURES:
            raise self.error(f"course-figures: no figure block {name!r} (there are {', '.join(FIGURES)})")
        container = nodes.container()
        self.state.nested_parse(StringList(markdown(name).splitlines(), source=name), self.content_offset, container)
        return container.children


def setup(app) -> dict:
    app.add_directive("course-figures", CourseFigures)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
