"""Small builders for hand-made load snapshots (no mocks: the strategies take plain values)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ballast.balance.snapshot import BrokerLoad, LoadSnapshot, Policies
from ballast.model.bundles import NamespaceBundles
from ballast.model.config import defaults
from ballast.model.config.loader import Settings
from ballast.model.loaddata import (
    BrokerData,
    BundleData,
    LocalBrokerData,
    NamespaceBundleStats,
    ResourceUsage,
    TimeAverageBrokerData,
    TimeAverageMessageData,
)

MB = 1024 * 1024


def settings(**overrides: object) -> Settings:
    """Default settings with some keys replaced (values as their Python type)."""
    base = defaults()
    return Settings({**base.values, **overrides})


def usage(percent: float) -> ResourceUsage:
    return ResourceUsage(usage=percent, limit=100.0)


def report(
    *,
    cpu: float = 0.0,
    bandwidth: float = 0.0,
    tput: float = 0.0,
    rate: float = 0.0,
    bundles: Iterable[str] = (),
    stats: Mapping[str, NamespaceBundleStats] | None = None,
    topics: int = 0,
    last_update: int = 0,
    version: str | None = None,
    persistent: bool = True,
    non_persistent: bool = True,
) -> LocalBrokerData:
    """A broker report: usages in percent, ``tput``/``rate`` split evenly between in and out."""
    return LocalBrokerData(
        cpu=usage(cpu),
        bandwidth_in=usage(bandwidth),
        bandwidth_out=usage(bandwidth),
        msg_throughput_in=tput / 2,
        msg_throughput_out=tput / 2,
        msg_rate_in=rate / 2,
        msg_rate_out=rate / 2,
        bundles=frozenset(bundles),
        last_stats=dict(stats or {}),
        num_topics=topics,
        last_update=last_update,
        broker_version_string=version,
        persistent_topics_enabled=persistent,
        non_persistent_topics_enabled=non_persistent,
    )


def averages(tput: float = 0.0, rate: float = 0.0, samples: int = 10) -> TimeAverageMessageData:
    return TimeAverageMessageData(
        max_samples=samples,
        num_samples=samples,
        msg_throughput_in=tput / 2,
        msg_throughput_out=tput / 2,
        msg_rate_in=rate / 2,
        msg_rate_out=rate / 2,
    )


def data(tput: float = 0.0, rate: float = 0.0, *, long_rate: float | None = None) -> BundleData:
    """Bundle data with the same short- and long-term figures (unless ``long_rate``)."""
    long = averages(tput, rate if long_rate is None else long_rate, 1000)
    return BundleData(short_term_data=averages(tput, rate), long_term_data=long, topics=1)


def stats(
    tput: float = 0.0, rate: float = 0.0, topics: int = 1, sessions: int = 0
) -> NamespaceBundleStats:
    return NamespaceBundleStats(
        msg_throughput_in=tput / 2,
        msg_throughput_out=tput / 2,
        msg_rate_in=rate / 2,
        msg_rate_out=rate / 2,
        topics=topics,
        producer_count=sessions,
    )


def snapshot(
    brokers: Mapping[str, LocalBrokerData],
    bundles: Mapping[str, BundleData] | None = None,
    *,
    unloaded: Mapping[str, int] | None = None,
    unloaded_brokers: Mapping[str, int] | None = None,
    namespaces: Mapping[str, NamespaceBundles] | None = None,
    policies: Policies | None = None,
    long_term_rates: Mapping[str, float] | None = None,
    preallocated: Mapping[str, Mapping[str, BundleData]] | None = None,
    broker_load: Mapping[str, BrokerLoad] | None = None,
) -> LoadSnapshot:
    rates = long_term_rates or {}
    return LoadSnapshot(
        brokers={
            name: BrokerData(
                local_data=local,
                time_average_data=TimeAverageBrokerData(long_term_msg_rate_in=rates.get(name, 0.0)),
                preallocated_bundle_data=dict((preallocated or {}).get(name, {})),
            )
            for name, local in brokers.items()
        },
        bundles=dict(bundles or {}),
        recently_unloaded_bundles=dict(unloaded or {}),
        recently_unloaded_brokers=dict(unloaded_brokers or {}),
        namespaces=dict(namespaces or {}),
        policies=policies or Policies(),
        broker_load=dict(broker_load or {}),
    )


def names(decisions: Iterable[object]) -> list[str]:
    """The bundles of some decisions, in order."""
    return [str(d.bundle) for d in decisions]
