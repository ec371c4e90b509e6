"""Load history records and their small-scale Parquet I/O (pyarrow, no Spark).

A :class:`HistorySnapshot` is everything known about one cluster at one instant: its brokers'
reports, their bundles, optionally per-topic load and the leader's stored averages. It is
built by pure functions from the model (:func:`snapshot_from_load_data`, the seam for the
leader's per-cycle writer, and :mod:`ballast.pipeline.importer`) and written with
:func:`write_snapshot`: one file per table per snapshot, in the partition of its hour.

Concurrency: :func:`write_snapshot` writes each file under a hidden temporary name and renames
it into place, so readers (pyarrow or Spark, which skip names starting with ``.`` or ``_``)
never see a partial file; the brokers file, from which the jobs take the latest snapshot, is
written last. Writing the same snapshot (same cluster and ``snapshot_ms``) again
replaces its files. Different snapshots never share a file, so several writers may append
to one history concurrently as long as no two write the same snapshot.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import astuple, dataclass, fields
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from ballast.atomic_files import replaced_whole
from ballast.file_lock import hold_exclusive
from ballast.model.loaddata import (
    BundleData,
    LoadData,
    LocalBrokerData,
    TimeAverageBrokerData,
)
from ballast.pipeline.file_check import table_files
from ballast.pipeline.schema import (
    BROKER_AVERAGES,
    BROKERS,
    BUNDLE_AVERAGES,
    BUNDLES,
    HISTORY_TABLES,
    PARTITION_COLUMNS,
    TOPICS,
    Table,
)
from ballast.pipeline.synthetic_spec import LAST_MS

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class HistoryError(ValueError):
    """Bad history input: a record that does not fit the schema, a bad path or time."""


@contextmanager
def held_for_writing(root: Path) -> Iterator[None]:
    """Hold ``root`` (made if missing) for one writer at a time: ``generate`` moves its tables
    into place whole, which dropped what an ``import`` wrote meanwhile (the import had said
    it succeeded). :class:`HistoryError` when another process holds it."""
    root.mkdir(parents=True, exist_ok=True)
    handle = hold_exclusive(root)
    if handle is None:
        raise HistoryError(
            f"{root} is being written by another process (a pipeline generate or import): "
            "try again once it has finished"
        )
    try:
        yield
    finally:
        os.close(handle)


@dataclass(frozen=True, slots=True)
class BrokerRow:
    """A broker's report, as a ``brokers`` row (without ``snapshot_ms`` and ``cluster``)."""

    broker: str
    cpu_usage: float
    cpu_limit: float
    memory_usage: float
    memory_limit: float
    direct_memory_usage: float
    direct_memory_limit: float
    bandwidth_in_usage: float
    bandwidth_in_limit: float
    bandwidth_out_usage: float
    bandwidth_out_limit: float
    msg_rate_in: float
    msg_rate_out: float
    msg_throughput_in: float
    msg_throughput_out: float
    num_topics: int
    num_bundles: int
    num_consumers: int
    num_producers: int
    last_update_ms: int


@dataclass(frozen=True, slots=True)
class BundleRow:
    """A bundle as its owner reported it, as a ``bundles`` row."""

    broker: str
    bundle: str
    namespace: str
    msg_rate_in: float
    msg_rate_out: float
    msg_throughput_in: float
    msg_throughput_out: float
    topics: int
    producer_count: int
    consumer_count: int
    cache_size: int


@dataclass(frozen=True, slots=True)
class TopicRow:
    """A topic's traffic, as a ``topics`` row."""

    broker: str
    bundle: str
    namespace: str
    topic: str
    msg_rate_in: float
    msg_rate_out: float
    msg_throughput_in: float
    msg_throughput_out: float
    producer_count: int
    consumer_count: int


@dataclass(frozen=True, slots=True)
class BundleAverageRow:
    """A bundle's stored averages (BundleData), as a ``bundle_averages`` row."""

    bundle: str
    namespace: str
    short_num_samples: int
    short_max_samples: int
    short_msg_rate_in: float
    short_msg_rate_out: float
    short_msg_throughput_in: float
    short_msg_throughput_out: float
    long_num_samples: int
    long_max_samples: int
    long_msg_rate_in: float
    long_msg_rate_out: float
    long_msg_throughput_in: float
    long_msg_throughput_out: float
    topics: int


@dataclass(frozen=True, slots=True)
class BrokerAverageRow:
    """A broker's stored averages (TimeAverageBrokerData), as a ``broker_averages`` row."""

    broker: str
    num_bundles: int
    short_msg_rate_in: float
    short_msg_rate_out: float
    short_msg_throughput_in: float
    short_msg_throughput_out: float
    long_msg_rate_in: float
    long_msg_rate_out: float
    long_msg_throughput_in: float
    long_msg_throughput_out: float


ROW_TYPES: dict[str, type[Any]] = {
    BROKERS.name: BrokerRow,
    BUNDLES.name: BundleRow,
    TOPICS.name: TopicRow,
    BUNDLE_AVERAGES.name: BundleAverageRow,
    BROKER_AVERAGES.name: BrokerAverageRow,
}


@dataclass(frozen=True, slots=True)
class HistorySnapshot:
    """One cluster at one instant. Any table may be empty (a Pulsar dump has no topics)."""

    snapshot_ms: int
    cluster: str
    brokers: tuple[BrokerRow, ...] = ()
    bundles: tuple[BundleRow, ...] = ()
    topics: tuple[TopicRow, ...] = ()
    bundle_averages: tuple[BundleAverageRow, ...] = ()
    broker_averages: tuple[BrokerAverageRow, ...] = ()

    def __post_init__(self) -> None:
        if self.snapshot_ms < 0:
            raise HistoryError(f"snapshot_ms {self.snapshot_ms} is before 1970")
        if self.snapshot_ms > LAST_MS:  # past what a date= partition can name
            raise HistoryError(f"snapshot_ms {self.snapshot_ms} is after 9999-12-31 (UTC)")
        if not self.cluster:
            raise HistoryError("cluster name is empty")

    def rows(self, table: Table) -> Sequence[Any]:
        return {
            BROKERS.name: self.brokers,
            BUNDLES.name: self.bundles,
            TOPICS.name: self.topics,
            BUNDLE_AVERAGES.name: self.bundle_averages,
            BROKER_AVERAGES.name: self.broker_averages,
        }[table.name]


# -- from the model ---------------------------------------------------------------------------


def namespace_of(bundle: str) -> str:
    """``tenant/ns`` of ``tenant/ns/0x..._0x...`` (everything before the last ``/``)."""
    return bundle.rpartition("/")[0]


def broker_row(broker: str, report: LocalBrokerData) -> BrokerRow:
    return BrokerRow(
        broker=broker,
        cpu_usage=report.cpu.usage,
        cpu_limit=report.cpu.limit,
        memory_usage=report.memory.usage,
        memory_limit=report.memory.limit,
        direct_memory_usage=report.direct_memory.usage,
        direct_memory_limit=report.direct_memory.limit,
        bandwidth_in_usage=report.bandwidth_in.usage,
        bandwidth_in_limit=report.bandwidth_in.limit,
        bandwidth_out_usage=report.bandwidth_out.usage,
        bandwidth_out_limit=report.bandwidth_out.limit,
        msg_rate_in=report.msg_rate_in,
        msg_rate_out=report.msg_rate_out,
        msg_throughput_in=report.msg_throughput_in,
        msg_throughput_out=report.msg_throughput_out,
        num_topics=report.num_topics,
        num_bundles=report.num_bundles,
        num_consumers=report.num_consumers,
        num_producers=report.num_producers,
        last_update_ms=report.last_update,
    )


def bundle_rows(broker: str, report: LocalBrokerData) -> list[BundleRow]:
    """The bundles of a report (its ``lastStats``), in bundle-name order."""
    return [
        BundleRow(
            broker=broker,
            bundle=bundle,
            namespace=namespace_of(bundle),
            msg_rate_in=stats.msg_rate_in,
            msg_rate_out=stats.msg_rate_out,
            msg_throughput_in=stats.msg_throughput_in,
            msg_throughput_out=stats.msg_throughput_out,
            topics=stats.topics,
            producer_count=stats.producer_count,
            consumer_count=stats.consumer_count,
            cache_size=stats.cache_size,
        )
        for bundle, stats in sorted(report.last_stats.items())
    ]


def bundle_average_row(bundle: str, data: BundleData) -> BundleAverageRow:
    short, long = data.short_term_data, data.long_term_data
    return BundleAverageRow(
        bundle=bundle,
        namespace=namespace_of(bundle),
        short_num_samples=short.num_samples,
        short_max_samples=short.max_samples,
        short_msg_rate_in=short.msg_rate_in,
        short_msg_rate_out=short.msg_rate_out,
        short_msg_throughput_in=short.msg_throughput_in,
        short_msg_throughput_out=short.msg_throughput_out,
        long_num_samples=long.num_samples,
        long_max_samples=long.max_samples,
        long_msg_rate_in=long.msg_rate_in,
        long_msg_rate_out=long.msg_rate_out,
        long_msg_throughput_in=long.msg_throughput_in,
        long_msg_throughput_out=long.msg_throughput_out,
        topics=data.topics,
    )


def broker_average_row(
    broker: str, data: TimeAverageBrokerData, num_bundles: int
) -> BrokerAverageRow:
    return BrokerAverageRow(
        broker=broker,
        num_bundles=num_bundles,
        short_msg_rate_in=data.short_term_msg_rate_in,
        short_msg_rate_out=data.short_term_msg_rate_out,
        short_msg_throughput_in=data.short_term_msg_throughput_in,
        short_msg_throughput_out=data.short_term_msg_throughput_out,
        long_msg_rate_in=data.long_term_msg_rate_in,
        long_msg_rate_out=data.long_term_msg_rate_out,
        long_msg_throughput_in=data.long_term_msg_throughput_in,
        long_msg_throughput_out=data.long_term_msg_throughput_out,
    )


def snapshot_from_load_data(
    load_data: LoadData,
    *,
    snapshot_ms: int,
    cluster: str,
    topics: Iterable[TopicRow] = (),
    include_averages: bool = True,
) -> HistorySnapshot:
    """The history rows of a leader's view of the cluster: one ``brokers`` row per broker,
    one ``bundles`` row per bundle each broker reports, the given topic rows, and (with
    ``include_averages``) the leader's bundle data and broker time averages. Rows are sorted
    by broker and bundle, so equal inputs give equal snapshots.

    This is what the leader's per-cycle history writer records (setting
    ``loadBalancerHistoryPath``) before :func:`write_snapshot`."""
    brokers = sorted(load_data.broker_data.items())
    bundle_averages: tuple[BundleAverageRow, ...] = ()
    broker_averages: tuple[BrokerAverageRow, ...] = ()
    if include_averages:
        bundle_averages = tuple(
            bundle_average_row(bundle, data)
            for bundle, data in sorted(load_data.bundle_data.items())
        )
        broker_averages = tuple(
            broker_average_row(broker, data.time_average_data, len(data.local_data.last_stats))
            for broker, data in brokers
        )
    return HistorySnapshot(
        snapshot_ms=snapshot_ms,
        cluster=cluster,
        brokers=tuple(broker_row(broker, data.local_data) for broker, data in brokers),
        bundles=tuple(
            row for broker, data in brokers for row in bundle_rows(broker, data.local_data)
        ),
        topics=tuple(sorted(topics, key=lambda t: (t.broker, t.bundle, t.topic))),
        bundle_averages=bundle_averages,
        broker_averages=broker_averages,
    )


# -- Parquet (pyarrow) ------------------------------------------------------------------------


def partition_of(snapshot_ms: int) -> tuple[str, int]:
    """``(date, hour)`` of an epoch-ms time, in UTC."""
    moment = _EPOCH + timedelta(milliseconds=snapshot_ms)
    return moment.strftime("%Y-%m-%d"), moment.hour


def arrow_table(snapshot: HistorySnapshot, table: Table) -> pa.Table:
    """The rows of one table of a snapshot, with ``snapshot_ms`` and ``cluster`` added, in the
    table's schema (without partition columns)."""
    rows = snapshot.rows(table)
    row_type = ROW_TYPES[table.name]
    names = [f.name for f in fields(row_type)]
    columns: dict[str, list[Any]] = {name: [] for name in names}
    for row in rows:
        for name, value in zip(names, astuple(row), strict=True):
            columns[name].append(value)
    count = len(rows)
    columns["snapshot_ms"] = [snapshot.snapshot_ms] * count
    columns["cluster"] = [snapshot.cluster] * count
    try:
        return pa.table(
            {c.name: columns[c.name] for c in table.columns}, schema=table.arrow_schema()
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise HistoryError(f"{table.name} rows do not fit the schema: {exc}") from None


def snapshot_file(root: Path, table: Table, snapshot_ms: int, cluster: str) -> Path:
    date, hour = partition_of(snapshot_ms)
    name = f"snapshot-{quote(cluster, safe='')}-{snapshot_ms}.parquet"
    return root / table.name / f"date={date}" / f"hour={hour}" / name


def snapshot_files(root: Path, cluster: str, snapshot_ms: int) -> tuple[Path, ...]:
    """The files a history under ``root`` holds of ``cluster``'s snapshot at ``snapshot_ms``
    (that :func:`write_snapshot` would replace)."""
    found = (snapshot_file(root, table, snapshot_ms, cluster) for table in HISTORY_TABLES)
    return tuple(path for path in found if path.exists())


def write_snapshot(root: Path, snapshot: HistorySnapshot) -> tuple[Path, ...]:
    """Write every non-empty table of ``snapshot`` under ``root``; returns the files
    written. Idempotent for the same snapshot: it replaces the snapshot whole, so a table it
    has no rows for loses that snapshot's earlier file too.

    The brokers file commits the snapshot: the jobs take a cluster's latest snapshot from the
    brokers rows, so it is removed first (when the snapshot is rewritten) and written last.
    A writer stopped midway (killed, its disk full) leaves a snapshot without brokers rows,
    which no job takes for the latest, never brokers rows whose bundle rows are missing."""
    brokers_file = snapshot_file(root, BROKERS, snapshot.snapshot_ms, snapshot.cluster)
    brokers_file.unlink(missing_ok=True)
    written: list[Path] = []
    for table in (BUNDLES, TOPICS, BUNDLE_AVERAGES, BROKER_AVERAGES, BROKERS):
        target = snapshot_file(root, table, snapshot.snapshot_ms, snapshot.cluster)
        if not snapshot.rows(table):
            target.unlink(missing_ok=True)
            continue
        data = arrow_table(snapshot, table)
        target.parent.mkdir(parents=True, exist_ok=True)
        with replaced_whole(target) as partial:
            pq.write_table(data, partial, compression="zstd")
        written.append(target)
    return tuple(written)


def _dataset_schema(table: Table) -> pa.Schema:
    file_fields = [pa.field(c.name, c.type.arrow(), nullable=True) for c in table.columns]
    partition_fields = [pa.field(c.name, c.type.arrow()) for c in PARTITION_COLUMNS]
    return pa.schema(file_fields + partition_fields)


def read_table(
    root: Path,
    table: Table,
    *,
    cluster: str | None = None,
    since_ms: int | None = None,
    until_ms: int | None = None,
) -> pa.Table:
    """Read one history table (any writer's files) with pyarrow, optionally only one
    cluster and ``since_ms <= snapshot_ms <= until_ms``; rows sorted by ``snapshot_ms`` then
    the other key columns. An absent table reads as empty. For small histories and tests;
    large ones are read with Spark."""
    schema = _dataset_schema(table)
    directory = root / table.name
    if not directory.is_dir():
        return schema.empty_table()
    partitioning = ds.partitioning(
        pa.schema([pa.field(c.name, c.type.arrow()) for c in PARTITION_COLUMNS]), flavor="hive"
    )
    # only Parquet files: a note left beside them is no table (as Spark reads)
    files = [str(f) for f in table_files(directory)]
    dataset = ds.dataset(
        files,
        format="parquet",
        schema=schema,
        partitioning=partitioning,
        partition_base_dir=str(directory),
    )
    condition: ds.Expression | None = None
    for term in (
        ds.field("cluster") == cluster if cluster is not None else None,
        ds.field("snapshot_ms") >= since_ms if since_ms is not None else None,
        ds.field("snapshot_ms") <= until_ms if until_ms is not None else None,
    ):
        if term is not None:
            condition = term if condition is None else condition & term
    data = dataset.to_table(filter=condition)
    keys = [c.name for c in table.columns if c.type.arrow() == pa.string()]
    return data.sort_by([("snapshot_ms", "ascending"), *((k, "ascending") for k in keys)])


@dataclass(frozen=True, slots=True)
class LeaderHistoryWriter:
    """The leader's per-cycle writer (setting ``loadBalancerHistoryPath``): one snapshot of
    its load data under ``root``, with the rows and layout :func:`write_snapshot` gives every
    writer. Blocking; the controller calls it off its event loop. The leader's reports carry no
    per-topic load, so it writes no ``topics`` rows."""

    root: Path
    cluster: str

    def __call__(self, load_data: LoadData, snapshot_ms: int) -> tuple[Path, ...]:
        snapshot = snapshot_from_load_data(load_data, snapshot_ms=snapshot_ms, cluster=self.cluster)
        return write_snapshot(self.root, snapshot)
