"""A scenario's ``[expect]`` table checked on a run's summary, and the misses told in the
words the scenario file used."""

from __future__ import annotations

import tomllib
from typing import Any

from ballast.sim.scenario import parse_scenario
from ballast.sim.summary import EXPECT_KEYS, check_expectations, failed_expectations

EXPECT = """
duration = "1m"
[cluster]
brokers = 1
[expect]
final_std_max = 0.05
final_ratio_max = 1.1
converged_within = "5m"
moves_max = 10
moves_min = 3
bounces_max = 0
new_brokers_loaded_within_cycles = 2
unowned_topic_seconds_max = 100
"""

SUMMARY: dict[str, Any] = {
    "final": {"std": 0.2, "ratio": 1.05},
    "convergenceS": None,
    "moves": {"shedding": 1},
    "bounces": 0,
    "newBrokers": [{"broker": "b"}],
    "newBrokersLoadedWithinCycles": 4,
    "unownedTopicSeconds": 250.0,
}


def test_every_key_of_the_file_is_checked_and_a_miss_is_named_as_the_file_names_it() -> None:
    expect = parse_scenario(tomllib.loads(EXPECT)).expect
    checks = check_expectations(expect, SUMMARY)
    assert set(checks) == set(EXPECT_KEYS)  # every [expect] key but invariants
    assert set(EXPECT_KEYS.values()) == set(tomllib.loads(EXPECT)["expect"])
    lines = failed_expectations({"expectations": checks})
    assert lines == [
        "final_std_max (finalStdMax): expected at most 0.05, got 0.2",
        "converged_within (convergedWithinS): expected at most 300.0, got never",
        "new_brokers_loaded_within_cycles (newBrokersLoadedWithinCycles): "
        "expected at most 2, got 4",
        "unowned_topic_seconds_max (unownedTopicSecondsMax): expected at most 100.0, got 250.0",
        "moves_min (movesMin): expected at least 3, got 1",
    ]


def test_a_run_that_ends_with_no_broker_misses_its_load_goals_as_no_brokers() -> None:
    expect = parse_scenario(tomllib.loads(EXPECT)).expect
    summary = {**SUMMARY, "final": {"std": None, "ratio": None}, "convergenceS": 0.0}
    checks = check_expectations(expect, summary)
    assert not checks["finalStdMax"]["ok"] and not checks["finalRatioMax"]["ok"]
    lines = failed_expectations({"expectations": checks})
    assert "final_std_max (finalStdMax): expected at most 0.05, got no brokers" in lines
    assert "final_ratio_max (finalRatioMax): expected at most 1.1, got no brokers" in lines
