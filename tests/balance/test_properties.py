"""Invariants over generated snapshots (derandomized hypothesis: the same examples every run):
no move breaks a grace period, placement never picks a filtered-out broker, decisions are a
function of the inputs and the seed, and inputs are never mutated."""

from __future__ import annotations

import random
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ballast.balance.cycle import run_shedding_cycle
from ballast.balance.decisions import Transfer, Unload
from ballast.balance.placement.filters import apply_namespace_policies
from ballast.balance.placement.select import select_broker_for_assignment
from ballast.balance.placement.strategies import PlacementState
from ballast.balance.shedding.registry import SHEDDERS
from ballast.balance.snapshot import LoadSnapshot, Policies
from ballast.model.config import PlacementConfig, SheddingConfig
from ballast.model.policies import IsolationPolicies
from tests.balance.build import MB, data, report, snapshot, stats
from tests.balance.build import settings as make_settings

NOW = 1_700_000_000_000
GRACE_MS = 30 * 60_000
NAMESPACES = ("t/a", "t/b", "pulsar/system")
BUNDLES = tuple(
    f"{ns}/0x{i * 0x20000000:08x}_0x{min((i + 1) * 0x20000000, 0xFFFFFFFF):08x}"
    for ns in NAMESPACES
    for i in range(8)
)
CHECKS = settings(
    derandomize=True,
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@st.composite
def snapshots(draw: st.DrawFn) -> LoadSnapshot:
    brokers = [f"b{i}:8080" for i in range(draw(st.integers(1, 5)))]
    owners = {b: draw(st.sampled_from([*brokers, None])) for b in BUNDLES}
    tput = {b: draw(st.sampled_from([0.0, 0.5, 2.0, 7.0, 20.0])) * MB for b in BUNDLES}
    rate = {b: draw(st.sampled_from([0.0, 10.0, 3000.0, 40000.0])) for b in BUNDLES}
    reports = {}
    for broker in brokers:
        own = [b for b in BUNDLES if owners[b] == broker]
        reports[broker] = report(
            cpu=draw(st.sampled_from([0.0, 5.0, 40.0, 85.0, 95.0, 120.0])),
            bandwidth=draw(st.sampled_from([0.0, 30.0, 90.0])),
            tput=sum(tput[b] for b in own),
            rate=sum(rate[b] for b in own),
            stats={
                b: stats(tput[b], rate[b], topics=draw(st.sampled_from([0, 1, 2, 1500])))
                for b in own
            },
            last_update=NOW - draw(st.sampled_from([0, 60_000, 2_000_000])),
        )
    bundle_data = {b: data(tput[b], rate[b]) for b in BUNDLES if draw(st.booleans())}
    unloaded = {
        b: NOW - draw(st.sampled_from([0, GRACE_MS - 1, GRACE_MS, GRACE_MS + 1, 3 * GRACE_MS]))
        for b in BUNDLES
        if draw(st.integers(0, 3)) == 0
    }
    unloaded_brokers = {b: NOW - 600_000 for b in brokers if draw(st.integers(0, 4)) == 0}
    isolation = IsolationPolicies()
    if draw(st.booleans()):
        isolation = IsolationPolicies.from_mapping(
            {"p": {"namespaces": ["t/a"], "primary": ["b0"], "secondary": ["b1"]}}
        )
    groups = {"t/a": "g", "t/b": "g"} if draw(st.booleans()) else {}
    return snapshot(
        reports,
        bundle_data,
        unloaded=unloaded,
        unloaded_brokers=unloaded_brokers,
        policies=Policies(isolation=isolation, anti_affinity_groups=groups),
    )


def fingerprint(snap: LoadSnapshot) -> bytes:
    return msgspec.json.encode(
        {
            "brokers": dict(snap.brokers),
            "bundles": dict(snap.bundles),
            "unloaded": dict(snap.recently_unloaded_bundles),
            "unloadedBrokers": dict(snap.recently_unloaded_brokers),
            "isolation": snap.policies.isolation,
            "groups": dict(snap.policies.anti_affinity_groups),
            "load": dict(snap.broker_load),
        },
        order="deterministic",
    )


def run_cycle(snap: LoadSnapshot, name: str, seed: int, overrides: dict[str, Any]) -> Any:
    shedder = SHEDDERS[name]
    conf = make_settings(**overrides)
    return run_shedding_cycle(
        snap,
        shedder,
        shedder.initial_state(),
        shedder.config_from_settings(conf),
        shedding=SheddingConfig.from_settings(conf),
        placement=PlacementConfig.from_settings(conf),
        placement_state=PlacementState(),
        rng=random.Random(seed),
        now_ms=NOW,
    )


OVERRIDES = st.sampled_from(
    [
        {},
        {"loadBalancerSheddingConditionHitCountThreshold": 0},
        {
            "loadBalancerSheddingConditionHitCountThreshold": 0,
            "loadBalancerSheddingBundlesWithPoliciesEnabled": True,
            "loadBalancerLoadPlacementStrategy": "least_resource_usage_with_weight",
        },
        {
            "loadBalancerBundleUnloadMinThroughputThreshold": 0.0,
            "lowerBoundarySheddingEnabled": True,
        },
        {"loadBalancerLoadPlacementStrategy": "round_robin"},
        {"loadBalancerLoadPlacementStrategy": "ballast"},
    ]
)


@CHECKS
@given(snapshots(), st.sampled_from(sorted(SHEDDERS)), st.integers(0, 5), OVERRIDES)
def test_no_move_within_the_grace_period(
    snap: LoadSnapshot, name: str, seed: int, overrides: dict[str, Any]
) -> None:
    result = run_cycle(snap, name, seed, overrides)
    for decision in result.decisions:
        assert isinstance(decision, Unload | Transfer)
        unloaded_at = snap.recently_unloaded_bundles.get(str(decision.bundle))
        assert unloaded_at is None or unloaded_at < NOW - GRACE_MS, decision
    # The strategies alone never touch a recently unloaded bundle, however old.
    shedder = SHEDDERS[name]
    conf = shedder.config_from_settings(make_settings(**overrides))
    alone = shedder.find(snap, shedder.initial_state(), conf, NOW)
    assert not {str(d.bundle) for d in alone.decisions} & set(snap.recently_unloaded_bundles)


@CHECKS
@given(snapshots(), st.sampled_from(BUNDLES), st.integers(0, 5), OVERRIDES, st.booleans())
def test_placement_never_returns_a_filtered_out_broker(
    snap: LoadSnapshot, bundle: str, seed: int, overrides: dict[str, Any], non_persistent: bool
) -> None:
    config = PlacementConfig.from_settings(make_settings(**overrides))
    result = select_broker_for_assignment(
        snap, bundle, config, PlacementState(), random.Random(seed), non_persistent=non_persistent
    )
    if result.decision is None or bundle in snap.index.preallocated:
        return
    allowed = apply_namespace_policies(
        snap, bundle, tuple(snap.brokers), non_persistent=non_persistent
    )
    assert result.decision.broker in allowed
    stages = result.stats["candidates"]
    assert isinstance(stages, dict)
    assert result.decision.broker in list(stages.values())[-1]


@CHECKS
@given(snapshots(), st.sampled_from(sorted(SHEDDERS)), st.integers(0, 5), OVERRIDES)
def test_same_inputs_and_seed_give_the_same_decisions(
    snap: LoadSnapshot, name: str, seed: int, overrides: dict[str, Any]
) -> None:
    first = run_cycle(snap, name, seed, overrides)
    second = run_cycle(snap, name, seed, overrides)
    assert first.decisions == second.decisions
    assert first.strategy_state == second.strategy_state
    assert first.placement_state == second.placement_state
    assert first.stats == second.stats


@CHECKS
@given(snapshots(), st.sampled_from(sorted(SHEDDERS)), st.integers(0, 5), OVERRIDES)
def test_inputs_are_never_mutated(
    snap: LoadSnapshot, name: str, seed: int, overrides: dict[str, Any]
) -> None:
    before = fingerprint(snap)
    shedder = SHEDDERS[name]
    state = shedder.initial_state()
    state_before = msgspec.json.encode(state)
    placement_state = PlacementState(usage_history={"b0:8080": 0.5})
    placement_before = msgspec.json.encode(placement_state)
    conf = make_settings(**overrides)
    result = run_shedding_cycle(
        snap,
        shedder,
        state,
        shedder.config_from_settings(conf),
        shedding=SheddingConfig.from_settings(conf),
        placement=PlacementConfig.from_settings(conf),
        placement_state=placement_state,
        rng=random.Random(seed),
        now_ms=NOW,
    )
    # Feed the new state back: a second run must not change the first run's outputs either.
    again = msgspec.json.encode(result.strategy_state)
    shedder.find(snap, result.strategy_state, shedder.config_from_settings(conf), NOW)
    select_broker_for_assignment(
        snap, BUNDLES[0], PlacementConfig.from_settings(conf), placement_state, random.Random(seed)
    )
    assert fingerprint(snap) == before
    assert msgspec.json.encode(state) == state_before
    assert msgspec.json.encode(placement_state) == placement_before
    assert msgspec.json.encode(result.strategy_state) == again
