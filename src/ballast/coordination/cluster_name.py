"""Which cluster a metadata store belongs to. Ballast's brokers serve one cluster, named by
``clusterName``, and the brokers on one store form it: a broker configured with another name
(a wrong ``broker.conf``) would join its load balancing all the same, yet answer every admin
call for its own name. The store records its cluster as Pulsar's tree does, under
``/admin/clusters/<name>``; a broker whose name is not there is refused before it registers.
"""

from __future__ import annotations

from ballast.metadata import paths
from ballast.metadata.store import MetadataStore

# The marker Pulsar's cluster set-up writes beside the real clusters (no cluster of brokers).
_PULSAR_GLOBAL = "global"


class ClusterMismatchError(ValueError):
    """The store is another cluster's."""


async def claim_cluster(store: MetadataStore, cluster: str) -> None:
    """Record ``cluster`` as the store's when it names none yet (the first broker of a new
    cluster, or a store from before clusters were recorded); ClusterMismatchError when it
    names others only (a copied Pulsar tree may name several: one of them is fine)."""
    known = [name for name in await store.children(paths.CLUSTERS) if name != _PULSAR_GLOBAL]
    if not known:
        await store.ensure(paths.cluster(cluster))
        return
    if cluster not in known:
        suggestion = f" (clusterName={known[0]})" if len(known) == 1 else ""
        raise ClusterMismatchError(
            f"clusterName is {cluster}, but this metadata store is for {', '.join(known)}: "
            f"give this broker its cluster's name{suggestion}, or a store of its own"
        )
