"""AvgShedder (PIP-364, Pulsar 3.3 on): pair the busiest broker with the idlest, the second
busiest with the second idlest, and so on; move part of a pair's traffic gap once the pair has
stayed far apart for some runs, each bundle to the broker it was paired with.

Goal: even usage without chasing short peaks. Rules (Pulsar's ``AvgShedder``, master):

- a broker's score is its weighted max usage of CPU, direct memory and NIC in and out (heap
  memory left out), times 100;
- brokers sorted by score, ascending; Pulsar compares ``(int) (a - b)``, so scores less than
  one point apart keep the snapshot's order (a stable sort with that comparison here, which
  orders as Java's for up to 31 brokers);
- pairs from both ends inwards (the idlest with the busiest); a pair less than
  ``loadBalancerAvgShedderLowThreshold`` points apart clears both brokers' hit counts;
  otherwise both brokers' low count goes up, and their high count too when the pair is at
  least ``loadBalancerAvgShedderHighThreshold`` apart (else the high count is cleared);
- no pair at all clears every count;
- a pair acts when a broker of it has a high count of at least
  ``loadBalancerAvgShedderHitCountHighThreshold`` or a low count of at least
  ``loadBalancerAvgShedderHitCountLowThreshold``; both brokers' counts are then cleared;
- it moves ``(max - min) * maxUnloadPercentage`` of the pair's message rate (in + out) when
  that is more than ``minUnloadMessage``, else of its throughput when that is more than
  ``minUnloadMessageThroughput``, else nothing;
- the busy broker's bundles with data, not recently unloaded, outside system namespaces,
  heaviest short-term first: each with traffic above 0 and within what is left is taken.

Each bundle goes to the broker it was paired with: AvgShedder is also the placement strategy
(``avg``), which returns that broker while it is a candidate. The proposals carry it as a
:class:`Transfer`; the load manager's cycle checks them as any unload and asks placement,
which honours it. Its memory is the hit counts.
"""

from __future__ import annotations

import functools

import msgspec

from ballast.balance.decisions import (
    BrokerId,
    JsonValue,
    Move,
    Reason,
    ReasonKind,
    Transfer,
    outcome,
)
from ballast.balance.shedding.common import (
    SheddingResult,
    java_int,
    sheddable_bundles_by,
)
from ballast.balance.snapshot import LoadSnapshot, bundle_name
from ballast.model.config import AvgShedderConfig


class AvgState(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Per broker, the runs its pair stayed past the high and the low threshold."""

    hit_high: dict[str, int] = {}
    hit_low: dict[str, int] = {}


def _ranked(scores: dict[BrokerId, float]) -> list[BrokerId]:
    """The brokers by score, ascending, compared as Pulsar does: ``(int) (a - b)``, which
    truncates toward zero (scores less than a point apart compare equal; a NaN gap is 0)."""

    def compare(a: BrokerId, b: BrokerId) -> int:
        return java_int(scores[a] - scores[b])

    return sorted(scores, key=functools.cmp_to_key(compare))


def find_bundles_to_unload(
    snapshot: LoadSnapshot, state: AvgState, config: AvgShedderConfig, now_ms: int
) -> SheddingResult[AvgState]:
    """Pulsar's ``AvgShedder.findBundlesForUnloading`` (see the module docstring)."""
    del now_ms
    scores = {
        broker: data.local_data.max_resource_usage_with_weight(config.weights) * 100
        for broker, data in snapshot.brokers.items()
    }
    ranked = _ranked(scores)
    high, low = dict(state.hit_high), dict(state.hit_low)
    pairs: list[tuple[BrokerId, BrokerId]] = []
    i, j = 0, len(ranked) - 1
    while i <= j:
        idlest, busiest = ranked[i], ranked[j]
        gap = scores[busiest] - scores[idlest]
        if gap < config.low_threshold:
            for broker in (busiest, idlest):
                high.pop(broker, None)
                low.pop(broker, None)
        else:
            pairs.append((idlest, busiest))
            for broker in (idlest, busiest):
                low[broker] = low.get(broker, 0) + 1
                if gap < config.high_threshold:
                    high.pop(broker, None)
                else:
                    high[broker] = high.get(broker, 0) + 1
        i += 1
        j -= 1
    stats: dict[str, JsonValue] = {
        "scores": dict(scores),
        "pairs": [[idlest, busiest] for idlest, busiest in pairs],
    }
    if not pairs:
        detail = f"no pair of brokers {config.low_threshold:g} usage points apart"
        body = {**outcome(False, ReasonKind.BALANCED, detail), **stats}
        return SheddingResult((), AvgState(), body)
    decisions: list[Move] = []
    skipped: list[JsonValue] = []
    acted = False  # a pair stayed apart long enough
    for idlest, busiest in pairs:
        if not (
            high.get(idlest, 0) >= config.hit_count_high
            or high.get(busiest, 0) >= config.hit_count_high
            or low.get(idlest, 0) >= config.hit_count_low
            or low.get(busiest, 0) >= config.hit_count_low
        ):
            continue
        acted = True
        for broker in (idlest, busiest):
            high.pop(broker, None)
            low.pop(broker, None)
        small, big = snapshot.local(idlest), snapshot.local(busiest)
        rate_gap = (big.msg_rate_in + big.msg_rate_out) - (small.msg_rate_in + small.msg_rate_out)
        tput_gap = (big.msg_throughput_in + big.msg_throughput_out) - (
            small.msg_throughput_in + small.msg_throughput_out
        )
        if rate_gap * config.max_unload_percentage > config.min_unload_msg_rate:
            metric, unit, left = "rate", "msg/s", rate_gap * config.max_unload_percentage
        elif tput_gap * config.max_unload_percentage > config.min_unload_throughput_bytes:
            metric, unit, left = "throughput", "bytes/s", tput_gap * config.max_unload_percentage
        else:
            skipped.append({"pair": [idlest, busiest], "why": "traffic gap below the minimum"})
            continue
        why = (
            f"{busiest} scores {scores[busiest]:.1f} against {idlest}'s {scores[idlest]:.1f}, "
            f"its pair; shedding {left:g} {unit}"
        )
        for bundle, traffic in sheddable_bundles_by(snapshot, busiest, metric):
            if 0 < traffic <= left:
                decisions.append(
                    Transfer(
                        bundle_name(bundle),
                        busiest,
                        idlest,
                        Reason(ReasonKind.OVERLOADED, f"{why}; bundle {traffic:g} {unit}"),
                    )
                )
                left -= traffic
    stats["skipped"] = skipped
    kept = AvgState(hit_high=high, hit_low=low)
    if acted:
        kind = ReasonKind.NO_BUNDLES
        detail = (
            "a pair stayed apart long enough, but its traffic gap is under the minimum "
            "or no bundle fits it"
        )
    else:
        kind, detail = ReasonKind.HIT_COUNT, "no pair has stayed apart long enough yet"
    body = {**outcome(bool(decisions), kind, detail), **stats}
    return SheddingResult(tuple(decisions), kept, body)
