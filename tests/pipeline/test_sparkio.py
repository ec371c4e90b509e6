"""Spark and pyarrow read each other's history files."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from ballast.model.loaddata import BrokerData, LoadData, LocalBrokerData
from ballast.pipeline.history import read_table, snapshot_from_load_data, write_snapshot
from ballast.pipeline.schema import BROKERS, BUNDLES, TOPICS
from ballast.pipeline.sparkio import (
    PathError,
    SchemaMismatch,
    conform,
    date_of,
    hour_of,
    read_history,
    require_apart,
    require_history,
    require_not_a_history,
    require_output_root,
    write_history,
)

from .helpers import frame, records

pytestmark = pytest.mark.spark

HOUR_MS = 3_600_000


def test_spark_appends_and_reads_arrow_files(spark: SparkSession, tmp_path: Path) -> None:
    root = str(tmp_path)
    load = LoadData(broker_data={"a:1": BrokerData(local_data=LocalBrokerData(num_topics=3))})
    write_snapshot(tmp_path, snapshot_from_load_data(load, snapshot_ms=HOUR_MS * 25, cluster="c"))
    spark_rows = frame(
        spark,
        BROKERS,
        [{"snapshot_ms": HOUR_MS * 26 + 1, "cluster": "c", "broker": "b:1", "num_topics": 7}],
    )
    write_history(spark_rows, root, BROKERS)
    both = records(read_history(spark, root, BROKERS), "snapshot_ms")
    assert [(r["broker"], r["num_topics"], r["snapshot_ms"]) for r in both] == [
        ("a:1", 3, HOUR_MS * 25),
        ("b:1", 7, HOUR_MS * 26 + 1),
    ]
    assert list(both[0]) == list(BROKERS.column_names)  # partition columns not exposed
    # a note beside the files is no table: Spark read it as Parquet and failed with a stack
    hour = next((tmp_path / "brokers").glob("date=*/hour=*"))
    (hour / "README.txt").write_text("copied from the leader on Monday")
    assert len(records(read_history(spark, root, BROKERS), "snapshot_ms")) == 2
    via_arrow = read_table(tmp_path, BROKERS).to_pylist()
    assert [(r["broker"], r["date"], r["hour"]) for r in via_arrow] == [
        ("a:1", "1970-01-02", 1),
        ("b:1", "1970-01-02", 2),
    ]


def test_absent_table_reads_empty(spark: SparkSession, tmp_path: Path) -> None:
    empty = read_history(spark, str(tmp_path), TOPICS)
    assert empty.count() == 0
    assert empty.columns == list(TOPICS.column_names)


def test_require_history_names_what_is_missing(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(PathError, match="does not exist"):
        require_history(spark, str(tmp_path / "nope"), (BROKERS, BUNDLES))
    with pytest.raises(PathError, match="holds none of brokers/, bundles/"):
        require_history(spark, str(tmp_path), (BROKERS, BUNDLES))
    with pytest.raises(PathError, match='No FileSystem for scheme "nofs"'):
        require_history(spark, "nofs://somewhere/history", (BROKERS,))
    # one table is enough (a history of bundle rows only is still a history), also as a URI
    write_history(
        frame(spark, BUNDLES, [{"snapshot_ms": HOUR_MS, "bundle": "b"}]), str(tmp_path), BUNDLES
    )
    require_history(spark, str(tmp_path), (BROKERS, BUNDLES))
    require_history(spark, tmp_path.as_uri(), (BROKERS, BUNDLES))
    with pytest.raises(PathError, match="holds none of topics/"):
        require_history(spark, str(tmp_path), (TOPICS,))


def test_require_output_root_rejects_unknown_schemes(spark: SparkSession, tmp_path: Path) -> None:
    require_output_root(spark, str(tmp_path / "not-yet"))  # absent is fine: jobs create it
    with pytest.raises(PathError, match="cannot reach nofs://out"):
        require_output_root(spark, "nofs://out")
    a_file = tmp_path / "out.txt"
    a_file.write_text("not a directory")
    for given in (str(a_file), a_file.as_uri()):
        with pytest.raises(PathError, match=r"out\.txt is a file, not a directory"):
            require_output_root(spark, given)
    require_output_root(spark, str(tmp_path))  # an existing directory is fine


def test_require_apart_refuses_an_output_that_is_the_history(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The jobs write bundle_averages and the like under --out: in the history itself they
    replaced the history's own tables (the stored averages of an imported dump)."""
    history = tmp_path / "h"
    for out in (str(history), f"{history.as_uri()}/", str(history / "results")):
        with pytest.raises(PathError, match="is the history or inside it"):
            require_apart(spark, str(history), out)
    require_apart(spark, str(history), str(tmp_path / "h-out"))  # a sibling sharing a prefix
    require_apart(spark, str(history), str(tmp_path))  # the history inside --out is fine


def test_require_not_a_history_refuses_an_output_that_is_another_history(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A job's --out that was a second history had its stored averages replaced."""
    other = tmp_path / "other"
    (other / "bundle_averages").mkdir(parents=True)
    require_not_a_history(spark, str(other), (BROKERS, BUNDLES, TOPICS))  # results only
    (other / "brokers").mkdir()
    (other / "bundles").mkdir()
    for given in (str(other), other.as_uri()):
        with pytest.raises(PathError, match=r"holds a history \(brokers/, bundles/\)"):
            require_not_a_history(spark, given, (BROKERS, BUNDLES, TOPICS))


def test_conform_names_missing_columns(spark: SparkSession) -> None:
    partial = spark.createDataFrame([(1, "c")], "snapshot_ms long, cluster string")
    with pytest.raises(SchemaMismatch, match="bundles needs columns broker, bundle"):
        conform(partial, BUNDLES)


def test_partition_columns_do_not_depend_on_session_time_zone(spark: SparkSession) -> None:
    times = spark.createDataFrame([(0,), (HOUR_MS * 23 + 5,), (1_767_600_000_000,)], "t long")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        got = [
            (r["d"], r["h"])
            for r in times.select(date_of(F.col("t")).alias("d"), hour_of(F.col("t")).alias("h"))
            .orderBy("t")
            .collect()
        ]
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert got == [("1970-01-01", 0), ("1970-01-01", 23), ("2026-01-05", 8)]
