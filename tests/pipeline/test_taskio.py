"""Reading and writing history files from Spark tasks with pyarrow."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from ballast.pipeline.history import read_table
from ballast.pipeline.schema import BROKERS, BUNDLES
from ballast.pipeline.sparkio import read_history
from ballast.pipeline.taskio import (
    file_groups,
    local_files,
    local_root,
    read_in_tasks,
    stores_repeats,
    write_in_tasks,
)

from .helpers import records

HOUR_MS = 3_600_000


def bundle_batch(snapshots: range) -> pa.RecordBatch:
    """One bundle row per snapshot, ``interval`` 30 minutes, so ranges cross hours."""
    times = [s * HOUR_MS // 2 for s in snapshots]
    columns = {
        c.name: pa.array(["" if c.type.value == "string" else 0] * len(times), c.type.arrow())
        for c in BUNDLES.columns
    }
    columns["snapshot_ms"] = pa.array(times, pa.int64())
    columns["cluster"] = pa.array(["c"] * len(times))
    columns["bundle"] = pa.array([f"t/n/0x{s:08x}_0x{s + 1:08x}" for s in snapshots])
    columns["msg_rate_in"] = pa.array([float(s) for s in snapshots])
    return pa.RecordBatch.from_pydict(columns)


def produce(snapshots: range) -> Iterator[tuple[object, pa.RecordBatch]]:
    yield BUNDLES, bundle_batch(snapshots)


@pytest.mark.spark
def test_write_in_tasks_replaces_the_table_whole(spark: SparkSession, tmp_path: Path) -> None:
    old = tmp_path / "bundles" / "date=1970-01-01" / "hour=9" / "old.parquet"
    old.parent.mkdir(parents=True)
    old.write_bytes(b"not parquet")
    ranges = spark.createDataFrame([(0, 3), (3, 8)], "first long, end long").repartition(2)
    written = write_in_tasks(ranges, produce, tmp_path, (BUNDLES, BROKERS))  # type: ignore[arg-type]
    assert written == {"bundles": 8, "brokers": 0}
    assert not old.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["brokers", "bundles"]  # no staging
    hours = sorted(
        p.relative_to(tmp_path / "bundles").as_posix() for p in tmp_path.rglob("*.parquet")
    )
    assert hours == [
        "date=1970-01-01/hour=0/part-000000.parquet",
        "date=1970-01-01/hour=1/part-000000.parquet",
        "date=1970-01-01/hour=1/part-000003.parquet",
        "date=1970-01-01/hour=2/part-000003.parquet",
        "date=1970-01-01/hour=3/part-000003.parquet",
    ]
    rows = read_table(tmp_path, BUNDLES)
    assert rows.column("msg_rate_in").to_pylist() == [float(s) for s in range(8)]
    spark_rows = records(read_history(spark, str(tmp_path), BUNDLES), "snapshot_ms")
    assert [r["msg_rate_in"] for r in spark_rows] == [float(s) for s in range(8)]


@pytest.mark.spark
def test_failed_write_leaves_the_old_table(spark: SparkSession, tmp_path: Path) -> None:
    write_in_tasks(
        spark.createDataFrame([(0, 2)], "first long, end long"),
        produce,  # type: ignore[arg-type]
        tmp_path,
        (BUNDLES,),
    )

    def failing(snapshots: range) -> Iterator[tuple[object, pa.RecordBatch]]:
        yield BUNDLES, bundle_batch(snapshots)
        raise RuntimeError("disk full")

    ranges = spark.createDataFrame([(0, 4)], "first long, end long")
    with pytest.raises(Exception, match="disk full"):
        write_in_tasks(ranges, failing, tmp_path, (BUNDLES,))  # type: ignore[arg-type]
    assert read_table(tmp_path, BUNDLES).num_rows == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundles"]


@pytest.mark.spark
def test_read_in_tasks(spark: SparkSession, tmp_path: Path) -> None:
    ranges = spark.createDataFrame([(0, 3), (3, 8)], "first long, end long").repartition(2)
    write_in_tasks(ranges, produce, tmp_path, (BUNDLES,))  # type: ignore[arg-type]
    files = local_files(read_history(spark, str(tmp_path), BUNDLES))
    assert len(files) == 5

    def per_file(rows: pa.Table) -> pa.Table:
        names = rows.column("bundle").cast(pa.string())
        return pa.table({"bundle": names, "rate": rows.column("msg_rate_in")})

    result = read_in_tasks(
        spark, files, BUNDLES, ["bundle", "msg_rate_in"], per_file, "bundle string, rate double"
    )
    assert sorted(r["rate"] for r in result.collect()) == [float(s) for s in range(8)]

    def kinds(rows: pa.Table) -> pa.Table:
        return pa.table({c: [str(rows.column(c).type)] for c in ("cluster", "bundle")})

    schema = "cluster string, bundle string"
    encoded = read_in_tasks(spark, files, BUNDLES, ["cluster", "bundle"], kinds, schema)
    assert {tuple(r) for r in encoded.collect()} == {
        ("dictionary<values=string, indices=int32, ordered=0>",) * 2
    }
    # Every file holds one or two distinct names: read plain.
    plain = read_in_tasks(
        spark, files, BUNDLES, ["cluster", "bundle"], kinds, schema, plain_if_distinct=("bundle",)
    )
    assert {tuple(r) for r in plain.collect()} == {
        ("dictionary<values=string, indices=int32, ordered=0>", "string")
    }
    # A file of repeated names: read as a dictionary.
    repeated = tmp_path / "repeated.parquet"
    rows = pa.Table.from_batches([bundle_batch(range(200))])
    rows = rows.set_column(
        rows.schema.get_field_index("bundle"), "bundle", pa.array(["t/n/0x0_0xffffffff"] * 200)
    )
    pq.write_table(rows, repeated)
    both = read_in_tasks(
        spark,
        [repeated],
        BUNDLES,
        ["cluster", "bundle"],
        kinds,
        schema,
        plain_if_distinct=("bundle",),
    )
    assert {tuple(r) for r in both.collect()} == {
        ("dictionary<values=string, indices=int32, ordered=0>",) * 2
    }


def _names_file(path: Path, names: list[str], **options: object) -> pq.FileMetaData:
    pq.write_table(pa.table({"bundle": names, "n": list(range(len(names)))}), path, **options)
    return pq.read_metadata(path)


def test_stores_repeats_tells_repeated_names_from_distinct_ones(tmp_path: Path) -> None:
    distinct = [f"tenant/namespace/0x{i:08x}_0x{i + 1:08x}" for i in range(4000)]
    repeated = [distinct[i % 100] for i in range(4000)]
    assert stores_repeats(_names_file(tmp_path / "r.parquet", repeated), "bundle")
    # All distinct: a dictionary of every name plus the indices, or (once the names fill
    # the dictionary page) plain pages: either way about the plain size.
    assert not stores_repeats(_names_file(tmp_path / "d.parquet", distinct), "bundle")
    small_page = {"dictionary_pagesize_limit": 1024}
    assert not stores_repeats(_names_file(tmp_path / "f.parquet", distinct, **small_page), "bundle")
    # Several row groups count together.
    grouped = _names_file(tmp_path / "g.parquet", repeated, row_group_size=1000)
    assert grouped.num_row_groups == 4 and stores_repeats(grouped, "bundle")
    # Nothing to tell by: no statistics, or no such column.
    bare = _names_file(tmp_path / "s.parquet", repeated, write_statistics=False)
    assert not stores_repeats(bare, "bundle")
    assert not stores_repeats(_names_file(tmp_path / "o.parquet", repeated), "broker")


def test_file_groups_are_balanced(tmp_path: Path) -> None:
    files = []
    for index, size in enumerate([50, 40, 30, 20, 10, 10]):
        path = tmp_path / f"f{index}"
        path.write_bytes(b"x" * size)
        files.append(path)
    groups = file_groups(files, 2)
    assert len(groups) == 2
    assert sorted(sum(p.stat().st_size for p in g) for g in groups) == [80, 80]
    assert file_groups(files[:1], 4) == [[files[0]]]


@pytest.mark.spark
def test_local_root(spark: SparkSession) -> None:
    assert local_root(spark, "/tmp/history") == Path("/tmp/history")
    assert local_root(spark, "file:///tmp/history") == Path("/tmp/history")
    assert local_root(spark, "s3a://bucket/history") is None
