"""A graceful stop drains the broker's bundles through the leader, and ends early where
waiting could not help: every broker stopping at once (no leader is left to ask), or bundles
no other broker may take. Before, each such stop held on for brokerShutdownTimeoutMs."""

from __future__ import annotations

import asyncio

from ballast.broker.cluster import LocalCluster
from ballast.broker.identity import BrokerIdentity
from ballast.broker.node import DRAIN_NO_LEADER_S
from ballast.clock import Clock
from ballast.controller.requests import CreateNamespace, CreateTenant, SetIsolationPolicy
from ballast.coordination.ownership import read_owner
from ballast.model.config import load_settings
from tests.runtime.test_scenarios import create_topics
from tests.support.waiting import eventually

SHUTDOWN_S = 60.0  # brokerShutdownTimeoutMs, Pulsar's default


async def start(clock: Clock, hosts: tuple[str, ...]) -> LocalCluster:
    settings = load_settings(
        overrides=[
            "metadataStoreSessionTimeoutMillis=10000",
            f"brokerShutdownTimeoutMs={int(SHUTDOWN_S * 1000)}",
        ]
    ).settings
    cluster = LocalCluster(clock, settings=settings)
    for host in hosts:
        await cluster.add_broker(BrokerIdentity(host, 8080, 6650))
    await eventually(lambda: cluster.leader() is not None, clock, what="a leader")
    assert (await cluster.request(CreateTenant(tenant="t"))).ok
    return cluster


async def test_every_broker_stopping_at_once_does_not_wait_out_the_shutdown_timeout(
    clock: Clock,
) -> None:
    cluster = await start(clock, ("10.0.0.1", "10.0.0.2", "10.0.0.3"))
    assert (await cluster.request(CreateNamespace(namespace="t/all", bundles=6))).ok
    for topic in await create_topics(cluster, "t/all", 12):
        await cluster.lookup(topic)
    await clock.sleep(1.0)
    assert all(n.ownership.owned() for n in cluster.running())  # each has bundles to drain
    began = clock.monotonic()
    await asyncio.gather(*(cluster.stop_broker(n.broker_id) for n in cluster.running()))
    took = clock.monotonic() - began
    # Stopping, none is a candidate: with no leader to ask, they stop asking.
    assert took < DRAIN_NO_LEADER_S + 5 < SHUTDOWN_S, took
    await cluster.close()


async def test_a_stop_whose_bundles_no_other_broker_may_take_does_not_wait(
    clock: Clock,
) -> None:
    cluster = await start(clock, ("10.0.0.1", "10.0.0.2", "10.0.0.3"))
    pinned = "10.0.0.3:8080"
    policy = {
        "namespaces": ["t/pinned"],
        "primary": ["10\\.0\\.0\\.3"],
        "secondary": [],
        "auto_failover_policy": {
            "policy_type": "min_available",
            "parameters": {"min_limit": "1", "usage_threshold": "80"},
        },
    }
    assert (await cluster.request(SetIsolationPolicy(name="pin", policy=policy))).ok
    assert (await cluster.request(CreateNamespace(namespace="t/pinned", bundles=2))).ok
    topics = await create_topics(cluster, "t/pinned", 4)
    for topic in topics:
        answer = await cluster.lookup(topic)
        assert answer.broker_id == pinned
    leader = cluster.leader()
    assert leader is not None and leader.broker_id != pinned  # else it resigns first
    began = clock.monotonic()
    await cluster.stop_broker(pinned)
    assert clock.monotonic() - began < 10 < SHUTDOWN_S
    bundle = await leader.lookups.bundle_of(topics[0])
    assert await read_owner(leader.store, bundle) is None  # let go, not moved against policy
    await cluster.close()
