"""Split plans: which bundles to split (Pulsar's ``BundleSplitterTask``) and where to cut them
(Pulsar's split algorithms), over a whole history.

Selection, on each cluster's latest snapshot, for each bundle a broker reports:

- skipped if it has fewer than 2 topics;
- selected if topics > ``loadBalancerNamespaceBundleMaxTopics``, or producers + consumers >
  ``loadBalancerNamespaceBundleMaxSessions`` (<= 0 disables), or its long-term message rate
  (in + out) > ``loadBalancerNamespaceBundleMaxMsgRate``, or its long-term throughput >
  ``loadBalancerNamespaceBundleMaxBandwidthMbytes`` MiB/s (a bundle without averages counts
  0 for both);
- but only while the namespace's bundles plus those already selected in this run stay below
  ``loadBalancerNamespaceMaximumBundles``. Pulsar walks brokers and bundles in hash-map
  order; here the walk is in (broker, bundle) order so that plans are reproducible.
- Nothing is selected in a cluster whose latest snapshot knows one broker or none.

Cut points use each bundle's topics from the cluster's latest ``topics`` snapshot at or before
the plan's snapshot, restricted (as the model's ``SplitRequest.owned_topics``) to topics
whose hash lies in the bundle's range, with exactly the arithmetic of
:mod:`ballast.model.split_algorithms` — including its treatment of two topics whose names
hash alike (the one with the greater name stands for both in the walk; both count in the
bundle totals), so results are equal for topics given to the model in (hash, name) order.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ballast.model.config import SplitConfig
from ballast.model.loaddata import AVERAGE_ROUNDING_SLACK
from ballast.model.split_algorithms import (
    FLOW_OR_QPS_EQUALLY_DIVIDE,
    MIB,
    RANGE_EQUALLY_DIVIDE,
    TOPIC_COUNT_EQUALLY_DIVIDE,
    FlowOrQpsThresholds,
)
from ballast.pipeline.schema import SPLIT_PLAN
from ballast.pipeline.transforms.averages import latest_rows
from ballast.pipeline.transforms.split_rows import half_limits

PLAN_ALGORITHMS = (RANGE_EQUALLY_DIVIDE, TOPIC_COUNT_EQUALLY_DIVIDE, FLOW_OR_QPS_EQUALLY_DIVIDE)
FULL_UPPER = 0xFFFFFFFF


class UnsupportedAlgorithm(ValueError):
    """An algorithm a plan cannot use (``specified_positions_divide`` needs positions)."""


def topic_hash(topic: Column) -> Column:
    """CRC-32 of the UTF-8 topic name, unsigned (Pulsar's bundle hash)."""
    return F.crc32(topic.cast("binary"))


# A bundle name's range, ``<namespace>/0xLOWER_0xUPPER`` (hex, at most 8 digits each).
_RANGE = r"/0[xX]([0-9a-fA-F]{1,8})_0[xX]([0-9a-fA-F]{1,8})$"


def _bounds(bundle: Column) -> tuple[Column, Column]:
    """``lower`` and ``upper`` (longs) of a bundle name's range; null where it has none."""
    lower, upper = (
        F.conv(F.regexp_extract(bundle, _RANGE, group), 16, 10).cast("long") for group in (1, 2)
    )
    return lower, upper


def with_range(frame: DataFrame) -> DataFrame:
    """Add ``lower`` and ``upper`` (longs) parsed from the ``bundle`` name's range."""
    lower, upper = _bounds(F.col("bundle"))
    return frame.withColumn("lower", lower).withColumn("upper", upper)


def malformed_bundle(bundle: Column) -> Column:
    """Whether a history's bundle name is not ``<namespace>/0xLOWER_0xUPPER`` with
    ``LOWER < UPPER`` (a history another tool wrote): it gives no range to cut."""
    lower, upper = _bounds(bundle)
    return ~bundle.rlike("^[^/].*" + _RANGE) | (lower >= upper)


def in_range(key: Column) -> Column:
    """Whether ``key`` lies in ``[lower, upper)``, or ``[lower, upper]`` for the last bundle."""
    return (key >= F.col("lower")) & (
        (key < F.col("upper")) | ((F.col("upper") == F.lit(FULL_UPPER)) & (key == F.col("upper")))
    )


def _half(low: Column, high: Column) -> Column:
    """``low + (high - low) // 2`` for ``high >= low``."""
    return low + F.shiftright(high - low, 1)


def _ceiling(column: str) -> Column:
    """:func:`~ballast.model.loaddata.average_ceiling` of a column, in Spark's doubles."""
    return F.col(column) + F.abs(F.col(column)) * F.lit(AVERAGE_ROUNDING_SLACK)


def busy_bundles(bundles: DataFrame, config: SplitConfig) -> DataFrame:
    """``cluster, bundle`` of the bundles with a sample in ``bundles`` whose ceiling
    (:func:`~ballast.model.loaddata.average_ceiling`) is over half the rate or throughput
    limit in either direction. A filter on single rows: the history is scanned once, with no
    aggregation before the (few) rows left are made distinct."""
    rate, size = half_limits(config)
    rate_half, size_half = F.lit(rate), F.lit(size)
    return (
        bundles.filter(
            (_ceiling("msg_rate_in") > rate_half)
            | (_ceiling("msg_rate_out") > rate_half)
            | (_ceiling("msg_throughput_in") > size_half)
            | (_ceiling("msg_throughput_out") > size_half)
        )
        .select("cluster", "bundle")
        .distinct()
    )


def averaged_bundles(busy: DataFrame, latest: DataFrame, config: SplitConfig) -> DataFrame:
    """``cluster, bundle`` of the bundles whose long-term averages :func:`split_candidates`
    can read: those of ``latest`` (each cluster's latest snapshot) with at least two topics
    that are over the topic or session limit, or that are ``busy`` (:func:`busy_bundles`:
    a sample over half the rate or throughput limit in either direction). No other bundle is
    selected whatever its averages: no average exceeds the ceiling of the largest sample it
    averages (:func:`~ballast.model.loaddata.average_ceiling`), so with every sample's
    ceiling at most half a limit each way, in + out stays within it. Only these bundles'
    samples need collecting and folding."""
    eligible = latest.filter(F.col("topics") >= 2)
    crowded = F.col("topics") > F.lit(config.max_topics)
    if config.max_sessions > 0:
        sessions = F.col("consumer_count") + F.col("producer_count")
        crowded = crowded | (sessions > F.lit(config.max_sessions))
    keys = eligible.select("cluster", "bundle")
    return (
        keys.join(busy, on=["cluster", "bundle"], how="left_semi")
        .union(eligible.filter(crowded).select("cluster", "bundle"))
        .distinct()
    )


def _above(value: Column, limit: float) -> Column:
    """``value > limit`` as Java compares doubles: a NaN average is over no limit (Spark
    orders NaN above every number), so, as in Pulsar, it selects nothing."""
    return (value > F.lit(limit)) & ~F.isnan(value)


def split_candidates(
    brokers: DataFrame, bundles: DataFrame, bundle_averages: DataFrame, config: SplitConfig
) -> DataFrame:
    """Bundles the split rules select on each cluster's latest snapshot (see the module
    docstring): ``snapshot_ms, cluster, broker, bundle, namespace, topics, sessions,
    long_msg_rate, long_msg_throughput, reason``. Only the latest snapshot of ``bundles``
    is read (a caller may pass just those rows); of ``bundle_averages`` only ``cluster``,
    ``bundle`` and the long-term rates and throughputs (as
    :func:`~ballast.pipeline.transforms.averages.long_term_averages` gives them)."""
    live = latest_rows(brokers).select("cluster", "snapshot_ms", "broker")
    multi_broker = live.groupBy("cluster").count().filter(F.col("count") > 1).select("cluster")
    current = bundles.join(live, on=["cluster", "snapshot_ms", "broker"], how="left_semi")
    averages = bundle_averages.select(
        "cluster",
        "bundle",
        (F.col("long_msg_rate_in") + F.col("long_msg_rate_out")).alias("long_msg_rate"),
        (F.col("long_msg_throughput_in") + F.col("long_msg_throughput_out")).alias(
            "long_msg_throughput"
        ),
    )
    rows = current.join(averages, on=["cluster", "bundle"], how="left").select(
        "snapshot_ms",
        "cluster",
        "broker",
        "bundle",
        "namespace",
        F.col("topics").cast("long").alias("topics"),
        (F.col("consumer_count") + F.col("producer_count")).cast("long").alias("sessions"),
        F.coalesce(F.col("long_msg_rate"), F.lit(0.0)).alias("long_msg_rate"),
        F.coalesce(F.col("long_msg_throughput"), F.lit(0.0)).alias("long_msg_throughput"),
    )
    checks: list[tuple[Column, Column]] = [
        (
            F.col("topics") > F.lit(config.max_topics),
            F.format_string("topics %d > %d", F.col("topics"), F.lit(config.max_topics)),
        ),
        (
            _above(F.col("long_msg_rate"), config.max_msg_rate),
            F.format_string(
                "long-term msg rate %.1f > %.1f msg/s",
                F.col("long_msg_rate"),
                F.lit(config.max_msg_rate),
            ),
        ),
        (
            _above(F.col("long_msg_throughput"), config.max_bandwidth_bytes),
            F.format_string(
                "long-term throughput %.2f > %.2f MiB/s",
                F.col("long_msg_throughput") / F.lit(MIB),
                F.lit(config.max_bandwidth_bytes / MIB),
            ),
        ),
    ]
    if config.max_sessions > 0:
        checks.insert(
            1,
            (
                F.col("sessions") > F.lit(config.max_sessions),
                F.format_string("sessions %d > %d", F.col("sessions"), F.lit(config.max_sessions)),
            ),
        )
    above = F.lit(False)
    for condition, _ in checks:
        above = above | condition
    reason = F.concat_ws("; ", *(F.when(c, text) for c, text in checks))
    # Each namespace's bundle count by a grouping, not a window's collect_set: that copies
    # the namespace's set of names into every row (quadratic in the namespace's bundles).
    namespace_bundles = rows.groupBy("cluster", "namespace").agg(
        F.countDistinct("bundle").alias("namespace_bundles")
    )
    walk = Window.partitionBy("cluster", "namespace").orderBy("broker", "bundle")
    selected = (
        rows.filter((F.col("topics") >= 2) & above)
        .join(namespace_bundles, on=["cluster", "namespace"])
        .join(multi_broker, on="cluster", how="left_semi")
        .withColumn("reason", reason)
        .withColumn("walk", F.row_number().over(walk))
        .filter(F.col("walk") <= F.lit(config.max_bundles) - F.col("namespace_bundles"))
    )
    # A bundle reported by two brokers is selected once, for the later one (Pulsar's map).
    last_owner = Window.partitionBy("cluster", "bundle").orderBy(F.col("broker").desc())
    return (
        selected.withColumn("owner_rank", F.row_number().over(last_owner))
        .filter(F.col("owner_rank") == 1)
        .select(
            "snapshot_ms",
            "cluster",
            "broker",
            "bundle",
            "namespace",
            "topics",
            "sessions",
            "long_msg_rate",
            "long_msg_throughput",
            "reason",
        )
    )


def plan_topics(candidates: DataFrame, topics: DataFrame) -> DataFrame:
    """The candidates' owned topics from each cluster's latest ``topics`` snapshot at or
    before the plan's snapshot: ``cluster, bundle, topic, hash, msg_rate, msg_throughput``."""
    plan_times = candidates.select("cluster", F.col("snapshot_ms").alias("plan_ms")).distinct()
    # Both small sides (a row per cluster; the candidates, a plan's few bundles) are
    # broadcast: the topic rows, millions at scale, are filtered as they are read.
    usable = topics.join(F.broadcast(plan_times), on="cluster").filter(
        F.col("snapshot_ms") <= F.col("plan_ms")
    )
    latest = latest_rows(usable.drop("plan_ms"))
    ranges = with_range(candidates.select("cluster", "bundle"))
    return (
        latest.join(F.broadcast(ranges), on=["cluster", "bundle"])
        .withColumn("hash", topic_hash(F.col("topic")))
        .filter(in_range(F.col("hash")))
        .select(
            "cluster",
            "bundle",
            "topic",
            "hash",
            (F.col("msg_rate_in") + F.col("msg_rate_out")).alias("msg_rate"),
            (F.col("msg_throughput_in") + F.col("msg_throughput_out")).alias("msg_throughput"),
        )
    )


def _no_points() -> Column:
    return F.array().cast("array<long>")


def _topic_count_points(owned: DataFrame) -> DataFrame:
    hashes = owned.groupBy("cluster", "bundle").agg(
        F.array_sort(F.collect_list("hash")).alias("hashes")
    )
    count = F.size("hashes")
    half = F.shiftright(count, 1)
    start = F.element_at("hashes", F.greatest(half - 1, F.lit(0)) + 1)
    end = F.element_at("hashes", half + 1)
    return hashes.select(
        "cluster",
        "bundle",
        F.size("hashes").alias("owned"),
        F.when(count <= 1, _no_points())
        .otherwise(F.array(_half(start, end)))
        .alias("split_points"),
        F.when(
            count <= 1,
            F.format_string("bundle owns %d topic(s); needs at least 2", count),
        ).alias("no_split_reason"),
    )


def _flow_or_qps_points(owned: DataFrame, thresholds: FlowOrQpsThresholds) -> DataFrame:
    max_rate = float(thresholds.max_msg_rate)
    max_bytes = float(thresholds.max_bandwidth_mbytes * MIB)
    tolerance = 1 + thresholds.difference_threshold_percentage / 100.0
    counts = owned.groupBy("cluster", "bundle").agg(F.count("*").alias("owned"))
    busy = owned.filter(~((F.col("msg_rate") <= 0) & (F.col("msg_throughput") <= 0)))
    # The model keeps one topic per hash (the last given, so the greatest name) for the walk.
    same_hash = Window.partitionBy("cluster", "bundle", "hash")
    busy = busy.withColumn(
        "walk_load",
        F.max_by(F.struct("msg_rate", "msg_throughput"), F.col("topic")).over(same_hash),
    )
    listed = busy.groupBy("cluster", "bundle").agg(
        F.array_sort(
            F.collect_list(F.struct("hash", "topic", "msg_rate", "msg_throughput", "walk_load"))
        ).alias("topics")
    )
    totals = F.aggregate(
        "topics",
        F.struct(F.lit(0.0).alias("rate"), F.lit(0.0).alias("bytes")),
        lambda acc, t: F.struct(
            (acc["rate"] + t["msg_rate"]).alias("rate"),
            (acc["bytes"] + t["msg_throughput"]).alias("bytes"),
        ),
    )

    def step(acc: Column, t: Column) -> Column:
        rate, size = t["walk_load"]["msg_rate"], t["walk_load"]["msg_throughput"]
        cut = (
            (acc["rate"] > F.lit(max_rate))
            | (acc["bytes"] > F.lit(max_bytes))
            | (acc["rate"] + rate > F.lit(max_rate))
            | (acc["bytes"] + size > F.lit(max_bytes))
        )
        point = acc["previous"] + F.shiftright(t["hash"] - acc["previous"], 1) + F.lit(1)
        started = acc["started"]
        return F.struct(
            F.lit(True).alias("started"),
            t["hash"].alias("previous"),
            F.when(~started | cut, rate).otherwise(acc["rate"] + rate).alias("rate"),
            F.when(~started | cut, size).otherwise(acc["bytes"] + size).alias("bytes"),
            F.when(started & cut, F.concat(acc["points"], F.array(point)))
            .otherwise(acc["points"])
            .alias("points"),
        )

    start = F.struct(
        F.lit(False).alias("started"),
        F.lit(0).cast("long").alias("previous"),
        F.lit(0.0).alias("rate"),
        F.lit(0.0).alias("bytes"),
        _no_points().alias("points"),
    )
    walked = listed.select(
        "cluster",
        "bundle",
        F.size(F.array_distinct(F.transform("topics", lambda t: t["hash"]))).alias("busy"),
        totals.alias("totals"),
        F.aggregate("topics", start, step)["points"].alias("points"),
    )
    joined = counts.join(walked, on=["cluster", "bundle"], how="left")
    busy_count = F.coalesce(F.col("busy"), F.lit(0))
    below = (F.col("totals.rate") < F.lit(max_rate * tolerance)) & (
        F.col("totals.bytes") < F.lit(max_bytes * tolerance)
    )
    reason = (
        F.when(
            F.col("owned") <= 1,
            F.format_string("bundle owns %d topic(s); needs at least 2", F.col("owned")),
        )
        .when(
            busy_count < 2,
            F.format_string("bundle has %d topic(s) with traffic; needs at least 2", busy_count),
        )
        .when(
            below,
            F.format_string(
                "bundle load %.1f msg/s, %.2f MiB/s is below %.1f msg/s and %.2f MiB/s",
                F.col("totals.rate"),
                F.col("totals.bytes") / F.lit(MIB),
                F.lit(max_rate * tolerance),
                F.lit(max_bytes * tolerance / MIB),
            ),
        )
        .when(F.size("points") == 0, F.lit("no cut point found between topics"))
    )
    return joined.select(
        "cluster",
        "bundle",
        "owned",
        F.when(reason.isNull(), F.col("points")).otherwise(_no_points()).alias("split_points"),
        reason.alias("no_split_reason"),
    )


def _children(points: Column) -> Column:
    """The ranges after cutting ``[lower, upper]`` at ``points``; empty unless the points
    are strictly increasing and strictly inside the range (Pulsar rejects the split)."""
    bounds = F.concat(F.array(F.col("lower")), points, F.array(F.col("upper")))
    pairs = F.sequence(F.lit(1), F.size(bounds) - 1)
    increasing = F.forall(pairs, lambda i: F.element_at(bounds, i) < F.element_at(bounds, i + 1))
    ranges = F.transform(
        pairs,
        lambda i: F.format_string(
            "0x%08x_0x%08x", F.element_at(bounds, i), F.element_at(bounds, i + 1)
        ),
    )
    empty = F.array().cast("array<string>")
    return F.when((F.size(points) > 0) & increasing, ranges).otherwise(empty)


def split_points(
    candidates: DataFrame, topics: DataFrame, algorithm: str, thresholds: FlowOrQpsThresholds
) -> DataFrame:
    """``candidates`` (from :func:`split_candidates`) with the cut points ``algorithm`` finds
    for each: the ``split_plan`` table."""
    if algorithm not in PLAN_ALGORITHMS:
        raise UnsupportedAlgorithm(
            f'a split plan cannot use "{algorithm}"; choose one of {", ".join(PLAN_ALGORITHMS)}'
        )
    ranged = with_range(candidates)
    if algorithm == RANGE_EQUALLY_DIVIDE:
        planned = ranged.withColumn(
            "split_points", F.array(_half(F.col("lower"), F.col("upper")))
        ).withColumn("no_split_reason", F.lit(None).cast("string"))
    else:
        owned = plan_topics(candidates, topics)
        points = (
            _topic_count_points(owned)
            if algorithm == TOPIC_COUNT_EQUALLY_DIVIDE
            else _flow_or_qps_points(owned, thresholds)
        )
        has_topics = topics.select("cluster").distinct().withColumn("has_topics", F.lit(True))
        without_topics = F.when(
            F.col("has_topics").isNull(), F.lit("no per-topic load in the history")
        ).otherwise(F.lit("bundle owns 0 topic(s); needs at least 2"))
        planned = (
            ranged.join(points, on=["cluster", "bundle"], how="left")
            .join(has_topics, on="cluster", how="left")
            .withColumn(
                "no_split_reason",
                F.when(F.col("owned").isNull(), without_topics).otherwise(F.col("no_split_reason")),
            )
            .withColumn("split_points", F.coalesce(F.col("split_points"), _no_points()))
        )
    return (
        planned.withColumn("algorithm", F.lit(algorithm))
        .withColumn("children", _children(F.col("split_points")))
        .select(*SPLIT_PLAN.column_names)
    )


def split_plan(
    brokers: DataFrame,
    bundles: DataFrame,
    bundle_averages: DataFrame,
    topics: DataFrame,
    *,
    config: SplitConfig,
    algorithm: str | None = None,
) -> DataFrame:
    """The whole plan: :func:`split_candidates` then :func:`split_points` with ``algorithm``
    (default: ``defaultNamespaceBundleSplitAlgorithm``)."""
    chosen = algorithm or config.default_algorithm
    candidates = split_candidates(brokers, bundles, bundle_averages, config)
    return split_points(candidates, topics, chosen, config.flow_or_qps)
