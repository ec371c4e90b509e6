"""Which bundles to split: Pulsar's ``BundleSplitterTask`` (modular load manager), and the
checks its load manager applies around it (``checkNamespaceBundleSplit``).

Rules of :func:`find_bundles_to_split`, per broker (snapshot order), per bundle of its report's
``lastStats`` (report order):

- a bundle with fewer than 2 topics is never split (it could not be cut usefully);
- it qualifies when its topics exceed ``loadBalancerNamespaceBundleMaxTopics`` (1000), or its
  sessions (consumers + producers) exceed ``loadBalancerNamespaceBundleMaxSessions`` (1000; 0 or
  less disables this check), or its *long-term* message rate (in + out, from bundle data; 0
  without data) exceeds ``loadBalancerNamespaceBundleMaxMsgRate`` (30000 msg/s), or its
  long-term throughput exceeds ``loadBalancerNamespaceBundleMaxBandwidthMbytes`` MiB/s (100);
- the namespace must stay below ``loadBalancerNamespaceMaximumBundles`` (128) counting the
  splits already chosen in this run: ``bundles + chosen < max``.

Each split uses ``defaultNamespaceBundleSplitAlgorithm``.

Worked example: ``t/n`` has 2 bundles; ``b1`` reports ``t/n/0x00000000_0x80000000`` with 1001
topics > 1000: it is split (2 + 0 < 128).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from ballast.balance.decisions import BrokerId, JsonValue, Reason, ReasonKind, Split, mib, outcome
from ballast.balance.snapshot import LoadSnapshot, bundle_name, bundle_namespace
from ballast.model.config import SplitConfig
from ballast.model.loaddata import BundleData, NamespaceBundleStats
from ballast.model.loaddata.table import over_long_term


@dataclass(frozen=True, slots=True)
class SplitResult:
    """The splits, in the order they were chosen, and figures (bundles that qualified but
    could not be split, and why)."""

    decisions: tuple[Split, ...]
    stats: Mapping[str, JsonValue]


def _exceeded(
    stats: NamespaceBundleStats, averages: BundleData | None, config: SplitConfig
) -> list[tuple[ReasonKind, str]]:
    """The split limits a bundle is over, with their reasons. Each limit is tested once and
    a reason written only for a limit passed: almost no bundle passes one, and the leader
    checks every bundle after every update."""
    rate = throughput = 0.0
    if averages is not None:
        rate = averages.long_term_data.total_msg_rate
        throughput = averages.long_term_data.total_msg_throughput
    sessions = stats.consumer_count + stats.producer_count
    over_topics = stats.topics > config.max_topics
    over_sessions = config.max_sessions > 0 and sessions > config.max_sessions
    over_rate = rate > config.max_msg_rate
    over_bandwidth = throughput > config.max_bandwidth_bytes
    found: list[tuple[ReasonKind, str]] = []
    if over_topics:
        found.append((ReasonKind.TOPICS, f"topics {stats.topics} > {config.max_topics}"))
    if over_sessions:
        found.append((ReasonKind.SESSIONS, f"sessions {sessions} > {config.max_sessions}"))
    if over_rate:
        limit = config.max_msg_rate
        shown = _apart(f"{rate:g} msg/s", f"{limit:g} msg/s", rate, limit, "msg/s")
        found.append((ReasonKind.MSG_RATE, f"msg rate {shown}"))
    if over_bandwidth:
        limit = config.max_bandwidth_bytes
        shown = _apart(mib(throughput), mib(limit), throughput, limit, "B/s")
        found.append((ReasonKind.BANDWIDTH, f"throughput {shown}"))
    return found


def _apart(value_text: str, limit_text: str, value: float, limit: float, unit: str) -> str:
    """``value > limit`` as the texts write them, or in full (in ``unit``) where the rounded
    texts would read equal: a bundle just over a limit."""
    if value_text != limit_text:
        return f"{value_text} > {limit_text}"
    return f"{float(value)!r} {unit} > {float(limit)!r} {unit}"


def find_bundles_to_split(snapshot: LoadSnapshot, config: SplitConfig) -> SplitResult:
    """Pulsar's ``BundleSplitterTask.findBundlesToSplit`` (master). A bundle reported by two
    brokers is chosen once, attributed to the last reporter (it counts once per report against
    the namespace's limit, as in Pulsar)."""
    chosen: dict[str, tuple[BrokerId, Reason]] = {}
    added: dict[str, int] = {}
    refused: list[JsonValue] = []
    at_limit = False  # a bundle was refused for its namespace's bundle limit
    bundles = snapshot.bundles
    # A first pass that only skips: a bundle within every limit (nearly all of them, and the
    # leader checks all after every update) is passed over without building its reasons;
    # any other goes to _exceeded, which decides. The long-term averages are compared for
    # all bundles at once. A bundle without averages has rate and throughput 0, within the
    # limits unless one is negative: then nothing is skipped.
    quick = config.max_msg_rate >= 0.0 and config.max_bandwidth_bytes >= 0.0
    over = over_long_term(bundles, config.max_msg_rate, config.max_bandwidth_bytes)
    max_topics = config.max_topics
    max_sessions = config.max_sessions if config.max_sessions > 0 else math.inf
    for broker, data in snapshot.brokers.items():
        for bundle, bundle_stats in data.local_data.last_stats.items():
            topics = bundle_stats.topics
            if (
                quick
                and topics <= max_topics
                and bundle_stats.consumer_count + bundle_stats.producer_count <= max_sessions
                and bundle not in over
            ):
                continue
            if topics < 2:
                # Pulsar skips it (a split cuts between topics); one past a limit is told.
                if topics == 1 and _exceeded(bundle_stats, bundles.get(bundle), config):
                    why = "one topic: a bundle is cut between topics"
                    refused.append({"bundle": bundle, "broker": broker, "why": why})
                continue
            exceeded = _exceeded(bundle_stats, bundles.get(bundle), config)
            if not exceeded:
                continue
            namespace = bundle_namespace(bundle)
            count = snapshot.bundle_count(namespace)
            if count + added.get(namespace, 0) < config.max_bundles:
                reason = Reason(exceeded[0][0], "; ".join(text for _, text in exceeded))
                chosen[bundle] = (broker, reason)
                added[namespace] = added.get(namespace, 0) + 1
            else:
                planned = added.get(namespace, 0)
                pending = f" and {planned} split(s) chosen this cycle" if planned else ""
                why = (
                    f"namespace {namespace} has {count} bundles{pending} "
                    f"(maximum {config.max_bundles})"
                )
                refused.append({"bundle": bundle, "broker": broker, "why": why})
                at_limit = True
    decisions = tuple(
        Split(bundle_name(bundle), broker, config.default_algorithm, reason)
        for bundle, (broker, reason) in chosen.items()
    )
    if at_limit:
        stats = outcome(
            bool(decisions), ReasonKind.MAX_BUNDLES, "every bundle past a limit was refused"
        )
    elif refused:
        stats = outcome(
            bool(decisions), ReasonKind.NO_BUNDLES, "no bundle past a limit can be split"
        )
    else:
        stats = outcome(bool(decisions), ReasonKind.BALANCED, "no bundle is past a split limit")
    return SplitResult(decisions, {**stats, "refused": refused})


def run_split_cycle(snapshot: LoadSnapshot, config: SplitConfig) -> SplitResult:
    """The load manager's ``checkNamespaceBundleSplit`` around :func:`find_bundles_to_split`:
    nothing when auto split is disabled or fewer than two brokers are known; a chosen bundle is
    dropped when it cannot be cut any more or (if the namespace's boundaries are known) is no
    longer one of its bundles."""
    # The kinds and details the shedding cycle gives when it does not run.
    if not config.enabled:
        return SplitResult((), outcome(False, ReasonKind.BALANCED, "auto bundle split is disabled"))
    if len(snapshot.brokers) <= 1:
        return SplitResult((), outcome(False, ReasonKind.NO_BROKERS, "fewer than two brokers"))
    found = find_bundles_to_split(snapshot, config)
    kept: list[Split] = []
    previous = found.stats.get("refused")
    refused: list[JsonValue] = list(previous) if isinstance(previous, list) else []
    for split in found.decisions:
        namespace_bundles = snapshot.namespaces.get(str(split.bundle.namespace))
        if not split.bundle.range.can_split:
            why = "bundle cannot be split further"
        elif namespace_bundles is not None and not namespace_bundles.contains(split.bundle.range):
            why = "no longer a bundle of its namespace"
        else:
            kept.append(split)
            continue
        refused.append({"bundle": str(split.bundle), "broker": split.broker, "why": why})
    if kept:
        head = outcome(True, ReasonKind.BALANCED)
    elif found.decisions:
        head = outcome(False, ReasonKind.NO_BUNDLES, "no chosen bundle can be split")
    else:  # the strategy's own reason: nothing past a limit, or refused by the bundle limit
        head = {key: value for key, value in found.stats.items() if key != "refused"}
    return SplitResult(tuple(kept), {**head, "refused": refused})
