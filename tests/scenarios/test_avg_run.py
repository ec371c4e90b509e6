"""AvgShedder through the real runtime: the leader's shedding cycle sends every bundle it
unloads to the broker its pair was, and the hot broker of ``hot-broker`` is only partly
relieved (AvgShedder moves a fifth of a pair's traffic gap, after 8 runs past 15 points)."""

from __future__ import annotations

import logging

from ballast.sim.runner import RunOptions, simulate
from ballast.sim.scenario import load_scenario
from ballast.sim.summary import failed_expectations, summarize
from tests.scenarios.replay import LIBRARY


def test_avg_moves_each_bundle_to_its_pair_and_leaves_the_hot_broker_hot() -> None:
    logging.getLogger("ballast").setLevel(logging.ERROR)
    scenario = load_scenario(LIBRARY / "hot-broker.toml")
    result = simulate(scenario, RunOptions(strategy="avg", check_invariants=True))
    shed = [d for d in result.decisions if d.origin == "shedding"]
    assert shed, "the hot broker's pair passes the low hit count within the run"
    assert {d.source for d in shed} == {"broker-000:8080"}  # the broker whose topics tripled
    assert all("the broker AvgShedder paired" in d.reason for d in shed)
    summary = summarize(result)
    assert summary["invariantChecks"] == round(scenario.duration_s / scenario.step_s) + 1
    assert any("finalRatioMax" in line for line in failed_expectations(summary))
