"""UniformLoadShedder: when the busiest and the idlest broker are too far apart, move part of
the gap off the busiest one.

Goal: even message rate and throughput across brokers. Rules (Pulsar's ``UniformLoadShedder``,
master):

- over all brokers (those with no bundles too), from each report's totals: the highest and the
  lowest message rate (in + out) and throughput (in + out), each with its broker; strict
  comparisons, so the first broker in snapshot order wins ties;
- a minimum within ±1e-6 of 0 counts as 1.0;
  ``rateGap% = (maxRate - minRate) * 100 / minRate``, ``ratio = maxTput / minTput``;
- the message-rate rule applies when ``loadBalancerMsgRateDifferenceShedderThreshold > 0`` and
  ``rateGap%`` exceeds it, and takes priority; else the throughput rule when
  ``loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold > 0`` and ``ratio`` exceeds it;
  neither → nothing;
- ``required = (int)((max - min) * maxUnloadPercentage)`` of the chosen metric, from the broker
  with the max; nothing unless that broker has more than one bundle and ``required`` is at
  least ``minUnloadMessage`` (msg/s) or ``minUnloadMessageThroughput`` (bytes/s);
- its bundles with data, not recently unloaded, with a positive short-term metric, heaviest
  first: a bundle is taken when ``metric <= required + 1000`` and then
  ``required += (int)(-metric)`` (Java int arithmetic); at most ``maxUnloadBundleNumPerShedding``
  bundles (-1 = no cap). Only one broker sheds per run.

Worked example: broker-1 at 110 MiB/s with ten bundles of 2..20 MiB/s, broker2 idle: the rates
are both 0 (no rule), the throughput ratio is 110 MiB/s over 1.0; ``required =
(int)((115343360 - 1) * 0.2) = 23068671``; the 20 MiB/s bundle is taken (2097151 left), 18..4
MiB/s are each more than 2097151 + 1000, the 2 MiB/s bundle (2097152) is taken.
"""

from __future__ import annotations

from ballast.balance.decisions import BrokerId, JsonValue, Move, Reason, ReasonKind, Unload, outcome
from ballast.balance.shedding.common import (
    NoState,
    SheddingResult,
    java_int,
    java_int_add,
    sheddable_bundles_by,
)
from ballast.balance.snapshot import LoadSnapshot, bundle_name
from ballast.model.config import UniformShedderConfig

# Pulsar's constants: "zero" minimum, and the slack added to the remaining amount.
EPS = 1e-6
REQUIRED_DELTA = 1000
_JAVA_INT_MAX = 2**31 - 1


def find_bundles_to_unload(
    snapshot: LoadSnapshot, state: NoState, config: UniformShedderConfig, now_ms: int
) -> SheddingResult[NoState]:
    """Pulsar's ``UniformLoadShedder.findBundlesForUnloading``."""
    del now_ms
    max_rate, max_tput = -1.0, -1.0
    min_rate, min_tput = float(_JAVA_INT_MAX), float(_JAVA_INT_MAX)
    rate_broker: BrokerId | None = None
    tput_broker: BrokerId | None = None
    for broker, data in snapshot.brokers.items():
        local = data.local_data
        rate = local.msg_rate_in + local.msg_rate_out
        tput = local.msg_throughput_in + local.msg_throughput_out
        if rate > max_rate:
            rate_broker, max_rate = broker, rate
        if tput > max_tput:
            tput_broker, max_tput = broker, tput
        min_rate = min(min_rate, rate)
        min_tput = min(min_tput, tput)
    if -EPS <= min_rate <= EPS:
        min_rate = 1.0
    if -EPS <= min_tput <= EPS:
        min_tput = 1.0
    rate_gap_percent = (max_rate - min_rate) * 100 / min_rate
    tput_ratio = max_tput / min_tput
    rate_exceeded = (
        config.msg_rate_difference_percentage > 0
        and rate_gap_percent > config.msg_rate_difference_percentage
    )
    tput_exceeded = (
        config.throughput_multiplier_difference > 0
        and tput_ratio > config.throughput_multiplier_difference
    )
    stats: dict[str, JsonValue] = {
        "maxMsgRate": max_rate,
        "minMsgRate": min_rate,
        "msgRateDifferencePercentage": rate_gap_percent,
        "maxMsgThroughput": max_tput,
        "minMsgThroughput": min_tput,
        "msgThroughputDifferenceRate": tput_ratio,
    }
    if not (rate_exceeded or tput_exceeded):
        detail = "message rate and throughput gaps are within the thresholds"
        return SheddingResult((), state, {**outcome(False, ReasonKind.BALANCED, detail), **stats})
    if rate_exceeded:
        source, metric, unit = rate_broker, "rate", "msg/s"
        required = java_int((max_rate - min_rate) * config.max_unload_percentage)
        gate = config.min_unload_msg_rate
        why = f"msg rate gap {rate_gap_percent:.1f}% > {config.msg_rate_difference_percentage:g}%"
    else:
        source, metric, unit = tput_broker, "throughput", "bytes/s"
        required = java_int((max_tput - min_tput) * config.max_unload_percentage)
        gate = config.min_unload_throughput_bytes
        why = f"throughput ratio {tput_ratio:.2f} > {config.throughput_multiplier_difference:g}"
    assert source is not None  # a rule can only fire when some broker was seen
    stats.update({"sourceBroker": source, "metric": metric, "required": required})
    decisions: list[Move] = []
    if len(snapshot.bundles_of(source)) <= 1:
        detail = f"{source} has fewer than two bundles"
        return SheddingResult((), state, {**outcome(False, ReasonKind.NO_BUNDLES, detail), **stats})
    if required < gate:
        detail = f"amount to move {required} {unit} is below the minimum {gate} {unit}"
        return SheddingResult((), state, {**outcome(False, ReasonKind.BALANCED, detail), **stats})
    candidates = [c for c in sheddable_bundles_by(snapshot, source, metric) if c[1] > 0]
    for bundle, value in candidates:
        if config.max_unload_bundles != -1 and len(decisions) >= config.max_unload_bundles:
            continue
        if value <= java_int_add(required, REQUIRED_DELTA):
            text = (
                f"{why}; moving {required} {unit} off the busiest broker, bundle {value:g} {unit}"
            )
            decisions.append(
                Unload(bundle_name(bundle), source, Reason(ReasonKind.OVERLOADED, text))
            )
            required = java_int_add(required, java_int(-value))
    detail = "no bundle fits the amount to move"
    return SheddingResult(
        tuple(decisions),
        state,
        {**outcome(bool(decisions), ReasonKind.NO_BUNDLES, detail), **stats},
    )
