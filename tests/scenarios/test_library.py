"""The scenario library (``scenarios/*.toml``): every file parses and validates, names itself
after its file, describes what it shows, states what is expected of it, and keeps its events
inside its duration."""

from __future__ import annotations

from pathlib import Path

import pytest

from ballast.sim.scenario import Expectations, load_scenario

LIBRARY = Path(__file__).resolve().parents[2] / "scenarios"
FILES = sorted(LIBRARY.glob("*.toml"))


def test_the_library_is_there() -> None:
    assert len(FILES) >= 9


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_scenario_parses_and_validates(path: Path) -> None:
    scenario = load_scenario(path)
    assert scenario.name == path.stem
    assert scenario.description.strip()
    assert scenario.expect != Expectations(), "a library scenario states what it expects"
    assert all(0 <= event.at_s < scenario.duration_s for event in scenario.events)
    assert scenario.duration_s % scenario.step_s == 0
