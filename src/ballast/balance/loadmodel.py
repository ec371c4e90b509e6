"""A load model learnt from the brokers' reports: what a unit of traffic costs in each
resource, so the load a bundle brings to any broker — and every broker's load after a set of
moves — can be predicted from traffic alone.

Why not read the reported usage directly: a report's host usage is sampled once a minute while
its bundle stats are fresh at every report (and a broker rewrites its report when its bundle
count changes), so right after a move a report often lists the new bundles with the old usage.
Traffic is what moves with a bundle; the model turns it into load.

- **CPU** (the report's ``cpu.usage``, in percent of a core): ``a * messages/s + c * bytes/s``
  (in + out), ``a`` and ``c`` fitted by least squares over the brokers' reports (features
  scaled to their means, a small ridge so that brokers all carrying the same mix of message
  sizes split the cost evenly between the two; negative solutions fall back to the better
  single feature).
- **NIC in / out** (``bandwidthIn/Out.usage``, kbit/s): ``k * bytes/s`` of the matching
  direction, ``k`` fitted through the origin (8/1000 when no broker has traffic, Pulsar's
  unit).
- **Memory and direct memory** do not move with bundles here: a broker keeps its reported
  percentage.

A broker's load is ``max_r weight_r * usage_r / limit_r`` over the resources with a positive
weight (``loadBalancer*ResourceWeight``), like Pulsar's weighted max usage, with usage
predicted from traffic and the limits of its report.

Pure: values in, values out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import msgspec

from ballast.balance.decisions import BrokerId
from ballast.balance.snapshot import LoadSnapshot
from ballast.model.loaddata import (
    LocalBrokerData,
    NamespaceBundleStats,
    ResourceUsage,
    ResourceWeights,
    TimeAverageMessageData,
)

_KBIT_PER_BYTE = 8 / 1000
# Past these a report is broken, not busy: left out of the cost fit. A usage ten times its
# limit, or a trillion messages or bytes (a terabyte) a second, which no broker's NIC carries.
MAX_USAGE_OVER_LIMIT = 10.0
MAX_TRAFFIC = 1e12
_RIDGE = 1e-6


@dataclass(frozen=True, slots=True)
class Traffic:
    """Messages and bytes per second each way, and topics."""

    rate_in: float = 0.0
    rate_out: float = 0.0
    tput_in: float = 0.0
    tput_out: float = 0.0
    topics: int = 0

    @classmethod
    def of_stats(cls, stats: NamespaceBundleStats) -> Traffic:
        return cls(
            stats.msg_rate_in,
            stats.msg_rate_out,
            stats.msg_throughput_in,
            stats.msg_throughput_out,
            stats.topics,
        )

    @classmethod
    def of_average(cls, data: TimeAverageMessageData, topics: int = 0) -> Traffic:
        return cls(
            data.msg_rate_in,
            data.msg_rate_out,
            data.msg_throughput_in,
            data.msg_throughput_out,
            topics,
        )

    @classmethod
    def of_report(cls, report: LocalBrokerData) -> Traffic:
        return cls(
            report.msg_rate_in,
            report.msg_rate_out,
            report.msg_throughput_in,
            report.msg_throughput_out,
            report.num_topics,
        )

    def plus(self, other: Traffic) -> Traffic:
        return Traffic(
            self.rate_in + other.rate_in,
            self.rate_out + other.rate_out,
            self.tput_in + other.tput_in,
            self.tput_out + other.tput_out,
            self.topics + other.topics,
        )

    def minus(self, other: Traffic) -> Traffic:
        return Traffic(
            max(0.0, self.rate_in - other.rate_in),
            max(0.0, self.rate_out - other.rate_out),
            max(0.0, self.tput_in - other.tput_in),
            max(0.0, self.tput_out - other.tput_out),
            max(0, self.topics - other.topics),
        )

    @property
    def messages(self) -> float:
        return self.rate_in + self.rate_out

    @property
    def bytes(self) -> float:
        return self.tput_in + self.tput_out


class Costs(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """What a unit of traffic costs: CPU per message/s and per byte/s (percent of a core),
    NIC per byte/s in and out (kbit/s)."""

    cpu_per_msg: float = 0.0
    cpu_per_byte: float = 0.0
    nic_in_per_byte: float = _KBIT_PER_BYTE
    nic_out_per_byte: float = _KBIT_PER_BYTE

    def blended(self, newer: Costs, keep: float) -> Costs:
        """``keep`` of these costs and ``1 - keep`` of ``newer``."""
        fresh = 1.0 - keep
        return Costs(
            cpu_per_msg=self.cpu_per_msg * keep + newer.cpu_per_msg * fresh,
            cpu_per_byte=self.cpu_per_byte * keep + newer.cpu_per_byte * fresh,
            nic_in_per_byte=self.nic_in_per_byte * keep + newer.nic_in_per_byte * fresh,
            nic_out_per_byte=self.nic_out_per_byte * keep + newer.nic_out_per_byte * fresh,
        )


@dataclass(frozen=True, slots=True)
class Usage:
    """The traffic-driven resources' usage: CPU (percent of a core), NIC in and out (kbit/s)."""

    cpu: float = 0.0
    nic_in: float = 0.0
    nic_out: float = 0.0

    def plus(self, other: Usage) -> Usage:
        return Usage(self.cpu + other.cpu, self.nic_in + other.nic_in, self.nic_out + other.nic_out)

    def minus(self, other: Usage) -> Usage:
        return Usage(
            max(0.0, self.cpu - other.cpu),
            max(0.0, self.nic_in - other.nic_in),
            max(0.0, self.nic_out - other.nic_out),
        )


def usage_of(costs: Costs, traffic: Traffic) -> Usage:
    return Usage(
        cpu=costs.cpu_per_msg * traffic.messages + costs.cpu_per_byte * traffic.bytes,
        nic_in=costs.nic_in_per_byte * traffic.tput_in,
        nic_out=costs.nic_out_per_byte * traffic.tput_out,
    )


@dataclass(frozen=True, slots=True)
class Capacity:
    """One broker's limits (from its report) and the load its static resources (memory,
    direct memory) put on it, weighted, as a fraction."""

    cpu: float
    nic_in: float
    nic_out: float
    static_load: float

    @classmethod
    def of_report(cls, report: LocalBrokerData, weights: ResourceWeights) -> Capacity:
        static = max(
            report.memory.percent_usage() * weights.memory,
            report.direct_memory.percent_usage() * weights.direct_memory,
            0.0,
        )
        return cls(
            cpu=report.cpu.limit,
            nic_in=report.bandwidth_in.limit,
            nic_out=report.bandwidth_out.limit,
            static_load=static / 100.0,
        )


def load_of(usage: Usage, capacity: Capacity, weights: ResourceWeights) -> float:
    """The weighted max usage of a broker with ``capacity`` carrying ``usage``, a fraction."""
    return _load(usage.cpu, usage.nic_in, usage.nic_out, capacity, weights)


def load_with(usage: Usage, added: Usage, capacity: Capacity, weights: ResourceWeights) -> float:
    """``load_of(usage.plus(added), capacity, weights)`` without making the sum (placement
    asks it of every broker for every bundle)."""
    return _load(
        usage.cpu + added.cpu,
        usage.nic_in + added.nic_in,
        usage.nic_out + added.nic_out,
        capacity,
        weights,
    )


def _load(
    cpu: float, nic_in: float, nic_out: float, capacity: Capacity, weights: ResourceWeights
) -> float:
    load = capacity.static_load
    if weights.cpu > 0 and capacity.cpu > 0:
        load = max(load, cpu / capacity.cpu * weights.cpu)
    if weights.bandwidth_in > 0 and capacity.nic_in > 0:
        load = max(load, nic_in / capacity.nic_in * weights.bandwidth_in)
    if weights.bandwidth_out > 0 and capacity.nic_out > 0:
        load = max(load, nic_out / capacity.nic_out * weights.bandwidth_out)
    return load


def _square(value: float) -> float:
    return value * value  # inf past a double's range, where ``** 2`` raises OverflowError


def _through_origin(points: Iterable[tuple[float, float]], default: float) -> float:
    """``k`` minimising ``sum (y - k x)^2``."""
    numerator = 0.0
    denominator = 0.0
    for x, y in points:
        numerator += x * y
        denominator += x * x
    return numerator / denominator if denominator > 0 else default


def _fit_cpu(points: list[tuple[float, float, float]]) -> tuple[float, float]:
    """``(a, c)`` with ``usage ≈ a * messages + c * bytes`` (see the module docstring)."""
    if not points:
        return 0.0, 0.0
    mean_m = sum(p[0] for p in points) / len(points)
    mean_b = sum(p[1] for p in points) / len(points)
    if mean_m <= 0 and mean_b <= 0:
        return 0.0, 0.0
    if mean_b <= 0:
        return _through_origin(((m, u) for m, _, u in points), 0.0), 0.0
    if mean_m <= 0:
        return 0.0, _through_origin(((b, u) for _, b, u in points), 0.0)
    xx = xy = yy = xu = yu = 0.0
    for messages, size, used in points:
        x, y = messages / mean_m, size / mean_b
        xx += x * x
        xy += x * y
        yy += y * y
        xu += x * used
        yu += y * used
    ridge = _RIDGE * (xx + yy) / 2
    xx += ridge
    yy += ridge
    determinant = xx * yy - xy * xy
    a = (xu * yy - yu * xy) / determinant
    c = (yu * xx - xu * xy) / determinant
    if a >= 0 and c >= 0:
        return a / mean_m, c / mean_b
    # One feature explains it better on its own: take the one with the smaller residual.
    k_m = _through_origin(((m, u) for m, _, u in points), 0.0)
    k_b = _through_origin(((b, u) for _, b, u in points), 0.0)
    residual_m = sum(_square(u - k_m * m) for m, _, u in points)
    residual_b = sum(_square(u - k_b * b) for _, b, u in points)
    return (k_m, 0.0) if residual_m <= residual_b else (0.0, k_b)


def _measured(resource: ResourceUsage) -> bool:
    """Whether a report's figure for a resource can be fitted: a limit, and a usage a broker
    can report (up to :data:`MAX_USAGE_OVER_LIMIT` times the limit)."""
    return resource.limit > 0 and 0 <= resource.usage <= MAX_USAGE_OVER_LIMIT * resource.limit


def _plausible(traffic: Traffic) -> bool:
    """Whether a report's traffic can be fitted: every figure finite and at most
    :data:`MAX_TRAFFIC` (sums of figures past a double's range are infinite)."""
    figures = (traffic.messages, traffic.bytes, traffic.tput_in, traffic.tput_out)
    return all(0 <= figure <= MAX_TRAFFIC for figure in figures)


def fit_costs(reports: Iterable[LocalBrokerData]) -> Costs:
    """The costs that best explain the reports' usage by their traffic."""
    cpu: list[tuple[float, float, float]] = []
    nic_in: list[tuple[float, float]] = []
    nic_out: list[tuple[float, float]] = []
    for report in reports:
        traffic = Traffic.of_report(report)
        if not _plausible(traffic):
            continue  # a broken report explains nothing, and would skew every cost
        if _measured(report.cpu) and (traffic.messages or traffic.bytes):
            cpu.append((traffic.messages, traffic.bytes, report.cpu.usage))
        if _measured(report.bandwidth_in) and traffic.tput_in:
            nic_in.append((traffic.tput_in, report.bandwidth_in.usage))
        if _measured(report.bandwidth_out) and traffic.tput_out:
            nic_out.append((traffic.tput_out, report.bandwidth_out.usage))
    cpu_per_msg, cpu_per_byte = _fit_cpu(cpu)
    return Costs(
        cpu_per_msg=cpu_per_msg,
        cpu_per_byte=cpu_per_byte,
        nic_in_per_byte=_through_origin(nic_in, _KBIT_PER_BYTE),
        nic_out_per_byte=_through_origin(nic_out, _KBIT_PER_BYTE),
    )


def costs_from_snapshot(snapshot: LoadSnapshot) -> Costs:
    """The costs fitted to the snapshot's reports (computed once while they stay the same)."""
    reports = tuple(data.local_data for data in snapshot.brokers.values())
    return snapshot.derived("loadmodel.costs", reports, lambda: fit_costs(reports))


def preallocated_traffic(snapshot: LoadSnapshot, broker: BrokerId) -> Traffic:
    """The traffic of the bundles preallocated to ``broker`` (short-term averages)."""
    found = snapshot.broker_index(broker)
    if found is None:
        return Traffic()
    rate_in, rate_out, tput_in, tput_out = found.preallocated_short_term
    return Traffic(rate_in, rate_out, tput_in, tput_out, found.preallocated_topics)


def broker_traffic(snapshot: LoadSnapshot, broker: BrokerId) -> Traffic:
    """What ``broker`` reports plus what is preallocated to it."""
    found = snapshot.broker_index(broker)
    if found is None:
        return Traffic()
    return Traffic(*found.traffic)


def broker_usage(
    snapshot: LoadSnapshot, broker: BrokerId, costs: Costs, weights: ResourceWeights
) -> tuple[Usage, Capacity]:
    """``broker``'s predicted usage (its traffic with its preallocated bundles) and capacity,
    computed once per broker data, costs and weights."""

    def compute() -> tuple[Usage, Capacity]:
        usage = usage_of(costs, broker_traffic(snapshot, broker))
        return usage, Capacity.of_report(snapshot.local(broker), weights)

    depends_on = (snapshot.brokers[broker], costs, weights)
    return snapshot.derived(f"loadmodel.usage.{broker}", depends_on, compute)


def bundle_traffic(snapshot: LoadSnapshot, bundle: str, owner: BrokerId | None) -> Traffic:
    """A bundle's traffic: its owner's latest report of it, else the leader's short-term
    average, else Pulsar's default for a bundle never seen."""
    if owner is not None:
        stats = snapshot.local(owner).last_stats.get(bundle)
        if stats is not None:
            return Traffic.of_stats(stats)
    data = snapshot.bundle_data_or_default(bundle)
    return Traffic.of_average(data.short_term_data, data.topics)


def std(values: Iterable[float]) -> float:
    """Population standard deviation (0 for no values)."""
    items = list(values)
    if not items:
        return 0.0
    if any(math.isinf(v) for v in items):
        return math.inf  # inf - inf is NaN, which max() below would read as 0
    mean = sum(items) / len(items)
    # v*v, not v**2: a huge figure squares to inf as in Java, where ** raises OverflowError
    return math.sqrt(max(0.0, sum((v - mean) * (v - mean) for v in items) / len(items)))
