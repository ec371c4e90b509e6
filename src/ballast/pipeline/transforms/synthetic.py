"""Synthetic history rows computed in Spark tasks (the model is described in
:mod:`ballast.pipeline.synthetic_spec`, its arithmetic is :mod:`ballast.pipeline.synthetic_arrays`).

The input is a frame of snapshot ranges (``first``, ``end``: indexes, ``first <= s < end``);
each task computes every row of its ranges with numpy (``mapInArrow``), so the work spreads
over the cluster's cores and no process holds more than a block of rows. The static plan
(every bundle's and topic's traits) is computed once on the driver and reaches the tasks as a
broadcast variable. Every value is a pure function of the spec and the row's coordinates, so
results do not depend on how the snapshots are split into ranges or ranges into partitions.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark import Broadcast
from pyspark.sql import DataFrame

from ballast.pipeline.schema import TOPICS, Table
from ballast.pipeline.synthetic_arrays import StaticPlan, history_rows, topic_rows
from ballast.pipeline.synthetic_spec import GenerateSpec

RANGES_SCHEMA = "first long, end long"


def plain(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with its dictionary columns decoded (Spark takes plain strings)."""
    columns = [
        column.dictionary_decode() if isinstance(column, pa.DictionaryArray) else column
        for column in batch.columns
    ]
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def table_rows(
    spec: GenerateSpec, plan: StaticPlan, table: Table, ranges: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """The rows of ``table`` for every range in ``ranges`` (batches of ``RANGES_SCHEMA``)."""
    for batch in ranges:
        for first, end in zip(
            batch.column("first").to_pylist(), batch.column("end").to_pylist(), strict=True
        ):
            if table.name == TOPICS.name:  # no bundle rows needed
                for snapshot in (s for s in spec.topic_snapshots if first <= s < end):
                    yield plain(topic_rows(spec, plan, snapshot))
                continue
            for kind, rows in history_rows(spec, plan, range(first, end)):
                if kind.name == table.name:
                    yield plain(rows)


def synthetic_rows(
    ranges: DataFrame, spec: GenerateSpec, plan: Broadcast[StaticPlan], table: Table
) -> DataFrame:
    """Rows of ``table`` (``bundles``, ``brokers`` or ``topics``, in the table's schema)
    for the snapshot ranges in ``ranges`` (``RANGES_SCHEMA``), one task per partition."""

    def compute(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return table_rows(spec, plan.value, table, batches)

    return ranges.mapInArrow(compute, table.spark_schema())
