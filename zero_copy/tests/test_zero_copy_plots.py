"""python -m zero_copy --plot: its help names the plots it writes (it named two and wrote three)."""

from __future__ import annotations

from zero_copy import plots, replay
from zero_copy.__main__ import build_parser


def _plot_help() -> str:
    action = next(a for a in build_parser()._actions if "--plot" in a.option_strings)
    return " ".join(action.help.split())


def test_plot_help_names_every_plot_it_writes(tmp_path):
    """From the shipped profile --plot writes three PNGs; the help says three, and names each one's experiment."""
    written = plots.write_all(replay.load_profile(), tmp_path)
    assert sorted(p.name for p in written) == sorted(p.name for p in tmp_path.iterdir())
    assert len(written) == 3
    said = _plot_help()
    assert f"{len(written)} plots" in said
    for path in written:
        experiment = path.stem.removeprefix("zero_copy_")
        assert plots.FIGURES[experiment][1] in said, experiment
