"""A graceful stop drains the broker's bundles through the leader, and ends early where
waiting could not help: every broker stopping at once (no leader is left to ask), or bundles
no other broker may take. Before, each such stop held on for brokerShutdownTimeoutMs."""

from __future__ import annotations

import asyncio

from ballast.broker.cluster import LocalCluster
from ballast.broker.identity import BrokerIdentity
from ballast.broker.leader_calls import LEADER_WAIT_S
from ballast.broker.node import BrokerNode
from ballast.clock import Clock
from ballast.controller.requests import (
    AnyRequest,
    CreateNamespace,
    CreateTenant,
    DrainBroker,
    RequestReply,
    UnloadRequest,
)
from ballast.coordination.ownership import read_owner
from ballast.metadata import paths
from ballast.model.config import load_settings
from tests.runtime.test_scenarios import create_topics
from tests.support.pinning import pinned_namespace
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


async def three_with_load(
    clock: Clock, namespace: str, bundles: int, topics: int
) -> tuple[LocalCluster, BrokerNode, BrokerNode, BrokerNode]:
    """Three brokers serving a namespace's topics: the cluster, its leader and the other two."""
    cluster = await start(clock, ("10.0.0.1", "10.0.0.2", "10.0.0.3"))
    assert (await cluster.request(CreateNamespace(namespace=namespace, bundles=bundles))).ok
    for topic in await create_topics(cluster, namespace, topics):
        await cluster.lookup(topic)
    await clock.sleep(1.0)
    leader = cluster.leader()
    assert leader is not None
    first, second = (n for n in cluster.running() if n is not leader)
    return cluster, leader, first, second


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
    assert took < LEADER_WAIT_S + 5 < SHUTDOWN_S, took
    await cluster.close()


async def test_a_stop_whose_bundles_no_other_broker_may_take_does_not_wait(
    clock: Clock,
) -> None:
    cluster = await start(clock, ("10.0.0.1", "10.0.0.2", "10.0.0.3"))
    pinned = "10.0.0.3:8080"
    topics = await pinned_namespace(cluster, "t/pinned", "10.0.0.3", 4)
    leader = cluster.leader()
    assert leader is not None and leader.broker_id != pinned  # else it resigns first
    began = clock.monotonic()
    await cluster.stop_broker(pinned)
    assert clock.monotonic() - began < 10 < SHUTDOWN_S
    bundle = await leader.lookups.bundle_of(topics[0])
    assert await read_owner(leader.store, bundle) is None  # let go, not moved against policy
    await cluster.close()


async def test_a_drain_asked_of_a_leader_that_stops_answering_goes_to_the_next_one(
    clock: Clock,
) -> None:
    """A stopping broker's drain waited on a silent (paused) leader for the transport's
    timeout, past its own deadline, while a new leader placed bundles on it; it dropped them
    when it left. The drain follows the leadership now."""
    cluster, old, stopping, staying = await three_with_load(clock, "t/d", 6, 12)
    drained = [b for b in stopping.ownership.owned() if b != stopping.heartbeat_bundle]
    assert drained
    call_leader = cluster.in_process.call_leader

    async def silent_old_leader(leader_id: str, request: AnyRequest) -> RequestReply:
        if leader_id == old.broker_id:
            await asyncio.get_running_loop().create_future()  # never answers
        return await call_leader(leader_id, request)

    cluster.in_process.call_leader = silent_old_leader  # type: ignore[method-assign]
    began = clock.monotonic()
    stop = asyncio.ensure_future(cluster.stop_broker(stopping.broker_id))
    await clock.sleep(0.5)
    await cluster.crash_broker(old.broker_id)
    await eventually(stop.done, clock, timeout_s=SHUTDOWN_S, what="the stop")
    stop.result()
    assert clock.monotonic() - began < SHUTDOWN_S / 2  # the session timeout and a transfer
    assert staying.controller is not None and staying.controller.running
    for bundle in drained:  # moved to the broker left, not dropped
        owner = await read_owner(staying.store, bundle)
        assert owner is not None and owner.broker_id == staying.broker_id, bundle
    cluster.in_process.call_leader = call_leader  # type: ignore[method-assign]
    await cluster.close()


async def test_a_leader_elected_while_a_broker_drains_places_nothing_on_it(
    clock: Clock,
) -> None:
    """A new leader learnt of a drain only when the stopping broker's request reached it, and
    placed the bundles of a dead broker on the stopping one meanwhile: the stopping broker
    dropped them when it left. The drain is in the store now, read before anything is placed."""
    cluster, old, stopping, staying = await three_with_load(clock, "t/r", 12, 48)
    orphans = [b for b in old.ownership.owned() if b != old.heartbeat_bundle]
    assert len(orphans) >= 2
    await eventually(  # a dead leader's bundles are known from its last load report
        lambda: {str(b) for b in orphans} <= set(old.reporter.last_written.bundles),
        clock,
        what="reported",
    )
    call_leader = cluster.in_process.call_leader

    async def drains_never_arrive(leader_id: str, request: AnyRequest) -> RequestReply:
        if isinstance(request, DrainBroker):
            await asyncio.get_running_loop().create_future()  # lost on the way
        return await call_leader(leader_id, request)

    cluster.in_process.call_leader = drains_never_arrive  # type: ignore[method-assign]
    stop = asyncio.ensure_future(cluster.stop_broker(stopping.broker_id))
    await clock.sleep(0.5)
    await cluster.crash_broker(old.broker_id)
    await eventually(
        lambda: staying.controller is not None and staying.controller.running,
        clock,
        timeout_s=30,
        what="the next leader",
    )

    async def owners() -> dict[object, str | None]:
        found = {}
        for bundle in orphans:
            owner = await read_owner(staying.store, bundle)
            found[bundle] = None if owner is None else owner.broker_id
        return found

    async def all_placed() -> bool:
        return None not in (await owners()).values()

    await eventually(all_placed, clock, timeout_s=30, what="the dead leader's bundles placed")
    assert set((await owners()).values()) == {staying.broker_id}
    assert not stop.done()  # still draining: the stopping broker was registered all along
    cluster.in_process.call_leader = call_leader  # type: ignore[method-assign]
    await eventually(stop.done, clock, timeout_s=SHUTDOWN_S * 2, what="the stop")
    await cluster.close()


async def test_a_draining_record_of_another_session_leaves_the_broker_a_candidate(
    clock: Clock,
) -> None:
    """A draining record outlives nothing but its session; one that is not the session's of
    the broker registered now (a copied store's, loaded as a persistent record) is not a drain."""
    cluster = await start(clock, ("10.0.0.1", "10.0.0.2"))
    leader = cluster.leader()
    assert leader is not None and leader.controller is not None
    other = next(n for n in cluster.running() if n is not leader)
    await leader.store.put(paths.draining(other.broker_id), b"")  # persistent: no session's
    await leader.store.put(paths.draining("10.0.0.9:8080"), b"")  # nor a registered broker's
    await clock.sleep(1.0)
    assert sorted(leader.controller.image.placeable_brokers()) == sorted(
        b.broker_id for b in cluster.running()
    )
    await other.registration.mark_draining()  # its own: it is draining
    await eventually(
        lambda: (
            leader.controller is not None
            and leader.controller.image.placeable_brokers() == [leader.broker_id]
        ),
        clock,
        what="the drain seen",
    )
    await cluster.close()


async def test_a_transfer_to_a_broker_shutting_down_is_refused(clock: Clock) -> None:
    """A new leader knew the broker was draining ("nothing more is placed on it"), yet moved
    a bundle there on request and said ok; the drain then moved it again."""
    cluster, leader, first, second = await three_with_load(clock, "t/dest", 4, 8)
    assert leader.controller is not None
    source, owned = next(
        (node, bundle)
        for node in (second, leader)
        for bundle in node.ownership.owned()
        if str(bundle.namespace) == "t/dest"
    )
    await first.registration.mark_draining()
    await eventually(
        lambda: (
            leader.controller is not None
            and first.broker_id not in leader.controller.image.placeable_brokers()
        ),
        clock,
        what="the drain seen",
    )
    reply = await cluster.request(UnloadRequest(bundle=str(owned), destination=first.broker_id))
    assert (reply.ok, reply.status) == (False, 412)
    assert reply.message == f"destination broker {first.broker_id} is shutting down"
    assert owned in source.ownership.owned()  # it stays where it is
    await cluster.close()
