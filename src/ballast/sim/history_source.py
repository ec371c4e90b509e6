"""A load history as the source of a scenario's ``[copy]``: the Parquet dataset a leader writes
(``loadBalancerHistoryPath``), ``ballast pipeline import`` adds to or ``ballast pipeline
generate`` makes (docs/pipeline.md). Its first snapshot is copied as a snapshot file is; replayed,
each copied bundle's publish rate (and message size) then follows the history, snapshot by
snapshot, as a :class:`~ballast.sim.processes.Recorded` multiplier — the virtual-time
counterpart of Pulsar's load-simulation ``stream``, which mirrors a live cluster's changing
rates.

A copied bundle's rate at a snapshot is the sum over the history's bundles inside its range
(so the children of a later split still count for it). A snapshot without any of them (the
bundle between owners, reported by nobody) keeps the multiplier before it. Bundles with no
publish traffic in the first snapshot have no rate to multiply and stay without; namespaces
that appear later are not added. A copied bundle's topic count that grows past its highest
becomes idle topics added at that snapshot (:class:`TopicGrowth`; the scenario makes them
events). Replayed, the brokers that join and leave between snapshots are read too;
:mod:`ballast.sim.churn` makes them the scenario's events.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ballast.balance.snapshot import LoadSnapshot
from ballast.balance.snapshot_json import snapshot_from_object
from ballast.model.bundles import BundleName, InvalidBundle
from ballast.model.codec import ModelError
from ballast.pipeline.history import read_table
from ballast.pipeline.schema import BROKERS, BUNDLES
from ballast.pipeline.shedding import snapshot_object
from ballast.sim.churn import BrokerChange, broker_changes
from ballast.sim.copy import BrokerLimits
from ballast.sim.processes import Recorded
from ballast.sim.schema import ScenarioError


@dataclass(frozen=True, slots=True)
class TopicGrowth:
    """Topics a copied bundle gained by a snapshot ``at_s`` seconds after the first: its count
    there over the highest before it."""

    at_s: float
    bundle: str
    count: int


@dataclass(frozen=True, slots=True)
class HistorySource:
    """The first snapshot of one cluster's history, and per bundle of it with publish
    traffic its rate's and message size's multipliers over time (empty when not replayed);
    ``snapshots`` and ``span_s``: how many snapshots the history holds and the time they
    cover."""

    cluster: str
    snapshot: LoadSnapshot
    series: Mapping[str, Recorded]
    snapshots: int
    span_s: float
    brokers: tuple[str, ...] = ()
    changes: tuple[BrokerChange, ...] = ()
    joiner_limits: Mapping[str, BrokerLimits] = field(default_factory=dict)
    size_series: Mapping[str, Recorded] = field(default_factory=dict)
    topic_growth: tuple[TopicGrowth, ...] = ()


def read_history(
    path: Path, cluster: str | None, *, replay: bool, replay_brokers: bool = True
) -> HistorySource:
    """Read the history at ``path`` (one cluster: ``cluster``, or the only one it holds);
    replayed, its rates and (with ``replay_brokers``) its brokers' changes. Problems are
    :class:`ScenarioError` naming the key."""
    try:
        brokers = read_table(path, BROKERS, cluster=cluster)
        bundles = read_table(path, BUNDLES, cluster=cluster)
    except (OSError, pa.ArrowException) as exc:
        raise ScenarioError(f"copy.source: {path}: cannot read the history: {exc}") from None
    clusters = sorted(set(brokers.column("cluster").to_pylist()))
    if not clusters:
        where = f" of cluster {cluster}" if cluster is not None else ""
        raise ScenarioError(f"copy.source: {path}: the history has no broker rows{where}")
    if len(clusters) > 1:
        raise ScenarioError(
            f"copy.cluster: the history holds clusters {', '.join(clusters)}; name one"
        )
    first_ms = int(pc.min(brokers.column("snapshot_ms")).as_py())
    last_ms = int(pc.max(brokers.column("snapshot_ms")).as_py())
    at_first = [
        table.filter(pc.equal(table.column("snapshot_ms"), first_ms)).to_pylist()
        for table in (brokers, bundles)
    ]
    try:
        snapshot = snapshot_from_object(snapshot_object(at_first[0], at_first[1], (), ())).snapshot
    except (ModelError, ValueError) as exc:
        raise ScenarioError(f"copy.source: {path}: its first snapshot: {exc}") from None
    published = sorted(
        {
            bundle
            for data in snapshot.brokers.values()
            for bundle, stats in data.local_data.last_stats.items()
            if stats.msg_rate_in > 0.0
        }
    )
    changes = _churn(brokers, first_ms) if replay and replay_brokers else ()
    series = _Series({}, {})
    growth: tuple[TopicGrowth, ...] = ()
    if replay:
        reported = sorted(
            {b for data in snapshot.brokers.values() for b in data.local_data.last_stats}
        )
        rows = _Rows.of(bundles, reported)  # placed once for both series
        series = _series(bundles, first_ms, published, rows.within(reported, published))
        growth = _topic_growth(bundles, first_ms, reported, rows)
    return HistorySource(
        cluster=clusters[0],
        snapshot=snapshot,
        series=series.rates,
        size_series=series.sizes,
        snapshots=len(pc.unique(brokers.column("snapshot_ms"))),
        span_s=(last_ms - first_ms) / 1000.0,
        brokers=tuple(snapshot.brokers),
        changes=changes,
        joiner_limits=_joiner_limits(brokers, first_ms, changes),
        topic_growth=growth,
    )


def _churn(brokers: pa.Table, first_ms: int) -> tuple[BrokerChange, ...]:
    """The brokers that joined and left between the history's snapshots."""
    by_time = (
        brokers.group_by("snapshot_ms").aggregate([("broker", "distinct")]).sort_by("snapshot_ms")
    )
    times = [(t - first_ms) / 1000.0 for t in by_time.column("snapshot_ms").to_pylist()]
    present = [frozenset(names) for names in by_time.column("broker_distinct").to_pylist()]
    return tuple(broker_changes(times, present))


def _joiner_limits(
    brokers: pa.Table, first_ms: int, changes: Sequence[BrokerChange]
) -> dict[str, BrokerLimits]:
    """What each broker that joins reports it has, at the first snapshot it joins in (a
    broker back after an absence keeps what it joined with first)."""
    first_join: dict[str, float] = {}
    for change in changes:
        for name in change.joined:
            first_join.setdefault(name, change.at_s)
    if not first_join:
        return {}
    rows = brokers.filter(pc.is_in(brokers.column("broker"), pa.array(sorted(first_join))))
    limits: dict[str, BrokerLimits] = {}
    for row in rows.sort_by("snapshot_ms").to_pylist():
        name = row["broker"]
        if name not in limits and (row["snapshot_ms"] - first_ms) / 1000.0 >= first_join[name]:
            limits[name] = BrokerLimits(
                cpu=row["cpu_limit"] or 0.0,
                memory_mb=row["memory_limit"] or 0.0,
                nic_in=row["bandwidth_in_limit"] or 0.0,
                nic_out=row["bandwidth_out_limit"] or 0.0,
            )
    return limits


def _owners(names: Sequence[str], copied: Sequence[str]) -> np.ndarray:
    """Per history bundle name, the index of the copied bundle whose range holds it (same
    namespace), or -1."""
    ranges: dict[str, list[tuple[int, int, int]]] = {}
    for index, name in enumerate(copied):
        parsed = BundleName.parse(name)
        ranges.setdefault(str(parsed.namespace), []).append(
            (parsed.range.lower, parsed.range.upper, index)
        )
    exact = {name: index for index, name in enumerate(copied)}
    owners = np.full(len(names), -1, dtype=np.int64)
    for position, name in enumerate(names):
        found = exact.get(name)  # most rows: the copied bundle itself, not a split child
        if found is not None:
            owners[position] = found
            continue
        try:
            parsed = BundleName.parse(name)
        except InvalidBundle:
            continue
        for lower, upper, index in ranges.get(str(parsed.namespace), ()):
            if lower <= parsed.range.lower and parsed.range.upper <= upper:
                owners[position] = index
                break
    return owners


@dataclass(frozen=True, slots=True)
class _Series:
    """Per copied bundle, its rate in and its message size (throughput in over rate in) at
    every snapshot, as multiples of the first snapshot's."""

    rates: dict[str, Recorded]
    sizes: dict[str, Recorded]


@dataclass(frozen=True, slots=True)
class _Rows:
    """The history's bundle rows placed: the snapshot times, and per row its snapshot (an
    index into ``times``), its bundle name (an index into the names) and the copied bundle
    whose range holds it (an index into the copied bundles, -1 for none)."""

    times: np.ndarray
    snapshot_of: np.ndarray
    name_of: np.ndarray
    name_owner: np.ndarray  # per name, the copied bundle whose range holds it (-1: none)

    @classmethod
    def of(cls, bundles: pa.Table, copied: Sequence[str]) -> _Rows:
        encoded = pc.dictionary_encode(bundles.column("bundle")).combine_chunks()
        name_of = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        times, snapshot_of = np.unique(
            bundles.column("snapshot_ms").to_numpy(), return_inverse=True
        )
        return cls(times, snapshot_of, name_of, _owners(encoded.dictionary.to_pylist(), copied))

    @property
    def owner(self) -> np.ndarray:
        """Per row, the copied bundle whose range holds it (-1: none)."""
        return np.take(self.name_owner, self.name_of)

    def within(self, copied: Sequence[str], subset: Sequence[str]) -> _Rows:
        """The same rows placed among ``subset`` of the ``copied`` bundles."""
        place = {name: index for index, name in enumerate(subset)}
        among = np.array([place.get(name, -1) for name in copied] + [-1], dtype=np.int64)
        return _Rows(self.times, self.snapshot_of, self.name_of, among[self.name_owner])


def _series(
    bundles: pa.Table, first_ms: int, copied: Sequence[str], rows: _Rows | None = None
) -> _Series:
    """Each of the ``copied`` bundles' rate in at every snapshot over its rate in at the
    first (the same rows' sum, so a bundle two brokers reported counts alike at both), and
    its message size (the sums' throughput over their rate) over the first's. A snapshot
    that does not show the bundle keeps the figures before it, and one where nothing is
    published to it (or whose throughput is not a number) keeps the size before it; a
    bundle without throughput in at the first snapshot has no size series."""
    if not copied or bundles.num_rows == 0:
        return _Series({}, {})
    placed = rows if rows is not None else _Rows.of(bundles, copied)
    times, snapshot_of, owner = placed.times, placed.snapshot_of, placed.owner
    kept = owner >= 0
    keys = snapshot_of[kept] * len(copied) + owner[kept]
    shape = (times.size, len(copied))

    def sums(column: str) -> np.ndarray:
        values = bundles.column(column).to_numpy(zero_copy_only=False).astype(np.float64)
        return np.bincount(keys, weights=values[kept], minlength=shape[0] * shape[1]).reshape(shape)

    rates, throughputs = sums("msg_rate_in"), sums("msg_throughput_in")
    seen = np.bincount(keys, minlength=shape[0] * shape[1]).reshape(shape) > 0
    rate_factors = rates / rates[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        sizes = throughputs / rates
        size_factors = sizes / sizes[0]
    for row in range(1, times.size):  # nobody reported it, or published to it: as before
        unseen = ~seen[row]
        rate_factors[row, unseen] = rate_factors[row - 1, unseen]
        sizeless = unseen | ~(rates[row] > 0.0) | ~np.isfinite(size_factors[row])
        size_factors[row, sizeless] = size_factors[row - 1, sizeless]
    offsets = tuple(float(t - first_ms) / 1000.0 for t in times)

    def recorded(factors: np.ndarray) -> Recorded:
        return Recorded(offsets, tuple(float(f) for f in factors))

    return _Series(
        rates={name: recorded(rate_factors[:, i]) for i, name in enumerate(copied)},
        sizes={
            name: recorded(size_factors[:, i])
            for i, name in enumerate(copied)
            if throughputs[0, i] > 0.0
        },
    )


def _topic_growth(
    bundles: pa.Table, first_ms: int, copied: Sequence[str], rows: _Rows | None = None
) -> tuple[TopicGrowth, ...]:
    """Each of the ``copied`` bundles' topic count at every snapshot (the topics of the
    history's bundles inside its range; a bundle two brokers report in one snapshot counts
    once, with the larger count) wherever it passes the highest count before it, from the
    first snapshot's (at least 1, as copied). A snapshot that shows none of a bundle's range
    changes nothing, and a count that falls is not replayed: topics are not deleted."""
    if not copied or bundles.num_rows == 0:
        return ()
    placed = rows if rows is not None else _Rows.of(bundles, copied)
    times = placed.times
    owners = placed.name_owner
    keys = placed.snapshot_of * owners.size + placed.name_of
    topics = bundles.column("topics").to_numpy(zero_copy_only=False).astype(np.int32)
    # int32: a day of a large cluster is a (bundles × snapshots) array of each
    per_name = np.zeros(times.size * owners.size, dtype=np.int32)
    np.maximum.at(per_name, keys, topics)
    shown = np.bincount(keys, minlength=per_name.size) > 0
    inside = owners >= 0
    counts = np.zeros((len(copied), times.size), dtype=np.int32)
    seen = np.zeros((len(copied), times.size), dtype=np.int32)
    np.add.at(counts, owners[inside], per_name.reshape(times.size, -1)[:, inside].T)
    np.add.at(seen, owners[inside], shown.reshape(times.size, -1)[:, inside].T)
    highest = np.maximum(counts[:, 0], 1)
    growth: list[TopicGrowth] = []
    for row in range(1, times.size):
        now = np.where(seen[:, row] > 0, counts[:, row], 0)
        for index in np.flatnonzero(now > highest).tolist():
            at_s = float(times[row] - first_ms) / 1000.0
            growth.append(TopicGrowth(at_s, copied[index], int(now[index] - highest[index])))
        highest = np.maximum(highest, now)
    return tuple(growth)
