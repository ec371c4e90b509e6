"""The invariants a cluster must keep, checked against the brokers and the store:

1. at most one broker serves a bundle (checked as is: it must hold at every instant);
2. no bundle is owned by a broker that is not registered, or under a session other than its
   registration's;
3. the leader's image equals the store (owners of every namespace it tracks, bundles in
   flight aside).

2 and 3 lag the store by a notification or a debounce (a lost session's records vanish a
moment before the leader hears of it), so :func:`check_settled` gives them a few seconds to
agree before calling a difference a violation.

Concurrency contract: one event loop; the checker only reads.
"""

from __future__ import annotations

from ballast.broker.cluster import LocalCluster
from ballast.clock import Clock
from ballast.controller.loading import scan_owners
from ballast.coordination.ownership import OwnershipState, parse_owner
from ballast.metadata import paths
from ballast.metadata.store import MetadataStore, join
from ballast.model.bundles import BundleName
from ballast.model.naming import NamespaceName


class InvariantViolation(AssertionError):
    """A cluster invariant does not hold; the message says which and where."""


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


def check_single_owner(cluster: LocalCluster) -> None:
    """Invariant 1: at most one running broker serves each bundle."""
    serving: dict[str, list[str]] = {}
    for node in cluster.running():
        for bundle, state in node.ownership.owned().items():
            if state is OwnershipState.OWNED:
                serving.setdefault(str(bundle), []).append(node.broker_id)
    doubled = {b: brokers for b, brokers in serving.items() if len(brokers) > 1}
    if doubled:
        raise InvariantViolation(f"bundles served twice: {doubled}")


async def check_store(cluster: LocalCluster, observer: MetadataStore) -> None:
    """Invariants 2 and 3, as the store and the leader's image are now."""
    registered = {
        name: record.stat.ephemeral_owner
        for name, record in (await observer.get_children_values(paths.BROKERS)).items()
    }
    records = await ownership_records(observer)
    for bundle, (broker, session) in records.items():
        if broker not in registered:
            raise InvariantViolation(f"{bundle} owned by unregistered broker {broker}")
        if session != registered[broker]:
            raise InvariantViolation(f"{bundle} owned by a stale session of {broker}")
    leader = cluster.leader()
    if leader is None or leader.controller is None:
        return
    image = leader.controller.image
    if set(image.brokers) != set(registered):
        raise InvariantViolation(
            f"leader's brokers {sorted(image.brokers)} != registered {sorted(registered)}"
        )
    for namespace in list(image.namespaces):
        stored = await scan_owners(observer, namespace)
        pictured = {
            b: o
            for b, o in image.owners.items()
            if BundleName.parse(b).namespace == namespace and b not in image.moving
        }
        stored = {b: o for b, o in stored.items() if b not in image.moving}
        if pictured != stored:
            raise InvariantViolation(f"image {pictured} != store {stored} for {namespace}")


async def check_invariants(cluster: LocalCluster, observer: MetadataStore) -> None:
    """All three invariants, as things are now (no waiting)."""
    check_single_owner(cluster)
    await check_store(cluster, observer)


async def check_settled(
    cluster: LocalCluster,
    observer: MetadataStore,
    clock: Clock,
    *,
    attempts: int = 10,
    interval_s: float = 0.5,
) -> None:
    """Invariant 1 now; 2 and 3 within ``attempts * interval_s`` seconds (the cluster keeps
    running meanwhile). Raises :class:`InvariantViolation` with the last difference seen."""
    check_single_owner(cluster)
    for attempt in range(attempts):
        try:
            await check_store(cluster, observer)
            return
        except InvariantViolation:
            if attempt == attempts - 1:
                raise
        await clock.sleep(interval_s)
        check_single_owner(cluster)


def heartbeat(bundle: str) -> bool:
    return NamespaceName.parse(bundle.rpartition("/")[0]).is_heartbeat
