"""selectBrokerForAssignment: the pipeline, its fallbacks, and the preallocation returned."""

from __future__ import annotations

import dataclasses
import random

from ballast.balance.decisions import ReasonKind
from ballast.balance.placement.select import (
    PlacementResult,
    select_broker,
    select_broker_for_assignment,
)
from ballast.balance.placement.strategies import PlacementState
from ballast.balance.snapshot import LoadSnapshot, Policies
from ballast.model.config import PlacementConfig
from ballast.model.loaddata import BundleData, LocalBrokerData
from ballast.model.policies import IsolationPolicies
from tests.balance.build import data, report, settings, snapshot

CONFIG = PlacementConfig.from_settings(settings())
BUNDLE = "t/n/0x40000000_0x80000000"
OTHER = "t/n/0x00000000_0x40000000"


def place(snap: LoadSnapshot, config: PlacementConfig = CONFIG, seed: int = 3) -> PlacementResult:
    return select_broker_for_assignment(snap, BUNDLE, config, PlacementState(), random.Random(seed))


def test_preallocated_bundle_goes_back_to_its_broker() -> None:
    snap = snapshot({"a": report(), "b": report()}, preallocated={"b": {BUNDLE: data()}})
    result = place(snap)
    assert result.decision.broker == "b"
    assert result.decision.reason.kind is ReasonKind.PREALLOCATED
    assert result.preallocation is None


def test_assignment_returns_the_preallocation_to_record() -> None:
    snap = snapshot({"a": report(), "b": report()}, long_term_rates={"a": 50.0})
    result = place(snap)
    assert result.decision.broker == "b"
    pre = result.preallocation
    assert (pre.bundle, pre.broker, pre.new_bundle_data) == (BUNDLE, "b", True)
    assert pre.data == BundleData.new_default()
    known = snapshot({"a": report(), "b": report()}, {BUNDLE: data(rate=5)})
    assert place(known).preallocation.new_bundle_data is False
    # the reason says how the broker stood out ("1 of 2 candidates tied" read oddly)
    assert result.decision.reason.text.endswith(", the lowest of 2 candidates")
    alone = place(snapshot({"a": report()})).decision.reason.text
    assert alone.endswith(", the only candidate"), alone
    tied = place(snapshot({"a": report(), "b": report()}, {BUNDLE: data(rate=5)}))
    assert tied.decision.reason.text.endswith("2 of 2 candidates tied, chosen at random")


def test_bundles_of_a_namespace_spread_over_brokers() -> None:
    # a is idler, but b serves no bundle of t/n yet.
    snap = snapshot({"a": report(bundles=[OTHER]), "b": report()}, long_term_rates={"b": 1000.0})
    assert place(snap).decision.broker == "b"
    uneven = dataclasses.replace(CONFIG, distribute_evenly=False)
    assert place(snap, uneven).decision.broker == "a"


def test_overloaded_choice_is_reconsidered_among_all_allowed_brokers() -> None:
    # Only "hot" serves no bundle of t/n, but it is overloaded: choose again among a and hot.
    snap = snapshot({"a": report(bundles=[OTHER]), "hot": report(cpu=95)})
    result = place(snap)
    assert result.decision.broker == "a"
    assert "overloadedFallback" in result.stats["candidates"]
    assert "hot is overloaded" in result.decision.reason.text


def test_unreadable_versions_fall_back_to_the_policy_brokers() -> None:
    config = dataclasses.replace(CONFIG, prefer_later_versions=True)
    snap = snapshot({"a": report(bundles=[OTHER], version="3.0.0"), "b": report()})
    result = place(snap, config)
    assert result.stats["candidates"]["filterFailedFallback"] == ["a", "b"]
    newest = snapshot({"a": report(version="3.1.0"), "b": report(version="3.0.0")})
    assert place(newest, config).decision.broker == "a"


def test_emptied_candidates_fall_back_to_the_policy_brokers() -> None:
    alien = LocalBrokerData(load_manager_class_name="Something")
    snap = snapshot({"a": alien, "b": alien})
    result = place(snap)
    assert result.decision is not None
    assert result.stats["candidates"]["emptyFallback"] == ["a", "b"]


def test_no_allowed_broker_means_no_decision() -> None:
    policies = Policies(
        isolation=IsolationPolicies.from_mapping(
            {"p": {"namespaces": ["t/n"], "primary": ["elsewhere"]}}
        )
    )
    result = place(snapshot({"a": report()}, policies=policies))
    assert result.decision is None and result.preallocation is None
    assert result.stats["reason"] == "NoBrokers"
    assert result.stats["detail"] == "no broker can take bundle t/n/0x40000000_0x80000000"


def test_excluded_namespaces_are_placed_round_robin_with_their_own_turn() -> None:
    config = dataclasses.replace(CONFIG, excluded_namespaces=frozenset({"t/n"}))
    snap = snapshot({"b": report(), "a": report()})
    state = PlacementState()
    picks = []
    for _ in range(3):
        selection = select_broker(snap, BUNDLE, config, state, random.Random(0))
        picks.append(selection.broker)
        state = selection.state
    assert picks == ["a", "b", "a"]
    assert selection.reason.kind is ReasonKind.ROUND_ROBIN
    assert state.excluded_round_robin.counter == 3 and state.round_robin.counter == 0


def test_non_persistent_bundles_need_brokers_that_enable_them() -> None:
    snap = snapshot({"a": report(non_persistent=False), "b": report(bundles=[OTHER])})
    result = select_broker_for_assignment(
        snap, BUNDLE, CONFIG, PlacementState(), random.Random(0), non_persistent=True
    )
    assert result.decision.broker == "b"
