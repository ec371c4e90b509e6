"""Charts reach their place whole or not at all."""

from __future__ import annotations

import tomllib
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
from matplotlib.figure import Figure

from ballast.sim.plots import _save, plot_run
from ballast.sim.runner import RunOptions, simulate
from ballast.sim.scenario import parse_scenario


def test_a_chart_stopped_while_written_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "loads.png"
    _save(plt.figure(), target)
    old = target.read_bytes()
    assert old.startswith(b"\x89PNG") and old.endswith(b"IEND\xaeB`\x82")

    def cut_off(self: Figure, path: Path, **_kwargs: object) -> None:
        Path(path).write_bytes(old[:100])  # a part of a PNG, then the signal
        raise KeyboardInterrupt

    monkeypatch.setattr(Figure, "savefig", cut_off)
    with pytest.raises(KeyboardInterrupt):
        _save(plt.figure(), target)
    assert target.read_bytes() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["loads.png"]


@pytest.mark.filterwarnings("error")  # matplotlib's "No artists with labels found" included
def test_a_run_of_many_brokers_and_no_moves_is_charted_without_a_warning(tmp_path: Path) -> None:
    """Past 12 brokers the lines are not labelled; with no move or split either, the legend
    had nothing to show and matplotlib warned on stderr."""
    text = 'duration = "2m"\n[cluster]\nbrokers = 13\n'
    result = simulate(parse_scenario(tomllib.loads(text)), RunOptions())
    assert not [d for d in result.decisions if d.origin == "shedding" or d.action == "split"]
    plot_run(result, tmp_path / "run.png")
    assert (tmp_path / "run.png").read_bytes().startswith(b"\x89PNG")
