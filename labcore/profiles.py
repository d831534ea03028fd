"""Where the recorded profiles live, and which one a lesson replays by default."""

from __future__ import annotations

import os
from pathlib import Path

from labcore.errors import UsageError

PROFILES_DIR = Path(os.environ.get("COURSE_PROFILES", Path(__file__).resolve().parents[1] / "profiles"))
DEFAULT_GPU = "h200"


def default_profile(lesson: str, gpu: str = DEFAULT_GPU) -> Path:
    """The shipped profile directory for a lesson; UsageError when it is missing."""
    path = PROFILES_DIR / gpu / lesson
    if not path.is_dir():
        raise UsageError(f"no GPU found and no recorded profile at {path}; "
                         f"install CuPy on a GPU machine or pass --from-profile DIR")
    return path
