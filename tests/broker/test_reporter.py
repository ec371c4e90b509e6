"""The load reporter writes on Pulsar's rules, on the clock."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import pytest

from ballast.broker.host_usage import BrokerCapacity, ModelledHostUsage
from ballast.broker.identity import BrokerIdentity
from ballast.broker.reporter import LoadReporter
from ballast.clock import Clock
from ballast.coordination.registry import BrokerRegistration
from ballast.metadata.factory import MetadataStores
from ballast.metadata.store import ConnectionLossError
from ballast.model.config import ReportConfig, load_settings
from ballast.model.loaddata import LocalBrokerData, NamespaceBundleStats, SystemResourceUsage

BUNDLE = "t/ns/0x00000000_0xffffffff"


async def test_reports_follow_the_threshold_and_max_interval(clock: Clock) -> None:
    stores = MetadataStores(clock)
    store = await stores.connect("memory:")
    identity = BrokerIdentity("b1", 8080, 6650)
    rate = {"value": 1000.0}

    def stats() -> dict[str, NamespaceBundleStats]:
        return {BUNDLE: NamespaceBundleStats(msg_rate_in=rate["value"], topics=3)}

    config = ReportConfig.from_settings(load_settings().settings)
    reporter = LoadReporter(
        identity,
        BrokerRegistration(store, identity.broker_id, clock),
        ModelledHostUsage(BrokerCapacity()),
        stats,
        config,
        clock,
    )
    await reporter.register()
    record = await store.get("/loadbalance/brokers/b1:8080")
    assert record is not None
    registered = LocalBrokerData.from_json(record.value)
    assert registered.web_service_url == "http://b1:8080"
    assert registered.msg_rate_in == 1000.0 and registered.num_topics == 3
    reporter.start()
    rate["value"] = 1050.0  # 5%: not worth a write
    await clock.sleep(60)
    assert reporter.writes == 0
    rate["value"] = 2000.0  # 100%: written within one check interval
    await clock.sleep(config.update_min_interval_ms / 1000 + 0.1)
    assert reporter.writes == 1
    written = LocalBrokerData.from_json((await store.get("/loadbalance/brokers/b1:8080")).value)  # type: ignore[union-attr]
    assert written.msg_rate_in == 2000.0
    assert registered.last_update < written.last_update <= clock.wall_ms()
    # Nothing changes: still written once the max interval (15 min) passes.
    await clock.sleep(config.update_max_interval_ms / 1000 + 10)
    assert reporter.writes == 2
    await reporter.stop()
    await store.close()
    stores.close()


class FailingOnce(BrokerRegistration):
    """A registration whose next update fails as a ZooKeeper stall makes it fail."""

    fail_next = False

    async def update(self, data: bytes) -> None:
        if self.fail_next:
            self.fail_next = False
            raise ConnectionLossError("stalled")
        await super().update(data)


async def test_a_report_that_was_not_stored_is_written_again(clock: Clock) -> None:
    """The report counted as written before its write: a failed write left the store's
    report stale until the next change past the threshold or the 15-minute interval."""
    stores = MetadataStores(clock)
    store = await stores.connect("memory:")
    identity = BrokerIdentity("b1", 8080, 6650)
    rate = {"value": 1000.0}
    registration = FailingOnce(store, identity.broker_id, clock)
    reporter = LoadReporter(
        identity,
        registration,
        ModelledHostUsage(BrokerCapacity()),
        lambda: {BUNDLE: NamespaceBundleStats(msg_rate_in=rate["value"], topics=3)},
        ReportConfig.from_settings(load_settings().settings),
        clock,
    )
    await reporter.register()
    before = reporter.last_written
    rate["value"] = 2000.0
    registration.fail_next = True
    with pytest.raises(ConnectionLossError):
        await reporter.report()
    assert reporter.last_written is before and reporter.writes == 0
    assert await reporter.report()  # the same change, written now
    record = await store.get("/loadbalance/brokers/b1:8080")
    assert record is not None and LocalBrokerData.from_json(record.value).msg_rate_in == 2000.0
    await store.close()
    stores.close()


def test_modelled_usage_from_traffic() -> None:
    usage = ModelledHostUsage(BrokerCapacity(cores=2, nic_bytes_per_s=1_000_000))
    sampled = usage.sample(
        NamespaceBundleStats(
            msg_rate_in=10_000, msg_throughput_in=500_000, msg_throughput_out=250_000, topics=10
        )
    )
    # 10k msg * 20us + 750kB * 2ns = 0.2015 busy cores of 2
    assert abs(sampled.cpu.percent_usage() - 10.075) < 1e-4
    assert abs(sampled.bandwidth_in.percent_usage() - 50.0) < 1e-4
    assert abs(sampled.bandwidth_out.percent_usage() - 25.0) < 1e-4


class CountingUsage(ModelledHostUsage):
    def __init__(self) -> None:
        super().__init__(BrokerCapacity())
        self.samples = 0

    def sample(self, traffic: NamespaceBundleStats) -> SystemResourceUsage:
        self.samples += 1
        return super().sample(traffic)


async def test_rebuild_reuses_the_report_while_the_stats_mapping_is_the_same(
    clock: Clock,
) -> None:
    stores = MetadataStores(clock)
    store = await stores.connect("memory:")
    identity = BrokerIdentity("b1", 8080, 6650)
    served: dict[str, Mapping[str, NamespaceBundleStats]] = {
        "now": MappingProxyType({BUNDLE: NamespaceBundleStats(msg_rate_in=10.0, topics=1)})
    }
    usage = CountingUsage()
    reporter = LoadReporter(
        identity,
        BrokerRegistration(store, identity.broker_id, clock),
        usage,
        lambda: served["now"],
        ReportConfig.from_settings(load_settings().settings),
        clock,
    )
    first = reporter.rebuild()
    assert reporter.rebuild() is first and usage.samples == 1  # same mapping: nothing to do
    served["now"] = MappingProxyType(dict(served["now"]))  # a new mapping, equal contents
    second = reporter.rebuild()
    assert second is not first and second == first and usage.samples == 2
    await reporter.register()  # written: the deltas cleared, the report kept otherwise
    written = reporter.current
    assert reporter.rebuild() is written
    served["now"] = MappingProxyType({})
    assert reporter.rebuild().last_bundle_losses == frozenset({BUNDLE})
    await store.close()
    stores.close()
