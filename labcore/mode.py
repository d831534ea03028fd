"""Live or replay: every entry point decides once, and says which on its first line."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from labcore.device import current_device, device_facts, gpu_available, gpu_count, pick_device

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
