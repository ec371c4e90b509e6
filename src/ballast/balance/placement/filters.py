"""The broker filters of Pulsar's placement pipeline (``LoadManagerShared`` and the
``BrokerFilter`` implementations), each a pure function from a candidate tuple to a new one.

Candidates are kept in the order of the ``available`` brokers given (snapshot order), so the
scoring strategies that break ties at random draw from a deterministic list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TypeAlias

from ballast.balance.decisions import BrokerId
from ballast.balance.placement.versions import InvalidVersion, parse_version
from ballast.balance.snapshot import LoadSnapshot, bundle_namespace
from ballast.model.policies import DEFAULT_FAILURE_DOMAIN, broker_host

Candidates: TypeAlias = tuple[BrokerId, ...]
_INT_MAX = 2**31 - 1


class BrokerFilterError(Exception):
    """A filter could not decide (Pulsar's ``BrokerFilterException``); placement then falls
    back to the brokers the namespace policies allow."""


def _in_order(available: Sequence[BrokerId], kept: Iterable[BrokerId]) -> Candidates:
    keep = set(kept)
    return tuple(broker for broker in available if broker in keep)


def apply_namespace_policies(
    snapshot: LoadSnapshot,
    bundle: str,
    available: Sequence[BrokerId],
    *,
    non_persistent: bool = False,
) -> Candidates:
    """Pulsar's ``applyNamespacePolicies``: the brokers the namespace may use.

    With an isolation policy for the namespace: its primary brokers (host matching a primary
    regex), plus its secondaries when the auto-failover policy says so (``min_available``:
    fewer primaries than ``min_limit``). Without one: brokers whose report enables the bundle's
    topic kind (persistent or not) and that are shared (primary of no policy). A broker's host
    is parsed from ``http://<broker id>``."""
    namespace = bundle_namespace(bundle)
    isolation = snapshot.policies.isolation
    policy = isolation.policy_for(namespace)
    primaries: list[BrokerId] = []
    secondaries: list[BrokerId] = []
    isolating = bool(isolation)  # without policies every broker is shared: no host to read
    for broker in available:
        host = broker_host(broker) if isolating else ""
        if policy is not None:
            if policy.is_primary(host):
                primaries.append(broker)
            elif policy.is_secondary(host):
                secondaries.append(broker)
            continue
        data = snapshot.brokers.get(broker)
        if data is None:
            continue  # Pulsar's topic-loading predicate is false for a broker without a report
        local = data.local_data
        enabled = (
            local.non_persistent_topics_enabled
            if non_persistent
            else local.persistent_topics_enabled
        )
        if enabled and (not isolating or isolation.is_shared_broker(host)):
            secondaries.append(broker)
    if policy is None:
        return tuple(secondaries)
    if policy.auto_failover_policy.should_failover(len(primaries)):
        return _in_order(available, [*primaries, *secondaries])
    return tuple(primaries)


def filter_large_topic_count(
    snapshot: LoadSnapshot, candidates: Candidates, max_topics: int
) -> Candidates:
    """Pulsar's ``filterBrokersWithLargeTopicCount``: keep brokers whose topics (reported plus
    those of their preallocated bundles) are at most ``max_topics``; if none is, keep all."""
    kept: list[BrokerId] = []
    for broker in candidates:
        found = snapshot.broker_index(broker)
        topics = 0
        if found is not None:
            topics = snapshot.local(broker).num_topics + found.preallocated_topics
        if topics <= max_topics:
            kept.append(broker)
    return tuple(kept) if kept else candidates


def anti_affinity_counts(snapshot: LoadSnapshot, namespace: str) -> dict[BrokerId, int] | None:
    """Pulsar's ``getAntiAffinityNamespaceOwnedBrokers``: for each broker, how many namespaces
    of ``namespace``'s anti-affinity group (case-insensitive) it serves or has preallocated;
    brokers with none are absent. None when the namespace has no group."""
    policies = snapshot.policies
    group = policies.anti_affinity_group(namespace)
    if group is None:
        return None
    target = group.lower()
    counts: dict[BrokerId, int] = {}
    for broker in snapshot.brokers:
        for member in snapshot.broker_namespaces(broker):
            other = policies.anti_affinity_group(member)
            if other is not None and other.lower() == target:
                counts[broker] = counts.get(broker, 0) + 1
    return counts


def filter_anti_affinity(
    snapshot: LoadSnapshot,
    candidates: Candidates,
    bundle: str,
    *,
    failure_domains_enabled: bool,
) -> Candidates:
    """Pulsar's ``filterAntiAffinityGroupOwnedBrokers``: spread a group's namespaces.

    With failure domains enabled (and some domain defined): keep the candidates of the domains
    whose candidates serve the fewest namespaces of the group. Then: if some candidate serves
    none, drop every candidate that serves some; else keep the candidates serving the fewest."""
    if not candidates:
        return candidates
    counts = anti_affinity_counts(snapshot, bundle_namespace(bundle))
    if counts is None:
        return candidates
    domains = snapshot.policies.broker_domains
    if failure_domains_enabled and domains:
        per_domain: dict[str, int] = {}
        for broker in candidates:
            domain = domains.get(broker, DEFAULT_FAILURE_DOMAIN)
            per_domain[domain] = per_domain.get(domain, 0) + counts.get(broker, 0)
        fewest_in_domain = min(per_domain.values())
        candidates = tuple(
            broker
            for broker in candidates
            if per_domain[domains.get(broker, DEFAULT_FAILURE_DOMAIN)] == fewest_in_domain
        )
    fewest = _INT_MAX
    for broker in candidates:
        if broker not in counts:
            fewest = 0
            break
        fewest = min(fewest, counts[broker])
    if fewest == 0:
        return tuple(broker for broker in candidates if counts.get(broker, 0) == 0)
    return tuple(broker for broker in candidates if counts[broker] == fewest)


def should_anti_affinity_unload(
    snapshot: LoadSnapshot, bundle: str, current: BrokerId, candidates: Candidates
) -> bool:
    """Pulsar's ``shouldAntiAffinityNamespaceUnload``: unloading a bundle of an anti-affinity
    namespace is pointless when it would land back on an equally loaded broker. Allowed when the
    namespace has no group (or nobody serves one), when some candidate serves none of the
    group, when the current broker serves more than the fewest, or when not every candidate
    serves exactly the fewest."""
    counts = anti_affinity_counts(snapshot, bundle_namespace(bundle))
    if not counts:
        return True
    fewest = _INT_MAX
    current_count = 0
    for broker in candidates:
        count = counts.get(broker, 0)
        if broker == current:
            current_count = count
        fewest = min(fewest, count)
    if fewest == 0 or current_count > fewest:
        return True
    at_fewest = sum(1 for broker in candidates if counts.get(broker, 0) == fewest)
    return len(candidates) != at_fewest


def remove_most_servicing_brokers(
    snapshot: LoadSnapshot, candidates: Candidates, bundle: str
) -> Candidates:
    """Pulsar's ``removeMostServicingBrokersForNamespace``: keep the candidates serving (or
    having preallocated) the fewest bundles of the bundle's namespace."""
    if not candidates:
        return candidates
    namespace = bundle_namespace(bundle)
    counts = {broker: snapshot.namespace_bundle_count(broker, namespace) for broker in candidates}
    fewest = min(counts.values())
    return tuple(broker for broker in candidates if counts[broker] == fewest)


def filter_load_manager_class(
    snapshot: LoadSnapshot, candidates: Candidates, load_manager_class: str
) -> Candidates:
    """Pulsar's ``BrokerLoadManagerClassFilter``: drop brokers whose report names another load
    manager class. A report without the field (older brokers, hand-made snapshots) is kept."""
    kept: list[BrokerId] = []
    for broker in candidates:
        data = snapshot.brokers.get(broker)
        reported = data.local_data.load_manager_class_name if data is not None else None
        if reported is None or reported == load_manager_class:
            kept.append(broker)
    return tuple(kept)


def filter_broker_version(
    snapshot: LoadSnapshot, candidates: Candidates, *, prefer_later_versions: bool
) -> Candidates:
    """Pulsar's ``BrokerVersionFilter``: with ``preferLaterVersions``, keep only brokers running
    the newest version (semantic-version order, build metadata breaking ties). Raises
    :class:`BrokerFilterError` when the candidate set is empty or a version is missing or not a
    semantic version."""
    if not prefer_later_versions:
        return candidates
    if not candidates:
        raise BrokerFilterError("cannot determine the newest broker version of no brokers")
    versions = {}
    latest = None
    for broker in candidates:
        data = snapshot.brokers.get(broker)
        text = data.local_data.broker_version_string if data is not None else None
        if not text:
            raise BrokerFilterError(f"no version string in the report of broker {broker}")
        try:
            version = parse_version(text)
        except InvalidVersion as exc:
            raise BrokerFilterError(f"broker {broker}: {exc}") from None
        versions[broker] = version
        if latest is None or latest.build_aware_compare(version) < 0:
            latest = version
    assert latest is not None
    return tuple(broker for broker in candidates if versions[broker].compare(latest) == 0)


def stage_figures(stages: Sequence[tuple[str, Candidates]]) -> Mapping[str, list[BrokerId]]:
    """The candidates after each pipeline stage, for ``stats``."""
    return {name: list(candidates) for name, candidates in stages}
