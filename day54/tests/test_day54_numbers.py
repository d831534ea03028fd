"""One number per quantity: timeline titles carry the table's medians, the stage bars say what was measured, and a
replay names every option it cannot honour."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from day54 import plots, report
from day54.__main__ import main
from day54.config import PassKey
from day54.replay import load_profile
from labcore.device import gpu_available
from labcore.errors import run_cli
from labcore.exports import median_instance

ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "day54" / "profiles" / "h200"
WINDOW = 64 << 20
MEDIAN = re.compile(r"median of (\d+): ([\d.]+) ms")


@pytest.fixture(scope="module")
def replayed():
    return load_profile(PROFILE)


@pytest.fixture(scope="module")
def from_json():
    return load_profile(PROFILE / "results.json")


def _title_median(title: str) -> tuple[int, float]:
    count, value = MEDIAN.search(title).groups()
    return int(count), float(value)


def test_timeline_titles_are_the_table_medians(replayed):
    """naive 44.57, 2 buffers 25.93, 3 buffers 23.13 ms: the table's medians, and the drawn repeat ends there."""
    axes = plots.timeline(replayed).axes
    keys = [PassKey("naive", WINDOW, 1), PassKey("pipelined", WINDOW, 2), PassKey("pipelined", WINDOW, 3)]
    for ax, key in zip(axes, keys, strict=True):
        times = replayed.pass_times(key)
        assert _title_median(ax.get_title(loc="left")) == (5, round(times.median_ms, 2))
        assert max(o.end_ns for o in replayed.ops(key)) / 1e6 == pytest.approx(times.median_ms, abs=1e-9)
    titles = [ax.get_title(loc="left") for ax in axes]
    assert [_title_median(t)[1] for t in titles] == [44.57, 25.93, 23.13]
    assert all(t.endswith(")") and "(drawn: repeat " in t for t in titles)
    assert f"{report.measured(replayed, 'pipelined', WINDOW, 2):.3f}" == "25.928"


def test_every_drawn_pitfall_repeat_is_its_median(replayed):
    """The replay keeps, for naive, pipelined and each pitfall, the timed repeat whose time is the median."""
    drawn = replayed.extra[report.TRACE_REPEAT]
    assert len(drawn) == 7 and all(PassKey.parse(key).window_bytes == WINDOW for key in drawn)
    for key, repeat in drawn.items():
        times = replayed.pass_times(key)
        assert times.times_ms[repeat] == times.median_ms
        assert max(o.end_ns for o in replayed.ops(key)) / 1e6 == pytest.approx(times.median_ms, abs=1e-9)
    for ax in plots.pitfalls(replayed).axes:
        count, value = _title_median(ax.get_title(loc="left"))
        assert count == 5 and value in {round(p.median_ms, 2) for p in replayed.passes}


def test_an_extra_traced_run_is_titled_with_the_median_and_its_own_span(from_json):
    """A live record's timeline is one more run with events around each op: both numbers, each labelled."""
    title = plots.timeline(from_json).axes[1].get_title(loc="left")
    key = PassKey("pipelined", WINDOW, 2)
    span_ms = max(o.end_ns for o in from_json.ops(key)) / 1e6
    assert title == (
        f"pipelined, 2 buffers: median of 5: {from_json.pass_times(key).median_ms:.2f} ms; "
        f"drawn: one extra traced run, {span_ms:.2f} ms"
    )
    assert title.endswith("median of 5: 25.92 ms; drawn: one extra traced run, 25.47 ms")


def test_a_drawn_repeat_that_is_not_the_median_says_so(replayed):
    """With an even count no repeat is the median: the drawn one is the nearest, and the title gives both numbers."""
    assert median_instance([3.0, 1.0, 2.0]) == 2
    assert median_instance([1.0, 2.0, 3.0, 5.0]) == 1
    key = PassKey("naive", WINDOW, 1)
    clone = load_profile(PROFILE)
    times = clone.pass_times(key)
    assert clone.extra[report.TRACE_REPEAT][str(key)] == 1  # 44.571 ms, the median of the five
    times.times_ms = times.times_ms[:4]  # 44.581, 44.571, 44.559, 44.623: median 44.576
    assert plots.median_title(clone, key) == "median of 4: 44.58 ms; drawn: repeat 2, 44.57 ms"


def test_the_link_floor_bar_is_measured(replayed):
    """The duplex probe's median is drawn in the measured colour, beside the model's sum and max."""
    fig = plots.stages(replayed)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    colours = dict(zip(labels, (p.get_facecolor() for p in ax.patches), strict=True))
    assert colours["link floor (duplex)"] == colours["measured naive"] != colours["naive bound (sum)"]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["model (of the measured stages)", "measured"]
    widths = dict(zip(labels, (p.get_width() for p in ax.patches), strict=True))
    assert widths["link floor (duplex)"] == pytest.approx(report.link_floor_ms(replayed))


# -- a replay names the options it cannot honour ----------------------------------------------------------

REPLAY_ONLY = pytest.mark.skipif(gpu_available(), reason="with a GPU these options shape a live run")


@REPLAY_ONLY
@pytest.mark.parametrize(
    ("args", "lines"),
    [
        (["--buffers", "4"], ["replay: --buffers 4 not in the recording (it has 2,3); showing 2,3"]),
        (["--buffers", "2,4"], ["replay: --buffers 2,4: 4 not in the recording (it has 2,3); showing 2,3"]),
        (["--buffers", "2"], ["replay: --buffers 2: the recording has 2,3; showing 2,3"]),
        (["--fmas", "256"], ["replay: --fmas 256 not in the recording (it has 512); showing 512"]),
        (["--total", "2GiB"], ["replay: --total 2GiB not in the recording (it has 1GiB); showing 1GiB"]),
        (["--repeats", "3"], ["replay: --repeats 3 not in the recording (it has 5); showing 5"]),
        (
            ["--windows", "4MiB,16MiB"],
            [
                "replay: --windows 4MiB,16MiB: 16MiB not in the recording (it has 4MiB,64MiB,256MiB); "
                "showing 4MiB,64MiB,256MiB"
            ],
        ),
        (["--no-pitfalls"], ["replay: --no-pitfalls: the recording has the pitfall runs; showing them"]),
        (
            ["--buffers", "4", "--repeats", "9", "--fmas", "1"],
            [
                "replay: --buffers 4 not in the recording (it has 2,3); showing 2,3",
                "replay: --fmas 1 not in the recording (it has 512); showing 512",
                "replay: --repeats 9 not in the recording (it has 5); showing 5",
            ],
        ),
        (["--buffers", "2,3", "--fmas", "512", "--repeats", "5", "--windows", "4MiB,64MiB,256MiB"], []),
    ],
)
def test_each_option_a_replay_cannot_honour_gets_one_line(args, lines, capsys):
    """One stderr line per option given that the recording lacks; options it honours say nothing."""
    assert run_cli(main, ["--from-profile", str(PROFILE), *args]) == 0
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.startswith("replay:")] == lines


@REPLAY_ONLY
def test_the_seed_of_a_recording_is_named(capsys):
    seed = load_profile(PROFILE / "results.json").config["seed"]
    assert run_cli(main, ["--from-profile", str(PROFILE), "--seed", str(seed + 1)]) == 0
    assert f"replay: --seed {seed + 1} not in the recording (it has {seed}); showing {seed}" in capsys.readouterr().err
    assert run_cli(main, ["--from-profile", str(PROFILE), "--seed", str(seed)]) == 0
    assert "replay:" not in capsys.readouterr().err


@REPLAY_ONLY
def test_timelines_at_an_untraced_window_say_which_window_they_show(tmp_path, capsys):
    """--window 4MiB --plot: tables at 4 MiB; the timelines, traced at 64 MiB only, say they show 64 MiB."""
    assert run_cli(main, ["--from-profile", str(PROFILE), "--window", "4MiB", "--plot", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert (
        "replay: --window 4MiB: the recording traced its timelines at 64MiB; the timelines show 64MiB" in captured.err
    )
    assert "Window 4MiB: 256 chunks of 4MiB" in captured.out
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "day54_pitfalls.png",
        "day54_stages.png",
        "day54_sweep.png",
        "day54_timeline.png",
    ]
