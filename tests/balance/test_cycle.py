"""The load manager's shedding cycle: broker count, grace period, guards, destinations."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from ballast.balance.cycle import run_shedding_cycle
from ballast.balance.decisions import Transfer
from ballast.balance.placement.strategies import PlacementState
from ballast.balance.shedding.registry import shedding_strategy
from ballast.balance.snapshot import LoadSnapshot, Policies
from ballast.model.config import PlacementConfig, SheddingConfig
from ballast.model.policies import IsolationPolicies
from tests.balance.build import MB, data, report, settings, snapshot, stats

NOW = 10_000_000
GRACE = 30 * 60_000
SHEDDING = SheddingConfig.from_settings(settings())
PLACEMENT = PlacementConfig.from_settings(settings())
B = [f"t/ns/0x{i:08x}_0x{i + 1:08x}" for i in range(4)]


def cycle(
    snap: LoadSnapshot,
    name: str = "overload",
    shedding: SheddingConfig = SHEDDING,
    placement: PlacementConfig = PLACEMENT,
    **overrides: Any,
) -> Any:
    shedder = shedding_strategy(name)
    return run_shedding_cycle(
        snap,
        shedder,
        shedder.initial_state(),
        shedder.config_from_settings(settings(**overrides)),
        shedding=shedding,
        placement=placement,
        placement_state=PlacementState(),
        rng=random.Random(5),
        now_ms=NOW,
    )


def overloaded(**kwargs: Any) -> LoadSnapshot:
    brokers = {"hot": report(cpu=95, tput=10 * MB, bundles=B), "cold": report()}
    return snapshot(brokers, {b: data((i + 1) * MB) for i, b in enumerate(B)}, **kwargs)


def moved(result: Any) -> list[tuple[str, str, str]]:
    return [
        (str(d.bundle), d.source, d.destination)
        for d in result.decisions
        if isinstance(d, Transfer)
    ]


def test_unloads_become_transfers_to_the_placed_broker() -> None:
    result = cycle(overloaded())
    assert moved(result) == [(B[3], "hot", "cold")]
    assert "destination cold" in result.decisions[0].reason.text
    assert result.stats["strategy"]["outcome"] == "Success"


def test_fewer_than_two_brokers_or_disabled_decide_nothing() -> None:
    alone = snapshot({"hot": report(cpu=95, tput=10 * MB, bundles=B)}, {b: data(MB) for b in B})
    assert cycle(alone).decisions == ()
    off = dataclasses.replace(SHEDDING, enabled=False)
    assert cycle(overloaded(), shedding=off).decisions == ()


def test_grace_period_expires_old_entries_only() -> None:
    still = overloaded(unloaded={B[3]: NOW - GRACE, B[2]: NOW - GRACE - 1})
    result = cycle(still)
    # B[3] is still in its grace period; B[2] expired and is the heaviest left.
    assert moved(result) == [(B[2], "hot", "cold")]
    assert result.expired_unloaded_bundles == (B[2],)


def test_excluded_namespaces_are_not_moved() -> None:
    shedding = dataclasses.replace(SHEDDING, excluded_namespaces=frozenset({"t/ns"}))
    result = cycle(overloaded(), shedding=shedding)
    assert result.decisions == ()
    assert result.stats["skipped"][0]["why"] == "namespace is excluded from shedding"
    # the strategy proposed a move, the cycle kept it: no bundle could move, not "Balanced"
    assert (result.stats["outcome"], result.stats["reason"]) == ("Skip", "NoBundles")


def test_a_strategy_that_proposes_nothing_gives_its_own_reason() -> None:
    idle = snapshot({"a": report(), "b": report()}, {})
    result = cycle(idle, "threshold")
    assert result.decisions == ()
    assert result.stats["strategy"]["reason"] == "NoLoadData"
    assert (result.stats["outcome"], result.stats["reason"]) == ("Skip", "NoLoadData")
    assert result.stats["detail"] == result.stats["strategy"]["detail"]


def test_isolation_with_no_other_broker_blocks_the_unload() -> None:
    isolation = IsolationPolicies.from_mapping({"p": {"namespaces": ["t/ns"], "primary": ["hot"]}})
    result = cycle(overloaded(policies=Policies(isolation=isolation)))
    assert result.decisions == ()
    assert result.stats["skipped"][0]["why"] == "isolation policy allows no other broker"


def test_anti_affinity_guard() -> None:
    # t/ns and t/other share a group; hot serves t/ns, cold serves t/other: each serves one
    # namespace of the group, so unloading would only land on an equally loaded broker.
    groups = {"t/ns": "g", "t/other": "g"}
    brokers = {
        "hot": report(cpu=95, tput=10 * MB, bundles=B),
        "cold": report(bundles=["t/other/0x00000000_0xffffffff"]),
    }
    snap = snapshot(
        brokers, {b: data(MB) for b in B}, policies=Policies(anti_affinity_groups=groups)
    )
    result = cycle(snap)
    assert result.decisions == ()
    assert "anti-affinity" in result.stats["skipped"][0]["why"]


def test_no_move_when_placement_picks_the_current_owner() -> None:
    # hot at exactly 85% is shed by OverloadShedder (>=) but not overloaded for placement (>);
    # cold serves fewer bundles of t/ns but is overloaded, so placement chooses again among
    # all brokers, where hot scores best.
    cold_bundles = ["t/ns/0x00000010_0x00000020", "t/ns/0x00000020_0x00000030"]
    brokers = {
        "hot": report(cpu=85, tput=10 * MB, bundles=B),
        "cold": report(cpu=99, bundles=cold_bundles),
    }
    snap = snapshot(brokers, {b: data(MB) for b in B})
    result = cycle(snap)
    assert result.decisions == ()
    assert {s["why"] for s in result.stats["skipped"]} == {"placement chose the current owner"}


def test_transfer_strategy_decisions_pass_through_with_its_state() -> None:
    t = NOW - 1_000
    top = {B[0]: stats(2 * MB), B[1]: stats(7 * MB)}
    brokers = {
        "heavy": report(cpu=90, tput=9 * MB, stats=top, last_update=t),
        "light": report(
            cpu=2, tput=MB, stats={"t/x/0x00000000_0xffffffff": stats(MB)}, last_update=t
        ),
    }
    snap = snapshot(brokers)
    result = cycle(snap, "transfer", loadBalancerSheddingConditionHitCountThreshold=0)
    assert moved(result) == [(B[0], "heavy", "light")]
    assert result.strategy_state.hit_count == 0
    assert result.strategy_state.broker_load["heavy"].weighted_max_ema == 0.9


def test_placement_memory_comes_back() -> None:
    placement = dataclasses.replace(PLACEMENT, strategy="round_robin")
    result = cycle(overloaded(), placement=placement)
    assert result.placement_state.round_robin.counter == 1
