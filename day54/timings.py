"""What every timing source of day54's checks returns and judges by: the timed array, the ratio's timing, the
challenge's settings, its rules (the bar, the noise, the rounds) and its timing.

The sources are one module each: live on the GPU (day54.timing_live), simulated on recorded stage times
(day54.timing_sim), the student's own nsys exports (day54.timing_exports), the shipped recorded profile
(day54.timing_recorded). day54.checks asks the questions and judges.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable

from day54.config import MiB
from labcore.checking import format_window as format_window

KiB = 1 << 10


TIMED_TOTAL_BYTES = 1 << 30  # the lesson's array: what the live, exported and simulated timings all move


@dataclasses.dataclass(frozen=True)
class Timing:
    """Naive, the reference pipeline and your schedule, measured (or simulated) together, and how. In the student's
    kernel the reference is withheld: its time is None unless the public expectations hold it (labcore.public)."""

    naive_ms: float
    reference_ms: float | None
    mine_ms: float
    how: str
    source: str = "live"  # labcore.checking.SOURCES: live or simulated
    rounds: tuple[tuple[float, float | None, float], ...] = ()  # live: each round's (naive, reference, yours) medians

    @property
    def ratio(self) -> float:
        return self.mine_ms / self.naive_ms

    @property
    def over_reference(self) -> float | None:
        return None if self.reference_ms is None else self.mine_ms / self.reference_ms

    def noise(self, index: int) -> float | None:
        """The standard error of the median over rounds of yours / naive (index 0) or yours / the reference (1),
        relative: 1.25 x 1.48 x their median absolute deviation / sqrt(rounds); None with fewer than 3 rounds."""
        values = [r[2] / r[index] for r in self.rounds if r[index]] if index in (0, 1) else []
        if len(values) < 3:
            return None
        middle = statistics.median(values)
        spread = statistics.median(abs(v - middle) for v in values)
        return 1.2533 * 1.4826 * spread / math.sqrt(len(values)) / middle


# The challenge is met at most this far above the course's best schedule measured in the same rounds. Its bar lies
# outside the measurement's own noise: on the H200 (2026-12-03: 15 rounds of one run each, four repeats, a shared
# link) a copy of the course's best measured 0.990-1.014 of it, every pipeline of 3 or more buffers inside that
# band, 64 MiB x 2 at 1.09-1.10. day54/benchmarks/challenge_bar.py measures both again.
CHALLENGE_FACTOR = 1.03
CHALLENGE_NOISE = 0.014  # the spread of "a copy of the course's best over it", measured as above
# The spread of one schedule's time over the link floor from the check's rounds: one schedule's verdicts over four
# runs on the H200 spread by up to +-1.3% (16 MiB x 4 at 1.046-1.073, profiles/h200/2026-12-02-afternoon/
# challenge_check.txt). The class report calls two floor ratios this close a tie.
CHALLENGE_FLOOR_NOISE = 0.013
CHALLENGE_MAX_BUFFERS = 8
CHALLENGE_MAX_STREAMS = 16
# A round runs the course's best, yours and the duplex probe once each, back to back; the verdict is the median of
# the rounds' (yours / the course's best). 9 rounds at most, stopping early once 5 or more all lie CHALLENGE_DECIDED
# (a fraction) or more on the same side of the factor. Counted in passes over the link (a verify is about a run):
# at most 27 timed runs, 2 warm-ups and 4 verifies (the first and the last round's best and yours), 33, under the
# 15 rounds of two runs, 2 warm-ups and 2 verifies (34) the check took against the probe alone (about 0.9 GPU
# seconds a student, 2026-12-03); a schedule clearly on one side stops after 6 rounds (24).
CHALLENGE_ROUNDS = 9
CHALLENGE_EARLY_ROUNDS = 5
CHALLENGE_DECIDED = 0.005
LINK_WINDOW = 64 * MiB  # the duplex probe always runs as in the lesson: 64 MiB copies, one stream per direction


@dataclasses.dataclass(frozen=True)
class ChallengeSettings:
    """The challenge's free choices: window (bytes), buffer pairs and streams."""

    window: int
    buffers: int
    streams: int

    @property
    def n_chunks(self) -> int:
        return TIMED_TOTAL_BYTES // self.window

    def describe(self) -> str:
        chunks = f"{format_window(self.window)} windows ({self.n_chunks} chunks)"
        return f"{chunks}, {self.buffers} buffers, {self.streams} streams"


COURSE_BEST = ChallengeSettings(16 * MiB, 6, 6)  # the solutions notebook's my_fastest: schedules.pipelined at these


@dataclasses.dataclass(frozen=True)
class ChallengeTiming:
    """Yours, the course's best and the link floor, measured (or simulated) together, and where from."""

    mine_ms: float
    best_ms: float | None  # None in the student's kernel where the course's best is not public (labcore.public)
    link_floor_ms: float
    over_best: float | None  # the verdict's number: the median of the rounds' (yours / the course's best)
    over_floor: float  # the median of the rounds' (yours / the link floor)
    source: str  # labcore.checking.SOURCES: live or simulated
    how: str


# What one timed run of the challenge is: ("best" | "yours" | "floor", first round, verified) -> milliseconds.
ChallengeRun = Callable[[str, bool, bool], float]


def challenge_decided(ratios: list[float]) -> bool:
    """Whether the rounds so far settle the verdict: enough of them, all clearly on one side of the factor."""
    above, below = CHALLENGE_FACTOR * (1 + CHALLENGE_DECIDED), CHALLENGE_FACTOR * (1 - CHALLENGE_DECIDED)
    return len(ratios) >= CHALLENGE_EARLY_ROUNDS and (min(ratios) >= above or max(ratios) <= below)
