"""Workload processes and topic populations: the numbers they promise."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ballast.broker.host_usage import BrokerCapacity
from ballast.sim.namespace_spec import NamespaceSpec
from ballast.sim.processes import Bursts, Diurnal, HotSpot, RandomWalk, Recorded, make_process
from ballast.sim.scenario import Scenario
from ballast.sim.workload import Workload


def order_of(count: int) -> np.ndarray:
    return np.arange(count, dtype=np.int64)


def test_diurnal_follows_the_sine_and_jitter_shifts_topics() -> None:
    spec = Diurnal(amplitude=0.5, period_s=1000.0, phase_s=0.0)
    process = make_process(spec, 4, seed=(1,), hash_order=lambda: order_of(4))
    assert process.factors(0.0) == pytest.approx([1.0] * 4)
    assert process.factors(250.0) == pytest.approx([1.5] * 4)
    assert process.factors(750.0) == pytest.approx([0.5] * 4)
    jittered = make_process(
        Diurnal(0.5, 1000.0, 0.0, 1000.0), 200, seed=(1,), hash_order=lambda: order_of(200)
    )
    values = jittered.factors(0.0)
    assert values.min() < 0.9 and values.max() > 1.1  # phases differ per topic
    assert np.all((values >= 0.5) & (values <= 1.5))


def test_bursts_hit_a_share_during_the_burst_only_and_do_not_depend_on_call_order() -> None:
    spec = Bursts(every_s=100.0, duration_s=10.0, share=0.25, factor=4.0)
    one = make_process(spec, 4000, seed=(3, 0, 0), hash_order=lambda: order_of(4000))
    two = make_process(spec, 4000, seed=(3, 0, 0), hash_order=lambda: order_of(4000))
    during = one.factors(205.0)
    assert set(np.unique(during).tolist()) == {1.0, 4.0}
    assert np.mean(during == 4.0) == pytest.approx(0.25, abs=0.03)
    assert np.all(one.factors(215.0) == 1.0)
    two.factors(999.0)  # asked in another order: the burst of 200 s is the same
    assert np.array_equal(two.factors(205.0), during)
    assert not np.array_equal(one.factors(305.0), during)  # the next burst is a new draw


def test_random_walk_is_reproducible_and_bounded() -> None:
    spec = RandomWalk(sigma=2.0, min_factor=0.5, max_factor=2.0)

    def walk() -> list[np.ndarray]:
        process = make_process(spec, 100, seed=(5, 1, 0), hash_order=lambda: order_of(100))
        return [process.factors(t) for t in (0.0, 3600.0, 7200.0, 7200.0)]

    first, second = walk(), walk()
    assert all(np.array_equal(a, b) for a, b in zip(first, second, strict=True))
    assert np.all(first[0] == 1.0)
    assert np.array_equal(first[2], first[3])  # no time passed: no step
    assert np.all((first[2] >= 0.5 - 1e-12) & (first[2] <= 2.0 + 1e-12))
    assert not np.array_equal(first[1], first[2])


def test_hot_spot_is_a_window_in_hash_order_that_moves() -> None:
    order = np.array([5, 3, 0, 1, 4, 2, 7, 6, 9, 8], dtype=np.int64)
    spec = HotSpot(share=0.2, factor=10.0, move_every_s=60.0)
    process = make_process(spec, 10, seed=(1,), hash_order=lambda: order)
    assert set(np.flatnonzero(process.factors(0.0) == 10.0).tolist()) == {5, 3}
    assert set(np.flatnonzero(process.factors(61.0) == 10.0).tolist()) == {0, 1}
    assert set(np.flatnonzero(process.factors(300.0) == 10.0).tolist()) == {5, 3}  # wrapped


def scenario(*namespaces: NamespaceSpec, seed: int = 1) -> Scenario:
    return Scenario(
        name="w",
        description="",
        duration_s=60.0,
        step_s=10.0,
        seed=seed,
        brokers=1,
        capacity=BrokerCapacity(),
        namespaces=namespaces,
    )


def test_zipf_popularity_keeps_the_mean_and_skews_the_top() -> None:
    spec = NamespaceSpec(name="sim/z", bundles=4, topics=1000, rate=10.0, popularity=1.0)
    workload = Workload(scenario(spec))
    rates = workload.rates(0.0)
    assert rates.mean() == pytest.approx(10.0)
    top = np.sort(rates)[::-1]
    assert top[0] / top[1] == pytest.approx(2.0)  # ranks 1 and 2 under s = 1
    assert top[0] == pytest.approx(10.0 * 1000 / sum(1 / k for k in range(1, 1001)))
    again = Workload(scenario(spec))
    assert np.array_equal(again.rates(0.0), rates)
    assert not np.array_equal(Workload(scenario(spec, seed=2)).rates(0.0), rates)


def test_sizes_scale_and_growth() -> None:
    spec = NamespaceSpec(name="sim/s", bundles=4, topics=20000, rate=1.0, size=1000, size_sigma=0.8)
    workload = Workload(scenario(spec))
    assert workload.size.mean() == pytest.approx(1000, rel=0.05)
    assert str(workload.names[0]) == "persistent://sim/s/t000000"
    hot = workload.most_popular("sim/s", 0.001)
    assert hot.size == 20
    workload.scale_rates(hot, 3.0)
    assert workload.rates(0.0)[hot] == pytest.approx([3.0] * 20)
    added = workload.add_topics("sim/s", 5)
    assert [str(t) for t in added][-1] == "persistent://sim/s/t020004"
    assert workload.count == 20005 and workload.rates(0.0).size == 20005
    assert math.isclose(float(workload.rates(0.0)[-1]), 1.0)


def test_random_rates_are_uniform_between_rate_and_rate_max() -> None:
    spec = NamespaceSpec(name="sim/r", bundles=4, topics=20000, rate=10.0, rate_max=50.0)
    rates = Workload(scenario(spec)).rates(0.0)
    assert rates.min() >= 10.0 and rates.max() <= 50.0
    assert rates.mean() == pytest.approx(30.0, rel=0.01)
    assert np.histogram(rates, bins=4, range=(10.0, 50.0))[0] == pytest.approx([5000] * 4, rel=0.05)
    assert np.array_equal(Workload(scenario(spec)).rates(0.0), rates)
    # Drawn after the sizes: a namespace that also has random sizes keeps the same sizes.
    sized = NamespaceSpec(name="sim/r", bundles=4, topics=100, size=500.0, size_sigma=0.5)
    with_rates = NamespaceSpec(
        name="sim/r", bundles=4, topics=100, size=500.0, size_sigma=0.5, rate_max=20.0
    )
    assert np.array_equal(Workload(scenario(sized)).size, Workload(scenario(with_rates)).size)


def test_sizes_change_from_an_event_on() -> None:
    spec = NamespaceSpec(name="sim/s", bundles=4, topics=10, size=1000.0)
    workload = Workload(scenario(spec))
    chosen = np.array([1, 3], dtype=np.int64)
    workload.scale_sizes(chosen, 2.5)
    assert workload.size.tolist() == [2500.0 if i in (1, 3) else 1000.0 for i in range(10)]
    workload.scale_sizes(chosen, 1e-9)
    assert workload.size[1] == 1.0  # never below a byte


def test_recorded_sizes_apply_on_top_of_events_and_to_new_topics() -> None:
    series = Recorded((0.0, 60.0, 120.0), (1.0, 0.5, 2.0))
    spec = NamespaceSpec(name="sim/h", bundles=1, topics=4, size=1000.0, size_series=series)
    other = NamespaceSpec(name="sim/o", bundles=1, topics=2, size=300.0)
    workload = Workload(scenario(spec, other))
    recorded = workload.topics_of("sim/h")
    workload.follow_sizes(0.0)
    assert workload.size.tolist() == [1000.0] * 4 + [300.0] * 2
    workload.follow_sizes(90.0)
    assert workload.size[recorded].tolist() == [500.0] * 4
    workload.scale_sizes(recorded[:1], 3.0)  # an event: from now on, under the series too
    workload.add_topics("sim/h", 1)  # a new topic takes the series' factor at once
    workload.follow_sizes(95.0)
    assert workload.size[workload.topics_of("sim/h")].tolist() == [1500.0] + [500.0] * 4
    workload.follow_sizes(500.0)  # after the last time, the last factor holds
    assert workload.size.tolist()[:5] == [6000.0] + [2000.0] * 3 + [300.0]
    assert workload.size[workload.topics_of("sim/h")][-1] == 2000.0


def test_idle_topics_carry_no_traffic_and_leave_the_next_ones_as_they_were() -> None:
    spec = NamespaceSpec(name="sim/g", bundles=1, topics=10, rate=4.0, popularity=1.0)
    plain, with_idle = Workload(scenario(spec)), Workload(scenario(spec))
    plain.add_topics("sim/g", 3)
    idle = with_idle.add_topics("sim/g", 3, idle=True)
    assert len(idle) == 3 and with_idle.count == 13
    assert with_idle.rates(0.0)[10:].tolist() == [0.0] * 3
    assert with_idle.producers[10:].tolist() == [1] * 3  # still connected
    assert np.array_equal(with_idle.rates(0.0)[:10], plain.rates(0.0)[:10])
    # the topics after the idle ones publish as they would after publishing ones
    plain.add_topics("sim/g", 2)
    with_idle.add_topics("sim/g", 2)
    assert np.array_equal(with_idle.rates(0.0)[13:], plain.rates(0.0)[13:])
