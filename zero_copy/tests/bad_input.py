"""Zero-copy's own bad input for tests/test_bad_input.py's sweep (read through the list of lessons): the options only
its command has, each with a bad value and what its one line must say (exit status 2). It replays its results.json,
not nsys exports."""

from __future__ import annotations

BAD_OPTIONS = (
    ("only-unknown", ("--only", "teleport"), "teleport"),
    ("rows-zero", ("--rows", "0"), "rows"),
    ("row-bytes-odd", ("--row-bytes", "17"), "row"),
    ("buffer-size-not-power-of-two", ("--buffer-size", "3MiB"), "buffer"),
    ("reads-in-words", ("--reads", "1,two"), "--reads"),
    ("reads-zero", ("--reads", "0"), "reads"),
    ("streams-zero", ("--streams", "0"), "streams"),
    ("blocks-per-sm-in-words", ("--both-blocks-per-sm", "a"), "--both-blocks-per-sm"),
    ("warmup-negative", ("--warmup", "-1"), "warmup"),
    ("reread-zero", ("--reread-k", "0"), "reread"),
    ("both-size-not-chunks", ("--both-size", "17MiB"), "both"),
)
