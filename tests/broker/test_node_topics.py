"""A broker serves a topic a client opens only while it owns the topic's bundle, and reports
its bundles' traffic through the traffic source, bundle by bundle."""

from __future__ import annotations

from collections.abc import Collection

from ballast.broker.cluster import LocalCluster
from ballast.broker.identity import BrokerIdentity
from ballast.broker.lookup import AnswerKind
from ballast.broker.node import BrokerNode
from ballast.broker.topics import ServedChange
from ballast.broker.traffic import TopicStats, WorkloadTraffic
from ballast.clock import Clock
from ballast.controller.requests import CreateNamespace, CreateTenant
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
