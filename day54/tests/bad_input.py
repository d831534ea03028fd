"""Day 54's own bad input for tests/test_bad_input.py's sweep (read through the list of lessons): the options only
day 54's command has, each with a bad value and what its one line must say (exit status 2), and how it replays."""

from __future__ import annotations

REPLAYS_EXPORTS = True  # a recorded profile is read from its nsys exports, which the sweep then tampers with

BAD_OPTIONS = (
    ("buffers-in-words", ("--buffers", "2,three"), "--buffers"),
    ("buffers-zero", ("--buffers", "0"), "--buffers"),
    ("windows-bad", ("--windows", "4MiB,huge"), "--windows"),
    ("fmas-negative", ("--fmas", "-1"), "--fmas"),
    ("total-not-a-size", ("--total", "1XB"), "--total"),
    ("gpus-with-windows", ("--gpus", "--windows", "4MiB"), "--windows"),
    ("gpus-with-device", ("--gpus", "--device", "1"), "--device"),
)
