"""A broker serves a topic a client opens only while it owns the topic's bundle, and reports
its bundles' traffic through the traffic source, bundle by bundle."""

from __future__ import annotations

import asyncio
from collections.abc import Collection

import pytest

from ballast.broker.cluster import LocalCluster
from ballast.broker.identity import BrokerIdentity
from ballast.broker.lookup import AnswerKind
from ballast.broker.node import BrokerNode
from ballast.broker.topics import ServedChange
from ballast.broker.traffic import TopicStats, WorkloadTraffic
from ballast.clock import Clock
from ballast.controller.requests import CreateNamespace, CreateTenant
from ballast.coordination.ownership import OwnershipState
from ballast.model.bundles import BundleName
from ballast.model.loaddata import NamespaceBundleStats
from ballast.model.naming import TopicName
from tests.support.waiting import eventually


class RecordingTraffic(WorkloadTraffic):
    def __init__(self) -> None:
        super().__init__()
        self.asked: list[tuple[BundleName, frozenset[TopicName]]] = []

    def bundle_stats(
        self, bundle: BundleName, topics: Collection[TopicName]
    ) -> NamespaceBundleStats:
        self.asked.append((bundle, frozenset(topics)))
        return super().bundle_stats(bundle, topics)


async def test_open_topic_serves_only_on_the_owner(clock: Clock) -> None:
    traffic = RecordingTraffic()
    created: list[BrokerNode] = []
    heard: list[tuple[str, ServedChange]] = []

    def attach(node: BrokerNode) -> None:
        created.append(node)
        node.served.add_listener(lambda change: heard.append((node.broker_id, change)))

    cluster = LocalCluster(clock, traffic=traffic, on_node=attach)
    for port in (8080, 8081):
        await cluster.add_broker(BrokerIdentity("10.0.0.1", port, port - 1430))
    assert [n.broker_id for n in created] == ["10.0.0.1:8080", "10.0.0.1:8081"]
    await eventually(lambda: cluster.leader() is not None, clock)
    assert (await cluster.request(CreateTenant(tenant="t"))).ok
    assert (await cluster.request(CreateNamespace(namespace="t/ns", bundles=1))).ok
    topic = TopicName.parse("persistent://t/ns/a")
    late = TopicName.parse("persistent://t/ns/b")  # never in the topic index
    await cluster.running()[0].topic_index.create(topic)
    answer = await cluster.lookup(topic)
    assert answer.kind is AnswerKind.CONNECT and answer.broker_id is not None
    owner = cluster.nodes[answer.broker_id]
    other = next(n for n in cluster.running() if n is not owner)
    assert await owner.open_topic(late)
    assert not await other.open_topic(late)
    bundle = owner.served.bundle_of(topic)
    assert bundle is not None and owner.served.bundle_of(late) == bundle
    added = [c for b, c in heard if b == owner.broker_id and c.bundle == bundle]
    assert [set(c.topics) for c in added] == [{topic}, {late}]
    traffic.set(topic, TopicStats.of(10, 100))
    stats = owner.bundle_stats()
    assert stats[str(bundle)].msg_rate_in == 10
    assert (bundle, frozenset({topic, late})) in traffic.asked
    await cluster.close()


class UnversionedTraffic(RecordingTraffic):
    @property
    def revision(self) -> None:
        return None


async def _served_bundle(
    clock: Clock, traffic: WorkloadTraffic
) -> tuple[LocalCluster, BrokerNode, BundleName, TopicName]:
    cluster = LocalCluster(clock, traffic=traffic)
    await cluster.add_broker(BrokerIdentity("10.0.0.1", 8080, 6650))
    await eventually(lambda: cluster.leader() is not None, clock)
    assert (await cluster.request(CreateTenant(tenant="t"))).ok
    assert (await cluster.request(CreateNamespace(namespace="t/ns", bundles=1))).ok
    topic = TopicName.parse("persistent://t/ns/a")
    owner = cluster.running()[0]
    await owner.topic_index.create(topic)
    await cluster.lookup(topic)
    assert await owner.open_topic(topic)
    bundle = owner.served.bundle_of(topic)
    assert bundle is not None
    return cluster, owner, bundle, topic


async def test_bundle_stats_are_reused_until_traffic_or_ownership_change(clock: Clock) -> None:
    traffic = RecordingTraffic()
    cluster, owner, bundle, topic = await _served_bundle(clock, traffic)
    traffic.set(topic, TopicStats.of(10, 100))
    assert owner.bundle_stats()[str(bundle)].msg_rate_in == 10
    asked = len(traffic.asked)
    first = owner.bundle_stats()
    assert owner.bundle_stats() is first  # nothing changed: the same mapping
    assert first[str(bundle)].msg_rate_in == 10
    assert len(traffic.asked) == asked  # nothing changed: the stats are reused
    with pytest.raises(TypeError):
        first[str(bundle)] = NamespaceBundleStats()  # type: ignore[index]  # read-only
    traffic.set(topic, TopicStats.of(20, 100))
    assert owner.bundle_stats()[str(bundle)].msg_rate_in == 20
    await owner.ownership.forget(bundle)
    assert str(bundle) not in owner.bundle_stats()  # still served, but no longer claimed
    await cluster.close()


async def test_bundle_stats_are_not_reused_without_a_traffic_revision(clock: Clock) -> None:
    traffic = UnversionedTraffic()
    cluster, owner, bundle, _ = await _served_bundle(clock, traffic)
    owner.bundle_stats()
    asked = [b for b, _ in traffic.asked].count(bundle)
    owner.bundle_stats()
    assert [b for b, _ in traffic.asked].count(bundle) == asked + 1
    await cluster.close()


async def test_a_client_opening_a_topic_while_its_bundle_is_being_taken_waits(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ownership record says OWNED before the bundle's topics are loaded, and a lookup
    reading it sends the client here: a topic opened in that gap was refused ("not served by
    this instance"), and Pulsar's client 3.13 then never retried its subscribe."""
    cluster = LocalCluster(clock, traffic=WorkloadTraffic())
    await cluster.add_broker(BrokerIdentity("10.0.0.1", 8080, 6650))
    await eventually(lambda: cluster.leader() is not None, clock)
    assert (await cluster.request(CreateTenant(tenant="t"))).ok
    assert (await cluster.request(CreateNamespace(namespace="t/ns", bundles=1))).ok
    node = cluster.running()[0]
    topic = TopicName.parse("persistent://t/ns/a")
    await node.topic_index.create(topic)
    bundle = await node.lookups.bundle_of(topic)
    loading, release = asyncio.Event(), asyncio.Event()
    topics_in = node.topic_index.topics_in

    async def slow_topics_in(of: BundleName) -> list[TopicName]:
        loading.set()
        await release.wait()
        return await topics_in(of)

    monkeypatch.setattr(node.topic_index, "topics_in", slow_topics_in)
    taking = asyncio.ensure_future(node.acquire(bundle))
    await loading.wait()
    assert node.ownership.state_of(bundle) is OwnershipState.OWNED  # the record says ours
    opening = asyncio.ensure_future(node.open_topic(topic))
    await clock.sleep(0.05)
    assert not opening.done()  # waits for the topics instead of refusing
    release.set()
    assert await opening
    assert (await taking).broker_id == node.broker_id
    await cluster.close()
