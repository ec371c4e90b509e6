"""Reading and writing history tables and job outputs with Spark.

Paths are strings so that any Hadoop file system works (local paths, ``hdfs://``,
``s3a://``). Tables are read with their declared schema (so files from the pyarrow writer and
from Spark mix freely) and checked at the boundary: :func:`conform` selects a table's
columns in order, with their types, and names what is missing.

Appending with :func:`write_history` adds files; it never rewrites existing ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from py4j.protocol import Py4JError, Py4JJavaError
from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from ballast.pipeline.file_check import check_table_files
from ballast.pipeline.local_paths import history_held, missing_history
from ballast.pipeline.schema import PARTITION_NAMES, Table
from ballast.pipeline.taskio import local_root

MS_PER_DAY = 86_400_000
MS_PER_HOUR = 3_600_000


class SchemaMismatch(ValueError):
    """A DataFrame lacks columns a table needs, or has them with an incompatible type."""


class PathError(ValueError):
    """A history that is not there, or a path on a file system this Spark cannot reach."""


def table_path(root: str, table: Table) -> str:
    return f"{root.rstrip('/')}/{table.name}"


def date_of(snapshot_ms: Column) -> Column:
    """``YYYY-MM-DD`` (UTC) of an epoch-ms column, independent of the session time zone."""
    days = F.floor(snapshot_ms / F.lit(MS_PER_DAY)).cast("int")
    return F.date_format(F.date_add(F.lit("1970-01-01").cast("date"), days), "yyyy-MM-dd")


def hour_of(snapshot_ms: Column) -> Column:
    """Hour of the day (UTC, 0-23) of an epoch-ms column."""
    return F.pmod(F.floor(snapshot_ms / F.lit(MS_PER_HOUR)), F.lit(24)).cast("int")


def conform(frame: DataFrame, table: Table) -> DataFrame:
    """``frame`` as ``table``: its columns in order, cast to their types. Extra columns are
    dropped; a missing column raises :class:`SchemaMismatch`."""
    present = set(frame.columns)
    missing = [c.name for c in table.columns if c.name not in present]
    if missing:
        raise SchemaMismatch(f"{table.name} needs columns {', '.join(missing)}")
    return frame.select(*(F.col(c.name).cast(c.type.spark()).alias(c.name) for c in table.columns))


def empty_frame(spark: SparkSession, table: Table) -> DataFrame:
    return spark.createDataFrame([], table.spark_schema())


def read_history(spark: SparkSession, root: str, table: Table) -> DataFrame:
    """A history table without its partition columns; an absent table reads as empty. Only
    ``*.parquet`` files are read: a note or a checksum left beside them is no table row
    (Spark would read it as Parquet and fail with a Java stack)."""
    schema = table.spark_schema(with_partitions=table.partitioned)
    path = table_path(root, table)
    local = local_root(spark, path)
    if local is not None and local.is_dir():
        check_table_files(local, table)
    try:
        reader = spark.read.schema(schema).option("basePath", path)
        frame = reader.option("pathGlobFilter", "*.parquet").parquet(path)
    except AnalysisException as exc:
        if exc.getCondition() == "PATH_NOT_FOUND":
            return empty_frame(spark, table)
        raise
    return frame.select(*table.column_names)


def require_history(spark: SparkSession, root: str, tables: Sequence[Table]) -> None:
    """Raise :class:`PathError` unless ``root`` holds at least one of ``tables``: a
    mistyped ``--history`` would otherwise read as an empty history and give empty
    results. The check goes through Hadoop's file system of the path, as Spark's reads do."""
    exists = _exists_on(spark, root)
    if not any(exists(table_path(root, t)) for t in tables):
        raise PathError(missing_history(root, [t.name for t in tables], exists(root)))


def refuse_history(spark: SparkSession, root: str, tables: Sequence[Table]) -> None:
    """Raise :class:`PathError` if ``root`` already holds one of ``tables``: a writer that
    replaces tables would otherwise delete a history (say, one a leader wrote) given by
    mistake."""
    exists = _exists_on(spark, root)
    held = [t.name for t in tables if exists(table_path(root, t))]
    if held:
        raise PathError(history_held(root, held))


def require_output_root(spark: SparkSession, path: str) -> None:
    """Raise :class:`PathError` if Spark has no file system for the output root ``path`` (an
    unknown URI scheme, a host it cannot reach) or ``path`` is a file (the outputs are
    directories under it), before a job spends its time on the reads."""
    system, hadoop_path = _file_system(spark, path)
    try:
        target = hadoop_path(path)
        is_file = bool(system.exists(target)) and bool(system.getFileStatus(target).isFile())
    except Py4JError as exc:
        raise PathError(f"cannot read {path}: {_java_reason(exc)}") from None
    if is_file:
        raise PathError(f"{path} is a file, not a directory")


def require_apart(spark: SparkSession, history: str, out: str) -> None:
    """Raise :class:`PathError` if ``out`` is the history or inside it, compared as Spark
    resolves them (:func:`ballast.pipeline.local_paths.overlap_problem`)."""
    from ballast.pipeline.local_paths import overlap_problem

    def qualified(path: str) -> str:
        system, hadoop_path = _file_system(spark, path)
        return str(system.makeQualified(hadoop_path(path)).toString())

    try:
        problem = overlap_problem(qualified(history), qualified(out))
    except Py4JError as exc:
        raise PathError(f"cannot read {out}: {_java_reason(exc)}") from None
    if problem is not None:
        raise PathError(problem)


def require_not_a_history(spark: SparkSession, out: str, tables: Sequence[Table]) -> None:
    """Raise :class:`PathError` if a job's ``out`` holds one of the history ``tables``: the
    job's own tables would replace that history's (an imported dump's stored averages)."""
    from ballast.pipeline.local_paths import history_at_out

    exists = _exists_on(spark, out)
    held = [t.name for t in tables if exists(table_path(out, t))]
    if held:
        raise PathError(history_at_out(out, held))


def _file_system(spark: SparkSession, root: str) -> tuple[Any, Callable[[str], Any]]:
    """The Hadoop file system of ``root`` and the constructor of Hadoop paths;
    :class:`PathError` with the Java reason (not its stack) if there is none."""
    context = spark.sparkContext
    jvm = context._jvm
    assert jvm is not None  # a live session has its gateway
    hadoop_path = jvm.org.apache.hadoop.fs.Path
    try:
        return hadoop_path(root).getFileSystem(context._jsc.hadoopConfiguration()), hadoop_path
    except Py4JError as exc:
        raise PathError(f"cannot reach {root}: {_java_reason(exc)}") from None


def _exists_on(spark: SparkSession, root: str) -> Callable[[str], bool]:
    """A test for paths on the Hadoop file system of ``root``."""
    system, hadoop_path = _file_system(spark, root)

    def exists(path: str) -> bool:
        try:
            return bool(system.exists(hadoop_path(path)))
        except Py4JError as exc:
            raise PathError(f"cannot reach {path}: {_java_reason(exc)}") from None

    return exists


def remove_output(spark: SparkSession, out: str, table: Table) -> None:
    """Delete an earlier run's ``<out>/<table>``: a table this run does not write, which
    would otherwise be read beside this run's as if it were of it."""
    system, hadoop_path = _file_system(spark, out)
    path = table_path(out, table)
    try:
        if system.exists(hadoop_path(path)):
            system.delete(hadoop_path(path), True)
    except Py4JError as exc:
        raise PathError(f"cannot remove {path}: {_java_reason(exc)}") from None


def _java_reason(exc: Py4JError) -> str:
    """The first line of a Java exception's message, without its stack."""
    if isinstance(exc, Py4JJavaError):
        return str(exc.java_exception.toString()).splitlines()[0]
    return str(exc).splitlines()[0]


def write_history(frame: DataFrame, root: str, table: Table, *, mode: str = "append") -> None:
    """Add ``frame`` (conformed to ``table``) to a history, partitioned by the UTC date and
    hour of ``snapshot_ms``; ``mode="overwrite"`` replaces the whole table instead."""
    rows = conform(frame, table)
    (
        rows.withColumn("date", date_of(F.col("snapshot_ms")))
        .withColumn("hour", hour_of(F.col("snapshot_ms")))
        .write.mode(mode)
        .partitionBy(*PARTITION_NAMES)
        .option("compression", "zstd")
        .parquet(table_path(root, table))
    )


def write_output(frame: DataFrame, out: str, table: Table, *, append: bool = False) -> None:
    """Write a job's output table to ``<out>/<table>``, replacing an earlier run's (or adding
    to it: ``append``, for a job that writes a table in parts)."""
    conform(frame, table).write.mode("append" if append else "overwrite").option(
        "compression", "zstd"
    ).parquet(table_path(out, table))


def latest_snapshots(brokers: DataFrame) -> dict[str, int]:
    """Each cluster's latest snapshot time in a ``brokers`` table (a small action)."""
    rows = brokers.groupBy("cluster").agg(F.max("snapshot_ms").alias("latest")).collect()
    return {str(row["cluster"]): int(row["latest"]) for row in rows}


def read_output(spark: SparkSession, out: str, table: Table) -> DataFrame:
    return spark.read.schema(table.spark_schema()).parquet(table_path(out, table))
