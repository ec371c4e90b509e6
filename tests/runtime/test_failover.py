"""The leader places a dead broker's bundles at once, not at their next lookup: also those it
could not place when the broker died (no broker could take them then: they are placed when
one joins), and those the broker was moving when it died. A leader that cannot run its
controller hands the leadership on."""

from __future__ import annotations

import asyncio

import pytest

from ballast.broker.cluster import LocalCluster
from ballast.broker.identity import BrokerIdentity
from ballast.clock import Clock
from ballast.controller.commands import TransferBundle
from ballast.controller.controller import Controller
from ballast.controller.requests import (
    CreateNamespace,
    CreateTenant,
    DeleteNamespace,
    DeleteTenant,
    UnloadRequest,
)
from ballast.coordination.ownership import read_owner
from ballast.metadata.store import MetadataError
from ballast.model.config import load_settings
from tests.runtime.test_scenarios import create_topics
from tests.support.pinning import pinned_namespace
from tests.support.transport_faults import delayed
from tests.support.waiting import eventually

SESSION_S = 10.0
HOSTS = ("10.0.0.1", "10.0.0.2", "10.0.0.3")


def identity(host: str) -> BrokerIdentity:
    return BrokerIdentity(host, 8080, 6650)


async def start(clock: Clock, *overrides: str) -> LocalCluster:
    settings = load_settings(
        overrides=[f"metadataStoreSessionTimeoutMillis={int(SESSION_S * 1000)}", *overrides]
    ).settings
    cluster = LocalCluster(clock, settings=settings)
    for host in HOSTS:
        await cluster.add_broker(identity(host))
    await eventually(lambda: cluster.leader() is not None, clock, what="a leader")
    assert (await cluster.request(CreateTenant(tenant="t"))).ok
    return cluster


async def test_bundles_no_broker_could_take_are_placed_when_one_joins(clock: Clock) -> None:
    """Before, they waited for a lookup: after a store outage longer than a session, a new
    leader found every broker gone, could place nothing, and never tried again."""
    cluster = await start(clock)
    pinned = identity(HOSTS[2])
    topics = await pinned_namespace(cluster, "t/pinned", HOSTS[2], 4)
    leader = cluster.leader()
    assert leader is not None and leader.broker_id != pinned.broker_id
    bundles = {await leader.lookups.bundle_of(t) for t in topics}
    await clock.sleep(1.0)
    await cluster.crash_broker(pinned.broker_id)
    await clock.sleep(SESSION_S * 2)  # gone; nobody else may take its bundles
    for bundle in bundles:
        assert await read_owner(leader.store, bundle) is None
    await cluster.add_broker(pinned)  # back, with no client looking anything up
    for bundle in bundles:

        async def owned(bundle: object = bundle) -> bool:
            owner = await read_owner(leader.store, bundle)  # type: ignore[arg-type]
            return owner is not None and owner.broker_id == pinned.broker_id

        await eventually(owned, clock, timeout_s=5.0, what=f"{bundle} placed again")
    await cluster.close()


async def test_a_bundle_whose_broker_dies_mid_transfer_is_placed_at_once(clock: Clock) -> None:
    cluster = await start(clock)
    assert (await cluster.request(CreateNamespace(namespace="t/x", bundles=2))).ok
    [topic] = await create_topics(cluster, "t/x", 1)
    leader = cluster.leader()
    assert leader is not None
    source, destination = (n.broker_id for n in cluster.running() if n is not leader)
    bundle = await leader.lookups.bundle_of(topic)
    await cluster.lookup(topic)
    # Owned by a follower (the source must die, not the leader).
    assert (await cluster.request(UnloadRequest(bundle=str(bundle), destination=source))).ok
    owner = await read_owner(leader.store, bundle)
    assert owner is not None and owner.broker_id == source
    await clock.sleep(1.0)
    with delayed(cluster, clock, TransferBundle, SESSION_S * 3):  # the source dies meanwhile
        request = asyncio.ensure_future(
            cluster.request(UnloadRequest(bundle=str(bundle), destination=destination))
        )
        await clock.sleep(0.5)
        await cluster.crash_broker(source)
        await eventually(request.done, clock, timeout_s=SESSION_S * 4, what="the move's end")
    reply = request.result()
    assert not reply.ok and reply.status == 503
    assert f"{source} left the cluster" in reply.message
    assert "; it had no owner, and is being assigned to " in reply.message

    async def owned() -> bool:
        owner = await read_owner(leader.store, bundle)
        return owner is not None and owner.broker_id != source

    await eventually(owned, clock, timeout_s=5.0, what="the bundle placed, with no lookup")
    await cluster.close()


async def test_a_leader_whose_controller_fails_to_start_steps_down(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, the broker stayed leader with no controller: nothing was placed or moved
    until it stopped."""
    start_controller = Controller.start
    failed: list[str] = []

    async def failing_once(self: Controller) -> None:
        if not failed:
            failed.append(self.leader_id)
            raise MetadataError("/namespace", "the store failed while the image was rebuilt")
        await start_controller(self)

    monkeypatch.setattr(Controller, "start", failing_once)
    cluster = await start(clock)  # waits for a running leader
    leader = cluster.leader()
    assert leader is not None and failed and leader.broker_id != failed[0]
    assert leader.controller is not None and leader.controller.epoch == 2
    assert cluster.nodes[failed[0]].controller is None
    assert (await cluster.request(CreateNamespace(namespace="t/after", bundles=1))).ok
    await cluster.close()


async def test_a_namespace_deleted_while_its_broker_dies_leaves_no_ownership_parents(
    clock: Clock,
) -> None:
    """The unloads to a dead broker fail, and its records stay until its session ends: the
    namespace's ``/namespace/t/gone`` and the tenant's ``/namespace/t`` were left for good.
    The leader drops them once that broker has left."""
    cluster = await start(clock, "forceDeleteNamespaceAllowed=true")
    assert (await cluster.request(CreateNamespace(namespace="t/gone", bundles=2))).ok
    [topic] = await create_topics(cluster, "t/gone", 1)
    leader = cluster.leader()
    assert leader is not None
    follower = next(n.broker_id for n in cluster.running() if n is not leader)
    bundle = await leader.lookups.bundle_of(topic)
    await cluster.lookup(topic)
    assert (await cluster.request(UnloadRequest(bundle=str(bundle), destination=follower))).ok
    await clock.sleep(1.0)
    await cluster.crash_broker(follower)
    reply = await cluster.request(DeleteNamespace(namespace="t/gone", force=True))
    assert reply.ok, reply.message
    assert (await cluster.request(DeleteTenant(tenant="t"))).ok
    assert await leader.store.exists("/namespace/t/gone") is not None  # its record holds it

    async def tidied() -> bool:
        return await leader.store.exists("/namespace/t") is None

    await eventually(tidied, clock, timeout_s=SESSION_S * 3, what="the parents dropped")
    await cluster.close()
