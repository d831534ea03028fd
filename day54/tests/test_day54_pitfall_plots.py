"""The pitfalls drawn as timelines from the shipped exports, and the "name the pitfall" exercise and its check; the
lesson's figures carry the shipped record's numbers."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections import Counter

import pytest
from matplotlib.lines import Line2D

from day54 import checks, pitfalls, plots, report
from day54.config import Config, PassKey
from day54.live import run_live
from day54.replay import load_profile
from grader.bundle import sandbox_library
from grader.runner import REPO
from labcore import answers
from labcore.errors import UsageError
from labcore.pipeline.context import LEGACY

PROFILE = REPO / "day54" / "profiles" / "h200"
WINDOW = 64 << 20
RIGHT = pitfalls.pitfall_key()


@pytest.fixture(scope="module")
def record():
    return load_profile(PROFILE)


def _bars(ax) -> list[tuple[float, float]]:
    """(start ms, row bottom) of every bar on a timeline panel."""
    return sorted(tuple(path.vertices[0]) for c in ax.collections for path in c.get_paths())


def _vertical_lines(ax) -> list[float]:
    return [line.get_xdata()[0] for line in ax.get_lines() if isinstance(line, Line2D)]


# -- the labelled figure ----------------------------------------------------------------------------------


def test_each_pitfall_is_drawn_beside_the_correct_pipeline_on_its_row_axis(record):
    """Five rows of (correct pipeline, pitfall); each row's panels share one time axis that holds both."""
    fig = plots.pitfalls(record)
    axes = fig.axes
    assert len(axes) == 10
    for row, name in enumerate(pitfalls.NAMES):
        left, right = axes[2 * row], axes[2 * row + 1]
        assert left.get_title(loc="left").startswith("correct pipeline, 2 buffers: median of 5: 25.93 ms")
        assert left.get_xlim() == right.get_xlim()
        if name != pitfalls.ENQUEUE:
            ops = record.ops(pitfalls.pass_key(name, WINDOW))
            assert len(_bars(right)) == len(ops) == 48
            assert max(o.end_ns for o in ops) / 1e6 <= right.get_xlim()[1]
    titles = [axes[2 * row + 1].get_title(loc="left") for row in range(5)]
    assert [t.split(":")[0] for t in titles] == [
        "legacy-launch",
        "sync-in-loop",
        "more-streams-than-buffers",
        "pageable",
        "timing the enqueue",
    ]
    assert "A RACE, not an overlap failure" in titles[2]
    assert "A MEASUREMENT ERROR, not an overlap failure" in titles[4]
    assert not any("not an overlap failure" in t for t in (titles[0], titles[1], titles[3]))


def test_the_pageable_row_is_scaled_to_the_pageable_run(record):
    """The pageable pass takes ~9x the correct one; its row's axis reaches its end, the others' stay short."""
    axes = plots.pitfalls(record).axes
    pageable_ms = report.measured(record, "pitfall pageable", WINDOW, 2)
    assert axes[7].get_xlim()[1] >= pageable_ms > 9 * report.measured(record, "pipelined", WINDOW, 2)
    assert axes[1].get_xlim()[1] < 30


def test_timing_the_enqueue_marks_where_the_host_clock_stopped(record):
    """The correct pipeline's bars again, with one vertical line at the median enqueue time, far before the end."""
    axes = plots.pitfalls(record).axes
    enqueue, correct = axes[9], axes[8]
    assert _bars(enqueue) == _bars(correct)
    (stop_ms,) = _vertical_lines(enqueue)
    assert stop_ms == pytest.approx(report.enqueue_ms(record)) == pytest.approx(1.005, abs=0.001)
    assert stop_ms < 0.1 * report.measured(record, "pipelined", WINDOW, 2)
    assert any("host clock stopped: 1.01 ms" in t.get_text() for t in enqueue.texts)


def test_a_record_without_pitfall_traces_says_what_is_missing():
    """The shipped results.json traced only naive and pipelined: the error names the missing traces and the way out."""
    live_record = load_profile(PROFILE / "results.json")
    assert not plots.has_pitfall_timelines(live_record)
    with pytest.raises(UsageError, match=r"no per-op trace at 64MiB of legacy-launch, sync-in-loop, .*nsys exports"):
        plots.pitfalls(live_record)


# -- the exercise: unlabelled timelines and pitfall_key() -------------------------------------------------


def test_the_key_is_a_fixed_shuffle_of_the_five():
    """Letters A-E, each pitfall once, in neither alphabetical nor the lesson's order, the same every call."""
    assert list(RIGHT) == list("ABCDE") and sorted(RIGHT.values()) == sorted(pitfalls.NAMES)
    order = list(RIGHT.values())
    assert order != sorted(order) and order != list(pitfalls.NAMES)
    assert pitfalls.pitfall_key() == RIGHT


def test_unlabelled_panels_are_the_keyed_pitfalls_titled_only_by_letter(record):
    """Panel A is the pitfall the key gives for A (same bars, same marks), and its title is only 'A'."""
    labelled = plots.pitfalls(record).axes
    unlabelled = plots.unlabelled_pitfalls(record).axes
    for row, letter in enumerate("ABCDE"):
        panel = unlabelled[2 * row + 1]
        assert panel.get_title(loc="left") == letter
        same = labelled[2 * pitfalls.NAMES.index(RIGHT[letter]) + 1]
        assert _bars(panel) == _bars(same) and _vertical_lines(panel) == _vertical_lines(same)
        assert not any(name in text.get_text() for text in panel.texts for name in pitfalls.NAMES)


# -- check_pitfall_names ----------------------------------------------------------------------------------


def test_the_right_names_pass_in_any_reasonable_spelling(capsys, as_graded):
    """Case, spaces, underscores and hyphens do not matter; lower-case letters are accepted."""
    checks.check_pitfall_names(dict(RIGHT))
    spelled = {letter.lower(): name.upper().replace("-", " ") for letter, name in RIGHT.items()}
    spelled["b"] = "Timing_the_Enqueue"
    checks.check_pitfall_names(spelled)
    assert "all five named right" in capsys.readouterr().out


def test_two_swapped_names_say_how_many_are_right_not_which(as_graded):
    swapped = dict(RIGHT)
    swapped["A"], swapped["E"] = RIGHT["E"], RIGHT["A"]
    with pytest.raises(AssertionError) as failed:
        checks.check_pitfall_names(swapped)
    message = str(failed.value)
    assert message.startswith("3 of 5 timelines named right: compare each with the correct pipeline")
    assert not any(f"{letter} " in message or f" {letter}" in message for letter in "ABCDE")


def test_a_name_used_twice_is_pointed_out(as_graded):
    twice = dict(RIGHT, A=RIGHT["C"])
    with pytest.raises(AssertionError, match=rf"4 of 5 .*you named {RIGHT['C']} more than once"):
        checks.check_pitfall_names(twice)


def test_an_unknown_name_lists_the_valid_ones():
    with pytest.raises(AssertionError, match=r"timeline C: 'pagable' is not one of the five pitfalls; choose from "):
        checks.check_pitfall_names(dict(RIGHT, C="pagable"))
    with pytest.raises(AssertionError, match=r"timeline D: 3 is not one of the five .*timing-the-enqueue"):
        checks.check_pitfall_names(dict(RIGHT, D=3))


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (list(RIGHT.values()), r"your answer is a list; give a dict like \{'A': 'pageable'"),
        (None, "your answer is a NoneType; give a dict"),
        ({"A": RIGHT["A"], "B": RIGHT["B"]}, "your answer names no pitfall for C, D, E; give a dict"),
        (dict(RIGHT, F="pageable"), "'F' is not one of the timelines"),
        (dict(RIGHT, a="pageable"), "names timeline A twice"),
    ],
)
def test_answers_of_the_wrong_shape_say_what_was_expected(answer, message):
    with pytest.raises(AssertionError, match=message):
        checks.check_pitfall_names(answer)


def test_answers_travel_as_data_from_the_sandbox_to_the_checker(tmp_path, monkeypatch):
    """In the sandbox the names are filed and nothing is judged; the checker judges what was filed."""
    ghost = answers.Answer("my_names")
    for label, answer, ok in (("right", dict(RIGHT), True), ("wrong", dict(RIGHT, A=RIGHT["B"], B=RIGHT["A"]), False)):
        filed = tmp_path / f"{label}.jsonl"
        monkeypatch.setattr(answers, "role", answers.Role.collect(filed))
        checks.check_pitfall_names(answer)  # judges nothing, even a wrong answer
        monkeypatch.setattr(answers, "role", answers.Role.judge(filed, "0"))
        if ok:
            checks.check_pitfall_names(ghost)
        else:
            with pytest.raises(AssertionError, match="3 of 5 timelines named right"):
                checks.check_pitfall_names(ghost)


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    path = tmp_path_factory.mktemp("library")
    assert "day54.pitfalls.pitfall_key" in sandbox_library(REPO, path)
    return path


def test_an_answer_that_calls_pitfall_key_gets_nothing_in_the_sandbox(library, tmp_path, monkeypatch):
    """In the sandbox's copy pitfall_key raises ReferenceWithheld, so no answer is filed and the checker says so;
    the lesson's figure there says the order is withheld instead of failing."""
    filed = tmp_path / "answers.jsonl"
    student = textwrap.dedent(
        """
        import sys
        from labcore import answers
        answers.act(answers.Role.collect(sys.argv[1]))  # the grading process says its role
        from day54 import checks, pitfalls, plots
        from day54.replay import load_profile
        try:
            my_names = pitfalls.pitfall_key()  # the student's cell
        except Exception as exc:
            print(type(exc).__name__)
        try:
            checks.check_pitfall_names(my_names)  # the test cell
        except NameError:
            print("NameError")
        print(plots.unlabelled_pitfalls(load_profile()).texts[0].get_text())
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", student, str(filed)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(library), "MPLBACKEND": "Agg"},
        timeout=120,
    )
    assert run.stdout.splitlines() == [
        "ReferenceWithheld",
        "NameError",
        "while grading, the order of the timelines A-E is withheld: they are drawn in your own run",
    ], run.stderr
    monkeypatch.setattr(answers, "role", answers.Role.judge(filed, "0"))
    with pytest.raises(answers.NoAnswer, match="no answer came back from running your notebook"):
        checks.check_pitfall_names(answers.Answer("my_names"))


def test_an_answer_computed_by_pitfall_key_raises_where_it_is_computed(library, tmp_path, monkeypatch):
    """A student's function that returns pitfall_key() files the ReferenceWithheld it raised; the checker names it."""
    filed = tmp_path / "answers.jsonl"
    student = textwrap.dedent(
        """
        import sys
        from day54 import pitfalls
        from labcore import answers
        answers.act(answers.Role.collect(sys.argv[1]))  # the grading process says its role
        try:
            answers.answer("your names for the pitfall timelines A-E", ("day54 pitfall names",), pitfalls.pitfall_key)
        except AssertionError as exc:
            print(type(exc).__name__)
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", student, str(filed)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(library)},
        timeout=120,
    )
    assert run.stdout.split() == ["AnswerRaised"], run.stderr
    monkeypatch.setattr(answers, "role", answers.Role.judge(filed, "0"))
    with pytest.raises(answers.AnswerRaised, match=r"your code raised ReferenceWithheld: day54\.pitfalls\.pitfall_key"):
        checks.check_pitfall_names(answers.Answer("my_names"))


def test_pitfall_pass_keys_name_the_exported_ranges(record):
    """pass_key gives the NVTX range names the replay reads, at the pitfalls' depth of 2."""
    for name in pitfalls.GPU_VISIBLE:
        key = pitfalls.pass_key(name, WINDOW)
        assert key == PassKey(f"pitfall {name}", WINDOW, 2) and record.has_pass(key)


@pytest.mark.gpu
def test_a_live_run_traces_every_pitfall_and_draws_them(tmp_path):
    """Live: each pitfall gets one extra traced run (all its ops, on the streams it used), and the figure draws them
    titled with the timed median and that run's own span; a saved record draws the same."""
    window = 16 << 20
    record = run_live(Config(total_bytes=256 << 20, window_bytes=window, windows=[window], buffers=[2], repeats=3))
    for name in pitfalls.GPU_VISIBLE:
        ops = record.ops(pitfalls.pass_key(name, window))
        assert Counter(o.op for o in ops) == {"h2d": 16, "kernel": 16, "d2h": 16}, name
    legacy = record.ops(pitfalls.pass_key("legacy-launch", window))
    assert [(o.op, o.chunk) for o in legacy if o.stream == LEGACY] == [("kernel", 8)]
    assert {o.stream for o in record.ops(pitfalls.pass_key("more-streams-than-buffers", window))} == {0, 1, 2}
    spans = {
        name: max(o.end_ns for o in record.ops(pitfalls.pass_key(name, window)))
        for name in ("sync-in-loop", "pageable")
    }
    correct_span = max(o.end_ns for o in record.ops(PassKey("pipelined", window, 2)))
    assert min(spans.values()) > 1.2 * correct_span
    axes = plots.pitfalls(record).axes
    for ax in axes[:9]:
        assert "; drawn: one extra traced run, " in ax.get_title(loc="left")
    assert "legacy default" in [t.get_text() for t in axes[1].get_yticklabels()]
    assert _vertical_lines(axes[9]) == [pytest.approx(report.enqueue_ms(record))]
    saved = load_profile(record.save(tmp_path / "results.json"))
    assert _bars(plots.unlabelled_pitfalls(saved).axes[1]) == _bars(
        plots.pitfalls(record).axes[2 * pitfalls.NAMES.index(RIGHT["A"]) + 1]
    )


def test_the_figures_carry_the_record_numbers():
    """The sweep plots the replayed ratios; the stage bars are the table's numbers."""
    record = load_profile(PROFILE / "results.json")
    sweep = plots.sweep(record)
    lines = {line.get_label(): list(line.get_ydata()) for line in sweep.axes[0].get_lines()}

    assert lines["2 buffers measured"] == pytest.approx([report.ratio(record, w, 2) for w in report.windows(record)])
    assert lines["threshold 0.7"][0] == pytest.approx(0.70)
    stages = plots.stages(record)
    widths = [patch.get_width() for patch in stages.axes[0].patches]
    assert widths[0] == pytest.approx(report.stages(record, 64 << 20).sum_ms)
    timeline = plots.timeline(record)
    assert len(timeline.axes) == 3 and len(_bars(timeline.axes[0])) == 48
