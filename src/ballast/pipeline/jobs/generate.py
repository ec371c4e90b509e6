"""``generate``: a synthetic history of any size (see :mod:`ballast.pipeline.synthetic_spec`),
computed by Spark tasks, each a range of snapshots, so the largest sizes need no
single-process memory.

Writes the ``brokers``, ``bundles`` and ``topics`` tables under the output path, replacing
them only when asked (a history already there is refused otherwise). On a
local file system the tasks write their Parquet files themselves with pyarrow
(:mod:`ballast.pipeline.taskio`); elsewhere (HDFS, S3) their rows go to Spark's writer.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
from pyspark import Broadcast
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ballast.pipeline.history import held_for_writing
from ballast.pipeline.jobs.base import Summary
from ballast.pipeline.schema import BROKERS, BUNDLES, TOPICS, Table
from ballast.pipeline.sparkio import (
    refuse_history,
    require_output_root,
    table_path,
    write_history,
)
from ballast.pipeline.synthetic_arrays import StaticPlan, history_rows, static_plan
from ballast.pipeline.synthetic_spec import GenerateSpec
from ballast.pipeline.taskio import local_root, write_in_tasks
from ballast.pipeline.transforms.synthetic import synthetic_rows

ROWS_PER_TASK = 2_000_000


def _task_count(spark: SparkSession, spec: GenerateSpec) -> int:
    """At most ``ROWS_PER_TASK`` bundle rows each, and a whole multiple of the cores, so
    that no core idles through a last round of tasks (three tasks on two cores take as long
    as four); never more than there are snapshots."""
    parallelism = max(1, spark.sparkContext.defaultParallelism)
    rows = spec.snapshots * spec.bundles
    count = parallelism * max(1, math.ceil(rows / ROWS_PER_TASK / parallelism))
    return min(count, spec.snapshots)


def snapshot_ranges(spark: SparkSession, spec: GenerateSpec) -> DataFrame:
    """Consecutive ranges of snapshot indexes (``first``, ``end``), one per partition."""
    count = _task_count(spark, spec)
    step = math.ceil(spec.snapshots / count)
    ids = spark.range(0, math.ceil(spec.snapshots / step), numPartitions=count)
    return ids.select(
        (F.col("id") * step).alias("first"),
        F.least((F.col("id") + 1) * step, F.lit(spec.snapshots)).cast("long").alias("end"),
    )


def _rows(
    spec: GenerateSpec, plan: Broadcast[StaticPlan], snapshots: range
) -> Iterator[tuple[Table, pa.RecordBatch]]:
    return history_rows(spec, plan.value, snapshots)


def _write(spark: SparkSession, spec: GenerateSpec, out: str, root: Path | None) -> None:
    """Write every table of ``spec``'s history: by the tasks themselves to a local ``root``,
    else through Spark's writer."""
    tables = _tables(spec)
    # The plan (every bundle's and topic's traits) is small next to the rows: computed once
    # here and shipped to the tasks.
    plan = spark.sparkContext.broadcast(static_plan(spec))
    try:
        ranges = snapshot_ranges(spark, spec)
        if root is not None:
            write_in_tasks(ranges, functools.partial(_rows, spec, plan), root, tables)
        else:
            for table in tables:
                write_history(
                    synthetic_rows(ranges, spec, plan, table), out, table, mode="overwrite"
                )
    finally:
        plan.destroy()


def _tables(spec: GenerateSpec) -> tuple[Table, ...]:
    return (BROKERS, BUNDLES, *((TOPICS,) if spec.topic_snapshots else ()))


def generate(
    spark: SparkSession, spec: GenerateSpec, out: str, *, replace: bool = False
) -> Summary:
    """Write the history ``spec`` describes to ``out``; its tables there are replaced only
    with ``replace`` (else :class:`~ballast.pipeline.sparkio.PathError`)."""
    require_output_root(spark, out)
    root = local_root(spark, out)
    # Held from the check on: an import into ``out`` meanwhile is refused, not dropped.
    with held_for_writing(root) if root is not None else contextlib.nullcontext():
        if not replace:
            refuse_history(spark, out, (BROKERS, BUNDLES, TOPICS))
        _write(spark, spec, out, root)
    return {
        "cluster": spec.cluster,
        "snapshots": spec.snapshots,
        "bundleRows": spec.snapshots * spec.bundles,
        "topicRows": len(spec.topic_snapshots) * spec.topics,
        "brokers": spec.brokers,
        "outputs": [table_path(out, t) for t in _tables(spec)],
    }
