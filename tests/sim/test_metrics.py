"""The simulator's measures: loads from the capacity model, the lower bound of the best max
load, convergence time, bounces, the averages after the last event."""

from __future__ import annotations

import tomllib

import numpy as np
import pytest

from ballast.broker.host_usage import BrokerCapacity
from ballast.model.loaddata.usage import ResourceWeights
from ballast.sim.metrics import (
    Capacities,
    Decision,
    convergence_time,
    count_bounces,
    load_figures,
    loads,
    mean_load,
    usage_of,
)
from ballast.sim.runner import simulate
from ballast.sim.scenario import Expectations, parse_scenario
from ballast.sim.summary import check_expectations, summarize

CAP = BrokerCapacity(cores=4, cpu_per_msg_s=20e-6, cpu_per_byte_s=0.0, nic_bytes_per_s=1e8)


def arr(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float64)


def test_load_is_the_weighted_max_resource() -> None:
    capacity = Capacities.of([CAP, CAP])
    # broker 0: 100k msg/s each way → 4 cores busy = 100% CPU; 10 MB/s in = 10% NIC
    # broker 1: 1000 msg/s each way of 50 KB → 1% CPU... but 50 MB/s = 50% NIC in and out
    usage = usage_of(
        arr(1e5, 1e3), arr(1e5, 1e3), arr(1e7, 5e7), arr(1e7, 5e7), arr(0, 0), capacity
    )
    assert loads(usage, ResourceWeights()) == pytest.approx([1.0, 0.5])
    cpu_only = ResourceWeights(cpu=1.0, bandwidth_in=0.0, bandwidth_out=0.0)
    assert loads(usage, cpu_only) == pytest.approx([1.0, 0.01])
    assert mean_load(usage, ResourceWeights()) == pytest.approx(max(1.01 / 2, 0.6 / 2))


def test_lower_bound_is_the_mean_or_the_largest_bundle() -> None:
    balanced = load_figures(arr(0.5, 0.5, 0.5, 0.5), cluster_mean=0.5, largest_bundle=0.1)
    assert (balanced.std, balanced.bound, balanced.ratio) == (0.0, 0.5, 1.0)
    lumpy = load_figures(arr(0.9, 0.3, 0.3), cluster_mean=0.5, largest_bundle=0.9)
    assert lumpy.bound == 0.9 and lumpy.ratio == 1.0  # one bundle makes 0.9 unavoidable
    skewed = load_figures(arr(0.8, 0.2), cluster_mean=0.5, largest_bundle=0.1)
    assert skewed.ratio == pytest.approx(1.6) and skewed.std == pytest.approx(0.3)
    assert skewed.max_over_mean == pytest.approx(1.6)


@pytest.mark.parametrize(
    ("stds", "since", "expected"),
    [
        ([0.3, 0.2, 0.04, 0.03, 0.02], 0.0, 20.0),
        ([0.3, 0.04, 0.2, 0.03, 0.02], 0.0, 30.0),  # an excursion restarts the clock
        ([0.01, 0.01, 0.01, 0.01, 0.01], 10.0, 0.0),
        ([0.3, 0.2, 0.04, 0.03, 0.2], 0.0, None),  # above the target at the end
        ([0.3, 0.3, 0.04, 0.03, 0.02], 25.0, 5.0),
    ],
)
def test_convergence_time(stds: list[float], since: float, expected: float | None) -> None:
    times = [0.0, 10.0, 20.0, 30.0, 40.0]
    assert convergence_time(times, stds, 0.05, since) == expected


def move(t: float, action: str, source: str | None, destination: str | None) -> Decision:
    return Decision(t, action, "t/ns/0x0_0x1", source, destination, "shedding", "")


def test_bounces_within_the_grace_period_only() -> None:
    grace = 1800.0
    back_soon = [move(0, "transfer", "a", "b"), move(600, "transfer", "b", "a")]
    assert count_bounces(back_soon, grace) == 1
    back_late = [move(0, "transfer", "a", "b"), move(1900, "transfer", "b", "a")]
    assert count_bounces(back_late, grace) == 0
    placed_back = [move(0, "unload", "a", None), move(5, "assign", None, "a")]
    assert count_bounces(placed_back, grace) == 1
    elsewhere = [move(0, "unload", "a", None), move(5, "assign", None, "c")]
    assert count_bounces(elsewhere, grace) == 0
    drained_home = [
        Decision(0, "transfer", "t/ns/0x0_0x1", "a", "b", "drain", ""),
        Decision(60, "transfer", "t/ns/0x0_0x1", "b", "a", "shedding", ""),
    ]
    assert count_bounces(drained_home, grace) == 0  # a restarted broker gets load back
    split_between = [
        move(0, "transfer", "a", "b"),
        move(10, "split", "b", None),
        move(20, "transfer", "b", "a"),
    ]
    assert count_bounces(split_between, grace) == 0
    # moved off a by a transfer, then placed back on a by a lookup: the bundle lost its new
    # owner to something else (a broker crashed mid-move), not to the balancer
    placed_back_after_a_transfer = [move(0, "transfer", "a", "b"), move(50, "assign", None, "a")]
    assert count_bounces(placed_back_after_a_transfer, grace) == 0


def test_repeated_capacities_are_the_columns_of_copies() -> None:
    repeated, listed = Capacities.repeated(CAP, 3), Capacities.of([CAP] * 3)
    for name in Capacities.__slots__:
        assert np.array_equal(getattr(repeated, name), getattr(listed, name))
    assert Capacities.repeated(CAP, 0).cores.shape == (0,)


def _summary(new_brokers: dict[str, float], cycles: int | None) -> dict[str, object]:
    return {
        "final": {"std": 0.01, "ratio": 1.0},
        "convergenceS": 0.0,
        "moves": {"shedding": 0},
        "bounces": 0,
        "newBrokers": new_brokers,
        "newBrokersLoadedWithinCycles": cycles,
        "unownedTopicSeconds": 0.0,
    }


def test_new_brokers_loaded_in_time_holds_when_none_joined() -> None:
    expect = Expectations(new_brokers_loaded_within_cycles=2)
    assert check_expectations(expect, _summary({}, None))["newBrokersLoadedWithinCycles"]["ok"]
    never = check_expectations(expect, _summary({"b": 60.0}, None))
    assert not never["newBrokersLoadedWithinCycles"]["ok"]  # one joined and never got load
    late = check_expectations(expect, _summary({"b": 60.0}, 3))
    assert not late["newBrokersLoadedWithinCycles"]["ok"]


NO_EVENTS = """
duration = "1m"
step = "10s"
[cluster]
brokers = 3
[[namespaces]]
name = "x"
bundles = 4
topics = 100
popularity = 1
"""


def test_the_averages_after_the_last_event_leave_out_steps_without_load() -> None:
    """The first step is measured before any topic is placed (no load, a bound of 0 and a
    ratio of 1): without events it is "after the last event", but it is no balance."""
    result = simulate(parse_scenario(tomllib.loads(NO_EVENTS)))
    first, *loaded = result.steps
    assert first.bound == 0.0 and loaded and all(s.bound > 0 for s in loaded)
    after = summarize(result)["afterLastEvent"]
    assert after["fromS"] == 0.0
    assert after["meanStd"] == pytest.approx(sum(s.std for s in loaded) / len(loaded), abs=1e-6)
    assert after["meanRatio"] == pytest.approx(sum(s.ratio for s in loaded) / len(loaded), abs=1e-6)
    assert after["meanRatio"] > 1.0  # popularity 1 leaves the brokers uneven


STOP_ON_A_STEP = """
duration = "2m"
step = "10s"
[cluster]
brokers = 2
[[namespaces]]
name = "a"
bundles = 1
topics = 100
rate = 1000
[[events]]
at = 60
stop_brokers = 1
graceful = false
"""


def test_the_step_at_an_events_time_is_not_after_it() -> None:
    """A step is measured before the events at its time: the row at 60 s is the cluster of
    two brokers (one carrying everything) before one stops, and it was counted "after the
    last event" (its std-dev the largest after it, on one broker left that cannot be
    unbalanced)."""
    result = simulate(parse_scenario(tomllib.loads(STOP_ON_A_STEP)))
    at_event = next(s for s in result.steps if s.t_s == 60.0)
    assert at_event.brokers == 2 and at_event.std > 0.05
    after = [s for s in result.steps if s.t_s > 60.0]
    assert after and all(s.brokers == 1 and s.std == 0.0 for s in after)
    summary = summarize(result)
    assert summary["afterLastEvent"] == {
        "fromS": 60.0,
        "meanStd": 0.0,
        "meanRatio": summary["afterLastEvent"]["meanRatio"],
        "maxStd": 0.0,
    }
    assert summary["convergenceS"] == 10.0  # measured one step after the event
