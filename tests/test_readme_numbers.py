"""The README's H200 tables quote what its first command prints: one number per quantity, wherever it appears."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from labcore.device import gpu_available

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(gpu_available(), reason="the README quotes the replay, which a GPU machine does not print")
def test_every_number_of_the_h200_tables_is_printed_by_the_first_command() -> None:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Measured on the H200", 1)[1]
    tables = "\n".join(line for line in section.split("\n- ", 1)[0].splitlines() if line.startswith("| "))
    numbers = set(re.findall(r"\b\d+\.\d{2,3}\b", tables))
    assert len(numbers) >= 15, f"expected the two tables' figures, found {sorted(numbers)}"
    done = subprocess.run([sys.executable, "-m", "day54"], cwd=ROOT, capture_output=True, text=True, check=True)
    printed = set(re.findall(r"\b\d+\.\d{2,3}\b", done.stdout))
    missing = sorted(numbers - printed)
    assert not missing, f"README figures that `python -m day54` does not print: {missing}"
