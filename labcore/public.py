"""Public expectations: what a lesson's references give at the few fixed cases its visible checks show.

A check in the student's own kernel never calls a withheld reference (the student's side is the bundle, which has
none): where it compares an answer with the reference, it reads the reference's value at the visible case from the
lesson's `public.json`, as nbgrader's visible tests carry their expected values. The file is written from the
references in the instructors' checkout (`python -m labcore.public`), shipped with the lesson's package, and a test
fails when it differs from what the references give now. While grading, the trusted checker calls the references
themselves, at the drawn configurations as well as these.

    PREDICTION = public.Expectation("day54", "prediction", CASES, lambda case: predict(...).bound_ms)
    want = PREDICTION.want(case)   # grading: the reference; the student's kernel: the shipped value
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from labcore import answers, lessons

FILE = "public.json"
_REGISTRY: dict[str, dict[str, Expectation]] = {}


def _key(case: Any) -> str:
    return json.dumps(case, sort_keys=True)


class Expectation:
    """One visible check's expected values: `reference(case)` at each of `cases`, computed where references exist."""

    def __init__(
        self,
        lesson: str,
        name: str,
        cases: Iterable[Any] | Callable[[], Iterable[Any]],
        reference: Callable[[Any], Any],
    ) -> None:
        self.lesson, self.name, self.reference, self._cases = lesson, name, reference, cases
        _REGISTRY.setdefault(lesson, {})[name] = self

    @property
    def cases(self) -> list[Any]:
        """The visible cases, as JSON gives them back (lists, not tuples); a callable's are computed when asked."""
        cases = self._cases() if callable(self._cases) else self._cases
        return [json.loads(_key(case)) for case in cases]

    def computed(self) -> list[list[Any]]:
        """[[case, the reference's value], ...]: what the public file holds for this expectation."""
        return [[case, self.reference(case)] for case in self.cases]

    def shipped(self, case: Any) -> Any:
        """The public file's value at `case`; KeyError where it holds none (not a visible case)."""
        found = {_key(c): value for c, value in shipped_values(self.lesson).get(self.name, [])}
        return found[_key(case)]

    def has(self, case: Any) -> bool:
        """Whether `case` is one the public file answers (a visible case)."""
        return any(_key(c) == _key(case) for c, _ in shipped_values(self.lesson).get(self.name, []))

    def judges(self, case: Any) -> bool:
        """Whether this process judges an answer at `case`: while grading every case; in the student's own kernel
        only a visible one, which the public file answers (any other is checked when graded)."""
        return answers.grading() or self.has(case)

    def known(self, case: Any) -> Any:
        """The reference's value at `case`: the reference itself while grading; else the public file's, or the
        reference's where it is not withheld (the instructors' checkout), or None."""
        if answers.grading():
            return self.reference(case)
        if self.has(case):
            return self.shipped(case)
        try:
            return self.reference(case)
        except answers.ReferenceWithheld:
            return None

    def want(self, case: Any) -> Any:
        """The reference's value at `case`: the reference itself while grading; else the public file's, or the
        reference's where it is not withheld (the instructors' checkout); an AssertionError in the bundle."""
        if answers.grading():
            return self.reference(case)
        if self.has(case):
            return self.shipped(case)
        try:  # the instructors' checkout: its references answer every case, a solutions notebook's hidden ones too
            return self.reference(case)
        except answers.ReferenceWithheld:  # the student's bundle: only the visible cases are answered
            raise AssertionError(
                f"{self.lesson}: {case} is not one of the visible cases of {self.name!r}; such a case is checked "
                "only when graded"
            ) from None


def public_file(lesson: str) -> Path:
    """Where a lesson's public expectations live: beside its package's modules."""
    return Path(importlib.import_module(lesson).__file__).with_name(FILE)


def shipped_values(lesson: str) -> dict[str, list[list[Any]]]:
    """A lesson's public file as data ({} where it has none)."""
    path = public_file(lesson)
    return json.loads(path.read_text()) if path.is_file() else {}


def computed_values(lesson: str) -> dict[str, list[list[Any]]]:
    """A lesson's expectations computed from its references (the instructors' checkout only)."""
    importlib.import_module(f"{lesson}.checks")  # its expectations register on import
    return {name: found.computed() for name, found in sorted(_REGISTRY.get(lesson, {}).items())}


def text(values: dict[str, list[list[Any]]]) -> str:
    """The public file's text: one expectation a line, so a diff shows which changed."""
    lines = [f"  {json.dumps(name)}: {json.dumps(found)}" for name, found in values.items()]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def write(lesson_names: Sequence[str]) -> list[Path]:
    """Write each lesson's public file from its references; the files written (a lesson without any: none)."""
    written = []
    for lesson in lesson_names:
        values = computed_values(lesson)
        path = public_file(lesson)
        if values:
            path.write_text(text(values))
            written.append(path)
        elif path.exists():
            path.unlink()
    return written


def main(argv: list[str]) -> int:
    # run as __main__, this module is not the labcore.public the lessons register with
    for path in importlib.import_module("labcore.public").write(argv or lessons.names()):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
