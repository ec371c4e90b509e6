"""A transfer the leader never finishes (it stopped between two commands) is settled by its
source: handed over → the stale claim is dropped, so a graceful stop does not wait out its
deadline; never taken over → the bundle is released after the unload timeout and placed again."""

from __future__ import annotations

from ballast.broker.cluster import LocalCluster
from ballast.broker.identity import BrokerIdentity
from ballast.broker.lookup import AnswerKind
from ballast.clock import Clock
from ballast.controller.commands import ForgetBundle, TakeOverBundle, TransferBundle
from ballast.controller.requests import CreateNamespace, CreateTenant, UnloadRequest
from ballast.coordination.ownership import OwnershipState, read_owner
from ballast.model.bundles import BundleName
from ballast.model.config import load_settings
from ballast.model.naming import TopicName
from tests.support.invariants import settle_and_check
from tests.support.waiting import eventually

TOPIC = TopicName.parse("persistent://t/ns/x")


async def start(clock: Clock) -> tuple[LocalCluster, str, str, int]:
    settings = load_settings(overrides=["metadataStoreSessionTimeoutMillis=10000"]).settings
    cluster = LocalCluster(clock, settings=settings)
    for port in (8080, 8081, 8082):
        await cluster.add_broker(BrokerIdentity("10.0.0.1", port, port - 1430))
    await eventually(lambda: cluster.leader() is not None, clock)
    assert (await cluster.request(CreateTenant(tenant="t"))).ok
    assert (await cluster.request(CreateNamespace(namespace="t/ns", bundles=1))).ok
    await cluster.running()[0].topic_index.create(TOPIC)
    answer = await cluster.lookup(TOPIC)
    assert answer.kind is AnswerKind.CONNECT and answer.broker_id is not None
    leader = cluster.leader()
    assert leader is not None and leader.controller is not None
    source = answer.broker_id
    destination = next(n.broker_id for n in cluster.running() if n.broker_id != source)
    return cluster, source, destination, leader.controller.epoch


async def test_a_handed_over_bundle_does_not_hold_up_a_graceful_stop(clock: Clock) -> None:
    cluster, source, destination, epoch = await start(clock)
    bundle = await cluster.nodes[source].lookups.bundle_of(TOPIC)
    name = str(bundle)
    # The leader's move, cut short before its ForgetBundle.
    assert (
        await cluster.nodes[source].handle_command(
            TransferBundle(epoch=epoch, bundle=name, destination=destination)
        )
    ).ok
    assert (
        await cluster.nodes[destination].handle_command(TakeOverBundle(epoch=epoch, bundle=name))
    ).ok
    assert cluster.nodes[source].ownership.state_of(bundle) is OwnershipState.RELEASING
    began = clock.monotonic()
    await cluster.stop_broker(source)
    assert clock.monotonic() - began < 10  # not the 60 s shutdown deadline
    owner = await read_owner(cluster.nodes[destination].store, bundle)
    assert owner is not None and owner.broker_id == destination
    observer = await cluster.connect()
    await settle_and_check(cluster, observer, clock)
    await cluster.close()


async def test_a_transfer_never_taken_over_is_released_and_placed_again(clock: Clock) -> None:
    cluster, source, destination, epoch = await start(clock)
    node = cluster.nodes[source]
    bundle = await node.lookups.bundle_of(TOPIC)
    assert (
        await node.handle_command(
            TransferBundle(epoch=epoch, bundle=str(bundle), destination=destination)
        )
    ).ok
    answer = await cluster.lookup(TOPIC)
    assert answer.kind is AnswerKind.ERROR  # releasing: clients retry
    # in Pulsar's words, which its C++ client retries on the same connection (on other words
    # it closes the connection, with every producer and consumer on it)
    assert answer.message.startswith(f"Namespace bundle {bundle} is being unloaded (releasing")
    await clock.sleep(61)  # namespaceBundleUnloadingTimeoutMs
    assert node.ownership.state_of(bundle) is OwnershipState.FREE
    answer = await cluster.lookup(TOPIC)
    assert answer.kind is AnswerKind.CONNECT
    observer = await cluster.connect()
    await settle_and_check(cluster, observer, clock)
    await cluster.close()


async def test_a_stopping_leader_is_drained_as_soon_as_a_new_leader_is_up(clock: Clock) -> None:
    cluster, _, _, _ = await start(clock)
    for i in range(8):
        topic = TopicName.parse(f"persistent://t/ns2/y{i}")
        if i == 0:
            assert (await cluster.request(CreateNamespace(namespace="t/ns2", bundles=8))).ok
        await cluster.running()[0].topic_index.create(topic)
        await cluster.lookup(topic)
    leader = cluster.leader()
    assert leader is not None
    owned = [b for b in leader.ownership.owned() if b != leader.heartbeat_bundle]
    if not owned:  # give the leader a bundle to drain
        other = next(n for n in cluster.running() if n is not leader)
        bundle = next(b for b in other.ownership.owned() if b != other.heartbeat_bundle)
        assert (
            await cluster.request(UnloadRequest(bundle=str(bundle), destination=leader.broker_id))
        ).ok
        owned = [bundle]
    began = clock.monotonic()
    await cluster.stop_broker(leader.broker_id)
    assert clock.monotonic() - began < 3.0  # asked the new leader at once, not 5 s later
    for bundle in owned:
        owner = await read_owner(cluster.running()[0].store, bundle)
        assert owner is not None and owner.broker_id != leader.broker_id
    await cluster.close()


async def test_a_take_over_whose_answer_was_lost_is_served_when_a_client_comes(
    clock: Clock,
) -> None:
    """ZooKeeper applied the destination's take-over after the client gave up on it: the
    record said the destination owned the bundle (lookups sent clients there), but it held no
    claim, so it served nothing and refused every move ("does not own it") while its session
    lived."""
    cluster, owner_id, _, _ = await start(clock)
    node = cluster.nodes[owner_id]
    bundle = await node.lookups.bundle_of(TOPIC)
    await node.ownership.forget(bundle)  # the record stays; the claim is as if never made
    node.served.remove_bundle(bundle)
    assert node.ownership.state_of(bundle) is OwnershipState.FREE
    owner = await node.owners.owner(bundle)
    assert owner is not None and owner.session == node.store.session_id
    assert await node.open_topic(TOPIC)  # a client, sent here by the lookup, is served
    assert node.ownership.owned().get(bundle) is OwnershipState.OWNED and bundle in node.served
    assert (await cluster.request(UnloadRequest(bundle=str(bundle)))).ok  # and it can move
    await cluster.close()


async def test_an_earlier_transfers_timer_does_not_release_a_later_transfer(clock: Clock) -> None:
    """Each transfer set a timer (namespaceBundleUnloadingTimeoutMs) to settle it should the
    leader never finish it, keyed by nothing but the bundle: the timer of a finished transfer,
    firing while a later transfer of the same bundle was mid-hand-off, released the bundle
    under it, and the take-over failed ("no such record")."""
    cluster, source, destination, epoch = await start(clock)
    a, b = cluster.nodes[source], cluster.nodes[destination]
    name = str(await a.lookups.bundle_of(TOPIC))

    async def transfer(src: str, dst: str) -> None:
        from_, to = cluster.nodes[src], cluster.nodes[dst]
        marked = TransferBundle(epoch=epoch, bundle=name, destination=dst)
        assert (await from_.handle_command(marked)).ok
        assert (await to.handle_command(TakeOverBundle(epoch=epoch, bundle=name))).ok
        assert (await from_.handle_command(ForgetBundle(epoch=epoch, bundle=name))).ok

    await transfer(source, destination)  # its timer: 60 s from now
    await transfer(destination, source)
    await clock.sleep(59.5)
    marked = TransferBundle(epoch=epoch, bundle=name, destination=destination)
    assert (await a.handle_command(marked)).ok  # mid-hand-off when the first timer is due
    await clock.sleep(1.0)
    assert a.ownership.state_of(BundleName.parse(name)) is OwnershipState.RELEASING
    taken = await b.handle_command(TakeOverBundle(epoch=epoch, bundle=name))
    assert taken.ok, taken.message
    owner = await read_owner(b.store, BundleName.parse(name))
    assert owner is not None and owner.broker_id == destination
    await cluster.close()
