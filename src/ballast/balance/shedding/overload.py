"""OverloadShedder: unload the heaviest bundles of every broker whose usage is at or above the
overload threshold.

Goal: get each overloaded broker back below ``loadBalancerBrokerOverloadedThresholdPercentage``
(85%). Hard rules (Pulsar's ``OverloadShedder``):

- usage = the report's weighted max resource usage (CPU, heap memory, direct memory, bandwidth
  in/out percentages times their ``loadBalancer*ResourceWeight``, as a fraction);
- a broker qualifies when ``usage >= threshold`` (exactly at the threshold qualifies);
- it must shed ``(msgThroughputIn + msgThroughputOut) * (usage - threshold + 0.05)`` bytes/s:
  its bundles are taken heaviest first (short-term throughput) until that much is marked, at
  least one;
- only bundles the broker reports, that have bundle data, are not recently unloaded and are not
  in a system namespace are candidates;
- a broker with one bundle or none is left alone (its sole bundle is its whole load);
- other brokers' load is not compared; there is no minimum throughput.

Worked example: broker-1 reports bandwidth in/out 999/1000 (usage 0.999) and 110 MiB/s; with
the threshold at 85% it must shed (0.999 - 0.85 + 0.05) * 110 MiB/s = 21.9 MiB/s, so it unloads
its 20 MiB/s bundle and then its 18 MiB/s bundle (20 < 21.9, 38 >= 21.9).
"""

from __future__ import annotations

from ballast.balance.decisions import (
    JsonValue,
    Move,
    Reason,
    ReasonKind,
    Unload,
    mib,
    percent,
)
from ballast.balance.shedding.common import (
    ADDITIONAL_THRESHOLD_PERCENT_MARGIN,
    NoState,
    SheddingResult,
    flagged_outcome,
    select_until_offloaded,
    sheddable_bundles_by,
)
from ballast.balance.snapshot import LoadSnapshot, bundle_name
from ballast.model.config import OverloadShedderConfig


def find_bundles_to_unload(
    snapshot: LoadSnapshot, state: NoState, config: OverloadShedderConfig, now_ms: int
) -> SheddingResult[NoState]:
    """Pulsar's ``OverloadShedder.findBundlesForUnloading``. Brokers are visited in snapshot
    order; decisions list each broker's bundles heaviest first. ``now_ms`` is unused (the
    grace period is the cycle's business)."""
    del now_ms
    threshold = config.overloaded_threshold
    decisions: list[Move] = []
    overloaded: dict[str, JsonValue] = {}
    for broker, data in snapshot.brokers.items():
        local = data.local_data
        usage = local.max_resource_usage_with_weight(config.weights)
        if usage < threshold:
            continue
        offload_fraction = usage - threshold + ADDITIONAL_THRESHOLD_PERCENT_MARGIN
        minimum = (local.msg_throughput_in + local.msg_throughput_out) * offload_fraction
        served = len(snapshot.bundles_of(broker))
        figures: dict[str, JsonValue] = {"usage": usage, "minimumThroughputToOffload": minimum}
        overloaded[broker] = figures
        if served <= 1:
            figures["skipped"] = (
                "sole bundle is overloading the broker" if served == 1 else "no bundles"
            )
            continue
        candidates = sheddable_bundles_by(snapshot, broker, "throughput")
        for bundle, throughput in select_until_offloaded(candidates, minimum):
            text = (
                f"broker usage {percent(usage)} >= overload threshold {percent(threshold)}; "
                f"shedding at least {mib(minimum)}, bundle {mib(throughput)}"
            )
            decisions.append(
                Unload(bundle_name(bundle), broker, Reason(ReasonKind.OVERLOADED, text))
            )
    stats: dict[str, JsonValue] = {
        **flagged_outcome(bool(decisions), overloaded, "no broker at or above the threshold"),
        "overloadThreshold": threshold,
        "overloadedBrokers": overloaded,
    }
    return SheddingResult(tuple(decisions), state, stats)
