"""A new leader carries on with the last leader's shedding memory (kept in the store): the
grace period of recent moves and the strategy's state survive a failover."""

from __future__ import annotations

from ballast.broker.cluster import LocalCluster
from ballast.broker.identity import BrokerIdentity
from ballast.clock import Clock
from ballast.controller.loading import load_shedding_memory
from ballast.controller.requests import CreateNamespace, CreateTenant, UnloadRequest
from ballast.model.config import load_settings
from ballast.model.naming import TopicName
from tests.support.waiting import eventually


async def test_grace_period_and_strategy_state_survive_a_failover(clock: Clock) -> None:
    settings = load_settings(overrides=["metadataStoreSessionTimeoutMillis=10000"]).settings
    cluster = LocalCluster(clock, settings=settings)
    for port in (8080, 8081, 8082):
        await cluster.add_broker(BrokerIdentity("10.0.0.1", port, port - 1430))
    await eventually(lambda: cluster.leader() is not None, clock)
    assert (await cluster.request(CreateTenant(tenant="t"))).ok
    assert (await cluster.request(CreateNamespace(namespace="t/ns", bundles=4))).ok
    topic = TopicName.parse("persistent://t/ns/x")
    await cluster.running()[0].topic_index.create(topic)
    await cluster.lookup(topic)
    bundle = str(await cluster.running()[0].lookups.bundle_of(topic))
    first = cluster.leader()
    assert first is not None and first.controller is not None
    image = first.controller.image
    await eventually(lambda: bundle in image.owners and bundle not in image.moving, clock)
    assert (await cluster.request(UnloadRequest(bundle=bundle))).ok
    unloaded_at = first.controller.image.recently_unloaded_bundles[bundle]
    await clock.sleep(70)  # a shedding cycle stores the memory
    observer = await cluster.connect()
    stored = await load_shedding_memory(observer)
    assert stored is not None and stored.strategy == "threshold"
    assert stored.recently_unloaded_bundles == {bundle: unloaded_at}
    history = first.controller.strategy_state.usage_history
    assert history
    await cluster.crash_broker(first.broker_id)
    await eventually(
        lambda: cluster.leader() not in (None, first), clock, timeout_s=60, what="a new leader"
    )
    second = cluster.leader()
    assert second is not None and second.controller is not None
    await eventually(lambda: second.controller is not None and second.controller.running, clock)
    assert second.controller.image.recently_unloaded_bundles[bundle] == unloaded_at
    assert set(second.controller.strategy_state.usage_history) >= set(history) - {first.broker_id}
    await observer.close()
    await cluster.close()
