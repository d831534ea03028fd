"""Markdown a lesson's website blocks are made of (each lesson's `pages` module): table rows, and the line saying
which shipped profile the numbers come from."""

from __future__ import annotations

from labcore.profiles import default_profile
from labcore.record import Record


def row(*cells: str) -> str:
    """One row of a Markdown table."""
    return "| " + " | ".join(cells) + " |"


def origin(lesson: str, record: Record) -> str:
    """Where the numbers come from, as a path of the repository (never one of the machine that built the site)."""
    dev = record.device
    where = default_profile(lesson)
    return (
        f"From the shipped profile `{lesson}/profiles/{where.name}/`: {dev.name}, "
        f"PCIe Gen{dev.pcie_gen} x{dev.pcie_width}, "
        f"driver {dev.driver}, CUDA {dev.cuda_runtime}, CuPy {dev.cupy}."
    )
