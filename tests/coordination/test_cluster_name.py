"""A store is one cluster's: the first broker records the name, a broker of another is
refused, and a copied Pulsar tree naming several clusters (and its "global" marker) accepts
any of them."""

from __future__ import annotations

import pytest

from ballast.clock import Clock
from ballast.coordination.cluster_name import ClusterMismatchError, claim_cluster
from ballast.metadata.memory import MemoryMetadataStore, MemoryServer


async def test_the_first_broker_names_the_cluster_and_another_name_is_refused(
    clock: Clock,
) -> None:
    store = MemoryMetadataStore(MemoryServer(clock))
    await claim_cluster(store, "prod")
    assert await store.children("/admin/clusters") == ["prod"]
    await claim_cluster(store, "prod")  # its other brokers
    with pytest.raises(ClusterMismatchError, match=r"is for prod: .*\(clusterName=prod\)"):
        await claim_cluster(store, "standalone")
    assert await store.children("/admin/clusters") == ["prod"]  # nothing written


async def test_a_copied_pulsar_tree_accepts_each_of_its_clusters(clock: Clock) -> None:
    store = MemoryMetadataStore(MemoryServer(clock))
    for name in ("global", "us-east", "us-west"):
        await store.put(f"/admin/clusters/{name}", b"{}")
    await claim_cluster(store, "us-west")
    with pytest.raises(ClusterMismatchError, match="is for us-east, us-west: give"):
        await claim_cluster(store, "global")  # Pulsar's marker is no cluster of brokers
    only_marker = MemoryMetadataStore(MemoryServer(clock))
    await only_marker.put("/admin/clusters/global", b"{}")
    await claim_cluster(only_marker, "prod")
    assert await only_marker.children("/admin/clusters") == ["global", "prod"]
