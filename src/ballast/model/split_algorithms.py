"""Pulsar's named bundle-split algorithms (``NamespaceBundleSplitAlgorithm``): where to cut a
bundle, given the topics it owns and their load.

Each algorithm is a pure function of a :class:`SplitRequest`; it returns the cut points, or
none with the reason Pulsar would have returned ``null`` for. Applying the cut points is
:func:`ballast.model.bundles.split_boundaries`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ballast.model.bundles import BundleRange, InvalidBundle, format_boundary, hash_key

MIB = 1024 * 1024

RANGE_EQUALLY_DIVIDE = "range_equally_divide"
TOPIC_COUNT_EQUALLY_DIVIDE = "topic_count_equally_divide"
SPECIFIED_POSITIONS_DIVIDE = "specified_positions_divide"
FLOW_OR_QPS_EQUALLY_DIVIDE = "flow_or_qps_equally_divide"


@dataclass(frozen=True, slots=True)
class TopicLoad:
    """A topic owned by the bundle and its recent traffic. ``name`` is hashed exactly as
    written (Pulsar hashes the full topic string)."""

    name: str
    msg_rate_in: float = 0.0
    msg_rate_out: float = 0.0
    msg_throughput_in: float = 0.0
    msg_throughput_out: float = 0.0

    @property
    def hash(self) -> int:
        return hash_key(self.name)

    @property
    def msg_rate(self) -> float:
        return self.msg_rate_in + self.msg_rate_out

    @property
    def msg_throughput(self) -> float:
        return self.msg_throughput_in + self.msg_throughput_out


@dataclass(frozen=True, slots=True)
class FlowOrQpsThresholds:
    """Settings of ``flow_or_qps_equally_divide`` (Pulsar key names in the docstrings)."""

    max_msg_rate: int = 30000  # loadBalancerNamespaceBundleMaxMsgRate, msg/s
    max_bandwidth_mbytes: int = 100  # loadBalancerNamespaceBundleMaxBandwidthMbytes, MiB/s
    difference_threshold_percentage: int = 10  # flowOrQpsDifferenceThresholdPercentage, %


@dataclass(frozen=True, slots=True)
class SplitRequest:
    """What an algorithm may look at: the bundle, the topics it owns (topics whose hash lies
    outside the range are not owned and are ignored), requested positions, thresholds."""

    bundle: BundleRange
    topics: Sequence[TopicLoad] = ()
    positions: Sequence[int] = ()
    thresholds: FlowOrQpsThresholds = field(default_factory=FlowOrQpsThresholds)

    def owned_topics(self) -> list[TopicLoad]:
        return [t for t in self.topics if self.bundle.contains(t.hash)]


@dataclass(frozen=True, slots=True)
class SplitPoints:
    """An algorithm's answer: cut points (empty when it declines) and, if empty, why."""

    points: tuple[int, ...]
    reason: str = ""

    @property
    def found(self) -> bool:
        return bool(self.points)


def _none(reason: str) -> SplitPoints:
    return SplitPoints((), reason)


def range_equally_divide(request: SplitRequest) -> SplitPoints:
    """Cut in the middle of the hash range: ``lower + (upper - lower) // 2``."""
    bundle = request.bundle
    return SplitPoints((bundle.lower + (bundle.upper - bundle.lower) // 2,))


def topic_count_equally_divide(request: SplitRequest) -> SplitPoints:
    """Cut between the two middle topic hashes so each half owns half the topics."""
    hashes = sorted(t.hash for t in request.owned_topics())
    if len(hashes) <= 1:
        return _none(f"bundle owns {len(hashes)} topic(s); needs at least 2")
    start = hashes[max(len(hashes) // 2 - 1, 0)]
    end = hashes[len(hashes) // 2]
    return SplitPoints((start + (end - start) // 2,))


def specified_positions_divide(request: SplitRequest) -> SplitPoints:
    """Cut at the requested positions that lie strictly inside the bundle."""
    if not request.positions:
        raise InvalidBundle("specified_positions_divide needs at least one position")
    owned = request.owned_topics()
    if len(owned) <= 1:
        return _none(f"bundle owns {len(owned)} topic(s); needs at least 2")
    bundle = request.bundle
    inside = tuple(p for p in sorted(request.positions) if bundle.lower < p < bundle.upper)
    if not inside:
        return _none(
            f"no position lies strictly inside {bundle} "
            f"(given {', '.join(format_boundary(p) for p in sorted(request.positions))})"
        )
    return SplitPoints(inside)


def flow_or_qps_equally_divide(request: SplitRequest) -> SplitPoints:
    """Walk the owned topics in hash order and cut wherever the running message rate or
    throughput would pass the bundle limits (so each piece carries at most one limit's worth).
    Declines unless the bundle is above a limit by ``difference_threshold_percentage``."""
    limits = request.thresholds
    max_rate = float(limits.max_msg_rate)
    max_bytes = float(limits.max_bandwidth_mbytes * MIB)
    tolerance = 1 + limits.difference_threshold_percentage / 100.0
    owned = request.owned_topics()
    if len(owned) <= 1:
        return _none(f"bundle owns {len(owned)} topic(s); needs at least 2")
    by_hash: dict[int, TopicLoad] = {}
    hashes: list[int] = []
    bundle_rate = 0.0
    bundle_bytes = 0.0
    for topic in owned:
        if topic.msg_rate <= 0 and topic.msg_throughput <= 0:
            continue  # idle topics do not count, as in Pulsar
        hashes.append(topic.hash)
        by_hash[topic.hash] = topic
        bundle_rate += topic.msg_rate
        bundle_bytes += topic.msg_throughput
    if len(by_hash) < 2:
        return _none(f"bundle has {len(by_hash)} topic(s) with traffic; needs at least 2")
    if bundle_rate < max_rate * tolerance and bundle_bytes < max_bytes * tolerance:
        return _none(
            f"bundle load {bundle_rate:.1f} msg/s, {bundle_bytes / MIB:.2f} MiB/s is below "
            f"{max_rate * tolerance:.1f} msg/s and {max_bytes * tolerance / MIB:.2f} MiB/s"
        )
    hashes.sort()
    run_rate = by_hash[hashes[0]].msg_rate
    run_bytes = by_hash[hashes[0]].msg_throughput
    points: list[int] = []
    for previous, current in itertools.pairwise(hashes):
        topic = by_hash[current]
        if (
            run_rate > max_rate
            or run_bytes > max_bytes
            or run_rate + topic.msg_rate > max_rate
            or run_bytes + topic.msg_throughput > max_bytes
        ):
            points.append(previous + (current - previous) // 2 + 1)
            run_rate, run_bytes = topic.msg_rate, topic.msg_throughput
        else:
            run_rate += topic.msg_rate
            run_bytes += topic.msg_throughput
    if not points:
        return _none("no cut point found between topics")
    return SplitPoints(tuple(points))


SplitAlgorithm = Callable[[SplitRequest], SplitPoints]

SPLIT_ALGORITHMS: dict[str, SplitAlgorithm] = {
    RANGE_EQUALLY_DIVIDE: range_equally_divide,
    TOPIC_COUNT_EQUALLY_DIVIDE: topic_count_equally_divide,
    SPECIFIED_POSITIONS_DIVIDE: specified_positions_divide,
    FLOW_OR_QPS_EQUALLY_DIVIDE: flow_or_qps_equally_divide,
}


def split_algorithm(name: str) -> SplitAlgorithm:
    """Look up an algorithm by Pulsar's name; unknown names list the valid ones."""
    try:
        return SPLIT_ALGORITHMS[name]
    except KeyError:
        raise InvalidBundle(
            f'unknown split algorithm "{name}"; choose one of {", ".join(SPLIT_ALGORITHMS)}'
        ) from None
