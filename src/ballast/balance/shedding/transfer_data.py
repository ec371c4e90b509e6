"""The inputs of the TransferShedder that the extensible load manager keeps apart from the
modular manager's ``LoadData``, derived here from a :class:`LoadSnapshot`:

- each broker's load averages (``BrokerLoadData``: ``weightedMaxEMA``, ``msgThroughputEMA``),
  kept in the strategy's explicit :class:`TransferState` from run to run;
- each broker's top bundles (``TopBundlesLoadData``), from its report's ``lastStats``;
- whether a bundle may move between two brokers (``isTransferable``).
"""

from __future__ import annotations

import functools

import msgspec

from ballast.balance.decisions import BrokerId
from ballast.balance.placement.filters import apply_namespace_policies, filter_anti_affinity
from ballast.balance.snapshot import BrokerLoad, LoadSnapshot, bundle_namespace, is_system_namespace
from ballast.model.config import TransferShedderConfig
from ballast.model.loaddata import NamespaceBundleStats

TopBundle = tuple[str, NamespaceBundleStats]


class ReportedLoad(msgspec.Struct, frozen=True, array_like=True):
    """A broker's weighted max usage and throughput in its last report folded in."""

    usage: float
    throughput: float


class TransferState(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """What the TransferShedder remembers: how many consecutive runs found the cluster
    unbalanced (``hitCount``), each broker's load averages (``brokerLoad``) and the figures of
    the report last folded into them (``lastReported``)."""

    hit_count: int = 0
    broker_load: dict[str, BrokerLoad] = {}
    last_reported: dict[str, ReportedLoad] = {}


def broker_loads(
    snapshot: LoadSnapshot, state: TransferState, config: TransferShedderConfig
) -> tuple[dict[BrokerId, BrokerLoad], dict[BrokerId, ReportedLoad]]:
    """Each broker's ``BrokerLoadData`` averages, in snapshot order, and the report figures
    they last took in.

    A broker given in ``snapshot.broker_load`` uses those figures as they are. Otherwise its
    report is folded into the averages remembered in ``state``, as each Pulsar broker updates
    its ``BrokerLoadData``: the first time, ``weightedMaxEMA`` is the report's weighted max
    usage and ``msgThroughputEMA`` its throughput in + out; afterwards each is
    ``ema * h + (1 - h) * new`` (``h = loadBalancerHistoryResourcePercentage``) — at every
    report check of the broker (``loadBalancerReportUpdateMinIntervalMillis``), not only when
    it writes its report: between two written reports the broker kept seeing about the last
    written figures (they changed less than the write threshold), so those are folded in once
    per check that passed, then the new report's. A report already folded in (same
    ``lastUpdate``) is not counted twice. ``updatedAt`` is the report's ``lastUpdate``."""
    keep = config.history_percentage
    loads: dict[BrokerId, BrokerLoad] = {}
    reported: dict[BrokerId, ReportedLoad] = {}
    for broker, data in snapshot.brokers.items():
        given = snapshot.broker_load.get(broker)
        if given is not None:
            loads[broker] = given
            continue
        local = data.local_data
        usage = local.max_resource_usage_with_weight(config.weights)
        throughput = local.msg_throughput_in + local.msg_throughput_out
        reported[broker] = ReportedLoad(usage, throughput)
        previous = state.broker_load.get(broker)
        if previous is None:
            loads[broker] = BrokerLoad(
                weighted_max_ema=usage,
                msg_throughput_ema=throughput,
                updated_at_ms=local.last_update,
            )
        elif previous.updated_at_ms == local.last_update:
            loads[broker] = previous
            reported[broker] = state.last_reported.get(broker, reported[broker])
        else:
            ema_usage, ema_throughput = previous.weighted_max_ema, previous.msg_throughput_ema
            checks = 1
            if config.report_interval_ms > 0 and local.last_update > previous.updated_at_ms:
                elapsed = local.last_update - previous.updated_at_ms
                checks = max(1, elapsed // config.report_interval_ms)
            before = state.last_reported.get(broker)
            if before is not None and checks > 1:
                fade = keep ** (checks - 1)
                ema_usage = before.usage + (ema_usage - before.usage) * fade
                ema_throughput = before.throughput + (ema_throughput - before.throughput) * fade
            loads[broker] = BrokerLoad(
                weighted_max_ema=ema_usage * keep + (1 - keep) * usage,
                msg_throughput_ema=ema_throughput * keep + (1 - keep) * throughput,
                updated_at_ms=local.last_update,
            )
    return loads, reported


def _heavier_first(left: TopBundle, right: TopBundle) -> int:
    return right[1].compare(left[1])


def _partition_sort(entries: list[TopBundle], k: int) -> None:
    """Pulsar's ``TopKBundles.partitionSort``: a three-way quickselect (pivot the last element,
    ``NamespaceBundleStats`` order, heaviest first) that brings the ``k`` heaviest entries to
    the front, then sorts the front part. Reproduced step by step so ties land where Pulsar's
    land."""
    start, end, target = 0, len(entries) - 1, k - 1
    while start < end:
        low, high, mid = start, end, start
        pivot = entries[high][1]
        while mid <= high:
            cmp = pivot.compare(entries[mid][1])
            if cmp < 0:
                entries[low], entries[mid] = entries[mid], entries[low]
                low += 1
                mid += 1
            elif cmp > 0:
                entries[mid], entries[high] = entries[high], entries[mid]
                high -= 1
            else:
                mid += 1
        if low <= target < mid:
            end = low
            break
        if target < low:
            end = low - 1
        else:
            start = mid
    front = sorted(entries[:end], key=functools.cmp_to_key(_heavier_first))
    entries[:end] = front


def top_bundles(
    snapshot: LoadSnapshot, broker: BrokerId, config: TransferShedderConfig
) -> tuple[TopBundle, ...]:
    """The broker's top bundles as it would report them (Pulsar's ``TopKBundles``): the
    ``loadBalancerMaxNumberOfBundlesInBundleLoadReport`` heaviest of its ``lastStats`` entries by
    ``NamespaceBundleStats`` order (throughput in, then out, then message rate...), leaving out
    system namespaces, excluded namespaces and (unless
    ``loadBalancerSheddingBundlesWithPoliciesEnabled``) namespaces with isolation or
    anti-affinity policies; listed lightest first, as Pulsar reports them. A count of 0 or less
    reports nothing."""
    policies = snapshot.policies
    entries: list[TopBundle] = []
    for bundle, stats in snapshot.local(broker).last_stats.items():
        namespace = bundle_namespace(bundle)
        if is_system_namespace(namespace):
            continue
        if not config.bundles_with_policies and policies.has_policies(namespace):
            continue
        if namespace in config.excluded_namespaces:
            continue
        entries.append((bundle, stats))
    k = min(config.top_bundles, len(entries))
    if k <= 0:
        return ()
    _partition_sort(entries, k)
    return tuple(entries[i] for i in range(k - 1, -1, -1))


def is_transferable(
    snapshot: LoadSnapshot,
    config: TransferShedderConfig,
    bundle: str,
    source: BrokerId,
    destination: BrokerId,
) -> bool:
    """Pulsar's ``TransferShedder.isTransferable``: a bundle of a namespace with isolation or
    anti-affinity policies moves only with ``loadBalancerSheddingBundlesWithPoliciesEnabled``;
    the brokers its policies allow (isolation, then anti-affinity) must include
    ``destination``; with transfers enabled the destination must differ from the source,
    without them some broker other than the source must remain."""
    namespace = bundle_namespace(bundle)
    if snapshot.policies.has_policies(namespace) and not config.bundles_with_policies:
        return False
    candidates = apply_namespace_policies(snapshot, bundle, tuple(snapshot.brokers))
    candidates = filter_anti_affinity(
        snapshot, candidates, bundle, failure_domains_enabled=config.failure_domains_enabled
    )
    if destination not in candidates:
        return False
    others = [broker for broker in candidates if broker != source]
    if not config.transfer_enabled:
        return bool(others)
    return destination in others
