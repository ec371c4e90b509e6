"""A namespace deleted while one of its bundles is being split: the split fails (404) or its
children are unloaded, nothing of the namespace comes back, and the leader keeps moving
other bundles. Before, the split's broker raised NamespaceNotFoundError (an error answer the
leader's channel sent again for ever, every later command to that broker waiting behind it),
or wrote the namespace's boundaries back after the deletion and kept the children owned."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ballast.broker.cluster import LocalCluster
from ballast.clock import Clock
from ballast.controller.commands import SplitBundle
from ballast.controller.requests import (
    CreateNamespace,
    DeleteNamespace,
    RequestReply,
    SplitRequest,
    UnloadRequest,
)
from ballast.coordination.ownership import Owner, OwnershipState
from ballast.metadata import paths
from ballast.model.bundles import BundleName
from ballast.model.naming import NamespaceName
from tests.runtime.test_failover import start
from tests.runtime.test_scenarios import create_topics, lookup_all
from tests.support.transport_faults import delayed
from tests.support.waiting import eventually

RACE = NamespaceName.parse("t/race")


async def _owned_bundle(cluster: LocalCluster) -> tuple[BundleName, str]:
    assert (await cluster.request(CreateNamespace(namespace=str(RACE), bundles=4))).ok
    topics = await create_topics(cluster, str(RACE), 8)
    owners = await lookup_all(cluster, topics)
    node = cluster.running()[0]
    return await node.lookups.bundle_of(topics[0]), owners[str(topics[0])]


async def _split_racing_the_deletion(
    cluster: LocalCluster, clock: Clock, bundle: BundleName
) -> RequestReply:
    split = asyncio.ensure_future(
        cluster.request(SplitRequest(bundle=str(bundle), algorithm="range_equally_divide"))
    )
    await clock.sleep(0.5)  # the split is under way
    deleted = await cluster.request(DeleteNamespace(namespace=str(RACE), force=True))
    assert deleted.ok, deleted.message
    await eventually(split.done, clock, timeout_s=30, what="the split answered")
    return split.result()


async def _nothing_left_and_still_moving(cluster: LocalCluster, clock: Clock) -> None:
    store = await cluster.connect()

    async def records_gone() -> bool:
        return not await store.children(paths.namespace_ownership(RACE))

    await eventually(records_gone, clock, timeout_s=30, what="no bundle of t/race owned")
    assert await store.exists(paths.local_policies(RACE)) is None  # not written back
    assert all(RACE not in n.controller.image.namespaces for n in cluster.running() if n.controller)
    # the leader still moves other bundles (its channel to the split's broker is free)
    assert (await cluster.request(CreateNamespace(namespace="t/other", bundles=2))).ok
    [topic] = await create_topics(cluster, "t/other", 1)
    await lookup_all(cluster, [topic])
    other = await cluster.running()[0].lookups.bundle_of(topic)
    unloaded = await asyncio.wait_for(cluster.request(UnloadRequest(bundle=str(other))), 60)
    assert unloaded.ok, unloaded.message
    await store.close()


async def test_a_split_that_reaches_its_broker_after_the_deletion_fails_as_not_found(
    clock: Clock,
) -> None:
    cluster = await start(clock, "forceDeleteNamespaceAllowed=true")
    bundle, _ = await _owned_bundle(cluster)
    with delayed(cluster, clock, SplitBundle, 2.0):
        reply = await _split_racing_the_deletion(cluster, clock, bundle)
    assert (reply.ok, reply.status) == (False, 404), reply
    assert reply.message == "namespace t/race does not exist"
    await _nothing_left_and_still_moving(cluster, clock)
    await cluster.close()


async def test_children_of_a_split_that_outlives_the_deletion_are_unloaded(clock: Clock) -> None:
    cluster = await start(clock, "forceDeleteNamespaceAllowed=true")
    bundle, owner_id = await _owned_bundle(cluster)
    owner = cluster.nodes[owner_id]
    acquire = owner.ownership.acquire

    async def slow_children(
        child: BundleName, state: OwnershipState = OwnershipState.OWNED
    ) -> Owner:
        # the split has written the new boundaries: its children are taken after the deletion
        if (
            child.namespace == RACE
            and child.range != bundle.range
            and bundle.range.lower <= child.range.lower < bundle.range.upper
        ):
            await clock.sleep(2.0)
        return await acquire(child, state)

    owner.ownership.acquire = slow_children  # type: ignore[method-assign]
    reply = await _split_racing_the_deletion(cluster, clock, bundle)
    owner.ownership.acquire = acquire  # type: ignore[method-assign]
    assert reply.ok and len(reply.result["children"]) == 2, reply  # type: ignore[arg-type]
    await _nothing_left_and_still_moving(cluster, clock)
    await cluster.close()


async def test_a_command_that_fails_unexpectedly_is_answered_not_raised(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Raised, it reached the leader as an error answer, which its channel takes for a
    command that did not arrive and sends again, for ever."""
    cluster = await start(clock)
    bundle, owner_id = await _owned_bundle(cluster)
    owner = cluster.nodes[owner_id]

    async def broken(*_: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(owner, "unload", broken)
    reply = await asyncio.wait_for(cluster.request(UnloadRequest(bundle=str(bundle))), 60)
    assert not reply.ok and "internal error: RuntimeError: a bug" in reply.message, reply
    monkeypatch.undo()
    assert (await cluster.request(UnloadRequest(bundle=str(bundle)))).ok  # not stuck
    await cluster.close()


async def test_a_deletion_whose_local_policies_a_split_rewrites_meanwhile_goes_through(
    clock: Clock,
) -> None:
    """A split rewrote the boundaries between the deletion's read of their version and its
    write: the leader's handler raised (500 to the admin) and the namespace stayed."""
    cluster = await start(clock, "forceDeleteNamespaceAllowed=true")
    await _owned_bundle(cluster)
    leader = cluster.leader()
    assert leader is not None and leader.controller is not None
    controller = leader.controller
    fenced = controller.fenced
    store = await cluster.connect()
    rewrites = [1]

    async def split_meanwhile(ops: Any) -> Any:
        if rewrites[0]:
            rewrites[0] -= 1
            record = await store.get(paths.local_policies(RACE))
            assert record is not None
            await store.put(paths.local_policies(RACE), record.value, record.stat.version)
        return await fenced(ops)

    controller.fenced = split_meanwhile  # type: ignore[method-assign]
    reply = await cluster.request(DeleteNamespace(namespace=str(RACE), force=True))
    controller.fenced = fenced  # type: ignore[method-assign]
    assert reply.ok, reply.message
    assert rewrites == [0]
    assert await store.exists(paths.namespace_policies(RACE)) is None
    assert await store.exists(paths.local_policies(RACE)) is None
    await store.close()
    await cluster.close()
