"""Day 57's own bad input for tests/test_bad_input.py's sweep (read through the list of lessons): the options its
command has its own way (the kit's shared ones are swept for every lesson), each with a bad value and what its one
line must say (exit status 2). It replays its NVTX ranges and unified-memory bins, not the pipeline's exports
(day57/tests/test_day57_replay.py tampers with those)."""

from __future__ import annotations

BAD_OPTIONS = (
    ("window-not-dividing", ("--window", "3MiB"), "--window 3MiB does not divide --total"),
    ("one-stream", ("--buffers", "1"), "--buffers 1: at least 2"),
    ("one-window-only", ("--windows", "4MiB,64MiB"), "unrecognized arguments: --windows"),
)
