"""Day 56's own bad input for tests/test_bad_input.py's sweep (read through the list of lessons): the options only
day 56's command has, each with a bad value and what its one line must say (exit status 2), and how it replays."""

from __future__ import annotations

REPLAYS_EXPORTS = True  # a recorded profile is read from its nsys exports, which the sweep then tampers with

BAD_OPTIONS = (
    ("window-not-dividing", ("--window", "3MiB"), "--window"),
    ("buffers-zero", ("--buffers", "0"), "--buffers"),
    ("fmas-negative", ("--fmas", "-5"), "--fmas"),
    ("total-not-a-size", ("--total", "lots"), "--total"),
)
