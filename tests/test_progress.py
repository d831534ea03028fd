"""labcore.progress: one plain line per finished step off a terminal, a tqdm bar on one."""

from __future__ import annotations

import io
import re

from labcore.progress import progress, track

LINE = re.compile(r"^(?P<desc>\S+): (?P<n>\d+)/(?P<total>\d+)(?: (?P<label>.+?))? \((?P<s>\d+\.\d) s\)$")


class FakeTTY(io.StringIO):
    """A StringIO that says it is a terminal."""

    def isatty(self) -> bool:
        return True


class BareWriter:
    """A stream with write and flush only: no isatty to ask."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass


def _parsed(text: str) -> list[dict[str, str | None]]:
    lines = text.splitlines()
    matches = [LINE.match(line) for line in lines]
    assert all(matches), lines
    return [m.groupdict() for m in matches]


def test_log_gets_one_plain_line_per_step_and_no_carriage_return():
    """Three steps into a StringIO: exactly three lines 'lesson_a: k/3 label (s)', no '\\r', nothing else."""
    log = io.StringIO()
    with progress(3, "lesson_a", file=log) as bar:
        assert log.getvalue() == ""  # nothing before the first step finishes
        bar.update("closed form")
        bar.update("pipelined b=2")
        bar.update()
    assert "\r" not in log.getvalue()
    rows = _parsed(log.getvalue())
    assert [(r["desc"], r["n"], r["total"], r["label"]) for r in rows] == [
        ("lesson_a", "1", "3", "closed form"),
        ("lesson_a", "2", "3", "pipelined b=2"),
        ("lesson_a", "3", "3", None),
    ]


def test_status_labels_the_step_that_finishes_and_is_then_cleared():
    """A status set during a step names its line when update() gives no label; the next step starts blank."""
    log = io.StringIO()
    with progress(2, "probes", unit="exp", file=log) as bar:
        bar.status("gather")
        bar.update()
        bar.update()
    assert [r["label"] for r in _parsed(log.getvalue())] == ["gather", None]


def test_set_description_renames_the_following_lines():
    """set_description changes the first word of the lines printed after it."""
    log = io.StringIO()
    with progress(2, "probes", file=log) as bar:
        bar.update("link")
        bar.set_description("saxpy")
        bar.update("mapped")
    assert [r["desc"] for r in _parsed(log.getvalue())] == ["probes", "saxpy"]


def test_terminal_gets_a_tqdm_bar():
    """A stream that is a tty gets tqdm's output: carriage returns, the description and the 0/3 count."""
    tty = FakeTTY()
    with progress(3, "lesson_a", file=tty) as bar:
        for label in ("a", "b", "c"):
            bar.update(label)
    out = tty.getvalue()
    assert "\r" in out and "lesson_a" in out and "0/3" in out
    assert not any(LINE.match(line) for line in out.splitlines())


def test_stream_without_isatty_gets_plain_lines():
    """An object with only write() and flush() counts as no terminal."""
    writer = BareWriter()
    with progress(1, "generate", file=writer) as bar:
        bar.update("lesson_a")
    assert [r["label"] for r in _parsed(writer.text)] == ["lesson_a"]


def test_default_is_stderr_at_call_time(capsys):
    """With no file, the lines go to whatever sys.stderr is when progress() is called, not stdout."""
    with progress(1, "feedback") as bar:
        bar.update("alice")
    captured = capsys.readouterr()
    assert captured.out == ""
    assert [r["label"] for r in _parsed(captured.err)] == ["alice"]


def test_track_counts_an_item_once_its_loop_body_is_done():
    """track yields the items in order; each line appears after that item's body ran, labelled with the item."""
    log = io.StringIO()
    lines_during_body = []
    for name in track(["lesson_a", "lesson_b"], "generate", unit="nb", file=log):
        lines_during_body.append((name, len(log.getvalue().splitlines())))
    assert lines_during_body == [("lesson_a", 0), ("lesson_b", 1)]
    rows = _parsed(log.getvalue())
    assert [(r["n"], r["total"], r["label"]) for r in rows] == [("1", "2", "lesson_a"), ("2", "2", "lesson_b")]
