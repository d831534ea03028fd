"""Live or replay: every entry point decides once, and says which on its first line."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from labcore.device import device_facts, gpu_available

FROM_PROFILE = "--from-profile"
NO_GPU = "no GPU here"


@dataclasses.dataclass(frozen=True)
class Mode:
    """Live on this machine's GPU, or a replay of a profile (None: the lesson's shipped one), and why."""

    live: bool
    profile: Path | None = None
    reason: str = ""

    @classmethod
    def decide(cls, profile: str | Path | None = None) -> Mode:
        """A profile asked for is replayed even on a GPU machine; without a GPU the shipped profile is."""
        if profile is not None:
            return cls(live=False, profile=Path(profile), reason=FROM_PROFILE)
        if not gpu_available():
            return cls(live=False, reason=NO_GPU)
        return cls(live=True)


def live_line(lesson: str) -> str:
    """The mode line of a live run: 'day54: live on NVIDIA H200 (sm_90, asyncEngineCount=3, PCIe Gen5 x16)'."""
    return f"{lesson}: live on {device_facts().summary()}"
