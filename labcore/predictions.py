"""Predict, then measure: a reader's guesses beside the run's numbers, and all of a session's in one closing table.

A lesson names its measurable quantities once (`Quantity`: a key, what it is, how to read it from a record).
A prediction cell is a plain dict of those keys; `compare` prints yours, measured and measured/yours for it and
remembers the rows, so that `closing_table` can print every comparison the session made, in the order made.
Predictions are never graded: an unanswered one shows as "-", an unknown key gets one line saying so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Value = float | str | None


@dataclass(frozen=True)
class Quantity:
    """One measured quantity a reader predicts: `read(record)` gives the run's value (a number or a word)."""

    what: str
    read: Callable[[Any], Value]


@dataclass(frozen=True)
class Row:
    key: str
    what: str
    yours: Value
    measured: Value

    def ratio(self) -> str:
        """measured/yours for numbers, "same"/"differs" for words, "-" when either is missing."""
        if self.yours is None or self.measured is None:
            return "-"
        if isinstance(self.yours, str) or isinstance(self.measured, str):  # a word; "a≈b" accepts either
            accepted = {word.strip().lower() for word in str(self.measured).split("≈")}
            return "same" if str(self.yours).strip().lower() in accepted else "differs"
        if self.yours == 0:
            return "-"
        return f"{self.measured / self.yours:.2f}"


def _shown(value: Value) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return f"{value:.3g}"


def _number_or_word(key: str, value: Any) -> Value:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        raise TypeError(f"prediction {key!r} is {value!r}: give a number")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"prediction {key!r} is {value!r}: give a number") from None


def table(rows: list[Row]) -> str:
    """The comparison as text: quantity, what it is, yours, measured, measured/yours."""
    width = max([len("quantity")] + [len(r.key) for r in rows]) + 2
    what = max([len("what")] + [len(r.what) for r in rows]) + 2
    lines = [f"{'quantity':<{width}}{'what':<{what}}{'yours':>10}{'measured':>10}{'measured/yours':>16}"]
    lines += [
        f"{r.key:<{width}}{r.what:<{what}}{_shown(r.yours):>10}{_shown(r.measured):>10}{r.ratio():>16}" for r in rows
    ]
    return "\n".join(lines)


class Ledger:
    """Every comparison of one session (one notebook kernel), newest value per quantity, in first-made order."""

    def __init__(self) -> None:
        self.rows: dict[str, Row] = {}

    def compare(self, predictions: Mapping[str, Any], quantities: Mapping[str, Quantity], record: Any) -> str:
        """The table for these predictions against `record`; the rows are kept for the closing table."""
        notes = []
        rows = []
        for key, guess in predictions.items():
            if key not in quantities:
                notes.append(f"no measured quantity is called {key!r} (known: {', '.join(quantities)}); skipped")
                continue
            quantity = quantities[key]
            try:
                yours = _number_or_word(key, guess)
            except TypeError as exc:
                notes.append(f"{exc}; shown as unanswered")
                yours = None
            row = Row(key, quantity.what, yours, quantity.read(record))
            rows.append(row)
            self.rows[key] = row
        return "\n".join([table(rows), *notes]) if rows else "\n".join(notes or ["no predictions given"])

    def closing(self) -> str:
        """All comparisons so far, or a line saying there are none yet."""
        if not self.rows:
            return "no prediction compared yet: run the compare cells above first"
        answered = sum(r.yours is not None for r in self.rows.values())
        return f"{table(list(self.rows.values()))}\n{answered} of {len(self.rows)} predicted"


LEDGER = Ledger()
