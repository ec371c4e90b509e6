"""The simulator's traffic source: only connected, served topics carry traffic; per-bundle
stats are cached until they change; topic-seconds without an owner are integrated."""

from __future__ import annotations

import numpy as np

from ballast.broker.host_usage import BrokerCapacity
from ballast.model.bundles import BundleName
from ballast.sim.namespace_spec import NamespaceSpec
from ballast.sim.scenario import Scenario
from ballast.sim.traffic import SimTraffic
from ballast.sim.workload import Workload

BUNDLE = BundleName.parse("sim/a/0x00000000_0xffffffff")


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make() -> tuple[Workload, SimTraffic, FakeTime]:
    spec = NamespaceSpec(name="sim/a", bundles=1, topics=4, rate=10.0, size=100.0, fan_out=2.0)
    scenario = Scenario("t", "", 60.0, 10.0, 1, 1, BrokerCapacity(), (spec,))
    workload = Workload(scenario)
    time = FakeTime()
    traffic = SimTraffic(workload, time)
    traffic.set_rates(workload.rates(0.0))
    return workload, traffic, time


def test_only_connected_served_topics_flow_and_stats_are_cached() -> None:
    workload, traffic, _ = make()
    topics = np.arange(4, dtype=np.int64)
    traffic.serve(topics, BUNDLE)
    first = traffic.bundle_stats(BUNDLE, workload.names)
    assert (first.topics, first.msg_rate_in, first.producer_count) == (4, 0.0, 0)
    traffic.connect(topics[:3], 0)
    stats = traffic.bundle_stats(BUNDLE, workload.names)
    assert stats.msg_rate_in == 30.0 and stats.msg_rate_out == 60.0
    assert stats.msg_throughput_in == 3000.0 and stats.msg_throughput_out == 6000.0
    assert (stats.producer_count, stats.consumer_count, stats.topics) == (3, 3, 4)
    assert traffic.bundle_stats(BUNDLE, workload.names) is stats  # nothing changed
    traffic.set_rates(workload.rates(0.0))  # the same figures: still the same object
    assert traffic.bundle_stats(BUNDLE, workload.names) is stats
    traffic.unserve(topics[:1])
    assert traffic.bundle_stats(BUNDLE, workload.names).msg_rate_in == 20.0
    assert traffic.topic_stats(workload.names[0]).msg_rate_in == 0.0
    assert traffic.topic_stats(workload.names[1]).msg_rate_in == 10.0
    unknown = BundleName.parse("sim/b/0x00000000_0xffffffff")
    assert traffic.bundle_stats(unknown, []).topics == 0


def test_unowned_topic_seconds_integrate_over_time() -> None:
    _, traffic, time = make()
    topics = np.arange(4, dtype=np.int64)
    time.now = 5.0  # no client has asked for the topics yet: nobody waits
    assert (traffic.not_flowing(), traffic.unowned_topic_seconds()) == (0, 0.0)
    traffic.want(topics)
    traffic.want(topics[:2])  # already wanted: counted once
    assert traffic.not_flowing() == 4
    time.now = 15.0  # 4 topics unowned for 10 s
    traffic.serve(topics, BUNDLE)
    traffic.connect(topics, 0)
    assert traffic.not_flowing() == 0
    time.now = 20.0
    traffic.disconnect(topics[:1])  # one topic for 5 s
    time.now = 25.0
    traffic.connect(topics[:1], 1)
    time.now = 100.0
    assert traffic.unowned_topic_seconds() == 40.0 + 5.0
