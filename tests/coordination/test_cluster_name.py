"""A store is one cluster's: the first broker claims it, a broker of another name is refused
(two starting together included: one claim wins), and a copied Pulsar tree naming several
clusters (and its "global" marker) takes the first broker of any of them."""

from __future__ import annotations

import asyncio

import pytest

from ballast.clock import Clock
from ballast.coordination.cluster_name import ClusterMismatchError, claim_cluster
from ballast.metadata.memory import MemoryMetadataStore, MemoryServer
from ballast.metadata.store import Record


async def test_the_first_broker_claims_the_store_and_another_name_is_refused(
    clock: Clock,
) -> None:
    store = MemoryMetadataStore(MemoryServer(clock))
    await claim_cluster(store, "prod")
    assert await store.children("/admin/clusters") == ["prod"]
    await claim_cluster(store, "prod")  # its other brokers
    with pytest.raises(ClusterMismatchError, match=r"is for prod: set clusterName=prod,"):
        await claim_cluster(store, "standalone")
    assert await store.children("/admin/clusters") == ["prod"]  # nothing written


async def test_of_two_names_starting_together_one_claims_the_store(clock: Clock) -> None:
    """Each read the store unclaimed; both joined it (the check was not atomic)."""
    server = MemoryServer(clock)
    first, second = MemoryMetadataStore(server), MemoryMetadataStore(server)
    for store in (first, second):  # reads take a round trip, as on ZooKeeper
        _slowed(store, clock)
    outcomes = await asyncio.gather(
        claim_cluster(first, "ca"), claim_cluster(second, "cb"), return_exceptions=True
    )
    assert sorted(type(o).__name__ for o in outcomes) == ["ClusterMismatchError", "NoneType"]
    winner = "ca" if outcomes[0] is None else "cb"
    assert await first.children("/admin/clusters") == [winner]


def _slowed(store: MemoryMetadataStore, clock: Clock) -> None:
    get, children = store.get, store.children

    async def slow_get(path: str) -> Record | None:
        found = await get(path)
        await clock.sleep(0.01)  # the answer on its way back: the tree may change meanwhile
        return found

    async def slow_children(path: str) -> list[str]:
        found = await children(path)
        await clock.sleep(0.01)
        return found

    store.get = slow_get  # type: ignore[method-assign]
    store.children = slow_children  # type: ignore[method-assign]


async def test_a_copied_pulsar_tree_takes_one_of_its_clusters(clock: Clock) -> None:
    store = MemoryMetadataStore(MemoryServer(clock))
    for name in ("global", "us-east", "us-west"):
        await store.put(f"/admin/clusters/{name}", b"{}")
    with pytest.raises(ClusterMismatchError, match="is for us-east, us-west: set one of their"):
        await claim_cluster(store, "eu")
    await claim_cluster(store, "us-west")
    with pytest.raises(ClusterMismatchError, match=r"is for us-west: .*clusterName=us-west"):
        await claim_cluster(store, "us-east")  # claimed now: one cluster per store
    with pytest.raises(ClusterMismatchError, match="Pulsar's name for global namespaces"):
        await claim_cluster(store, "global")
