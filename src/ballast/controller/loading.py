"""Reading the cluster's stored state — how a new leader rebuilds its image after a failover,
and how it refreshes parts of it: namespaces and their bundles and policies, isolation
policies, failure domains, bundle data, bundle owners, and the last leader's shedding
memory."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import msgspec

from ballast.balance.snapshot import bundle_name, canonical_bundle_text
from ballast.coordination.ownership import parse_owner
from ballast.metadata import paths
from ballast.metadata.store import MetadataStore, join
from ballast.model.bundles import BundleName, NamespaceBundles
from ballast.model.codec import ModelError
from ballast.model.loaddata import BundleData
from ballast.model.naming import InvalidNameError, NamespaceName
from ballast.model.policies import (
    FailureDomain,
    IsolationPolicies,
    LocalPolicies,
    NamespacePolicies,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class NamespaceState:
    bundles: NamespaceBundles
    anti_affinity_group: str | None


async def list_namespaces(store: MetadataStore) -> list[NamespaceName]:
    """Every v2 namespace with policies (``/admin/policies/<tenant>/<ns>``)."""
    found: list[NamespaceName] = []
    for tenant in await store.children(paths.POLICIES):
        for name in await store.children(paths.tenant(tenant)):
            try:
                found.append(NamespaceName.of(tenant, name))
            except InvalidNameError:
                continue
    return found


async def load_namespace(store: MetadataStore, namespace: NamespaceName) -> NamespaceState | None:
    """A namespace's bundles (local policies first, else its policies) and anti-affinity
    group; None if it does not exist."""
    local = LocalPolicies()
    local_record = await store.get(paths.local_policies(namespace))
    if local_record is not None and local_record.value:
        local = msgspec.json.decode(local_record.value, type=LocalPolicies)
    policy_record = await store.get(paths.namespace_policies(namespace))
    if policy_record is None and local.bundles is None:
        return None
    bundles_data = local.bundles
    if bundles_data is None and policy_record is not None:
        policies = msgspec.json.decode(policy_record.value or b"{}", type=NamespacePolicies)
        bundles_data = policies.bundles
    bundles = (
        bundles_data.to_bundles(namespace)
        if bundles_data is not None
        else NamespaceBundles.equal(namespace, 1)
    )
    return NamespaceState(bundles, local.namespace_anti_affinity_group)


async def load_isolation(store: MetadataStore, cluster: str) -> IsolationPolicies:
    record = await store.get(paths.isolation_policies(cluster))
    if record is None or not record.value:
        return IsolationPolicies()
    try:
        return IsolationPolicies.from_mapping(msgspec.json.decode(record.value))
    except (ModelError, msgspec.DecodeError):
        log.exception("isolation policies of %s are unreadable; ignoring them", cluster)
        return IsolationPolicies()


async def load_failure_domains(store: MetadataStore, cluster: str) -> dict[str, tuple[str, ...]]:
    domains: dict[str, tuple[str, ...]] = {}
    base = paths.failure_domains(cluster)
    for name, record in (await store.get_children_values(base)).items():
        try:
            domains[name] = tuple(msgspec.json.decode(record.value, type=FailureDomain).brokers)
        except (msgspec.DecodeError, msgspec.ValidationError):
            log.warning("failure domain %s is unreadable; ignoring it", name)
    return domains


async def load_bundle_data(store: MetadataStore) -> dict[str, BundleData]:
    """Every ``/loadbalance/bundle-data/<tenant>/<ns>/<range>`` record."""
    found: dict[str, BundleData] = {}
    for tenant in await store.children(paths.BUNDLE_DATA):
        for namespace in await store.children(join(paths.BUNDLE_DATA, tenant)):
            base = join(paths.BUNDLE_DATA, tenant, namespace)
            for range_text, record in (await store.get_children_values(base)).items():
                try:
                    bundle = BundleName.parse(f"{tenant}/{namespace}/{range_text}")
                    found[str(bundle)] = BundleData.from_json(record.value)
                except (ValueError, ModelError):
                    continue
    return found


async def scan_owners(store: MetadataStore, namespace: NamespaceName) -> dict[str, str]:
    """Bundle → owning broker id, from the namespace's ownership records."""
    owners: dict[str, str] = {}
    base = paths.namespace_ownership(namespace)
    for range_text, record in (await store.get_children_values(base)).items():
        text = f"{namespace}/{range_text}"
        try:
            bundle = bundle_name(text)
        except ValueError:
            continue
        owner = parse_owner(bundle, record)
        if owner.broker_id is not None:
            owners[canonical_bundle_text(text)] = owner.broker_id
    return owners


class SheddingMemory(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """What the leader's shedding remembers between cycles, kept in the store at
    ``/loadbalance/shedding-state`` (Ballast's addition; Pulsar keeps it in memory only, so a
    new leader forgets the grace period of every recent move): the strategy's name and state
    (its JSON form), and the recently unloaded bundles and brokers (epoch ms)."""

    strategy: str
    state: Any = None
    recently_unloaded_bundles: dict[str, int] = {}
    recently_unloaded_brokers: dict[str, int] = {}

    def to_json(self) -> bytes:
        return msgspec.json.encode(self)

    def state_of(self, strategy: str, state_type: type[Any]) -> Any | None:
        """The strategy state stored, if it is ``strategy``'s and readable (a warning if it
        is not readable): a new leader carries on with it."""
        if self.strategy != strategy or self.state is None:
            return None
        try:
            return msgspec.convert(self.state, state_type)
        except msgspec.ValidationError:
            log.warning("the stored %s shedding state is unreadable; starting afresh", strategy)
            return None


async def load_shedding_memory(store: MetadataStore) -> SheddingMemory | None:
    """The shedding memory a previous leader left, or None (none, or unreadable)."""
    record = await store.get(paths.SHEDDING_STATE)
    if record is None or not record.value:
        return None
    try:
        return msgspec.json.decode(record.value, type=SheddingMemory)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
