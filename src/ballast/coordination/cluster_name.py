"""Which cluster a metadata store belongs to. Ballast's brokers serve one cluster, named by
``clusterName``, and the brokers on one store form it: a broker configured with another name
(a wrong ``broker.conf``) would join its load balancing all the same, yet answer every admin
call for its own name. So the first broker claims the store for its cluster, and a broker of
another is refused before it registers.

The claim is the value of ``/admin/clusters`` (empty in Pulsar's tree), set once with a
compare-and-set, so that brokers of two names starting together cannot both win; the cluster's
own record, ``/admin/clusters/<name>``, is made beside it as in Pulsar's tree. A copied Pulsar
tree names its clusters there without a claim: the first broker must be one of them.
"""

from __future__ import annotations

from ballast.metadata import paths
from ballast.metadata.store import BadVersionError, MetadataStore

# Pulsar's marker of global namespaces beside the real clusters: no cluster of brokers.
PULSAR_GLOBAL = "global"


class ClusterMismatchError(ValueError):
    """The store is another cluster's (or the name is no cluster's)."""


async def claim_cluster(store: MetadataStore, cluster: str) -> None:
    """Claim the store for ``cluster``, or check that it is that cluster's; raise
    ClusterMismatchError when it is another's."""
    if cluster == PULSAR_GLOBAL:
        raise ClusterMismatchError(
            f'clusterName is "{PULSAR_GLOBAL}", Pulsar\'s name for global namespaces, not a '
            "cluster's: give the cluster its own name"
        )
    await store.ensure(paths.CLUSTERS)
    while True:
        record = await store.get(paths.CLUSTERS)
        if record is None:  # deleted meanwhile
            await store.ensure(paths.CLUSTERS)
            continue
        claimed = record.value.decode("utf-8", "replace")
        if claimed:
            if claimed != cluster:
                raise _mismatch(cluster, [claimed])
            break
        named = [name for name in await store.children(paths.CLUSTERS) if name != PULSAR_GLOBAL]
        if named and cluster not in named:  # a copied tree of other clusters
            raise _mismatch(cluster, named)
        try:
            await store.put(paths.CLUSTERS, cluster.encode(), record.stat.version)
            break
        except BadVersionError:
            continue  # another broker claimed it first: read what it claimed
    await store.ensure(paths.cluster(cluster))


def _mismatch(cluster: str, known: list[str]) -> ClusterMismatchError:
    advice = f"set clusterName={known[0]}" if len(known) == 1 else "set one of their names"
    return ClusterMismatchError(
        f"clusterName is {cluster}, but this metadata store is for {', '.join(known)}: "
        f"{advice}, or give a store of this cluster's own"
    )
