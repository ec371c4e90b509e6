"""Load percentiles and imbalance, per broker and per namespace, over time.

Broker load is Pulsar's weighted max resource usage (the figure the shedders compare; the
``loadBalancer*ResourceWeight`` settings) and the message rate in + out. Percentiles are
exact, linearly interpolated between the closest ranks (Spark's ``percentile``, numpy's and
pandas' default).

Imbalance measures, per snapshot, over the brokers reporting in it:

- ``usage_spread``: max usage - mean usage (what ThresholdShedder compares with its
  threshold);
- ``rate_peak_to_mean``: max msg rate / mean msg rate (1 = perfectly even);
- ``rate_cv``: population standard deviation / mean of the msg rate.

Per namespace and snapshot, ``bundle_peak_to_mean`` is the busiest bundle's msg rate over
the namespace's mean bundle msg rate: how unevenly a namespace's bundles share its load.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ballast.model.loaddata import ResourceWeights
from ballast.pipeline.transforms.usage import with_usage

OVER_BROKERS = (0.5, 0.9, 0.99)
OVER_TIME = (0.5, 0.95, 0.99)


def _ratio(numerator: Column, denominator: Column) -> Column:
    return F.when(denominator > 0, numerator / denominator)


def _percentiles(column: str, levels: tuple[float, ...], prefix: str) -> list[Column]:
    values = F.percentile(F.col(column), list(levels))
    return [values[i].alias(f"{prefix}_p{round(level * 100)}") for i, level in enumerate(levels)]


def broker_load_over_time(brokers: DataFrame, weights: ResourceWeights) -> DataFrame:
    """Per (cluster, snapshot_ms): brokers reporting, usage percentiles across brokers
    (``usage_p50/p90/p99``, ``usage_max``, ``usage_mean``; fractions) and the imbalance
    measures."""
    loads = with_usage(brokers, weights)
    summary = loads.groupBy("cluster", "snapshot_ms").agg(
        F.count("*").alias("brokers"),
        *_percentiles("weighted_usage", OVER_BROKERS, "usage"),
        F.max("weighted_usage").alias("usage_max"),
        F.mean("weighted_usage").alias("usage_mean"),
        F.sum("msg_rate").alias("msg_rate_total"),
        F.max("msg_rate").alias("msg_rate_max"),
        F.mean("msg_rate").alias("msg_rate_mean"),
        F.stddev_pop("msg_rate").alias("msg_rate_std"),
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
    return loads.groupBy("cluster", "broker").agg(
        F.count("*").alias("snapshots"),
        *_percentiles("weighted_usage", OVER_TIME, "usage"),
        F.max("weighted_usage").alias("usage_max"),
        *_percentiles("msg_rate", OVER_TIME, "msg_rate"),
        F.max("msg_rate").alias("msg_rate_max"),
        F.mean("msg_rate").alias("msg_rate_mean"),
    )


def namespace_load_over_time(bundles: DataFrame) -> DataFrame:
    """Per (cluster, snapshot_ms, namespace): ``msg_rate`` and ``msg_throughput`` (in + out,
    summed over its bundles), ``bundles`` and ``bundle_peak_to_mean``."""
    rates = bundles.select(
        "cluster",
        "snapshot_ms",
        "namespace",
        (F.col("msg_rate_in") + F.col("msg_rate_out")).alias("rate"),
        (F.col("msg_throughput_in") + F.col("msg_throughput_out")).alias("throughput"),
    )
    summary = rates.groupBy("cluster", "snapshot_ms", "namespace").agg(
        F.sum("rate").alias("msg_rate"),
        F.sum("throughput").alias("msg_throughput"),
        F.count("*").alias("bundles"),
        F.max("rate").alias("bundle_rate_max"),
    )
    mean_bundle = F.col("msg_rate") / F.col("bundles")
    return summary.select(
        "cluster",
        "snapshot_ms",
        "namespace",
        "msg_rate",
        "msg_throughput",
        "bundles",
        _ratio(F.col("bundle_rate_max"), mean_bundle).alias("bundle_peak_to_mean"),
    )


def namespace_load_percentiles(namespace_over_time: DataFrame) -> DataFrame:
    """Per (cluster, namespace) over the snapshots (from :func:`namespace_load_over_time`):
    msg-rate percentiles (``msg_rate_p50/p95/p99``, ``msg_rate_max``, ``msg_rate_mean``),
    the largest bundle count, and the 95th percentile of ``bundle_peak_to_mean``."""
    return namespace_over_time.groupBy("cluster", "namespace").agg(
        F.count("*").alias("snapshots"),
        *_percentiles("msg_rate", OVER_TIME, "msg_rate"),
        F.max("msg_rate").alias("msg_rate_max"),
        F.mean("msg_rate").alias("msg_rate_mean"),
        F.max("bundles").alias("bundles_max"),
        F.percentile(F.col("bundle_peak_to_mean"), 0.95).alias("bundle_peak_to_mean_p95"),
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
