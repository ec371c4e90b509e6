"""The load-history dataset and the jobs' outputs: every table, its columns (name, type, unit,
meaning) and its partitioning, in one place. The pyarrow and Spark schemas are derived from
here, and ``docs/pipeline.md`` lists the same columns (a test checks).

Every history table carries ``snapshot_ms`` (epoch milliseconds, UTC) and ``cluster`` on every
row and is partitioned Hive-style by ``date`` (``YYYY-MM-DD``, UTC) and ``hour`` (0-23, UTC)
of ``snapshot_ms``: ``<history>/<table>/date=2026-01-05/hour=7/*.parquet``. The partition
columns are not stored inside the files.

Pure data; no I/O.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import types as T


class ColumnType(enum.Enum):
    LONG = "long"
    INT = "int"
    DOUBLE = "double"
    STRING = "string"
    LONG_ARRAY = "array<long>"
    STRING_ARRAY = "array<string>"

    def arrow(self) -> pa.DataType:
        return _ARROW[self]

    def spark(self) -> T.DataType:
        if self is ColumnType.LONG_ARRAY:
            return T.ArrayType(T.LongType())
        if self is ColumnType.STRING_ARRAY:
            return T.ArrayType(T.StringType())
        return _SPARK_SCALAR[self]


_ARROW: dict[ColumnType, pa.DataType] = {
    ColumnType.LONG: pa.int64(),
    ColumnType.INT: pa.int32(),
    ColumnType.DOUBLE: pa.float64(),
    ColumnType.STRING: pa.string(),
    ColumnType.LONG_ARRAY: pa.list_(pa.int64()),
    ColumnType.STRING_ARRAY: pa.list_(pa.string()),
}


_SPARK_SCALAR: dict[ColumnType, T.DataType] = {
    ColumnType.LONG: T.LongType(),
    ColumnType.INT: T.IntegerType(),
    ColumnType.DOUBLE: T.DoubleType(),
    ColumnType.STRING: T.StringType(),
}


@dataclass(frozen=True, slots=True)
class Column:
    """One column: its name, type, unit ("" when it has none) and meaning; ``counted``: a
    rate or a count, which the model holds non-negative and finite."""

    name: str
    type: ColumnType
    unit: str
    doc: str
    nullable: bool = False
    counted: bool = False


@dataclass(frozen=True, slots=True)
class Table:
    """A table: its name (also its directory), what one row is, its columns in order, and
    whether it is partitioned by ``date``/``hour``."""

    name: str
    row: str
    columns: tuple[Column, ...]
    partitioned: bool = True

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def column(self, name: str) -> Column:
        for column in self.columns:
            if column.name == name:
                return column
        raise KeyError(f"table {self.name} has no column {name}")

    def arrow_schema(self) -> pa.Schema:
        """The schema of the files (without the partition columns)."""
        return pa.schema(
            [pa.field(c.name, c.type.arrow(), nullable=c.nullable) for c in self.columns]
        )

    def spark_schema(self, *, with_partitions: bool = False) -> T.StructType:
        """The Spark schema; ``with_partitions`` adds ``date`` and ``hour`` (how a
        partitioned table reads back)."""
        columns = self.columns + (PARTITION_COLUMNS if with_partitions else ())
        return T.StructType([T.StructField(c.name, c.type.spark(), nullable=True) for c in columns])


LONG, INT, DOUBLE, STRING = ColumnType.LONG, ColumnType.INT, ColumnType.DOUBLE, ColumnType.STRING

SNAPSHOT_MS = Column("snapshot_ms", LONG, "ms", "snapshot time, epoch milliseconds UTC")
CLUSTER = Column("cluster", STRING, "", "cluster name")
DATE = Column("date", STRING, "", "partition: UTC date of snapshot_ms, YYYY-MM-DD")
HOUR = Column("hour", INT, "", "partition: UTC hour of snapshot_ms, 0-23")
PARTITION_COLUMNS = (DATE, HOUR)
PARTITION_NAMES = tuple(c.name for c in PARTITION_COLUMNS)

_BROKER = Column("broker", STRING, "", "broker id, host:port of its web service")
_BUNDLE = Column(
    "bundle", STRING, "", "bundle name, tenant/namespace/0xlower_0xupper (lowercase hex)"
)
_NAMESPACE = Column("namespace", STRING, "", "namespace of the bundle, tenant/namespace")


def _rates(what: str) -> tuple[Column, ...]:
    return (
        _counted("msg_rate_in", DOUBLE, "msg/s", f"messages published to the {what}"),
        _counted("msg_rate_out", DOUBLE, "msg/s", f"messages dispatched from the {what}"),
        _counted("msg_throughput_in", DOUBLE, "bytes/s", f"bytes published to the {what}"),
        _counted("msg_throughput_out", DOUBLE, "bytes/s", f"bytes dispatched from the {what}"),
    )


def _counted(name: str, kind: ColumnType, unit: str, doc: str) -> Column:
    return Column(name, kind, unit, doc, counted=True)


def _resource(name: str, what: str, unit: str) -> tuple[Column, ...]:
    return (
        Column(f"{name}_usage", DOUBLE, unit, f"{what} in use"),
        Column(f"{name}_limit", DOUBLE, unit, f"{what} available (<= 0: unknown)"),
    )


BROKERS = Table(
    "brokers",
    "one broker's load report (Pulsar's LocalBrokerData) in one snapshot",
    (
        SNAPSHOT_MS,
        CLUSTER,
        _BROKER,
        *_resource("cpu", "CPU", "percent of one core, summed over cores"),
        *_resource("memory", "JVM heap", "MiB"),
        *_resource("direct_memory", "JVM direct memory", "MiB"),
        *_resource("bandwidth_in", "NIC inbound bandwidth", "as reported (Pulsar: kbit/s)"),
        *_resource("bandwidth_out", "NIC outbound bandwidth", "as reported (Pulsar: kbit/s)"),
        *_rates("broker (sum over its bundles)"),
        _counted("num_topics", LONG, "topics", "topics served"),
        _counted("num_bundles", LONG, "bundles", "bundles owned"),
        _counted("num_consumers", LONG, "consumers", "consumers connected"),
        _counted("num_producers", LONG, "producers", "producers connected"),
        Column("last_update_ms", LONG, "ms", "when the broker last wrote its report"),
    ),
)

BUNDLES = Table(
    "bundles",
    "one bundle as its owner reported it (NamespaceBundleStats) in one snapshot",
    (
        SNAPSHOT_MS,
        CLUSTER,
        Column("broker", STRING, "", "broker that reported the bundle (its owner)"),
        _BUNDLE,
        _NAMESPACE,
        *_rates("bundle"),
        _counted("topics", LONG, "topics", "topics of the bundle"),
        _counted("producer_count", LONG, "producers", "producers connected"),
        _counted("consumer_count", LONG, "consumers", "consumers connected"),
        Column("cache_size", LONG, "bytes", "managed-ledger cache size"),
    ),
)

TOPICS = Table(
    "topics",
    "one topic's traffic in one snapshot (when the source knows per-topic load)",
    (
        SNAPSHOT_MS,
        CLUSTER,
        Column("broker", STRING, "", "broker serving the topic"),
        Column("bundle", STRING, "", "bundle the topic belonged to when reported"),
        _NAMESPACE,
        Column("topic", STRING, "", "full topic name, e.g. persistent://tenant/ns/t"),
        *_rates("topic"),
        _counted("producer_count", LONG, "producers", "producers connected"),
        _counted("consumer_count", LONG, "consumers", "consumers connected"),
    ),
)


def _average(term: str, samples: int) -> tuple[Column, ...]:
    what = f"{term}-term average"
    return (
        _counted(f"{term}_num_samples", LONG, "samples", f"samples in the {what} (<= max)"),
        Column(
            f"{term}_max_samples", LONG, "samples", f"window of the {what} ({samples} in Pulsar)"
        ),
        _counted(f"{term}_msg_rate_in", DOUBLE, "msg/s", f"{what} of msg_rate_in"),
        _counted(f"{term}_msg_rate_out", DOUBLE, "msg/s", f"{what} of msg_rate_out"),
        _counted(f"{term}_msg_throughput_in", DOUBLE, "bytes/s", f"{what} of msg_throughput_in"),
        _counted(f"{term}_msg_throughput_out", DOUBLE, "bytes/s", f"{what} of msg_throughput_out"),
    )


BUNDLE_AVERAGES = Table(
    "bundle_averages",
    "a bundle's time averages (Pulsar's BundleData) as of snapshot_ms",
    (
        Column("snapshot_ms", LONG, "ms", "time of the last sample the averages include"),
        CLUSTER,
        _BUNDLE,
        _NAMESPACE,
        *_average("short", 10),
        *_average("long", 1000),
        Column("topics", LONG, "topics", "topics in the last sample"),
    ),
)


def _broker_average(term: str) -> tuple[Column, ...]:
    what = f"sum of the broker's bundles' {term}-term averages"
    return (
        _counted(f"{term}_msg_rate_in", DOUBLE, "msg/s", f"{what} of msg_rate_in"),
        _counted(f"{term}_msg_rate_out", DOUBLE, "msg/s", f"{what} of msg_rate_out"),
        _counted(f"{term}_msg_throughput_in", DOUBLE, "bytes/s", f"{what} of msg_throughput_in"),
        _counted(f"{term}_msg_throughput_out", DOUBLE, "bytes/s", f"{what} of msg_throughput_out"),
    )


BROKER_AVERAGES = Table(
    "broker_averages",
    "a broker's time averages (Pulsar's TimeAverageBrokerData) as of snapshot_ms",
    (
        SNAPSHOT_MS,
        CLUSTER,
        _BROKER,
        Column("num_bundles", LONG, "bundles", "bundles summed (the broker's latest report)"),
        *_broker_average("short"),
        *_broker_average("long"),
    ),
)

HISTORY_TABLES: tuple[Table, ...] = (BROKERS, BUNDLES, TOPICS, BUNDLE_AVERAGES, BROKER_AVERAGES)
"""The tables of a history directory. ``bundle_averages`` and ``broker_averages`` hold the
averages a Pulsar leader had stored (imported from ``/loadbalance`` dumps)."""

SPLIT_PLAN = Table(
    "split_plan",
    "a bundle the split rules select, and where to cut it",
    (
        Column("snapshot_ms", LONG, "ms", "snapshot the plan was made for"),
        CLUSTER,
        _BROKER,
        _BUNDLE,
        _NAMESPACE,
        Column("topics", LONG, "topics", "topics in the latest report"),
        Column("sessions", LONG, "sessions", "producers + consumers in the latest report"),
        Column("long_msg_rate", DOUBLE, "msg/s", "long-term msg rate in + out"),
        Column("long_msg_throughput", DOUBLE, "bytes/s", "long-term throughput in + out"),
        Column("reason", STRING, "", "the thresholds the bundle is above"),
        Column("algorithm", STRING, "", "split algorithm used to find the cut points"),
        Column("split_points", ColumnType.LONG_ARRAY, "hash", "cut points, ascending"),
        Column(
            "children",
            ColumnType.STRING_ARRAY,
            "",
            "bundle ranges after the split (empty when no cut point)",
        ),
        Column(
            "no_split_reason",
            STRING,
            "",
            "why the algorithm found no cut point (null when it found one)",
            nullable=True,
        ),
    ),
    partitioned=False,
)

SHED_DECISIONS = Table(
    "shed_decisions",
    "a move the shedding strategy decides on a cluster's latest snapshot, in decision order",
    (
        Column("snapshot_ms", LONG, "ms", "snapshot the decision was made on"),
        CLUSTER,
        Column("strategy", STRING, "", "shedding strategy (overload, threshold, ...)"),
        Column("seq", LONG, "", "position in the strategy's order of decisions (from 0)"),
        Column("action", STRING, "", "unload or transfer"),
        _BUNDLE,
        Column("broker", STRING, "", "the bundle's current broker (the source)"),
        Column("destination", STRING, "", "broker to transfer to (null: unload)", nullable=True),
        Column("reason", STRING, "", "why, as ballast decide says it"),
        Column("reason_kind", STRING, "", "the reason's kind (Overloaded, Underloaded, ...)"),
    ),
    partitioned=False,
)

TABLES_BY_NAME: dict[str, Table] = {
    t.name: t for t in (*HISTORY_TABLES, SPLIT_PLAN, SHED_DECISIONS)
}
