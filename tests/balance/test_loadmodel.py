"""The load model learnt from reports: costs recovered from traffic and usage, loads predicted
for any traffic."""

from __future__ import annotations

import math

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ballast.balance.loadmodel import (
    Capacity,
    Costs,
    Traffic,
    Usage,
    fit_costs,
    load_of,
    load_with,
    std,
    usage_of,
)
from ballast.model.loaddata import LocalBrokerData, ResourceUsage, ResourceWeights

A, C = 0.004, 2e-7  # percent of a core per msg/s and per byte/s


def report(messages: float, size: float, *, cores: float = 4.0) -> LocalBrokerData:
    """A broker whose usage follows the costs exactly (NIC 1 Gbit/s, kbit/s units)."""
    tput = messages * size
    return LocalBrokerData(
        cpu=ResourceUsage(usage=A * messages + C * tput, limit=cores * 100),
        bandwidth_in=ResourceUsage(usage=tput / 2 * 8 / 1000, limit=1e6),
        bandwidth_out=ResourceUsage(usage=tput / 2 * 8 / 1000, limit=1e6),
        msg_rate_in=messages / 2,
        msg_rate_out=messages / 2,
        msg_throughput_in=tput / 2,
        msg_throughput_out=tput / 2,
    )


def test_costs_are_recovered_when_message_sizes_differ() -> None:
    costs = fit_costs([report(1000, 100), report(5000, 10_000), report(3000, 1000)])
    assert costs.cpu_per_msg == pytest.approx(A, rel=1e-2)
    assert costs.cpu_per_byte == pytest.approx(C, rel=1e-2)
    assert costs.nic_in_per_byte == pytest.approx(8 / 1000)
    assert costs.nic_out_per_byte == pytest.approx(8 / 1000)


def test_the_same_mix_everywhere_still_predicts_every_broker() -> None:
    reports = [report(m, 1000) for m in (1000, 2000, 8000)]
    costs = fit_costs(reports)
    for one in reports:
        predicted = usage_of(costs, Traffic.of_report(one))
        assert predicted.cpu == pytest.approx(one.cpu.usage, rel=1e-2)


def test_no_traffic_gives_the_default_units_and_no_cpu_cost() -> None:
    costs = fit_costs([LocalBrokerData(), LocalBrokerData()])
    assert costs == Costs()


def test_reports_past_a_doubles_range_are_left_out_of_the_fit() -> None:
    """A report whose throughputs sum past a double's range made the costs NaN, which the
    strategy then kept for ever (its costs are blended with the last run's)."""
    sane = [report(1000, 100), report(5000, 10_000), report(3000, 1000)]
    huge = msgspec.structs.replace(
        report(1000, 100), msg_throughput_in=1e308, msg_throughput_out=1e308
    )
    endless = msgspec.structs.replace(
        report(1000, 100), cpu=ResourceUsage(usage=math.inf, limit=400.0)
    )
    # Finite but broken: a usage of 1e300 raised OverflowError in the fit, and 1e200 msg/s
    # made every cost ~0 (so every predicted load ~0: nothing to balance).
    overflowing = msgspec.structs.replace(
        report(1000, 100), cpu=ResourceUsage(usage=1e300, limit=400.0)
    )
    flood = msgspec.structs.replace(report(1000, 100), msg_rate_in=1e200, msg_rate_out=1e200)
    assert fit_costs([*sane, huge, endless, overflowing, flood]) == fit_costs(sane)


def test_load_is_the_weighted_max_over_the_predicted_resources() -> None:
    costs = Costs(cpu_per_msg=A, cpu_per_byte=0.0)
    capacity = Capacity(cpu=400.0, nic_in=1e6, nic_out=1e6, static_load=0.1)
    traffic = Traffic(rate_in=40_000, rate_out=40_000, tput_in=5e7, tput_out=5e7)
    usage = usage_of(costs, traffic)
    assert usage.cpu == pytest.approx(320.0)
    assert load_of(usage, capacity, ResourceWeights()) == pytest.approx(0.8)
    nic_only = ResourceWeights(cpu=0.0)
    assert load_of(usage, capacity, nic_only) == pytest.approx(0.4)  # 400 Mbit/s of 1 Gbit/s
    idle = usage_of(costs, Traffic())
    assert load_of(idle, capacity, ResourceWeights()) == pytest.approx(0.1)  # memory etc.


usages = st.builds(
    Usage,
    st.floats(0, 1e12, allow_nan=False),
    st.floats(0, 1e12, allow_nan=False),
    st.floats(0, 1e12, allow_nan=False),
)
weights = st.builds(
    ResourceWeights,
    cpu=st.sampled_from([0.0, 0.5, 1.0]),
    bandwidth_in=st.sampled_from([0.0, 1.0]),
    bandwidth_out=st.sampled_from([0.0, 1.0, 2.0]),
)
capacities = st.builds(
    Capacity,
    cpu=st.floats(-1, 1e4, allow_nan=False),
    nic_in=st.floats(-1, 1e9, allow_nan=False),
    nic_out=st.floats(-1, 1e9, allow_nan=False),
    static_load=st.floats(0, 2, allow_nan=False),
)


@given(usages, usages, capacities, weights)
def test_load_with_an_addition_is_the_load_of_the_sum(
    usage: Usage, added: Usage, capacity: Capacity, weights: ResourceWeights
) -> None:
    assert load_with(usage, added, capacity, weights) == load_of(
        usage.plus(added), capacity, weights
    )


def test_std_past_a_doubles_range_is_infinite_not_an_error() -> None:
    """A load of 1e160 squared is past a double: Java gives Infinity; ``**`` raised
    OverflowError, an internal error of ``decide shed --strategy ballast``."""
    assert std([1e160, 0.0]) == math.inf
    assert std([math.inf, 0.5]) == math.inf  # not 0: inf - inf is NaN
    assert std([0.25, 0.75]) == 0.25
