"""The driver's half of the ``shed`` job: a cluster's latest history snapshot, as rows Spark
collected, turned into the :class:`~ballast.balance.snapshot.LoadSnapshot` that
``ballast decide`` would read, and a shedding strategy run on it with the same pure
``ballast.balance`` code.

Every strategy picks its moves in a fixed order with running totals (bundles sorted by
throughput, taken until a broker's excess is covered; brokers visited in order while the
strategy's memory is updated), so the selection itself is sequential; Spark's part is the
history-wide work before it: each bundle's time averages over all samples, each broker's
sums, the latest snapshot out of the whole history.

The snapshot goes through :func:`~ballast.balance.snapshot_json.snapshot_from_object`, the
function that reads ``ballast decide`` snapshots, so both tools see the same snapshot from the
same data. Brokers and bundles are in name order (a history keeps no other order). What a
history does not hold starts empty: no recently unloaded bundles or brokers, no namespace
boundaries or policies, every strategy at its initial state.

Pure: no Spark, no I/O.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ballast.balance.cycle import run_shedding_cycle
from ballast.balance.decisions import Move, decision_to_json
from ballast.balance.placement.strategies import PlacementState
from ballast.balance.shedding.registry import shedding_strategy
from ballast.balance.snapshot import LoadSnapshot
from ballast.balance.snapshot_json import snapshot_from_object
from ballast.model.codec import to_builtins
from ballast.model.config import PlacementConfig, Settings, SheddingConfig
from ballast.model.loaddata import (
    BundleData,
    LocalBrokerData,
    NamespaceBundleStats,
    ResourceUsage,
    TimeAverageBrokerData,
    TimeAverageMessageData,
)

Row = Mapping[str, Any]


class Scope(StrEnum):
    """``cycle``: the load manager's whole shedding cycle (a destination for every move);
    ``strategy``: the strategy's own answer (as ``ballast decide shed --scope``)."""

    cycle = "cycle"
    strategy = "strategy"


@dataclass(frozen=True, slots=True)
class ShedOptions:
    """The strategy by name (None: ``loadBalancerLoadSheddingStrategy``), the scope, the
    current time (None: the snapshot's time) and the seed of placement's tie-breaks."""

    strategy: str | None = None
    scope: Scope = Scope.cycle
    now_ms: int | None = None
    seed: int = 0


@dataclass(frozen=True, slots=True)
class ShedOutcome:
    """The decisions on one cluster's snapshot, in order, and the strategy's figures."""

    cluster: str
    snapshot_ms: int
    strategy: str
    decisions: tuple[Move, ...]
    stats: Mapping[str, Any]


def _usage(row: Row, name: str) -> ResourceUsage:
    return ResourceUsage(usage=row[f"{name}_usage"], limit=row[f"{name}_limit"])


def local_broker_data(broker: Row, bundles: Iterable[Row]) -> LocalBrokerData:
    """A broker's report from its ``brokers`` row and its ``bundles`` rows. A history keeps
    no other report fields (URLs, versions, gains and losses): they take their defaults, and
    the report's bundle set is its ``lastStats`` keys."""
    stats = {
        row["bundle"]: NamespaceBundleStats(
            msg_rate_in=row["msg_rate_in"],
            msg_throughput_in=row["msg_throughput_in"],
            msg_rate_out=row["msg_rate_out"],
            msg_throughput_out=row["msg_throughput_out"],
            consumer_count=row["consumer_count"],
            producer_count=row["producer_count"],
            topics=row["topics"],
            cache_size=row["cache_size"],
        )
        for row in sorted(bundles, key=lambda r: str(r["bundle"]))
    }
    return LocalBrokerData(
        cpu=_usage(broker, "cpu"),
        memory=_usage(broker, "memory"),
        direct_memory=_usage(broker, "direct_memory"),
        bandwidth_in=_usage(broker, "bandwidth_in"),
        bandwidth_out=_usage(broker, "bandwidth_out"),
        msg_throughput_in=broker["msg_throughput_in"],
        msg_throughput_out=broker["msg_throughput_out"],
        msg_rate_in=broker["msg_rate_in"],
        msg_rate_out=broker["msg_rate_out"],
        last_update=broker["last_update_ms"],
        last_stats=stats,
        num_topics=broker["num_topics"],
        num_bundles=broker["num_bundles"],
        num_consumers=broker["num_consumers"],
        num_producers=broker["num_producers"],
        bundles=frozenset(stats),
    )


def _term(row: Row, term: str) -> TimeAverageMessageData:
    return TimeAverageMessageData(
        max_samples=row[f"{term}_max_samples"],
        num_samples=row[f"{term}_num_samples"],
        msg_throughput_in=row[f"{term}_msg_throughput_in"],
        msg_throughput_out=row[f"{term}_msg_throughput_out"],
        msg_rate_in=row[f"{term}_msg_rate_in"],
        msg_rate_out=row[f"{term}_msg_rate_out"],
    )


def bundle_data(row: Row) -> BundleData:
    """A ``bundle_averages`` row as the leader's ``BundleData``."""
    return BundleData(
        short_term_data=_term(row, "short"), long_term_data=_term(row, "long"), topics=row["topics"]
    )


def time_average(row: Row) -> TimeAverageBrokerData:
    """A ``broker_averages`` row as ``TimeAverageBrokerData``."""
    return TimeAverageBrokerData(
        short_term_msg_throughput_in=row["short_msg_throughput_in"],
        short_term_msg_throughput_out=row["short_msg_throughput_out"],
        short_term_msg_rate_in=row["short_msg_rate_in"],
        short_term_msg_rate_out=row["short_msg_rate_out"],
        long_term_msg_throughput_in=row["long_msg_throughput_in"],
        long_term_msg_throughput_out=row["long_msg_throughput_out"],
        long_term_msg_rate_in=row["long_msg_rate_in"],
        long_term_msg_rate_out=row["long_msg_rate_out"],
    )


def snapshot_object(
    brokers: Sequence[Row],
    bundles: Sequence[Row],
    bundle_averages: Sequence[Row],
    broker_averages: Sequence[Row],
) -> dict[str, Any]:
    """One snapshot's rows (one cluster, one ``snapshot_ms``) as a ``ballast decide``
    snapshot object: ``brokers``, ``timeAverages`` (of the brokers that have them) and
    ``bundles``, each in name order."""
    by_broker: dict[str, list[Row]] = {}
    for row in bundles:
        by_broker.setdefault(str(row["broker"]), []).append(row)
    names = sorted(str(row["broker"]) for row in brokers)
    rows = {str(row["broker"]): row for row in brokers}
    averages = {str(row["broker"]): row for row in broker_averages}
    return {
        "brokers": {
            name: to_builtins(local_broker_data(rows[name], by_broker.get(name, ())))
            for name in names
        },
        "timeAverages": {
            name: to_builtins(time_average(averages[name])) for name in names if name in averages
        },
        "bundles": {
            str(row["bundle"]): to_builtins(bundle_data(row))
            for row in sorted(bundle_averages, key=lambda r: str(r["bundle"]))
        },
    }


def shed(
    cluster: str,
    snapshot_ms: int,
    snapshot: LoadSnapshot,
    settings: Settings,
    options: ShedOptions,
) -> ShedOutcome:
    """What ``ballast decide shed`` decides on ``snapshot`` with the same settings, scope,
    time and seed, every strategy starting from its initial state."""
    shedder = shedding_strategy(
        options.strategy or settings.get_str("loadBalancerLoadSheddingStrategy")
    )
    now_ms = options.now_ms if options.now_ms is not None else snapshot_ms
    config = shedder.config_from_settings(settings)
    if options.scope is Scope.strategy:
        found = shedder.find(snapshot, shedder.initial_state(), config, now_ms)
        return ShedOutcome(cluster, snapshot_ms, shedder.name, found.decisions, dict(found.stats))
    cycle = run_shedding_cycle(
        snapshot,
        shedder,
        shedder.initial_state(),
        config,
        shedding=SheddingConfig.from_settings(settings),
        placement=PlacementConfig.from_settings(settings),
        placement_state=PlacementState(),
        rng=random.Random(options.seed),
        now_ms=now_ms,
    )
    return ShedOutcome(cluster, snapshot_ms, shedder.name, cycle.decisions, dict(cycle.stats))


def decision_rows(outcome: ShedOutcome) -> list[dict[str, Any]]:
    """An outcome as ``shed_decisions`` rows."""
    rows = []
    for seq, decision in enumerate(outcome.decisions):
        body = decision_to_json(decision)
        rows.append(
            {
                "snapshot_ms": outcome.snapshot_ms,
                "cluster": outcome.cluster,
                "strategy": outcome.strategy,
                "seq": seq,
                "action": body["action"],
                "bundle": body["bundle"],
                "broker": body["broker"],
                "destination": body.get("destination"),
                "reason": body["reason"],
                "reason_kind": body["reasonKind"],
            }
        )
    return rows


def parse(obj: dict[str, Any]) -> LoadSnapshot:
    """The snapshot of a :func:`snapshot_object`, read as ``ballast decide`` reads it."""
    return snapshot_from_object(obj).snapshot
