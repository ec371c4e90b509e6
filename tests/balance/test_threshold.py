"""ThresholdShedder: history weighting kept as explicit state, the threshold above average,
the minimum-throughput gate, and lower-boundary shedding."""

from __future__ import annotations

import pytest

from ballast.balance.decisions import ReasonKind
from ballast.balance.shedding.threshold import ThresholdState, find_bundles_to_unload
from ballast.model.config import ThresholdShedderConfig
from tests.balance.build import MB, data, names, report, settings, snapshot

CONFIG = ThresholdShedderConfig.from_settings(settings())
LOWER = ThresholdShedderConfig.from_settings(settings(lowerBoundarySheddingEnabled=True))
B = [f"t/ns/0x{i:08x}_0x{i + 1:08x}" for i in range(6)]
BUNDLES = {B[0]: data(20 * MB), B[1]: data(10 * MB), B[2]: data(5 * MB), B[3]: data(1 * MB)}


def test_first_run_takes_current_usage_then_history_is_weighted() -> None:
    snap = snapshot({"a": report(cpu=50), "b": report(cpu=10)})
    first = find_bundles_to_unload(snap, ThresholdState(), CONFIG, 0)
    assert first.state.usage_history == {"a": 0.5, "b": 0.1}
    later = snapshot({"a": report(cpu=90), "b": report(cpu=10)})
    second = find_bundles_to_unload(later, first.state, CONFIG, 0)
    assert second.state.usage_history["a"] == pytest.approx(0.5 * 0.9 + 0.1 * 0.9)
    assert second.stats["avgUsage"] == pytest.approx((0.54 + 0.1) / 2)


def test_history_of_brokers_that_left_is_dropped() -> None:
    state = ThresholdState(usage_history={"gone": 0.9, "a": 0.2})
    result = find_bundles_to_unload(snapshot({"a": report(cpu=20)}), state, CONFIG, 0)
    assert result.state.usage_history == {"a": pytest.approx(0.2)}


def test_average_zero_decides_nothing() -> None:
    snap = snapshot({"a": report(tput=100 * MB, bundles=B[:4])}, BUNDLES)
    result = find_bundles_to_unload(snap, ThresholdState(), CONFIG, 0)
    assert result.decisions == ()
    assert result.stats["reason"] == "NoLoadData"


def test_broker_at_exactly_average_plus_threshold_sheds_heaviest_first() -> None:
    # usages 0.2 and 0.0: avg 0.1, 0.2 == avg + 0.1 qualifies; offload 5% of 300 MB = 15 MB.
    snap = snapshot({"a": report(cpu=20, tput=300 * MB, bundles=B[:4]), "b": report()}, BUNDLES)
    result = find_bundles_to_unload(snap, ThresholdState(), CONFIG, 0)
    assert names(result.decisions) == [B[0]]
    assert result.decisions[0].reason.kind is ReasonKind.OVERLOADED


def test_below_the_minimum_throughput_nothing_is_shed() -> None:
    # Same usage, but 5% of 100 MB = 5 MB < loadBalancerBundleUnloadMinThroughputThreshold.
    snap = snapshot({"a": report(cpu=20, tput=100 * MB, bundles=B[:4]), "b": report()}, BUNDLES)
    result = find_bundles_to_unload(snap, ThresholdState(), CONFIG, 0)
    assert result.decisions == ()
    assert "below the minimum throughput" in str(result.stats["sheddingBrokers"])
    assert result.stats["reason"] == "NoBundles"  # not "Balanced": a broker is above the bar
    assert str(result.stats["detail"]).startswith("every flagged broker was skipped (a: below")


def test_sole_bundle_and_recently_unloaded_bundles_are_not_shed() -> None:
    sole = snapshot({"a": report(cpu=90, tput=300 * MB, bundles=B[:1]), "b": report()}, BUNDLES)
    assert find_bundles_to_unload(sole, ThresholdState(), CONFIG, 0).decisions == ()
    recent = snapshot(
        {"a": report(cpu=90, tput=300 * MB, bundles=B[:4]), "b": report()},
        BUNDLES,
        unloaded={B[0]: 5},
    )
    assert names(find_bundles_to_unload(recent, ThresholdState(), CONFIG, 0).decisions)[0] == B[1]


def test_lower_boundary_sheds_from_the_busiest_when_someone_is_far_below() -> None:
    # usages 0.3, 0.3, 0.3, 0.1: avg 0.25, nobody at or above 0.35, but d is below 0.15.
    snap = snapshot(
        {
            "a": report(cpu=30, tput=300 * MB, bundles=B[:2]),
            "b": report(cpu=30, tput=300 * MB, bundles=B[2:4]),
            "c": report(cpu=30),
            "d": report(cpu=10),
        },
        BUNDLES,
    )
    plain = find_bundles_to_unload(snap, ThresholdState(), CONFIG, 0)
    assert plain.decisions == ()
    lower = find_bundles_to_unload(snap, ThresholdState(), LOWER, 0)
    # The first broker of the highest usage with two bundles or more wins; it sheds
    # threshold * 0.5 of its 300 MB = 15 MB: the 20 MB bundle.
    assert [(d.broker, str(d.bundle)) for d in lower.decisions] == [("a", B[0])]
    assert lower.decisions[0].reason.kind is ReasonKind.UNDERLOADED


def test_lower_boundary_updates_history_a_second_time() -> None:
    snap = snapshot({"a": report(cpu=40, bundles=B[:2]), "c": report(cpu=0)}, BUNDLES)
    state = ThresholdState(usage_history={"a": 0.2, "c": 0.0})
    once = find_bundles_to_unload(snap, state, CONFIG, 0).state.usage_history["a"]
    twice = find_bundles_to_unload(snap, state, LOWER, 0).state.usage_history["a"]
    assert once == pytest.approx(0.2 * 0.9 + 0.1 * 0.4)
    assert twice == pytest.approx(once * 0.9 + 0.1 * 0.4)


def test_lower_boundary_needs_a_broker_below_the_lower_bound() -> None:
    snap = snapshot(
        {"a": report(cpu=40, tput=300 * MB, bundles=B[:2]), "b": report(cpu=35, tput=MB)}, BUNDLES
    )
    result = find_bundles_to_unload(snap, ThresholdState(), LOWER, 0)
    assert result.decisions == ()
    assert result.stats["lowerBoundary"] == {
        "avgUsage": pytest.approx(0.375),
        "skipped": "no broker below the lower bound",
    }
