"""Two bundles of one namespace split at the same time by their two owners, with store reads
that take a round trip (as on ZooKeeper): both splits land in the boundaries, and every topic
is served by exactly one broker. Each owner used to cut the boundaries it had read through its
cache but write them at the version of a second read, overwriting the other split."""

from __future__ import annotations

import asyncio

import msgspec

from ballast.clock import Clock
from ballast.controller.requests import CreateNamespace, CreateTenant, SplitRequest
from ballast.metadata import paths
from ballast.model.naming import NamespaceName
from ballast.model.policies import LocalPolicies
from tests.runtime.test_scenarios import SESSION_S, broker, create_topics
from tests.support.invariants import settle_and_check
from tests.support.slow_reads import SlowReads, slow_cluster


async def test_two_splits_at_once_both_land(clock: Clock) -> None:
    slow = SlowReads(clock, 0.01)
    cluster = await slow_cluster(
        clock,
        slow,
        [broker(i) for i in range(3)],
        SESSION_S,
        "loadBalancerAutoBundleSplitEnabled=false",
        "loadBalancerSheddingEnabled=false",
    )
    observer = await cluster.connect()
    assert (await cluster.request(CreateTenant(tenant="t"))).ok
    assert (await cluster.request(CreateNamespace(namespace="t/c", bundles=4))).ok
    topics = await create_topics(cluster, "t/c", 40)
    for topic in topics:
        await cluster.lookup(topic)
    await clock.sleep(2.0)
    leader = cluster.leader()
    assert leader is not None and leader.controller is not None
    first_of: dict[str, str] = {}
    for bundle, owner in sorted(leader.controller.image.owners.items()):
        if bundle.startswith("t/c/"):
            first_of.setdefault(owner, bundle)
    one, other = list(first_of.values())[:2]  # two bundles of two different owners
    slow.on = True
    replies = await asyncio.gather(
        cluster.request(SplitRequest(bundle=one, algorithm="range_equally_divide")),
        cluster.request(SplitRequest(bundle=other, algorithm="range_equally_divide")),
    )
    slow.on = False
    assert all(reply.ok for reply in replies), replies
    record = await observer.get(paths.local_policies(NamespaceName.parse("t/c")))
    assert record is not None
    local = msgspec.json.decode(record.value, type=LocalPolicies)
    assert local.bundles is not None and local.bundles.num_bundles == 6  # 4 + 1 + 1
    await settle_and_check(cluster, observer, clock)
    for topic in topics:  # one server per topic
        servers = [n.broker_id for n in cluster.running() if n.served.bundle_of(topic) is not None]
        assert len(servers) == 1, (topic, servers)
    await cluster.close()
