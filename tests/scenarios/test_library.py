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


def test_the_library_and_the_schema_are_documented() -> None:
    doc = (LIBRARY.parent / "docs" / "simulator.md").read_text(encoding="utf-8")
    for path in FILES:
        assert f"| `{path.stem}` |" in doc, path.stem
    for key in (
        "add_brokers",
        "stop_brokers",
        "crash_brokers",
        "restart_brokers",
        "create_namespace",
        "create_topics",
        "scale_rates",
        "size_factor",
        "rate_max",
        "copy",
        "rate_multiplier",
        "diurnal",
        "bursts",
        "random_walk",
        "hot_spot",
        "final_std_max",
        "final_ratio_max",
        "converged_within",
        "moves_max",
        "moves_min",
        "bounces_max",
        "new_brokers_loaded_within_cycles",
        "unowned_topic_seconds_max",
        "memory_per_topic_mb",
        "target_std",
        "anti_affinity_group",
    ):
        assert f"`{key}" in doc or f"{key} =" in doc, key
