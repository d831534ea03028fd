"""'Pending a GPU': the verdict of a check that, without a GPU, could not verify what its points need.

Offline a point is awarded only for what a check verified without trusting evidence the student made; what it
cannot decide is neither passed nor failed. Such a check raises `PendingGPU`: like any error in a test cell the
cell scores 0, and the grader (grader.status, the autograde table, the CSV export, the feedback, the class
report) finds it in the autograded notebook's error output by its name, `PENDING_GPU`, and says "pending a GPU"
where it would say failed. Graded again on a GPU machine, the check decides.
"""

from __future__ import annotations

PENDING_GPU = "PendingGPU"  # the exception's name, as an autograded notebook's error output shows it


class PendingGPU(Exception):
    """A check's verdict offline: not verified without a GPU; 0 until graded live. The message says what is left."""


def pending_message(what: str) -> str:
    """'pending a GPU: <what>; this cell counts 0 until it is graded on a GPU'."""
    return f"pending a GPU: {what}; this cell counts 0 until it is graded on a GPU"
