"""Day 55's figures: the timeline has a panel for every way of allocating the record traced (cupy-cold had
none)."""

from __future__ import annotations

from day55 import plots, report
from day55.config import VARIANTS, PassKey
from day55.replay import shipped_profile


def test_the_timeline_has_a_panel_for_every_traced_way_of_allocating():
    """The shipped profile traces all eight ways at 64 MiB; the timeline draws eight panels, cupy-cold's among them,
    in the report's order."""
    record = shipped_profile()
    window, buffers = plots.traced_window(record), report.buffers(record)
    traced = [name for name in VARIANTS if record.ops(PassKey(name, window, buffers))]
    assert len(traced) == len(VARIANTS) == 8
    titles = [ax.get_title(loc="left") or ax.get_title() for ax in plots.timeline(record).axes]
    drawn = [title.split(":")[0] for title in titles if title]
    assert drawn == traced
    assert "cupy-cold" in drawn
