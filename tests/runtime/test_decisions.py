"""Every decision of the leader reaches the decision listeners, tagged with what led to it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ballast.broker.cluster import LocalCluster
from ballast.broker.identity import BrokerIdentity
from ballast.broker.node import BrokerNode
from ballast.clock import Clock
from ballast.controller.requests import CreateNamespace, CreateTenant, UnloadRequest
from ballast.model.naming import TopicName
from tests.support.waiting import eventually


async def test_listeners_hear_lookups_admin_and_drains(clock: Clock) -> None:
    heard: list[Mapping[str, Any]] = []

    def attach(node: BrokerNode) -> None:
        node.decision_listeners.append(heard.append)

    cluster = LocalCluster(clock, on_node=attach)
    for port in (8080, 8081, 8082):
        await cluster.add_broker(BrokerIdentity("10.0.0.1", port, port - 1430))
    await eventually(lambda: cluster.leader() is not None, clock)
    leader = cluster.leader()
    assert leader is not None
    assert (await cluster.request(CreateTenant(tenant="t"))).ok
    assert (await cluster.request(CreateNamespace(namespace="t/ns", bundles=4))).ok
    topics = [TopicName.parse(f"persistent://t/ns/x{i}") for i in range(12)]
    for topic in topics:
        await cluster.lookup(topic)
    assigned = [d for d in heard if d["action"] == "assign"]
    assert assigned and {d["origin"] for d in assigned} == {"lookup"}
    bundle = assigned[0]["bundle"]
    assert (await cluster.request(UnloadRequest(bundle=bundle))).ok
    assert any(d["origin"] == "admin" and d["bundle"] == bundle for d in heard)
    victim = max(
        (n for n in cluster.running() if n is not leader),
        key=lambda n: len(n.ownership.owned()),
    )
    owned = {str(b) for b in victim.ownership.owned() if b != victim.heartbeat_bundle}
    assert owned
    await cluster.stop_broker(victim.broker_id)
    drained = [d for d in heard if d["origin"] == "drain"]
    assert {d["bundle"] for d in drained} == owned
    assert all(d["broker"] == victim.broker_id and d["action"] == "transfer" for d in drained)
    assert all(d["reason"].startswith("broker is stopping") for d in drained)
    await cluster.close()
