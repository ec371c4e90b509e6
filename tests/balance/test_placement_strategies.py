"""Placement strategies (Pulsar's ModularLoadManagerStrategyTest, with explicit state)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from ballast.balance.placement.strategies import (
    PlacementState,
    RoundRobinState,
    UnknownPlacementStrategy,
    least_long_term_message_rate,
    least_resource_usage_with_weight,
    placement_strategy,
    round_robin_turn,
)
from ballast.model.config import PlacementConfig
from tests.balance.build import data, report, settings, snapshot

CONFIG = PlacementConfig.from_settings(settings())
RNG = random.Random(1)


def test_least_long_term_message_rate() -> None:
    brokers = {"1": report(), "2": report(), "3": report()}

    def pick(rates: dict[str, float], **changes: Any) -> str | None:
        snap = snapshot({**brokers, **changes}, long_term_rates=rates)
        choice, _ = least_long_term_message_rate(
            snap, ("1", "2", "3"), CONFIG, PlacementState(), RNG
        )
        return choice.broker

    assert pick({"1": 100, "2": 200, "3": 300}) == "1"
    assert pick({"1": 400, "2": 200, "3": 300}) == "2"
    assert pick({"1": 400, "2": 200, "3": 300}, **{"2": report(cpu=90)}) == "3"


def test_preallocated_bundles_count_and_ties_break_at_random_from_the_seed() -> None:
    snap = snapshot(
        {"a": report(), "b": report(), "c": report()},
        preallocated={"c": {"t/x/0x00000000_0xffffffff": data(rate=10)}},
    )
    picks = {
        least_long_term_message_rate(
            snap, ("a", "b", "c"), CONFIG, PlacementState(), random.Random(s)
        )[0].broker
        for s in range(20)
    }
    assert picks == {"a", "b"}
    again = [
        least_long_term_message_rate(
            snap, ("a", "b", "c"), CONFIG, PlacementState(), random.Random(7)
        )[0].broker
        for _ in range(3)
    ]
    assert len(set(again)) == 1


def test_all_overloaded_means_random_among_all() -> None:
    snap = snapshot({"a": report(cpu=95), "b": report(cpu=99)})
    picks = {
        least_long_term_message_rate(snap, ("a", "b"), CONFIG, PlacementState(), random.Random(s))[
            0
        ].broker
        for s in range(20)
    }
    assert picks == {"a", "b"}


def test_least_resource_usage_with_weight_sequence() -> None:
    config = PlacementConfig.from_settings(
        settings(
            loadBalancerMemoryResourceWeight=0.1,
            loadBalancerDirectMemoryResourceWeight=0.1,
            loadBalancerHistoryResourcePercentage=0.5,
            loadBalancerAverageResourceUsageDifferenceThresholdPercentage=5,
        )
    )

    def broker(percent: float, bundles: tuple[str, ...] = ("x/y/0x00000000_0xffffffff",)) -> Any:
        return report(cpu=percent, bandwidth=percent, rate=200, bundles=bundles)

    state = PlacementState()
    snap = snapshot({"1": broker(10), "2": broker(30), "3": broker(60), "4": broker(5)})
    _, state = least_resource_usage_with_weight(snap, ("1", "2", "3", "4"), config, state, RNG)
    steps = [
        ((10, 30, 60), "1"),
        ((20, 30, 50), "1"),
        ((30, 30, 40), "1"),
        ((30, 30, 40), "1"),
        ((35, 20, 45), "2"),
    ]
    for usages, expected in steps:
        snap = snapshot({str(i + 1): broker(u) for i, u in enumerate(usages)} | {"4": broker(5)})
        choice, state = least_resource_usage_with_weight(snap, ("1", "2", "3"), config, state, RNG)
        assert choice.broker == expected, usages
    # A restarted broker (no bundles) starts its history again and is among the best.
    snap = snapshot({"1": broker(35), "2": broker(20), "3": broker(0, ()), "4": broker(5)})
    choice, state = least_resource_usage_with_weight(snap, ("1", "2", "3"), config, state, RNG)
    assert choice.broker == "3" and state.usage_history["3"] == 0.0


def test_round_robin_sequence_and_wrap() -> None:
    turn = RoundRobinState()
    seen = []
    for _ in range(10):
        chosen, turn = round_robin_turn(("1", "2", "3"), turn)
        seen.append(chosen)
    assert seen == ["1", "2", "3"] * 3 + ["1"]
    for i in range(10, 20):
        chosen, turn = round_robin_turn(("2", "3", "1"), turn)  # order of candidates is irrelevant
        assert chosen == str(i % 3 + 1)
    picks = []
    for _ in range(6):
        chosen, turn = round_robin_turn(("1", "2", "4"), turn)
        picks.append(chosen)
    assert picks == ["4", "1", "2", "4", "1", "2"]
    assert round_robin_turn((), turn) == (None, turn)
    chosen, after = round_robin_turn(("1", "2", "3"), RoundRobinState(counter=2**31 - 1))
    assert chosen == str((2**31 - 1) % 3 + 1) and after.counter == 0


def test_round_robin_keeps_its_order_while_the_pick_is_still_a_candidate() -> None:
    turn = RoundRobinState(counter=1, order=("a", "c", "e"))
    assert round_robin_turn(("c", "d", "e"), turn)[0] == "c"  # remembered order, as Pulsar
    assert round_robin_turn(("b", "d", "e"), turn)[0] == "d"  # "c" is gone: fresh order


def test_unknown_strategy_lists_the_valid_ones() -> None:
    with pytest.raises(UnknownPlacementStrategy, match="least_long_term_message_rate, "):
        placement_strategy("fastest")
