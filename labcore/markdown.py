"""Markdown a lesson's website blocks are made of (each lesson's `pages` module): table rows, a bullet per judged
claim, and the line saying which shipped profile the numbers come from."""

from __future__ import annotations

from collections.abc import Iterable

from labcore.kit.verdicts import Verdict
from labcore.profiles import default_profile
from labcore.record import Record


def row(*cells: str) -> str:
    """One row of a Markdown table."""
    return "| " + " | ".join(cells) + " |"


def bullets(verdicts: Iterable[Verdict]) -> list[str]:
    """A lesson's claims judged on a run (labcore.kit.verdicts), one bullet each: the claim, whether it held, the
    numbers it was judged on."""
    return [f"- {v.claim}: {v.outcome} ({v.numbers.strip()})." for v in verdicts]


def origin(lesson: str, record: Record) -> str:
    """Where the numbers come from, as a path of the repository (never one of the machine that built the site)."""
    dev = record.device
    where = default_profile(lesson)
    return (
        f"From the shipped profile `{lesson}/profiles/{where.name}/`: {dev.name}, "
        f"PCIe Gen{dev.pcie_gen} x{dev.pcie_width}, "
        f"driver {dev.driver}, CUDA {dev.cuda_runtime}, CuPy {dev.cupy}."
    )
