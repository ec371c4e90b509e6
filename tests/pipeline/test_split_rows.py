"""The split plan's two passes over the bundle history in Spark tasks (pyarrow): the same rows
as the Spark SQL they stand for, on files written as the history writers write them."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from ballast.model.config import SplitConfig, load_settings
from ballast.pipeline.jobs.split_plan import busy, samples
from ballast.pipeline.schema import BUNDLES
from ballast.pipeline.sparkio import read_history, write_history
from ballast.pipeline.transforms.averages import SAMPLE_COLUMNS, SAMPLE_FIELDS, sample_lists
from ballast.pipeline.transforms.split import busy_bundles
from ballast.pipeline.transforms.split_rows import (
    busy_keys_of,
    by_cluster,
    sample_lists_of,
    samples_of,
)

from .helpers import frame, records

LIMIT = 1000.0  # msg/s, so half is 500
HALF_SIZE = 2.0 * 1024 * 1024  # bytes/s: half of loadBalancerNamespaceBundleMaxBandwidthMbytes=4


def config() -> SplitConfig:
    return SplitConfig.from_settings(
        load_settings(
            overrides=[
                f"loadBalancerNamespaceBundleMaxMsgRate={int(LIMIT)}",
                "loadBalancerNamespaceBundleMaxBandwidthMbytes=4",
            ]
        ).settings
    )


def test_busy_keys_compare_as_spark_does() -> None:
    rows = pa.table(
        {
            "cluster": ["c", "c", "c", "c", "c", "d", None, "c"],
            "bundle": ["t/n/a", "t/n/b", "t/n/c", "t/n/d", "t/n/a", "t/n/a", "t/n/e", None],
            "msg_rate_in": [500.0, 499.0, math.nan, None, 0.0, 0.0, 900.0, 900.0],
            "msg_rate_out": [0.0, 0.0, 0.0, 0.0, 0.0, 501.0, 0.0, 0.0],
            "msg_throughput_in": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            "msg_throughput_out": [0.0, 0.0, 0.0, 0.0, HALF_SIZE * 1.001, 0.0, 0.0, 0.0],
        }
    )
    keys = busy_keys_of(rows, rate_half=500.0, size_half=HALF_SIZE)
    # 500 is over 500 by the rounding slack of average_ceiling, 499 is not; NaN is over (as
    # Spark orders it), null is not; rows without a key are left out; each key once.
    assert sorted(zip(*keys.to_pydict().values(), strict=True)) == [
        ("c", "t/n/a"),
        ("c", "t/n/c"),
        ("d", "t/n/a"),
    ]


def test_samples_of_dictionary_and_plain_strings() -> None:
    empty = pa.table({c: pa.array([], BUNDLES.column(c).type.arrow()) for c in SAMPLE_COLUMNS})
    rows = pa.table(
        {
            "snapshot_ms": [1, 2, 3, 4, 5],
            "cluster": ["c", "c", "d", "c", None],
            "broker": ["b:1"] * 5,
            "bundle": ["t/n/a", "t/n/b", "t/n/a", None, "t/n/a"],
            "namespace": ["t/n"] * 5,
            "msg_rate_in": [1.0, 2.0, 3.0, 4.0, 5.0],
            "msg_rate_out": [0.0] * 5,
            "msg_throughput_in": [0.0] * 5,
            "msg_throughput_out": [0.0] * 5,
            "topics": [2] * 5,
        }
    )
    wanted = by_cluster([("c", "t/n/a"), ("c", "t/n/z"), ("e", "t/n/b")])
    for table in (rows, _dictionaries(rows)):
        chosen = samples_of(table, wanted)
        assert chosen.schema == samples_of(empty, wanted).schema
        assert chosen.column("snapshot_ms").to_pylist() == [1]
        assert not pa.types.is_dictionary(chosen.schema.field("bundle").type)


def test_sample_lists_of_lists_each_bundle_once_with_all_its_rows() -> None:
    rng = random.Random(5)
    names = [("c", "t/n/a"), ("c", "t/n/b"), ("d", "t/n/a"), ("d", "t/n/z")]
    rows = pa.table(
        {
            "snapshot_ms": list(range(40)),
            "cluster": [names[i % 4][0] for i in range(40)],
            "broker": [f"b:{rng.randrange(3)}" for _ in range(40)],
            "bundle": [names[i % 4][1] for i in range(40)],
            "namespace": ["t/n"] * 40,
            "msg_rate_in": [rng.random() for _ in range(40)],
            "msg_rate_out": [math.nan] + [0.0] * 39,
            "msg_throughput_in": [0.0] * 40,
            "msg_throughput_out": [0.0] * 40,
            "topics": [rng.randrange(9) for _ in range(40)],
        }
    )
    wanted = by_cluster([("c", "t/n/a"), ("d", "t/n/a"), ("d", "t/n/z"), ("e", "t/n/q")])
    for table in (rows, _dictionaries(rows)):
        lists = sample_lists_of(table, wanted)
        columns = lists.to_pydict()
        keys = list(zip(columns["cluster"], columns["bundle"], strict=True))
        assert sorted(keys) == [("c", "t/n/a"), ("d", "t/n/a"), ("d", "t/n/z")]
        assert lists.column("namespace").to_pylist() == ["t/n"] * 3
        listed = [
            (cluster, bundle, sample["snapshot_ms"])
            for cluster, bundle, _, samples in zip(*lists.to_pydict().values(), strict=True)
            for sample in samples
        ]
        chosen = samples_of(table, wanted)
        assert sorted(listed) == sorted(
            zip(
                chosen.column("cluster").to_pylist(),
                chosen.column("bundle").to_pylist(),
                chosen.column("snapshot_ms").to_pylist(),
                strict=True,
            )
        )
        assert [f.name for f in lists.schema.field("samples").type.value_type] == list(
            SAMPLE_FIELDS
        )
    assert sample_lists_of(rows, by_cluster([("x", "y")])).num_rows == 0


def _dictionaries(rows: pa.Table) -> pa.Table:
    """``rows`` with the strings dictionary-encoded, in two chunks (as files read them)."""
    halves = [rows.slice(0, 2), rows.slice(2)]
    columns = {}
    for name in rows.column_names:
        column = rows.column(name)
        if pa.types.is_string(column.type):
            columns[name] = pa.chunked_array(
                [half.column(name).combine_chunks().dictionary_encode() for half in halves]
            )
        else:
            columns[name] = pa.chunked_array(
                [half.column(name).combine_chunks() for half in halves]
            )
    return pa.table(columns)


def random_rows(seed: int) -> list[dict[str, Any]]:
    """Bundles of two clusters over 30 snapshots, each at a level of the half limits (some
    far under, some just under or over), some samples NaN."""
    rng = random.Random(seed)
    names = [f"t/n{i % 3}/0x{i:08x}_0x{i + 1:08x}" for i in range(25)]
    levels = {
        (cluster, name): rng.choice([0.3, 0.3, 0.995, 1.0])
        for cluster in ("c", "d")
        for name in names
    }
    rows = []
    for snapshot in range(30):
        for (cluster, bundle), level in levels.items():

            def near(half: float, level: float = level) -> float:
                return level * half * rng.uniform(0.99, 1.01) * rng.choice([0.0, 1.0, 1.0])

            rows.append(
                {
                    "snapshot_ms": 60_000 * snapshot,
                    "cluster": cluster,
                    "broker": f"b:{rng.randint(1, 3)}",
                    "bundle": bundle,
                    "namespace": bundle.rpartition("/")[0],
                    "topics": rng.randint(1, 9),
                    "msg_rate_in": near(LIMIT / 2) if rng.random() < 0.995 else math.nan,
                    "msg_rate_out": near(LIMIT / 2),
                    "msg_throughput_in": near(HALF_SIZE) * 0.5,
                    "msg_throughput_out": near(HALF_SIZE),
                }
            )
    return rows


@pytest.mark.spark
@pytest.mark.parametrize("seed", range(2))
def test_tasks_read_what_spark_sql_reads(spark: SparkSession, tmp_path: Path, seed: int) -> None:
    rows = random_rows(seed)
    write_history(frame(spark, BUNDLES, rows).repartition(3), str(tmp_path), BUNDLES)
    bundles = read_history(spark, str(tmp_path), BUNDLES)
    cfg = config()
    found = records(busy(spark, str(tmp_path), bundles, cfg), "cluster", "bundle")
    expected = records(busy_bundles(bundles, cfg), "cluster", "bundle")
    assert found == expected
    assert 0 < len(found) < 50  # some bundles are busy, not all

    keys = spark.createDataFrame(
        [(r["cluster"], r["bundle"]) for r in found[::2]], "cluster string, bundle string"
    )
    picked = samples(spark, str(tmp_path), bundles, keys)
    joined = sample_lists(bundles.join(keys, on=["cluster", "bundle"], how="left_semi"))
    # The same types (nullability aside: no sample or list is null either way).
    assert picked.schema.simpleString() == joined.schema.simpleString()
    picked_lists = records(picked, "cluster", "bundle")
    assert _same(_flat(picked_lists), _flat(records(joined, "cluster", "bundle")))
    assert len(picked_lists) == len(found[::2])
    nan = picked.select(F.explode("samples").alias("s")).filter(F.isnan("s.msg_rate_in"))
    assert nan.count() > 0  # NaN samples went through


def _flat(lists: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Sample lists as one row per sample, in the lists' order."""
    return [
        {key: row[key] for key in ("cluster", "bundle", "namespace")} | sample
        for row in lists
        for sample in row["samples"]
    ]


def _same(left: list[dict[str, Any]], right: list[dict[str, Any]]) -> bool:
    """Row lists equal, NaN equal to NaN."""

    def key(row: dict[str, Any]) -> tuple[Any, ...]:
        return tuple("nan" if isinstance(v, float) and math.isnan(v) else v for v in row.values())

    return [key(r) for r in left] == [key(r) for r in right]
