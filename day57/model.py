"""The arithmetic of what crosses the link when a job's data lives in managed memory (day57/solutions, exercise 1).

Without advice, every run of the job moves its input to the GPU and its output back: 2 x total bytes a run. With
the input read-mostly, the first run leaves a read-only copy on the GPU that later runs find there (a host write to
the input would drop it), and the output, preferring the host and mapped for the GPU, is written across the link
once a run: total bytes a run, plus the input once.
"""

from __future__ import annotations

from labcore.answers import reference


@reference
def bytes_moved(total_bytes: int, runs: int, advised: bool) -> int:
    """Bytes across the link over `runs` runs of a job of total_bytes in and total_bytes out, with or without the
    advice (input read-mostly, output preferring the host)."""
    if runs == 0:
        return 0
    return total_bytes * (runs + 1) if advised else 2 * total_bytes * runs
