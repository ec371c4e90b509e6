"""Time averages from raw samples, bit-for-bit as the leader's incremental updates make them.

Pulsar's leader folds each bundle report into the bundle's ``BundleData`` (short term: 10
samples, long term: 1000) with ``n = min(n + 1, max); f = ((n - 1) * f + sample) / n``, and sums
a broker's bundles into its ``TimeAverageBrokerData``. Floating-point rounding makes the
result depend on the exact order of operations, so instead of a closed form this transform
runs the same recurrence, in the same order, inside Spark: each bundle's samples are
collected, sorted by ``(snapshot_ms, broker)`` and folded with the SQL ``aggregate``
higher-order function. Java and Python both use IEEE-754 doubles with round-to-nearest,
so the results equal :meth:`ballast.model.loaddata.BundleData.updated` and
:meth:`~ballast.model.loaddata.TimeAverageBrokerData.from_bundles` exactly.

The samples are sorted with ``sort_array`` rather than ``array_sort``: the same order, but
compiled, where ``array_sort``'s default comparator is an interpreted lambda.

Order of samples: by snapshot time; a bundle reported by two brokers in one snapshot (during
a transfer) gets both samples, in broker-id order. Broker sums run over the broker's bundles
in bundle-name order (the model sums in the order it is given; pass it sorted names).
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ballast.model.loaddata import (
    DEFAULT_BUNDLE_STATS,
    NUM_LONG_SAMPLES,
    NUM_SHORT_SAMPLES,
    NamespaceBundleStats,
)
from ballast.pipeline.schema import BROKER_AVERAGES, BUNDLE_AVERAGES

_KEYS = ("msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out")
_TERMS = ("short", "long")
# The bundle-history columns the fold reads of each sample; a caller that picks the samples
# itself (split-plan's tasks) needs no others.
SAMPLE_COLUMNS = ("snapshot_ms", "cluster", "broker", "bundle", "namespace", *_KEYS, "topics")


def _default_values(defaults: NamespaceBundleStats) -> dict[str, float]:
    return {
        "msg_rate_in": defaults.msg_rate_in,
        "msg_rate_out": defaults.msg_rate_out,
        "msg_throughput_in": defaults.msg_throughput_in,
        "msg_throughput_out": defaults.msg_throughput_out,
    }


def _initial_state(defaults: NamespaceBundleStats, terms: tuple[str, ...]) -> Column:
    """A bundle never seen: the averages of ``terms`` at the defaults."""
    values = _default_values(defaults)
    return F.struct(
        *(F.lit(values[k]).cast("double").alias(f"{t}_{k}") for t in terms for k in _KEYS)
    )


def _weighted(samples: Column, maxima: Mapping[str, int]) -> Column:
    """Each sample with the sample counts the update of each term uses: the ``i``-th sample
    (from 1) is folded in with ``n = min(i, window)``; ``<term>_n`` is ``n`` and
    ``<term>_kept`` is ``n - 1``, both as doubles, exactly the values the recurrence's
    integer ``n`` takes when it meets a double. Computed once per sample here, not in every
    one of the fold's eight updates (an interpreted lambda evaluates a repeated
    subexpression each time)."""

    def weigh(sample: Column, index: Column) -> Column:
        fields = [sample[k].alias(k) for k in _KEYS]
        for term, window in maxima.items():
            n = F.least(index + F.lit(1), F.lit(window))
            fields.append(n.cast("double").alias(f"{term}_n"))
            fields.append((n - F.lit(1)).cast("double").alias(f"{term}_kept"))
        return F.struct(*fields)

    return F.transform(samples, weigh)


def _updated(state: Column, sample: Column, terms: tuple[str, ...]) -> Column:
    """One ``BundleData.updated`` of ``terms``: ``f = ((n - 1) * f + sample) / n``."""
    return F.struct(
        *(
            ((sample[f"{t}_kept"] * state[f"{t}_{k}"] + sample[k]) / sample[f"{t}_n"]).alias(
                f"{t}_{k}"
            )
            for t in terms
            for k in _KEYS
        )
    )


# One sample as the fold reads it, in the order the samples are sorted by: time, then broker.
SAMPLE_FIELDS = ("snapshot_ms", "broker", *_KEYS, "topics")
SAMPLE_LIST_SCHEMA = (
    "cluster string, bundle string, namespace string, samples array<struct<snapshot_ms: bigint, "
    "broker: string, msg_rate_in: double, msg_rate_out: double, msg_throughput_in: double, "
    "msg_throughput_out: double, topics: bigint>>"
)


def sample_lists(bundles: DataFrame) -> DataFrame:
    """``bundles`` history rows -> per (cluster, bundle): ``namespace`` and ``samples``, all
    of its samples (``SAMPLE_FIELDS``) sorted by time and broker (``SAMPLE_LIST_SCHEMA``)."""
    sample = F.struct("snapshot_ms", "broker", *_KEYS, F.col("topics").cast("long").alias("topics"))
    return (
        bundles.select(*SAMPLE_COLUMNS)
        .groupBy("cluster", "bundle")
        .agg(
            F.first("namespace").alias("namespace"),
            F.sort_array(F.collect_list(sample)).alias("samples"),
        )
    )


def merged_sample_lists(pieces: DataFrame) -> DataFrame:
    """Lists of some samples of a bundle each (``SAMPLE_LIST_SCHEMA``, several rows per
    bundle, in any order) -> :func:`sample_lists`: the same sorted list per bundle, made
    from a few pieces per bundle instead of a row per sample."""
    return pieces.groupBy("cluster", "bundle").agg(
        F.first("namespace").alias("namespace"),
        F.sort_array(F.flatten(F.collect_list("samples"))).alias("samples"),
    )


def _folded(
    lists: DataFrame, maxima: Mapping[str, int], defaults: NamespaceBundleStats
) -> DataFrame:
    """Per (cluster, bundle) of :func:`sample_lists`: ``namespace``, ``last`` (the last
    sample: ``snapshot_ms``, ``topics``), ``count`` (its samples) and ``state``
    (``<term>_<key>`` for each term of ``maxima``) after folding all samples in order. The
    last sample is the sorted array's last element and a term's sample count is ``min(count,
    window)``, so the fold carries only the averages."""
    terms = tuple(maxima)
    return lists.select(
        "cluster",
        "bundle",
        "namespace",
        F.element_at("samples", -1).alias("last"),
        F.size("samples").cast("long").alias("count"),
        F.aggregate(
            _weighted(F.col("samples"), maxima),
            _initial_state(defaults, terms),
            lambda state, sample: _updated(state, sample, terms),
        ).alias("state"),
    )


def bundle_time_averages(
    bundles: DataFrame,
    *,
    short_samples: int = NUM_SHORT_SAMPLES,
    long_samples: int = NUM_LONG_SAMPLES,
    defaults: NamespaceBundleStats = DEFAULT_BUNDLE_STATS,
) -> DataFrame:
    """``bundles`` history rows -> one ``bundle_averages`` row per (cluster, bundle): its
    averages after all of its samples, ``snapshot_ms`` being the last sample's time."""
    maxima = {"short": short_samples, "long": long_samples}
    folded = _folded(sample_lists(bundles), maxima, defaults)
    columns: list[Column] = [
        F.col("last.snapshot_ms").alias("snapshot_ms"),
        F.col("cluster"),
        F.col("bundle"),
        F.col("namespace"),
    ]
    for term in _TERMS:
        columns.append(
            F.least(F.col("count"), F.lit(maxima[term]).cast("long")).alias(f"{term}_num_samples")
        )
        columns.append(F.lit(maxima[term]).cast("long").alias(f"{term}_max_samples"))
        columns.extend(F.col(f"state.{term}_{k}").alias(f"{term}_{k}") for k in _KEYS)
    columns.append(F.col("last.topics").alias("topics"))
    return folded.select(*columns).select(*BUNDLE_AVERAGES.column_names)


def long_term_averages(
    lists: DataFrame,
    *,
    long_samples: int = NUM_LONG_SAMPLES,
    defaults: NamespaceBundleStats = DEFAULT_BUNDLE_STATS,
) -> DataFrame:
    """Only the long-term columns of :func:`bundle_time_averages` (``cluster, bundle,
    long_num_samples, long_msg_rate_in, ...``), bit for bit the same, for callers that need
    no more (the split rules): the fold carries half the state. From the bundles' sample
    lists (:func:`sample_lists` of their rows, or :func:`merged_sample_lists`)."""
    folded = _folded(lists, {"long": long_samples}, defaults)
    return folded.select(
        "cluster",
        "bundle",
        F.least(F.col("count"), F.lit(long_samples).cast("long")).alias("long_num_samples"),
        *(F.col(f"state.long_{k}").alias(f"long_{k}") for k in _KEYS),
    )


def latest_rows(frame: DataFrame) -> DataFrame:
    """The rows of each cluster's latest snapshot in ``frame``. The latest times (a row per
    cluster) are broadcast, so the rows are filtered where they are read, not shuffled."""
    latest = frame.groupBy("cluster").agg(F.max("snapshot_ms").alias("snapshot_ms"))
    return frame.join(F.broadcast(latest), on=["cluster", "snapshot_ms"], how="left_semi")


def rows_at(frame: DataFrame, snapshots: Mapping[str, int]) -> DataFrame:
    """The rows of ``frame`` at the given snapshot of each cluster (``{cluster:
    snapshot_ms}``). The condition is made of literals, so Parquet statistics let a reader
    skip every row group of other times; no cluster given means no rows."""
    condition = F.lit(False)
    for cluster, snapshot_ms in sorted(snapshots.items()):
        condition = condition | (
            (F.col("cluster") == F.lit(cluster)) & (F.col("snapshot_ms") == F.lit(snapshot_ms))
        )
    return frame.filter(condition)


def broker_time_averages(
    brokers: DataFrame,
    bundles: DataFrame,
    bundle_averages: DataFrame,
    *,
    defaults: NamespaceBundleStats = DEFAULT_BUNDLE_STATS,
) -> DataFrame:
    """One ``broker_averages`` row per broker in each cluster's latest ``brokers`` snapshot:
    the sums of the averages of the bundles it reported then (Pulsar's
    ``TimeAverageBrokerData.reset``), a bundle without averages counting as ``defaults``; a
    broker without bundles sums to zero."""
    live_brokers = latest_rows(brokers).select("cluster", "snapshot_ms", "broker")
    owned = bundles.join(live_brokers, on=["cluster", "snapshot_ms", "broker"], how="left_semi")
    values = _default_values(defaults)
    averaged = owned.select("cluster", "snapshot_ms", "broker", "bundle").join(
        bundle_averages.select(
            "cluster",
            "bundle",
            *(F.col(f"{t}_{k}") for t in _TERMS for k in _KEYS),
        ),
        on=["cluster", "bundle"],
        how="left",
    )
    terms = [
        F.coalesce(F.col(f"{t}_{k}"), F.lit(values[k])).alias(f"{t}_{k}")
        for t in _TERMS
        for k in _KEYS
    ]
    per_broker = averaged.groupBy("cluster", "snapshot_ms", "broker").agg(
        F.sort_array(F.collect_list(F.struct(F.col("bundle"), *terms))).alias("parts")
    )
    names = [f"{t}_{k}" for t in _TERMS for k in _KEYS]
    zero = F.struct(*(F.lit(0.0).alias(n) for n in names))
    summed = per_broker.select(
        "cluster",
        "snapshot_ms",
        "broker",
        F.size("parts").cast("long").alias("num_bundles"),
        F.aggregate(
            "parts", zero, lambda acc, x: F.struct(*((acc[n] + x[n]).alias(n) for n in names))
        ).alias("sums"),
    )
    result = live_brokers.join(summed, on=["cluster", "snapshot_ms", "broker"], how="left")
    return result.select(
        "snapshot_ms",
        "cluster",
        "broker",
        F.coalesce(F.col("num_bundles"), F.lit(0).cast("long")).alias("num_bundles"),
        *(F.coalesce(F.col(f"sums.{n}"), F.lit(0.0)).alias(n) for n in names),
    ).select(*BROKER_AVERAGES.column_names)
