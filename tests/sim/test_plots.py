"""Charts reach their place whole or not at all."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pytest
from matplotlib.figure import Figure

from ballast.sim.plots import _save


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
