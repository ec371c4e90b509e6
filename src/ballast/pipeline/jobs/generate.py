"""``generate``: a synthetic history of any size (see :mod:`ballast.pipeline.synthetic_spec`),
computed and written by Spark, so the largest sizes need no single-process memory.

Replaces the ``brokers``, ``bundles`` and ``topics`` tables under the output path.
"""

from __future__ import annotations

import math

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from ballast.pipeline.jobs.base import Summary
from ballast.pipeline.schema import BROKERS, BUNDLES, TOPICS
from ballast.pipeline.sparkio import table_path, write_history
from ballast.pipeline.synthetic_spec import GenerateSpec, broker_plan, namespace_plan
from ballast.pipeline.transforms.synthetic import (
    NAMESPACE_PLAN_SCHEMA,
    broker_samples,
    bundle_samples,
    namespace_rows,
    synthetic_bundles,
    synthetic_topics,
    topic_samples,
)

ROWS_PER_PARTITION = 2_000_000


def cpu_capacity_msg_rate(spec: GenerateSpec) -> float:
    """Messages per second (in + out) a broker handles at full CPU: twice the mean broker
    load, so an evenly loaded cluster sits near half its CPU."""
    plans = namespace_plan(spec)
    total = sum(p.msg_rate * (1 + p.fanout) for p in plans)
    return 2.0 * total / spec.brokers


def _partitions(spark: SparkSession, rows: int) -> int:
    """At most ``ROWS_PER_PARTITION`` rows each, and a whole multiple of the cores, so that
    no core idles through a last round of tasks (three tasks on two cores take as long as
    four)."""
    parallelism = max(1, spark.sparkContext.defaultParallelism)
    return parallelism * max(1, math.ceil(rows / ROWS_PER_PARTITION / parallelism))


def generate(spark: SparkSession, spec: GenerateSpec, out: str) -> Summary:
    namespaces = spark.createDataFrame(namespace_rows(namespace_plan(spec)), NAMESPACE_PLAN_SCHEMA)
    # Both are small next to the samples and read several times: computed once.
    topics = synthetic_topics(namespaces, spec).persist(StorageLevel.MEMORY_AND_DISK)
    bundles = synthetic_bundles(namespaces, topics, spec).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        return _write(spark, spec, out, topics, bundles)
    finally:
        bundles.unpersist()
        topics.unpersist()


def _write(
    spark: SparkSession, spec: GenerateSpec, out: str, topics: DataFrame, bundles: DataFrame
) -> Summary:
    brokers = broker_plan(spec)
    bundle_count = spec.snapshots * spec.bundles
    ids = spark.range(0, bundle_count, numPartitions=_partitions(spark, bundle_count))
    bundle_rows = bundle_samples(ids, bundles, spec, brokers)
    write_history(bundle_rows, out, BUNDLES, mode="overwrite")
    grid_size = spec.snapshots * spec.brokers
    grid = spark.range(0, grid_size, numPartitions=_partitions(spark, grid_size))
    write_history(
        broker_samples(grid, bundle_rows, spec, brokers, cpu_capacity_msg_rate(spec)),
        out,
        BROKERS,
        mode="overwrite",
    )
    snapshots = spec.topic_snapshots
    if snapshots:
        indexes = spark.createDataFrame([(s,) for s in snapshots], "snapshot long")
        write_history(
            topic_samples(indexes, topics, bundles, spec, brokers), out, TOPICS, mode="overwrite"
        )
    return {
        "cluster": spec.cluster,
        "snapshots": spec.snapshots,
        "bundleRows": bundle_count,
        "topicRows": len(snapshots) * spec.topics,
        "brokers": spec.brokers,
        "outputs": [
            table_path(out, t) for t in (BROKERS, BUNDLES, *((TOPICS,) if snapshots else ()))
        ],
    }
