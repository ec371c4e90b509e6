"""Scenario tests: short scenarios replayed through the real brokers, controller and
strategies on virtual time, with the invariants checked at every step, each against the
outcome its ``[expect]`` table states.

Ballast's strategy must meet every expectation. Each scenario is also replayed with a
strategy known to miss (shedding switched off, the Pulsar strategy whose weakness the
scenario was written for, a placement that puts unloaded bundles back where they came from, or
Ballast's strategy without the rule the scenario is there for), and at least one expectation
must fail then: the expectations are sharp enough to catch a broken balancer.

The library scenarios that fit the time budget are replayed as they are; the two 100-broker
ones have test-sized variants in ``data/`` (the restart one also lightly loaded, as the
library's is)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scenarios.replay import DATA, LIBRARY, failures, replay

SHEDDING_OFF = ("loadBalancerSheddingEnabled=false",)
BLIND_PLACEMENT = ("loadBalancerLoadPlacementStrategy=least_resource_usage_with_weight",)

# scenario file -> (strategy that misses, extra settings) for the negative control
SCENARIOS: dict[Path, tuple[str, tuple[str, ...]]] = {
    LIBRARY / "scale-up-5-to-10.toml": ("ballast", SHEDDING_OFF),
    LIBRARY / "scale-down-10-to-5.toml": ("threshold", ()),
    LIBRARY / "over-unloading.toml": ("threshold", ()),
    LIBRARY / "new-broker-idle.toml": ("threshold", ()),
    LIBRARY / "hot-broker.toml": ("transfer", ()),
    LIBRARY / "rolling-restart-10.toml": ("transfer", ()),
    # Ballast's shedding with a placement that does not know where a bundle came from.
    LIBRARY / "bundles-bounce-back.toml": ("ballast", BLIND_PLACEMENT),
    # Ballast's shedding without its swing rule chases every burst (144 moves, not 31).
    LIBRARY / "passing-bursts.toml": ("ballast", ("loadBalancerBallastSwingHitCountThreshold=0",)),
    # A snapshot's load copied in: TransferShedder ends at std-dev 0.13 (under its 0.25).
    LIBRARY / "copied-cluster.toml": ("transfer", ()),
    # Small brokers join large ones: TransferShedder ends at std-dev 0.15 (and Ballast's own
    # moves, scored by the loads' squares instead of their variance, stopped at 0.17).
    LIBRARY / "mixed-machines.toml": ("transfer", ()),
    DATA / "restart-10-brokers.toml": ("ballast", SHEDDING_OFF),
    # The same at about 1% load: judged by ratios, which absolute margins never see.
    DATA / "restart-10-brokers-light.toml": ("threshold", ()),
    DATA / "day-10-brokers.toml": ("ballast", SHEDDING_OFF),
}
IDS = [path.stem for path in SCENARIOS]


@pytest.mark.parametrize("path", list(SCENARIOS), ids=IDS)
def test_ballast_meets_the_expectations(path: Path) -> None:
    summary = replay(path, "ballast")
    assert summary["expectations"], "the scenario states what it expects"
    assert failures(summary) == []


@pytest.mark.parametrize("path", list(SCENARIOS), ids=IDS)
def test_a_broken_balancer_misses_them(path: Path) -> None:
    strategy, overrides = SCENARIOS[path]
    summary = replay(path, strategy, *overrides)
    assert failures(summary) != []
