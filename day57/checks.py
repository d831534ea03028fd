"""The checks autograded day-57 cells call. Each raises AssertionError with what it found.

Every call into the student's code goes through labcore.answers (answers as data): while grading, the sandbox
computes the answers and the trusted checker judges them, running nothing of the student's. The cases are drawn for
each grading run from the grading seed (labcore.answers.fresh_seed); in the student's own kernel the visible and
OWN cases are judged on the public values shipped in day57/public.json (labcore.public).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from day57 import model
from labcore import answers, public
from labcore.checking import answered_calls, assert_own_function, say, verdicts

MiB = 1 << 20


def bytes_moved_cases(name: str = "bytes-moved") -> list[tuple[int, int, bool]]:
    """(total_bytes, runs, advised) drawn for this grading run: whole MiB totals; one run (where the advice saves
    nothing), two advised of 2-50 runs, two without advice of 0-50 runs."""
    rng = random.Random(answers.fresh_seed(f"day57 configurations: {name}"))
    cases = [(rng.randint(1, 4096) * MiB, 1, rng.random() < 0.5)]
    cases += [(rng.randint(1, 4096) * MiB, rng.randint(2, 50), True) for _ in range(2)]  # where the advice saves
    cases += [(rng.randint(1, 4096) * MiB, rng.randint(0, 50), False) for _ in range(2)]
    rng.shuffle(cases)
    return cases


OWN_BYTES_MOVED = [(1 << 30, 5, True), (1 << 30, 5, False), (256 * MiB, 1, True), (64 * MiB, 0, True)]
VISIBLE_BYTES_MOVED = [(1 << 30, 2, True), (1 << 30, 2, False)]  # the release's test cell asks these beside them
BYTES_MOVED = public.Expectation(  # the cases your own kernel checks, and the model's answer to each
    "day57", "bytes-moved", VISIBLE_BYTES_MOVED + OWN_BYTES_MOVED, lambda case: model.bytes_moved(*case)
)


def check_bytes_moved(fn: Callable[..., int], *, cases: list[tuple[int, int, bool]] | None = None) -> None:
    """Your bytes_moved(total_bytes, runs, advised) gives the model's bytes on five cases drawn for this grading run
    and on `cases` if given; in your own kernel on OWN_BYTES_MOVED in place of the drawn ones."""
    assert_own_function(fn, n_params=3, what="bytes_moved", references=(model.bytes_moved,), forbidden=("model",))
    asked = [*(cases or []), *answers.asked_cases(bytes_moved_cases, OWN_BYTES_MOVED)]
    for case, got in zip(asked, answered_calls(fn, "bytes_moved", "day57 bytes moved", asked), strict=True):
        want = BYTES_MOVED.want(list(case))
        total, runs, advised = case
        where = f"{total // MiB} MiB, {runs} run(s), {'with' if advised else 'without'} the advice"
        assert isinstance(got, int | float) and not isinstance(got, bool), f"{where}: you give {got!r}, not a number"
        assert got == want, f"{where}: you give {got!r} bytes, the model {want} ({got / total:.3g}x the total)"
    say(f"{len(asked)} cases, each the model's bytes")


verdicts(globals())  # in the student's kernel a failed check shows one verdict, not a traceback (labcore.checking)
