"""ThresholdShedder (Pulsar's default): unload from every broker whose smoothed usage is more
than a threshold above the cluster average.

Goal: keep every broker within ``loadBalancerBrokerThresholdShedderPercentage`` (10 points) of
the average usage. Rules (Pulsar's ``ThresholdShedder``):

- each run first updates every broker's usage history (the explicit :class:`ThresholdState`):
  ``h = r`` the first time, then ``h = h * history + (1 - history) * r`` with ``r`` the report's
  weighted max usage and ``history = loadBalancerHistoryResourcePercentage`` (0.9);
  ``avg`` = mean of ``h`` over the brokers; history of brokers no longer present is dropped
  (Pulsar's active-broker hook);
- ``avg == 0`` → nothing ("average max resource usage is 0");
- a broker qualifies when ``h >= avg + threshold``; it must shed
  ``(msgThroughputIn + msgThroughputOut) * (h - avg - threshold + 0.05)``, and nothing at all if
  that is below ``loadBalancerBundleUnloadMinThroughputThreshold`` (10 MiB/s);
- bundles are taken heaviest first (short-term throughput) until that much is marked, at least
  one; a broker with one bundle or none is left alone;
- if nothing was selected and ``lowerBoundarySheddingEnabled``: the history is updated a second
  time (as Pulsar does), and when some broker is below ``avg - threshold`` the busiest broker
  with more than one bundle (strictly above ``avg - threshold``; first wins ties) sheds
  ``throughput * threshold * 0.5``, if that is not below the minimum throughput.

Worked example: broker-1 at usage 0.999 with 110 MiB/s, broker2 idle, first run:
``avg = 0.4995``; broker-1 is above ``0.5995`` and must shed
``(0.999 - 0.4995 - 0.1 + 0.05) * 110 MiB/s = 49.4 MiB/s``: its 20, 18 and 16 MiB/s bundles.
"""

from __future__ import annotations

import msgspec

from ballast.balance.decisions import (
    BrokerId,
    JsonValue,
    Move,
    Reason,
    ReasonKind,
    Unload,
    mib,
    outcome,
    percent,
)
from ballast.balance.shedding.common import (
    ADDITIONAL_THRESHOLD_PERCENT_MARGIN,
    SheddingResult,
    flagged_outcome,
    select_until_offloaded,
    sheddable_bundles_by,
)
from ballast.balance.snapshot import LoadSnapshot, bundle_name
from ballast.model.config import ThresholdShedderConfig

# Pulsar's LOWER_BOUNDARY_THRESHOLD_MARGIN.
LOWER_BOUNDARY_THRESHOLD_MARGIN = 0.5


class ThresholdState(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Each broker's smoothed usage (Pulsar's ``brokerAvgResourceUsage``), as a fraction."""

    usage_history: dict[str, float] = {}


def _update_history(
    snapshot: LoadSnapshot, history: dict[BrokerId, float], config: ThresholdShedderConfig
) -> float:
    """Pulsar's ``getBrokerAvgUsage``: fold each broker's current usage into ``history`` (in
    place; the caller owns the dict) and return the mean."""
    total = 0.0
    count = 0
    keep = config.history_percentage
    for broker, data in snapshot.brokers.items():
        usage = data.local_data.max_resource_usage_with_weight(config.weights)
        previous = history.get(broker)
        smoothed = usage if previous is None else previous * keep + (1 - keep) * usage
        history[broker] = smoothed
        total += smoothed
        count += 1
    return total / count if count > 0 else 0.0


def find_bundles_to_unload(
    snapshot: LoadSnapshot, state: ThresholdState, config: ThresholdShedderConfig, now_ms: int
) -> SheddingResult[ThresholdState]:
    """Pulsar's ``ThresholdShedder.findBundlesForUnloading``; brokers in snapshot order."""
    del now_ms
    history = {b: v for b, v in state.usage_history.items() if b in snapshot.brokers}
    threshold = config.threshold
    average = _update_history(snapshot, history, config)
    decisions: list[Move] = []
    shed: dict[str, JsonValue] = {}
    if average == 0:
        stats: dict[str, JsonValue] = {
            **outcome(False, ReasonKind.NO_LOAD_DATA, "average max resource usage is 0"),
            "avgUsage": average,
            "usage": dict(history),
        }
        return SheddingResult((), ThresholdState(usage_history=history), stats)
    for broker, data in snapshot.brokers.items():
        usage = history.get(broker, 0.0)
        if usage < average + threshold:
            continue
        local = data.local_data
        fraction = usage - average - threshold + ADDITIONAL_THRESHOLD_PERCENT_MARGIN
        minimum = (local.msg_throughput_in + local.msg_throughput_out) * fraction
        figures: dict[str, JsonValue] = {"minimumThroughputToOffload": minimum}
        shed[broker] = figures
        if minimum < config.min_throughput_bytes:
            figures["skipped"] = f"below the minimum throughput {mib(config.min_throughput_bytes)}"
            continue
        served = len(snapshot.bundles_of(broker))
        if served <= 1:
            figures["skipped"] = (
                "sole bundle is overloading the broker" if served == 1 else "no bundles"
            )
            continue
        text = (
            f"broker usage {percent(usage)} >= average {percent(average)} + "
            f"threshold {percent(threshold)}; shedding at least {mib(minimum)}"
        )
        candidates = sheddable_bundles_by(snapshot, broker, "throughput")
        for bundle, throughput in select_until_offloaded(candidates, minimum):
            reason = Reason(ReasonKind.OVERLOADED, f"{text}, bundle {mib(throughput)}")
            decisions.append(Unload(bundle_name(bundle), broker, reason))
    lower: dict[str, JsonValue] = {}
    if not decisions and config.lower_boundary_shedding:
        decisions.extend(_lower_boundary_shedding(snapshot, history, config, lower))
    stats = {
        **flagged_outcome(bool(decisions), shed, "no broker above average + threshold"),
        "avgUsage": average,
        "threshold": threshold,
        "usage": dict(history),
        "sheddingBrokers": shed,
    }
    if lower:
        stats["lowerBoundary"] = lower
    return SheddingResult(tuple(decisions), ThresholdState(usage_history=history), stats)


def _lower_boundary_shedding(
    snapshot: LoadSnapshot,
    history: dict[BrokerId, float],
    config: ThresholdShedderConfig,
    figures: dict[str, JsonValue],
) -> list[Move]:
    """Pulsar's ``tryLowerBoundaryShedding``: shed from the busiest broker when some broker is
    far below the average. Updates ``history`` a second time, as Pulsar does."""
    threshold = config.threshold
    average = _update_history(snapshot, history, config)
    figures["avgUsage"] = average
    busiest: BrokerId | None = None
    busiest_usage = average - threshold
    someone_below = False
    for broker in snapshot.brokers:
        usage = history.get(broker, 0.0)
        if usage > busiest_usage and len(snapshot.bundles_of(broker)) > 1:
            busiest_usage = usage
            busiest = broker
        if usage < average - threshold:
            someone_below = True
    if busiest is None:
        figures["skipped"] = "no broker with more than one bundle above the lower bound"
        return []
    if not someone_below:
        figures["skipped"] = "no broker below the lower bound"
        return []
    local = snapshot.local(busiest)
    minimum = (
        (local.msg_throughput_in + local.msg_throughput_out)
        * threshold
        * LOWER_BOUNDARY_THRESHOLD_MARGIN
    )
    figures["broker"] = busiest
    figures["minimumThroughputToOffload"] = minimum
    if config.min_throughput_bytes > minimum:
        figures["skipped"] = f"below the minimum throughput {mib(config.min_throughput_bytes)}"
        return []
    text = (
        f"broker usage {percent(busiest_usage)} is the highest while a broker is below "
        f"average {percent(average)} - threshold {percent(threshold)}; "
        f"shedding at least {mib(minimum)}"
    )
    candidates = sheddable_bundles_by(snapshot, busiest, "throughput")
    return [
        Unload(
            bundle_name(bundle),
            busiest,
            Reason(ReasonKind.UNDERLOADED, f"{text}, bundle {mib(throughput)}"),
        )
        for bundle, throughput in select_until_offloaded(candidates, minimum)
    ]
