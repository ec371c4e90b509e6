"""Load percentiles and imbalance, per broker and per namespace, over time.

Broker load is Pulsar's weighted max resource usage (the figure the shedders compare; the
``loadBalancer*ResourceWeight`` settings) and the message rate in + out. Percentiles are
exact, linearly interpolated between the closest ranks (numpy's and pandas' default): the
values of Spark's ``percentile``, computed with its arithmetic from each group's sorted
values (:func:`percentile_of_sorted`).

Imbalance measures, per snapshot, over the brokers reporting in it:

- ``usage_spread``: max usage - mean usage (what ThresholdShedder compares with its
  threshold);
- ``rate_peak_to_mean``: max msg rate / mean msg rate (1 = perfectly even);
- ``rate_cv``: population standard deviation / mean of the msg rate.

Per namespace and snapshot, ``bundle_peak_to_mean`` is the busiest bundle's msg rate over
the namespace's mean bundle msg rate: how unevenly a namespace's bundles share its load.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ballast.model.loaddata import ResourceWeights
from ballast.pipeline.transforms.usage import with_usage

OVER_BROKERS = (0.5, 0.9, 0.99)
OVER_TIME = (0.5, 0.95, 0.99)


def _ratio(numerator: Column, denominator: Column) -> Column:
    return F.when(denominator > 0, numerator / denominator)


def _sorted(column: str) -> Column:
    """A group's non-null values of ``column`` in ascending order (NaN last), for
    :func:`_percentiles`."""
    return F.sort_array(F.collect_list(F.col(column))).alias(f"_{column}_sorted")


def percentile_of_sorted(values: Column, level: float) -> Column:
    """Spark's exact ``percentile(x, level)`` of a group, from the group's values sorted
    (:func:`_sorted`), with the same arithmetic: position ``(n - 1) * level``, the values at
    its floor and ceiling, ``low + (position - floor) * (high - low)`` between two different
    ones; null for no values. Zeros of opposite signs are different values to ``percentile``
    (it counts values in a hash map): interpolating between them gives 0.0, which ``low +
    high`` gives too. (Which of two such zeros sorts first is not defined in either.)

    Collecting the values as an array costs less than ``percentile``'s map of boxed values
    (its partial maps are serialised through the shuffle), about half the aggregation's time
    on a day of broker rows."""
    count = F.size(values)
    position = (count - 1) * F.lit(level)
    lower, higher = F.floor(position), F.ceil(position)
    low, high = F.get(values, lower.cast("int")), F.get(values, higher.cast("int"))
    return (
        F.when(count == 0, F.lit(None).cast("double"))
        .when(higher == lower, low)
        .when((high == low) & (low != 0), low)
        .when(high == low, low + high)
        .otherwise(low + (position - lower) * (high - low))
    )


def _percentiles(column: str, levels: tuple[float, ...], prefix: str) -> list[Column]:
    """Percentile columns of ``column`` from its sorted values (an aggregation's
    :func:`_sorted` of it)."""
    values = F.col(f"_{column}_sorted")
    return [
        percentile_of_sorted(values, level).alias(f"{prefix}_p{round(level * 100)}")
        for level in levels
    ]


def broker_load_over_time(brokers: DataFrame, weights: ResourceWeights) -> DataFrame:
    """Per (cluster, snapshot_ms): brokers reporting, usage percentiles across brokers
    (``usage_p50/p90/p99``, ``usage_max``, ``usage_mean``; fractions) and the imbalance
    measures."""
    loads = with_usage(brokers, weights)
    sums = loads.groupBy("cluster", "snapshot_ms").agg(
        F.count("*").alias("brokers"),
        _sorted("weighted_usage"),
        F.max("weighted_usage").alias("usage_max"),
        F.mean("weighted_usage").alias("usage_mean"),
        F.sum("msg_rate").alias("msg_rate_total"),
        F.max("msg_rate").alias("msg_rate_max"),
        F.mean("msg_rate").alias("msg_rate_mean"),
        F.stddev_pop("msg_rate").alias("msg_rate_std"),
    )
    summary = sums.select(
        "cluster",
        "snapshot_ms",
        "brokers",
        *_percentiles("weighted_usage", OVER_BROKERS, "usage"),
        "usage_max",
        "usage_mean",
        "msg_rate_total",
        "msg_rate_max",
        "msg_rate_mean",
        "msg_rate_std",
    )
    return summary.select(
        "*",
        (F.col("usage_max") - F.col("usage_mean")).alias("usage_spread"),
        _ratio(F.col("msg_rate_max"), F.col("msg_rate_mean")).alias("rate_peak_to_mean"),
        _ratio(F.col("msg_rate_std"), F.col("msg_rate_mean")).alias("rate_cv"),
    ).drop("msg_rate_std")


def broker_load_percentiles(brokers: DataFrame, weights: ResourceWeights) -> DataFrame:
    """Per (cluster, broker) over the snapshots it reported in: ``snapshots``, usage
    percentiles (``usage_p50/p95/p99``, ``usage_max``) and msg-rate percentiles
    (``msg_rate_p50/p95/p99``, ``msg_rate_max``, ``msg_rate_mean``)."""
    loads = with_usage(brokers, weights)
    sums = loads.groupBy("cluster", "broker").agg(
        F.count("*").alias("snapshots"),
        _sorted("weighted_usage"),
        F.max("weighted_usage").alias("usage_max"),
        _sorted("msg_rate"),
        F.max("msg_rate").alias("msg_rate_max"),
        F.mean("msg_rate").alias("msg_rate_mean"),
    )
    return sums.select(
        "cluster",
        "broker",
        "snapshots",
        *_percentiles("weighted_usage", OVER_TIME, "usage"),
        "usage_max",
        *_percentiles("msg_rate", OVER_TIME, "msg_rate"),
        "msg_rate_max",
        "msg_rate_mean",
    )


def namespace_load_over_time(bundles: DataFrame) -> DataFrame:
    """Per (cluster, snapshot_ms, namespace): ``msg_rate`` (in + out, summed over its
    bundles), ``bundles`` and ``bundle_peak_to_mean``."""
    rates = bundles.select(
        *NAMESPACE_KEYS, (F.col("msg_rate_in") + F.col("msg_rate_out")).alias("rate")
    )
    summary = rates.groupBy(*NAMESPACE_KEYS).agg(
        F.sum("rate").alias("msg_rate"),
        F.count("*").alias("bundles"),
        F.max("rate").alias("bundle_rate_max"),
    )
    return _with_peak_to_mean(summary)


def _with_peak_to_mean(summary: DataFrame) -> DataFrame:
    mean_bundle = F.col("msg_rate") / F.col("bundles")
    return summary.select(
        *NAMESPACE_KEYS,
        "msg_rate",
        "bundles",
        _ratio(F.col("bundle_rate_max"), mean_bundle).alias("bundle_peak_to_mean"),
    )


# Sums, counts and maxima are decomposable: each task aggregates its own rows (vectorised,
# with numpy) and Spark combines the partial results, a few rows per namespace and snapshot
# instead of one per bundle.
NAMESPACE_KEYS = ("cluster", "snapshot_ms", "namespace")
NAMESPACE_INPUT_COLUMNS = (*NAMESPACE_KEYS, "msg_rate_in", "msg_rate_out")
NAMESPACE_PARTIAL_SCHEMA = (
    "cluster string, snapshot_ms long, namespace string, msg_rate double, bundles long, "
    "bundle_rate_max double"
)


def _codes(column: pa.ChunkedArray) -> tuple[npt.NDArray[np.int64], pa.Array]:
    """Each row's index into the column's distinct strings, and those strings."""
    if not pa.types.is_dictionary(column.type):
        column = column.dictionary_encode()
    column = column.unify_dictionaries()
    if column.num_chunks == 0:
        return np.empty(0, dtype=np.int64), pa.array([], pa.string())
    indices = [chunk.indices.to_numpy(zero_copy_only=False) for chunk in column.chunks]
    return np.concatenate(indices).astype(np.int64), column.chunk(0).dictionary


def namespace_partials_of(rows: pa.Table) -> pa.Table:
    """Partial per-namespace aggregates (``NAMESPACE_PARTIAL_SCHEMA``) of some ``bundles``
    rows with ``NAMESPACE_INPUT_COLUMNS`` (strings plain or dictionary-encoded, no nulls):
    rows are grouped by integer codes of their keys, then summed with ``bincount``."""
    clusters, cluster_names = _codes(rows.column("cluster"))
    namespaces, namespace_names = _codes(rows.column("namespace"))
    snapshots, snapshot_values = pd.factorize(rows.column("snapshot_ms").to_numpy())
    spaces, cluster_count = len(namespace_names), len(cluster_names)
    cell = (snapshots.astype(np.int64) * cluster_count + clusters) * spaces + namespaces
    group, cells = pd.factorize(cell)
    rate = rows.column("msg_rate_in").to_numpy() + rows.column("msg_rate_out").to_numpy()
    peak = np.full(len(cells), -np.inf)
    with np.errstate(invalid="ignore"):  # a NaN sample: its namespace's peak is NaN, unsaid
        np.maximum.at(peak, group, rate)
    return pa.table(
        {
            "cluster": cluster_names.take(pa.array((cells // spaces) % max(1, cluster_count))),
            "snapshot_ms": pa.array(
                np.asarray(snapshot_values, dtype=np.int64)[cells // (spaces * cluster_count)]
                if len(cells)
                else np.empty(0, dtype=np.int64)
            ),
            "namespace": namespace_names.take(pa.array(cells % max(1, spaces))),
            "msg_rate": pa.array(np.bincount(group, weights=rate, minlength=len(cells))),
            "bundles": pa.array(np.bincount(group, minlength=len(cells)).astype(np.int64)),
            "bundle_rate_max": pa.array(peak),
        }
    )


def namespace_partials(bundles: DataFrame) -> DataFrame:
    """:func:`namespace_partials_of` of each batch of ``bundles`` rows (``mapInArrow``)."""

    def partials(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield from namespace_partials_of(pa.Table.from_batches([batch])).to_batches()

    return bundles.select(*NAMESPACE_INPUT_COLUMNS).mapInArrow(partials, NAMESPACE_PARTIAL_SCHEMA)


def namespace_load_from_partials(partials: DataFrame) -> DataFrame:
    """:func:`namespace_load_over_time` from partial aggregates (``NAMESPACE_PARTIAL_SCHEMA``,
    from :func:`namespace_partials` or tasks that read the history themselves)."""
    summary = partials.groupBy(*NAMESPACE_KEYS).agg(
        F.sum("msg_rate").alias("msg_rate"),
        F.sum("bundles").alias("bundles"),
        F.max("bundle_rate_max").alias("bundle_rate_max"),
    )
    return _with_peak_to_mean(summary)


def namespace_load_percentiles(namespace_over_time: DataFrame) -> DataFrame:
    """Per (cluster, namespace) over the snapshots (from :func:`namespace_load_over_time`):
    msg-rate percentiles (``msg_rate_p50/p95/p99``, ``msg_rate_max``, ``msg_rate_mean``),
    the largest bundle count, and the 95th percentile of ``bundle_peak_to_mean``."""
    sums = namespace_over_time.groupBy("cluster", "namespace").agg(
        F.count("*").alias("snapshots"),
        _sorted("msg_rate"),
        F.max("msg_rate").alias("msg_rate_max"),
        F.mean("msg_rate").alias("msg_rate_mean"),
        F.max("bundles").alias("bundles_max"),
        _sorted("bundle_peak_to_mean"),
    )
    return sums.select(
        "cluster",
        "namespace",
        "snapshots",
        *_percentiles("msg_rate", OVER_TIME, "msg_rate"),
        "msg_rate_max",
        "msg_rate_mean",
        "bundles_max",
        *_percentiles("bundle_peak_to_mean", (0.95,), "bundle_peak_to_mean"),
    )


def top_namespaces(namespace_percentiles: DataFrame, count: int) -> DataFrame:
    """The ``count`` namespaces with the highest mean msg rate in each cluster (ties by
    name): ``cluster, namespace, rank``."""
    order = Window.partitionBy("cluster").orderBy(F.col("msg_rate_mean").desc(), "namespace")
    return (
        namespace_percentiles.withColumn("rank", F.row_number().over(order))
        .filter(F.col("rank") <= count)
        .select("cluster", "namespace", "rank")
    )
