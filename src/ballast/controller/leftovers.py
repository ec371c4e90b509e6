"""What a deleted namespace or tenant leaves in the store's ownership tree: the parents of its
bundles' ownership records, ``/namespace/<tenant>/<ns>`` and ``/namespace/<tenant>``, which
Pulsar removes too (``NamespaceResources.deleteNamespaceAsync`` and ``deleteTenantAsync``).
A namespace's parent empties only as the unloads of its bundles finish, so the leader tries
when it deletes the namespace and again after each of those unloads; a broker that died
during the deletion keeps its records until its session ends, and a leader may change
midway, so a new leader and each broker's departure sweep the parents of namespaces the
leader does not know.

A move under way when its namespace is deleted (a split, an assignment: the deletion unloads
only the bundles that are not moving) may end with bundles owned after the deletion; the
leader unloads them (:func:`left_owned`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Container

from ballast.controller.moves import MoveFinished
from ballast.metadata import paths
from ballast.metadata.store import MetadataError, MetadataStore
from ballast.model.naming import InvalidNameError, NamespaceName


async def drop_namespace_parent(store: MetadataStore, namespace: NamespaceName) -> None:
    """Delete the deleted ``namespace``'s ownership parent once nothing is under it, and its
    tenant's once the tenant is deleted and nothing is under that. Each is left while the
    namespace (or tenant) exists, made again since, or while records are still under it.
    Tidying only: a store that fails meanwhile leaves them (empty records, harmless)."""
    if await _drop_namespace_only(store, namespace):
        await drop_tenant_parent(store, namespace.tenant)


async def _drop_namespace_only(store: MetadataStore, namespace: NamespaceName) -> bool:
    """Whether ``namespace`` is deleted (its parent then dropped if empty)."""
    with contextlib.suppress(MetadataError):
        if await store.exists(paths.namespace_policies(namespace)) is None:
            await _delete_if_empty(store, paths.namespace_ownership(namespace))
            return True
    return False


async def drop_tenant_parent(store: MetadataStore, tenant: str) -> None:
    """Delete a deleted ``tenant``'s ownership parent once nothing is under it."""
    with contextlib.suppress(MetadataError):
        if await store.exists(paths.tenant(tenant)) is None:
            await _delete_if_empty(store, f"{paths.OWNERSHIP}/{tenant}")


async def _delete_if_empty(store: MetadataStore, path: str) -> None:
    # NoNodeError, NotEmptyError: gone already, or records still under it
    with contextlib.suppress(MetadataError):
        await store.delete(path)


async def sweep_parents(store: MetadataStore, known: Container[NamespaceName]) -> None:
    """Drop the parents of namespaces not in ``known`` (the leader's: every namespace that
    exists), and of their tenants that are gone, where nothing is under them. Brokers'
    heartbeat namespaces are left (they have no policies: each broker makes its own again).
    Reads one record per unknown namespace, and one per tenant of theirs."""
    with contextlib.suppress(MetadataError):
        for tenant in await store.children(paths.OWNERSHIP):
            deleted = False
            for name in await store.children(f"{paths.OWNERSHIP}/{tenant}"):
                try:
                    namespace = NamespaceName.parse(f"{tenant}/{name}")
                except InvalidNameError:
                    continue  # a v1 name's cluster level, or a stray record
                if namespace not in known and not namespace.is_heartbeat:
                    deleted = await _drop_namespace_only(store, namespace) or deleted
            if deleted:
                await drop_tenant_parent(store, tenant)


def left_owned(event: MoveFinished, owner: str | None) -> list[tuple[str, str]]:
    """The bundles a finished move left owned, with their owner (``owner``: the bundle's
    owner now): a split's children, or the bundle itself (assigned, transferred, or a move
    that failed on its owner). None after an unload: one that failed is not tried again
    here, where a broker refusing it would be asked for ever."""
    if owner is None or event.kind == "unload":
        return []
    if event.kind == "split" and event.ok and event.children:
        return [(child, owner) for child in event.children]
    return [(event.bundle, owner)]
