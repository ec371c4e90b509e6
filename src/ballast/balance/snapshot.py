"""The frozen load snapshot every balancing decision reads: what Pulsar's leader keeps in its
``LoadData`` (brokers' reports, time averages, preallocations, bundle data, recently unloaded
bundles), plus what the extensible load manager adds (recently unloaded brokers, per-broker load
averages) and the policies placement obeys (namespace bundle boundaries, isolation,
anti-affinity groups, failure domains).

The snapshot is built directly from values (the controller builds it from its in-memory image;
``ballast decide`` from JSON via :mod:`ballast.balance.snapshot_json`). It is immutable: a
strategy never changes it, and derived indexes are computed once, on first use (per broker, or
over the whole snapshot in linear time).

Iteration order is part of the contract: Pulsar iterates Java hash maps whose order is arbitrary;
Ballast iterates ``brokers`` and ``bundles`` in the order the snapshot gives them (insertion
order), so decisions are deterministic.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

import msgspec

from ballast.balance.decisions import BrokerId
from ballast.model.bundles import BundleName, NamespaceBundles
from ballast.model.loaddata import BrokerData, BundleData, LocalBrokerData, ResourceWeights
from ballast.model.naming import NamespaceName
from ballast.model.policies import IsolationPolicies

T = TypeVar("T")


def _empty() -> Mapping[Any, Any]:
    return MappingProxyType({})


@functools.lru_cache(maxsize=1 << 18)
def bundle_name(text: str) -> BundleName:
    """The parsed form of a canonical bundle name (cached: names repeat every cycle)."""
    return BundleName.parse(text)


@functools.lru_cache(maxsize=1 << 18)
def canonical_bundle_text(text: str) -> str:
    """The canonical string of a bundle name (cached)."""
    return str(bundle_name(text))


def bundle_namespace(text: str) -> str:
    """The namespace part of a bundle name (Pulsar's ``getNamespaceNameFromBundleName``)."""
    return text.rpartition("/")[0]


@functools.lru_cache(maxsize=16384)
def is_system_namespace(namespace: str) -> bool:
    """``pulsar/system`` and the heartbeat / SLA-monitor namespaces, which Pulsar never sheds."""
    try:
        return NamespaceName.parse(namespace).is_system_service
    except ValueError:
        return False


class BrokerLoad(msgspec.Struct, frozen=True, kw_only=True):
    """A broker's load as the extensible load manager keeps it (``BrokerLoadData``):
    ``weighted_max_ema`` (a fraction), ``msg_throughput_ema`` (bytes/s) and when it was last
    updated (epoch ms). JSON names are Pulsar's."""

    weighted_max_ema: float = msgspec.field(name="weightedMaxEMA")
    msg_throughput_ema: float = msgspec.field(name="msgThroughputEMA")
    updated_at_ms: int = msgspec.field(default=0, name="updatedAt")


@dataclass(frozen=True, slots=True)
class Policies:
    """The policies placement and the shedding guards read: isolation policies, each
    namespace's anti-affinity group (``namespace -> group``, from its local policies) and each
    broker's failure domain (``broker -> domain``; brokers in none are in ``default``)."""

    isolation: IsolationPolicies = field(default_factory=IsolationPolicies)
    anti_affinity_groups: Mapping[str, str] = field(default_factory=_empty)
    broker_domains: Mapping[BrokerId, str] = field(default_factory=_empty)

    def anti_affinity_group(self, namespace: str) -> str | None:
        """The namespace's group, or None when it has none (a blank group counts as none, as
        Pulsar's ``StringUtils.isNotBlank``)."""
        group = self.anti_affinity_groups.get(namespace)
        if group is None or not group.strip():
            return None
        return group

    def has_isolation_policy(self, namespace: str) -> bool:
        return self.isolation.policy_for(namespace) is not None

    def has_policies(self, namespace: str) -> bool:
        """An isolation policy or an anti-affinity group applies to the namespace."""
        return (
            self.has_isolation_policy(namespace) or self.anti_affinity_group(namespace) is not None
        )


@dataclass(frozen=True, slots=True)
class BrokerIndex:
    """Lookups derived from one broker's data alone (built on first use)."""

    bundles: frozenset[str]
    """The bundles the broker reports: its ``bundles`` plus the keys of its ``lastStats``."""
    namespaces: Mapping[str, frozenset[str]]
    """Namespace → the bundles of it the broker serves or has preallocated."""
    preallocated_topics: int
    """Topics of the broker's preallocated bundles (their data's ``topics``)."""
    preallocated_long_term_msg_rate: float
    """Long-term message rate (in + out) of the broker's preallocated bundles, summed in
    their order."""
    preallocated_short_term: tuple[float, float, float, float]
    """Short-term message rate in, out and throughput in, out of the preallocated bundles."""
    traffic: tuple[float, float, float, float, int]
    """Message rate in, out, throughput in, out and topics the broker reports, plus those of
    its preallocated bundles (short-term)."""


@dataclass(frozen=True, slots=True)
class SnapshotIndex:
    """Lookups derived from a snapshot's brokers and bundles (built once, O(bundles), on
    first use)."""

    broker_bundles: Mapping[BrokerId, frozenset[str]]
    """Bundles each broker reports: its ``bundles`` plus the keys of its ``lastStats``."""
    owners: Mapping[str, BrokerId]
    """Bundle → the broker serving it (the first reporter in broker order)."""
    preallocated: Mapping[str, BrokerId]
    """Bundle → the broker it is preallocated to."""
    broker_namespaces: Mapping[BrokerId, Mapping[str, frozenset[str]]]
    """Broker → namespace → bundles it serves or has preallocated (Pulsar's
    ``brokerToNamespaceToBundleRange``)."""
    bundle_order: Mapping[str, int]
    """Position of each bundle in ``bundles`` (the order Pulsar's stable sorts keep)."""
    seen_bundle_counts: Mapping[str, int]
    """Namespace → distinct bundles seen in bundle data and reports."""
    warnings: tuple[str, ...]


class _Memo:
    """What a snapshot derives from its values, filled on first use. Deterministic caches
    only: a snapshot answers the same whether or not they are filled."""

    __slots__ = ("brokers", "derived", "index", "usage")

    def __init__(self) -> None:
        self.brokers: dict[BrokerId, BrokerIndex] = {}
        self.index: SnapshotIndex | None = None
        self.derived: dict[str, tuple[tuple[object, ...], object]] = {}
        self.usage: dict[BrokerId, tuple[ResourceWeights, float]] = {}


@dataclass(frozen=True, slots=True)
class LoadSnapshot:
    """Everything a balancing decision may read. Bundle names are canonical (lowercase hex);
    broker ids are any strings (Pulsar's ``host:port``).

    - ``brokers``: the live brokers, in iteration order, each with its report, time averages
      and preallocated bundles (Pulsar's ``BrokerData``).
    - ``bundles``: the leader's bundle data (short/long-term averages), in iteration order.
    - ``recently_unloaded_bundles`` / ``recently_unloaded_brokers``: epoch ms of the last move.
    - ``namespaces``: the authoritative bundle boundaries of the namespaces that have them.
    - ``policies``: isolation, anti-affinity groups, failure domains.
    - ``broker_load``: the extensible manager's per-broker averages where known.

    Derived lookups are computed on first use: per broker (what one broker serves) or over
    the whole snapshot (:attr:`index`). Building a snapshot is O(brokers); placing one bundle
    reads a few brokers' lookups, so it stays O(brokers) however many bundles there are.
    :meth:`evolve` derives a snapshot that shares the lookups of unchanged brokers.
    """

    brokers: Mapping[BrokerId, BrokerData]
    bundles: Mapping[str, BundleData] = field(default_factory=_empty)
    recently_unloaded_bundles: Mapping[str, int] = field(default_factory=_empty)
    recently_unloaded_brokers: Mapping[BrokerId, int] = field(default_factory=_empty)
    namespaces: Mapping[str, NamespaceBundles] = field(default_factory=_empty)
    policies: Policies = field(default_factory=Policies)
    broker_load: Mapping[BrokerId, BrokerLoad] = field(default_factory=_empty)
    _memo: _Memo = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_memo", _Memo())

    @property
    def index(self) -> SnapshotIndex:
        """The lookups over every broker and bundle (built on first use, O(bundles))."""
        memo = self._memo
        if memo.index is None:
            memo.index = _build_index(self)
        return memo.index

    # -- lookups ------------------------------------------------------------------------------

    def local(self, broker: BrokerId) -> LocalBrokerData:
        return self.brokers[broker].local_data

    def weighted_usage(self, broker: BrokerId, weights: ResourceWeights) -> float:
        """``broker``'s report's weighted max usage (Pulsar's
        ``getMaxResourceUsageWithWeight``), computed once per snapshot: a cycle places each
        bundle it sheds against the same reports, and reading every broker's five resources
        for each placement was most of a cycle's time on a thousand brokers."""
        memo = self._memo.usage
        found = memo.get(broker)
        if found is not None and found[0] == weights:
            return found[1]
        usage = self.brokers[broker].local_data.max_resource_usage_with_weight(weights)
        memo[broker] = (weights, usage)
        return usage

    def overloaded(self, broker: BrokerId, weights: ResourceWeights, threshold: float) -> bool:
        """Whether ``broker``'s report puts it above ``threshold`` (weighted max usage, as
        Pulsar's placement and shedding test it): loaded past it, whatever its traffic."""
        return self.weighted_usage(broker, weights) > threshold

    def broker_index(self, broker: BrokerId) -> BrokerIndex | None:
        """The lookups of one broker (None if it is not in the snapshot)."""
        memo = self._memo.brokers
        found = memo.get(broker)
        if found is None:
            data = self.brokers.get(broker)
            if data is None:
                return None
            found = memo[broker] = _broker_index(data)
        return found

    def bundles_of(self, broker: BrokerId) -> frozenset[str]:
        """The bundles ``broker`` reports (``bundles`` and ``lastStats`` keys)."""
        found = self.broker_index(broker)
        return frozenset() if found is None else found.bundles

    def broker_namespaces(self, broker: BrokerId) -> Mapping[str, frozenset[str]]:
        """Namespace → bundles ``broker`` serves or has preallocated."""
        found = self.broker_index(broker)
        return MappingProxyType({}) if found is None else found.namespaces

    def owner(self, bundle: str) -> BrokerId | None:
        return self.index.owners.get(bundle)

    def derived(self, name: str, depends_on: tuple[object, ...], compute: Callable[[], T]) -> T:
        """A value derived from the objects ``depends_on`` (compared by identity: they are
        immutable values of this snapshot), computed once and shared with evolved snapshots
        while those objects stay the same. ``compute`` must depend on nothing else."""
        memo = self._memo.derived
        found = memo.get(name)
        if found is not None:
            known, value = found
            if len(known) == len(depends_on):
                # a loop, not all() over a generator: placement asks this for every broker
                for a, b in zip(known, depends_on, strict=True):
                    if a is not b:
                        break
                else:
                    return value  # type: ignore[return-value]
        fresh = compute()
        memo[name] = (depends_on, fresh)
        return fresh

    def preallocated_broker(self, bundle: str) -> BrokerId | None:
        """The broker ``bundle`` is preallocated to (the first in broker order), or None.
        O(brokers) until the whole index is built."""
        index = self._memo.index
        if index is not None:
            return index.preallocated.get(bundle)
        for broker, data in self.brokers.items():
            if bundle in data.preallocated_bundle_data:
                return broker
        return None

    def bundle_data_or_default(self, bundle: str) -> BundleData:
        """The bundle's data, or Pulsar's default for a bundle never seen (50 msg/s and
        50000 B/s each way)."""
        data = self.bundles.get(bundle)
        return data if data is not None else BundleData.new_default()

    def bundle_count(self, namespace: str) -> int:
        """The namespace's number of bundles: from ``namespaces`` when given, else the
        distinct bundles of it seen in bundle data and reports."""
        bundles = self.namespaces.get(namespace)
        if bundles is not None:
            return bundles.count
        return self.index.seen_bundle_counts.get(namespace, 0)

    def namespace_bundle_count(self, broker: BrokerId, namespace: str) -> int:
        """Bundles of ``namespace`` that ``broker`` serves or has preallocated."""
        found = self.broker_index(broker)
        return 0 if found is None else len(found.namespaces.get(namespace, ()))

    def evolve(
        self,
        *,
        brokers: Mapping[BrokerId, BrokerData] | None = None,
        bundles: Mapping[str, BundleData] | None = None,
        recently_unloaded_bundles: Mapping[str, int] | None = None,
        recently_unloaded_brokers: Mapping[BrokerId, int] | None = None,
        namespaces: Mapping[str, NamespaceBundles] | None = None,
        policies: Policies | None = None,
        broker_load: Mapping[BrokerId, BrokerLoad] | None = None,
    ) -> LoadSnapshot:
        """The same snapshot with some values replaced (the caller hands over immutable
        values). Lookups of brokers whose report is the very same object (and that have no
        preallocations, or the very same data) are shared, and the whole index too when
        brokers and bundles are both unchanged."""
        evolved = LoadSnapshot(
            brokers=self.brokers if brokers is None else brokers,
            bundles=self.bundles if bundles is None else bundles,
            recently_unloaded_bundles=(
                self.recently_unloaded_bundles
                if recently_unloaded_bundles is None
                else recently_unloaded_bundles
            ),
            recently_unloaded_brokers=(
                self.recently_unloaded_brokers
                if recently_unloaded_brokers is None
                else recently_unloaded_brokers
            ),
            namespaces=self.namespaces if namespaces is None else namespaces,
            policies=self.policies if policies is None else policies,
            broker_load=self.broker_load if broker_load is None else broker_load,
        )
        memo = evolved._memo
        memo.derived.update(self._memo.derived)
        for broker, found in self._memo.brokers.items():
            if _same_index(self.brokers.get(broker), evolved.brokers.get(broker)):
                memo.brokers[broker] = found
        if evolved.brokers is self.brokers and evolved.bundles is self.bundles:
            memo.index = self._memo.index
        return evolved

    def with_recently_unloaded(
        self,
        bundles: Mapping[str, int] | None = None,
        brokers: Mapping[BrokerId, int] | None = None,
    ) -> LoadSnapshot:
        """The same snapshot with other recently-unloaded maps."""
        return self.evolve(
            recently_unloaded_bundles=None if bundles is None else MappingProxyType(dict(bundles)),
            recently_unloaded_brokers=None if brokers is None else MappingProxyType(dict(brokers)),
        )


def reported_bundles(local: LocalBrokerData) -> frozenset[str]:
    """What a report says the broker serves: ``bundles`` and the keys of ``lastStats`` (equal in
    a report Pulsar wrote; hand-made snapshots may give only one of them)."""
    if not local.last_stats:
        return local.bundles
    return local.bundles | local.last_stats.keys()


def _same_index(old: BrokerData | None, new: BrokerData | None) -> bool:
    """Whether :func:`_broker_index` of ``new`` is that of ``old``: the same object, or the
    same report without preallocations (a broker's data is made again whenever its time
    averages change, on every update of the leader, while its report mostly stays)."""
    if old is new:
        return True
    return (
        old is not None
        and new is not None
        and old.local_data is new.local_data
        and not old.preallocated_bundle_data
        and not new.preallocated_bundle_data
    )


def _broker_index(data: BrokerData) -> BrokerIndex:
    local = data.local_data
    served = reported_bundles(local)
    by_namespace: dict[str, set[str]] = {}
    for bundle in _chain(served, data.preallocated_bundle_data):
        by_namespace.setdefault(bundle_namespace(bundle), set()).add(bundle)
    topics = 0
    rate = 0.0
    rate_in = rate_out = tput_in = tput_out = 0.0
    for pre in data.preallocated_bundle_data.values():
        topics += pre.topics
        rate += pre.long_term_data.msg_rate_in + pre.long_term_data.msg_rate_out
        short = pre.short_term_data
        rate_in += short.msg_rate_in
        rate_out += short.msg_rate_out
        tput_in += short.msg_throughput_in
        tput_out += short.msg_throughput_out
    return BrokerIndex(
        bundles=served,
        namespaces=MappingProxyType(
            {ns: frozenset(members) for ns, members in by_namespace.items()}
        ),
        preallocated_topics=topics,
        preallocated_long_term_msg_rate=rate,
        preallocated_short_term=(rate_in, rate_out, tput_in, tput_out),
        traffic=(
            local.msg_rate_in + rate_in,
            local.msg_rate_out + rate_out,
            local.msg_throughput_in + tput_in,
            local.msg_throughput_out + tput_out,
            local.num_topics + topics,
        ),
    )


def _build_index(snapshot: LoadSnapshot) -> SnapshotIndex:
    bundles = snapshot.bundles
    broker_bundles: dict[BrokerId, frozenset[str]] = {}
    owners: dict[str, BrokerId] = {}
    duplicates: dict[str, list[BrokerId]] = {}
    preallocated: dict[str, BrokerId] = {}
    broker_namespaces: dict[BrokerId, Mapping[str, frozenset[str]]] = {}
    seen: set[str] = set(bundles)
    for broker, data in snapshot.brokers.items():
        found = snapshot.broker_index(broker)
        assert found is not None
        served = found.bundles
        broker_bundles[broker] = served
        # Sorted: a report's bundle set has no order of its own, and ownership of a bundle
        # reported twice must not depend on hash order.
        for bundle in sorted(served):
            first = owners.setdefault(bundle, broker)
            if first != broker:
                duplicates.setdefault(bundle, [first]).append(broker)
        for bundle in data.preallocated_bundle_data:
            preallocated.setdefault(bundle, broker)
        broker_namespaces[broker] = found.namespaces
        seen.update(served)
    counts: dict[str, int] = {}
    for bundle in seen:
        namespace = bundle_namespace(bundle)
        counts[namespace] = counts.get(namespace, 0) + 1
    warnings = tuple(
        f"bundle {bundle} is reported by {len(reporters)} brokers ({', '.join(reporters)}); "
        f"{reporters[0]} is taken as its owner where one is needed (placement, the cycle's "
        "checks), while shedding sees it in each report that lists it"
        for bundle, reporters in sorted(duplicates.items())
    )
    return SnapshotIndex(
        broker_bundles=MappingProxyType(broker_bundles),
        owners=MappingProxyType(owners),
        preallocated=MappingProxyType(preallocated),
        broker_namespaces=MappingProxyType(broker_namespaces),
        bundle_order=MappingProxyType({bundle: i for i, bundle in enumerate(bundles)}),
        seen_bundle_counts=MappingProxyType(counts),
        warnings=warnings,
    )


def _chain(first: Iterable[str], second: Iterable[str]) -> Iterable[str]:
    yield from first
    yield from second
