"""A lesson's predictions judged on a run's numbers, and its correctness verdicts, as its report prints them.

A lesson's report writes each claim as a function of the record that returns a `Verdict`:

    Verdict(2, "the GPU time barely moves", held(abs(gap - 1) <= BAND), f"graph/streams {gap:.3f}")

and prints `"\\n".join(v.line() for v in verdicts)`; `checks_text(record)` lists the record's correctness checks
before any table. (What a reader guessed beside what was measured is `labcore.predictions`.)
"""

from __future__ import annotations

import dataclasses

from labcore.record import Record


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One prediction judged on one run's numbers: its number, the claim, the outcome ('held', 'failed', 'half
    held'), the numbers that decided it and, if the lesson says one, why."""

    number: int
    claim: str
    outcome: str
    numbers: str
    reason: str = ""

    def line(self) -> str:
        why = f". {self.reason}" if self.reason else ""
        return f"  {self.number}. {self.outcome.upper()}: {self.claim}\n     {self.numbers}{why}"


def held(ok: bool) -> str:
    """'held' or 'failed'."""
    return "held" if ok else "failed"


def checks_text(record: Record) -> str:
    """The record's correctness checks, one a line under 'Correctness (before any timing)'."""
    lines = ["Correctness (before any timing)"]
    for check in record.checks:
        lines.append(f"  {'PASS' if check.ok else 'FAIL'}  {check.name}: {check.detail}")
    return "\n".join(lines)
