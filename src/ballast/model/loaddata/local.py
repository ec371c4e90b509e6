"""A broker's own load report: Pulsar's ``LocalBrokerData`` (stored at
``/loadbalance/brokers/<broker>``) and the rule for when a broker rewrites it
(``needBrokerDataUpdate``)."""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from ballast.model.bundles import InvalidBundle, canonical_bundle
from ballast.model.codec import ModelError, decode, encode_sorted, key_path, to_builtins
from ballast.model.loaddata.stats import (
    NamespaceBundleStats,
    NonNegativeFloat,
    NonNegativeInt,
    total_of,
)
from ballast.model.loaddata.usage import (
    ResourceUsage,
    ResourceWeights,
    SystemResourceUsage,
    f32,
    java_max,
)

LOAD_REPORT_TYPE = "LocalBrokerData"


class AdvertisedListener(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """One named listener's broker URLs (Pulsar's ``AdvertisedListener``)."""

    broker_service_url: str | None = None
    broker_service_url_tls: str | None = None
    broker_http_url: str | None = None
    broker_https_url: str | None = None


class LocalBrokerData(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Everything a broker reports about itself: lookup URLs, capabilities, host usage, and
    the stats of every bundle it owns (``last_stats``) with their sums.

    Treat as immutable: updates return new values. Bundle keys are canonical bundle names
    (lowercase hex), normalised when decoded."""

    web_service_url: str | None = None
    web_service_url_tls: str | None = None
    pulsar_service_url: str | None = None
    pulsar_service_url_tls: str | None = None
    persistent_topics_enabled: bool = True
    non_persistent_topics_enabled: bool = True
    cpu: ResourceUsage = ResourceUsage()
    memory: ResourceUsage = ResourceUsage()
    direct_memory: ResourceUsage = ResourceUsage()
    bandwidth_in: ResourceUsage = ResourceUsage()
    bandwidth_out: ResourceUsage = ResourceUsage()
    msg_throughput_in: NonNegativeFloat = 0.0
    msg_throughput_out: NonNegativeFloat = 0.0
    msg_rate_in: NonNegativeFloat = 0.0
    msg_rate_out: NonNegativeFloat = 0.0
    last_update: int = 0
    last_stats: dict[str, NamespaceBundleStats] = {}
    num_topics: NonNegativeInt = 0
    num_bundles: NonNegativeInt = 0
    num_consumers: NonNegativeInt = 0
    num_producers: NonNegativeInt = 0
    bundles: frozenset[str] = frozenset()
    last_bundle_gains: frozenset[str] = frozenset()
    last_bundle_losses: frozenset[str] = frozenset()
    broker_version_string: str | None = None
    protocols: dict[str, str] = {}
    advertised_listeners: dict[str, AdvertisedListener] = {}
    load_manager_class_name: str | None = None

    # -- derived figures ------------------------------------------------------------------

    @property
    def bundle_stats(self) -> dict[str, NamespaceBundleStats]:
        return self.last_stats

    @property
    def msg_rate(self) -> float:
        return self.msg_rate_in + self.msg_rate_out

    @property
    def msg_throughput(self) -> float:
        return self.msg_throughput_in + self.msg_throughput_out

    def max_resource_usage(self) -> float:
        """Pulsar's ``getMaxResourceUsage``: the largest of CPU, direct memory and bandwidth
        in/out percent (heap memory is skipped), as a fraction, in 32-bit float arithmetic."""
        percent = java_max(
            self.cpu.percent_usage(),
            self.direct_memory.percent_usage(),
            self.bandwidth_in.percent_usage(),
            self.bandwidth_out.percent_usage(),
        )
        return f32(percent / 100.0)

    def max_resource_usage_with_weight(self, weights: ResourceWeights) -> float:
        """Pulsar's ``getMaxResourceUsageWithWeight``: ``max(percent_i * weight_i) / 100`` over
        all five resources (heap memory counts with its weight, 0 by default). Not clamped:
        above 1.0 is possible with mis-scaled limits or weights above 1."""
        return (
            java_max(
                self.cpu.percent_usage() * weights.cpu,
                self.memory.percent_usage() * weights.memory,
                self.direct_memory.percent_usage() * weights.direct_memory,
                self.bandwidth_in.percent_usage() * weights.bandwidth_in,
                self.bandwidth_out.percent_usage() * weights.bandwidth_out,
            )
            / 100.0
        )

    def resource_percentages(self) -> dict[str, float]:
        """Each resource's percent usage, by Pulsar's resource names."""
        return {
            "cpu": self.cpu.percent_usage(),
            "memory": self.memory.percent_usage(),
            "directMemory": self.direct_memory.percent_usage(),
            "bandwidthIn": self.bandwidth_in.percent_usage(),
            "bandwidthOut": self.bandwidth_out.percent_usage(),
        }

    # -- updates --------------------------------------------------------------------------

    def updated(
        self,
        usage: SystemResourceUsage,
        bundle_stats: Mapping[str, NamespaceBundleStats],
        *,
        totals: NamespaceBundleStats | None = None,
    ) -> LocalBrokerData:
        """Pulsar's ``update(systemResourceUsage, bundleStats)``: take the new host usage and
        bundle stats; sums and counts are recomputed; bundles that disappeared are added to
        ``last_bundle_losses``, new ones to ``last_bundle_gains`` (deltas accumulate until
        :meth:`without_deltas`). ``totals``: the stats' :func:`total_of`, when the caller has
        it already (a reporter sums them for the host usage)."""
        stats = dict(bundle_stats)
        lost = self.bundles - stats.keys()
        gained = stats.keys() - self.bundles
        total = total_of(stats.values()) if totals is None else totals
        return msgspec.structs.replace(
            self,
            cpu=usage.cpu,
            memory=usage.memory,
            direct_memory=usage.direct_memory,
            bandwidth_in=usage.bandwidth_in,
            bandwidth_out=usage.bandwidth_out,
            msg_throughput_in=total.msg_throughput_in,
            msg_throughput_out=total.msg_throughput_out,
            msg_rate_in=total.msg_rate_in,
            msg_rate_out=total.msg_rate_out,
            num_topics=total.topics,
            num_bundles=len(stats),
            num_consumers=total.consumer_count,
            num_producers=total.producer_count,
            bundles=frozenset(stats),
            last_bundle_gains=self.last_bundle_gains | gained,
            last_bundle_losses=self.last_bundle_losses | lost,
            last_stats=stats,
        )

    def without_deltas(self) -> LocalBrokerData:
        """Pulsar's ``cleanDeltas()``, done after each write of the report."""
        return msgspec.structs.replace(
            self, last_bundle_gains=frozenset(), last_bundle_losses=frozenset()
        )

    def with_last_update(self, now_ms: int) -> LocalBrokerData:
        return msgspec.structs.replace(self, last_update=now_ms)

    # -- JSON -----------------------------------------------------------------------------

    def to_json_dict(self) -> dict[str, Any]:
        """Pulsar's stored JSON, including the getter-derived ``bundleStats``,
        ``maxResourceUsage`` and ``loadReportType`` that Jackson writes."""
        body: dict[str, Any] = to_builtins(self)
        body["bundleStats"] = body["lastStats"]
        body["maxResourceUsage"] = self.max_resource_usage()
        body["loadReportType"] = LOAD_REPORT_TYPE
        return body

    def to_json(self) -> bytes:
        """:meth:`to_json_dict` encoded (keys in sorted order), byte for byte, without
        building the dicts of every bundle's stats first (brokers write reports often)."""
        body: dict[str, Any] = {key: getattr(self, name) for name, key in _WIRE_NAMES}
        body["bundleStats"] = self.last_stats
        body["maxResourceUsage"] = self.max_resource_usage()
        body["loadReportType"] = LOAD_REPORT_TYPE
        return encode_sorted(body)

    @classmethod
    def from_json(cls, data: bytes | str, *, root: str = "$") -> LocalBrokerData:
        """Decode Pulsar's JSON; unknown keys are ignored, derived keys recomputed, bundle
        names normalised. Raises :class:`ModelError` naming the path of a bad value."""
        return canonicalize_bundles(decode(data, cls, root=root), root=root)


# (attribute, JSON key) of every field of a report
_WIRE_NAMES = tuple(
    (field.name, field.encode_name) for field in msgspec.structs.fields(LocalBrokerData)
)


@functools.lru_cache(maxsize=65536)
def _canonical(name: str) -> str:
    # interned: every report's keys, and the leader's bundle data keyed by them, share one
    # string object per bundle (see canonicalize_bundles)
    return sys.intern(canonical_bundle(name))


def canonical_bundle_key(name: str, path: str) -> str:
    """The canonical form of a bundle name found at ``path``; ModelError if it is not one."""
    try:
        return _canonical(name)
    except InvalidBundle as exc:
        raise ModelError(path, exc.args[0]) from None


def canonicalize_bundles(data: LocalBrokerData, *, root: str = "$") -> LocalBrokerData:
    """Normalise every bundle name in a report (keys of ``lastStats``, members of
    ``bundles`` and the deltas) to lowercase canonical form."""

    def canonical(name: str, field: str, *, member: bool = False) -> str:
        # the path is only spelled out for an error: a report holds thousands of names
        try:
            return _canonical(name)
        except InvalidBundle as exc:
            if not member:
                return canonical_bundle_key(name, f"{root}.{field}{key_path(name)}")
            # a JSON array decoded as a set: the member's position is gone, so the error
            # names the array, and the member in its message
            text = str(exc.args[0])
            where = text if name in text else f'bundle "{name}": {text}'
            raise ModelError(f"{root}.{field}", where) from None

    def names(field: str, values: frozenset[str]) -> frozenset[str]:
        return frozenset(canonical(v, field, member=True) for v in values)

    stats = {canonical(key, "lastStats"): value for key, value in data.last_stats.items()}
    bundles = names("bundles", data.bundles)
    gains = names("lastBundleGains", data.last_bundle_gains)
    losses = names("lastBundleLosses", data.last_bundle_losses)
    # The stats are keyed by the interned canonical strings even when the names were canonical
    # already: the leader looks every reported bundle up in its bundle data on each update,
    # and a key that is the very object stored there matches without comparing characters.
    # The sets are kept as decoded when their names were canonical (the same iteration).
    return msgspec.structs.replace(
        data,
        last_stats=stats,
        bundles=data.bundles if bundles == data.bundles else bundles,
        last_bundle_gains=data.last_bundle_gains if gains == data.last_bundle_gains else gains,
        last_bundle_losses=(
            data.last_bundle_losses if losses == data.last_bundle_losses else losses
        ),
    )


# -- when to rewrite the report (needBrokerDataUpdate) ----------------------------------------


def percent_change(old: float, new: float) -> float:
    """Pulsar's ``percentChange``: 0 if both are 0, infinite if only ``old`` is 0, else
    ``100 * |old - new| / |old|``."""
    if old == 0:
        return 0.0 if new == 0 else float("inf")
    return 100.0 * abs((old - new) / old)


@dataclass(frozen=True, slots=True)
class ReportDecision:
    """Whether to write the report now, and why (for logs and metrics)."""

    write: bool
    reason: str


def largest_change(
    last_written: LocalBrokerData, current: LocalBrokerData, weights: ResourceWeights
) -> tuple[str, float]:
    """``needBrokerDataUpdate``'s largest change since the last written report, and what
    changed: weighted max usage (percentage points), total message rate, total throughput or
    bundle count (percent); the first of equal ones."""
    changes = {
        "usage": 100.0
        * abs(
            last_written.max_resource_usage_with_weight(weights)
            - current.max_resource_usage_with_weight(weights)
        ),
        "msgRate": percent_change(last_written.msg_rate, current.msg_rate),
        "msgThroughput": percent_change(last_written.msg_throughput, current.msg_throughput),
        "numBundles": percent_change(last_written.num_bundles, current.num_bundles),
    }
    # LocalBrokerData.max: a NaN change (a limit that rounds to 0) never wins, not even first.
    measured = [(what, value) for what, value in changes.items() if not math.isnan(value)]
    if not measured:
        return "usage", -math.inf
    return max(measured, key=lambda item: item[1])


def need_broker_data_update(
    last_written: LocalBrokerData,
    current: LocalBrokerData,
    *,
    now_ms: int,
    max_interval_ms: int,
    threshold_percentage: float,
    weights: ResourceWeights,
    change: tuple[str, float] | None = None,
) -> ReportDecision:
    """Pulsar's ``needBrokerDataUpdate``: write when more than ``max_interval_ms`` passed since
    the last write, or when the largest change since the last written report — weighted max
    usage (percentage points), total message rate, total throughput or bundle count (percent)
    — is strictly above ``threshold_percentage``. ``change``: :func:`largest_change` of the
    same reports, if the caller has it already."""
    elapsed_ms = now_ms - last_written.last_update
    if elapsed_ms > max_interval_ms:
        return ReportDecision(True, f"{elapsed_ms} ms since last write > {max_interval_ms} ms")
    what, amount = change if change is not None else largest_change(last_written, current, weights)
    if amount > threshold_percentage:
        return ReportDecision(True, f"{what} changed {amount:.1f}% > {threshold_percentage}%")
    return ReportDecision(False, f"largest change {what} {amount:.1f}% <= {threshold_percentage}%")
