"""The Markdown blocks the course's website shows from the shipped profile (site/_ext/course_figures.py): the
lesson's verdicts, computed from a record by this lesson's report (every number is also printed by
`python -m zero_copy`)."""

from __future__ import annotations

from collections.abc import Callable

from labcore.markdown import origin
from labcore.record import Record
from zero_copy import LESSON, report
from zero_copy.replay import load_profile

load = load_profile  # the record the blocks are computed from


def verdicts(record: Record) -> list[str]:
    """The zero-copy lesson's verdicts, each as one bullet."""
    be = report.breakeven_verdict(record)
    ga = report.gather_verdict(record)
    mb = report.mailbox_verdict(record)
    rr = report.reread_verdict(record)
    return [
        origin(LESSON, record),
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


BLOCKS: dict[str, Callable[[Record], list[str]]] = {"verdicts": verdicts}
