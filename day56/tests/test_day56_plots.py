"""Day 56's figures as a reader sees them: the GPU bars' legend leaves every bar's value readable."""

from __future__ import annotations

from matplotlib.backends.backend_agg import FigureCanvasAgg

from day56 import plots
from day56.replay import shipped_profile


def test_the_gpu_bars_legend_hides_no_bars_value():
    """Drawn from the shipped profile: each bar's value label lies inside the figure and clear of the legend, which
    names the three kinds of bar."""
    fig = plots.gpu_bars(shipped_profile())
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent(renderer)
    values = [text for text in ax.texts if text.get_text().endswith(" ms")]
    assert len(values) == len(ax.patches) == 7  # the duplex floor and 3 chunk counts x 2 ways
    figure = fig.bbox
    for text in values:
        box = text.get_window_extent(renderer)
        assert not box.overlaps(legend), f"the legend covers {text.get_text()!r}"
        assert figure.x0 <= box.x0 and box.x1 <= figure.x1, f"{text.get_text()!r} runs off the figure"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["link floor", "stream by stream", "one graph"]
