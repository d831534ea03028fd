"""Live or replay: every entry point decides once, and says which on its first line."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from labcore.answers import ReferenceWithheld
from labcore.device import current_device, device_facts, gpu_available, gpu_count, pick_device
from labcore.errors import run_cli
from labcore.profiles import default_profile

FROM_PROFILE = "--from-profile"
NO_GPU = "no GPU here"


@dataclasses.dataclass(frozen=True)
class Mode:
    """Live on this machine's GPU, or a replay of a profile (None: the lesson's shipped one), and why."""

    live: bool
    profile: Path | None = None
    reason: str = ""

    @classmethod
    def decide(cls, profile: str | Path | None = None, device: int | str | None = None) -> Mode:
        """A profile asked for is replayed even on a GPU machine; without a GPU the shipped profile is. Live,
        GPU `device` (default: $LABCORE_DEVICE, else 0) becomes the process's device (labcore.device)."""
        if profile is not None:
            return cls(live=False, profile=Path(profile), reason=FROM_PROFILE)
        if not gpu_available():
            return cls(live=False, reason=NO_GPU)
        pick_device(device)
        return cls(live=True)


def live_line(lesson: str) -> str:
    """The mode line of a live run: 'day54: live on NVIDIA H200 (sm_90, asyncEngineCount=3, PCIe Gen5 x16)', with
    'GPU 1 of 2: ' before the name on a machine of several."""
    count = gpu_count()
    which = f"GPU {current_device()} of {count}: " if count > 1 else ""
    return f"{lesson}: live on {which}{device_facts().summary()}"


def run_lesson(main: Callable[[Sequence[str] | None], int], lesson: str, argv: Sequence[str] | None = None) -> int:
    """`python -m <lesson>`: run_cli(main); where a live run needs a reference answer that this edition withholds
    (the student bundle: the lesson measures the course's own answers to its exercises), one line saying so, then
    the course's recorded run of the same command replayed from the shipped profile."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        return run_cli(main, args)
    except ReferenceWithheld as exc:
        if "--from-profile" in args:
            raise
        shipped = default_profile(lesson)
        print(
            f"{lesson}: the live run stopped where it measures the course's reference answers, which the student "
            f"edition withholds ({str(exc).split(' is the ')[0]}); here is the course's recorded run instead "
            f"(--from-profile {shipped}). Your own answers run live in the notebook.",
            file=sys.stderr,
            flush=True,
        )
        return run_cli(main, [*args, "--from-profile", str(shipped)])
