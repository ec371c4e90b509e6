"""The invariants every runtime scenario checks after each step (once the cluster settles):
at most one broker serves a bundle; no bundle is owned by a broker that is not registered (or
under a session that is not its registration's); the leader's image equals the store."""

from __future__ import annotations

from ballast.broker.cluster import LocalCluster
from ballast.clock import Clock
from ballast.controller.loading import is_heartbeat, scan_owners
from ballast.coordination.ownership import OwnershipState, parse_owner
from ballast.metadata import paths
from ballast.metadata.store import MetadataStore, join
from ballast.model.bundles import BundleName
from ballast.model.naming import NamespaceName


async def ownership_records(store: MetadataStore) -> dict[str, tuple[str | None, int | None]]:
    """Every ownership record: bundle → (broker id, owning session)."""
    found: dict[str, tuple[str | None, int | None]] = {}
    for tenant in await store.children(paths.OWNERSHIP):
        for namespace in await store.children(join(paths.OWNERSHIP, tenant)):
            base = join(paths.OWNERSHIP, tenant, namespace)
            for range_text, record in (await store.get_children_values(base)).items():
                bundle = BundleName.parse(f"{tenant}/{namespace}/{range_text}")
                owner = parse_owner(bundle, record)
                found[str(bundle)] = (owner.broker_id, owner.session)
    return found


async def check_invariants(cluster: LocalCluster, observer: MetadataStore) -> None:
    # 1. At most one broker serves each bundle.
    serving: dict[str, list[str]] = {}
    for node in cluster.running():
        for bundle, state in node.ownership.owned().items():
            if state is OwnershipState.OWNED:
                serving.setdefault(str(bundle), []).append(node.broker_id)
    doubled = {b: brokers for b, brokers in serving.items() if len(brokers) > 1}
    assert not doubled, f"bundles served twice: {doubled}"
    # 2. Every owner is registered, and owns under its registered session.
    registered = {
        name: record.stat.ephemeral_owner
        for name, record in (await observer.get_children_values(paths.BROKERS)).items()
    }
    records = await ownership_records(observer)
    for bundle, (broker, session) in records.items():
        assert broker in registered, f"{bundle} owned by unregistered broker {broker}"
        assert session == registered[broker], f"{bundle} owned by a stale session of {broker}"
    # 3. The leader's image equals the store.
    leader = cluster.leader()
    if leader is None or leader.controller is None:
        return
    image = leader.controller.image
    assert set(image.brokers) == set(registered), (set(image.brokers), set(registered))
    for namespace in image.namespaces:
        stored = await scan_owners(observer, namespace)
        pictured = {
            b: o
            for b, o in image.owners.items()
            if BundleName.parse(b).namespace == namespace and b not in image.moving
        }
        stored = {b: o for b, o in stored.items() if b not in image.moving}
        assert pictured == stored, f"image {pictured} != store {stored} for {namespace}"


async def settle_and_check(
    cluster: LocalCluster, observer: MetadataStore, clock: Clock, seconds: float = 1.0
) -> None:
    await clock.sleep(seconds)
    await check_invariants(cluster, observer)


def heartbeat(bundle: str) -> bool:
    return is_heartbeat(NamespaceName.parse(bundle.rpartition("/")[0]))
