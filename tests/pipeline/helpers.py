"""Building small history frames inline, and comparing whole results."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from ballast.pipeline.schema import ColumnType, Table


def _default(kind: ColumnType) -> Any:
    if kind is ColumnType.STRING:
        return ""
    if kind is ColumnType.DOUBLE:
        return 0.0
    if kind in (ColumnType.LONG_ARRAY, ColumnType.STRING_ARRAY):
        return []
    return 0


def frame(spark: SparkSession, table: Table, rows: Iterable[Mapping[str, Any]]) -> DataFrame:
    """A DataFrame of ``table`` from dicts; absent columns get 0 / 0.0 / ""."""
    names = set(table.column_names)
    tuples = []
    for row in rows:
        unknown = set(row) - names
        assert not unknown, f"{table.name} has no columns {unknown}"
        tuples.append(tuple(row.get(c.name, _default(c.type)) for c in table.columns))
    return spark.createDataFrame(tuples, table.spark_schema())


def records(result: DataFrame, *keys: str) -> list[dict[str, Any]]:
    """All rows as dicts, sorted by ``keys``."""
    rows = [row.asDict(recursive=True) for row in result.collect()]
    return sorted(rows, key=lambda r: tuple(r[k] for k in keys))
