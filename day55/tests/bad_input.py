"""Day 55's own bad input for tests/test_bad_input.py's sweep (read through the list of lessons): the options only
day 55's command has, each with a bad value and what its one line must say (exit status 2), and how it replays."""

from __future__ import annotations

REPLAYS_EXPORTS = True  # a recorded profile is read from its nsys exports, which the sweep then tampers with

BAD_OPTIONS = (
    ("buffers-zero", ("--buffers", "0"), "--buffers"),
    ("windows-bad", ("--windows", "4MiB,,x"), "--windows"),
    ("fmas-in-words", ("--fmas", "many"), "--fmas"),
    ("total-zero", ("--total", "0"), "--total 0B: the array needs a size"),
)
