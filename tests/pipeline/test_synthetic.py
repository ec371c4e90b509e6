"""The synthetic history: its shape, its consistency with the model, and its determinism."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from ballast.model.bundles import BundleName, hash_key
from ballast.pipeline.history import HistoryError, held_for_writing
from ballast.pipeline.jobs.generate import generate
from ballast.pipeline.schema import BROKERS, BUNDLES, TOPICS
from ballast.pipeline.sparkio import PathError, read_history
from ballast.pipeline.synthetic_arrays import static_plan, xxhash64
from ballast.pipeline.synthetic_spec import (
    GenerateSpec,
    SpecError,
    broker_plan,
    namespace_plan,
)
from ballast.pipeline.transforms.synthetic import RANGES_SCHEMA, synthetic_rows

from .helpers import records

SPEC = GenerateSpec(
    snapshots=45,
    brokers=7,
    bundles=30,
    namespaces=5,
    tenants=2,
    topic_every=20,
    churn=0.45,
    seed=5,
    mean_bundle_msg_rate=2000.0,
)


def test_plan_sizes_add_up() -> None:
    plans = namespace_plan(SPEC)
    assert sum(p.bundle_count for p in plans) == SPEC.bundles
    assert sum(p.topic_count for p in plans) == SPEC.topics == 300
    assert [p.bundle_offset for p in plans] == [0, *_running([p.bundle_count for p in plans])]
    # Zipf: the first namespace is the busiest and has the most topics per bundle.
    assert plans[0].msg_rate == max(p.msg_rate for p in plans)
    density = [p.topic_count / p.bundle_count for p in plans]
    assert density[0] == max(density)
    assert {p.tenant for p in plans} == {"tenant-0", "tenant-1"}
    brokers = broker_plan(SPEC)
    assert SPEC.stable_brokers == 4
    assert all((b.join_at, b.leave_at) == (0, 45) for b in brokers[:4])
    assert all((b.join_at, b.leave_at) != (0, 45) for b in brokers[4:])
    assert SPEC.topic_snapshots == (0, 20, 40, 44)


def _running(counts: list[int]) -> list[int]:
    total, sums = 0, []
    for count in counts[:-1]:
        total += count
        sums.append(total)
    return sums


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"bundles": 3}, "bundles"),
        ({"tenants": 9}, "tenants"),
        ({"churn": 1.0}, "churn"),
        ({"snapshots": 0}, "snapshots"),
        ({"cluster": ""}, "cluster"),
        ({"mean_bundle_msg_rate": math.inf}, "mean bundle msg rate must be a finite number"),
        ({"skew": math.inf}, "skew must be a finite number"),
        ({"topics_per_bundle": math.nan}, "topics per bundle must be a finite number"),
        # past these the driver's plan ran out of memory or numpy overflowed (internal errors)
        ({"topics_per_bundle": 1e9}, "must be at most 20,000,000 topics"),
        ({"brokers": 10**20}, "brokers must be 1 to 1,000,000"),
        ({"seed": 10**20}, "seed must fit a 64-bit integer"),
        # the snapshots' date= partitions end with year 9999
        ({"interval_ms": 10**17}, "the last snapshot would be after 9999-12-31"),
    ],
)
def test_bad_specs_are_rejected(changes: dict[str, Any], message: str) -> None:
    values = {"bundles": 30, "namespaces": 5, **changes}
    with pytest.raises(SpecError, match=message):
        GenerateSpec(**values)


@pytest.fixture(scope="module")
def generated(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> str:
    out = str(tmp_path_factory.mktemp("synthetic"))
    generate(spark, SPEC, out)
    return out


@pytest.mark.spark
def test_rows_are_consistent(spark: SparkSession, generated: str) -> None:
    bundles = records(read_history(spark, generated, BUNDLES), "snapshot_ms", "bundle")
    brokers = records(read_history(spark, generated, BROKERS), "snapshot_ms", "broker")
    topics = records(read_history(spark, generated, TOPICS), "snapshot_ms", "topic")
    assert len(bundles) == SPEC.snapshots * SPEC.bundles
    assert len(topics) == len(SPEC.topic_snapshots) * SPEC.topics
    # Bundle names are Pulsar's, and topics hash into the bundle they are reported in.
    for row in topics:
        name = BundleName.parse(row["bundle"])
        assert str(name) == row["bundle"]
        assert name.range.contains(hash_key(row["topic"]))
    topics_per_bundle = Counter(r["bundle"] for r in topics if r["snapshot_ms"] == SPEC.start_ms)
    assert all(r["topics"] == topics_per_bundle[r["bundle"]] for r in bundles)
    # Every broker row is exactly the sum of its bundles (sums of 2**-10 multiples are exact).
    sums: dict[tuple[int, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for row in bundles:
        total = sums[(row["snapshot_ms"], row["broker"])]
        total[0] += row["msg_rate_in"]
        total[1] += row["msg_rate_out"]
        total[2] += row["msg_throughput_in"]
        total[3] += 1
    for row in brokers:
        expected = sums.get((row["snapshot_ms"], row["broker"]), [0.0, 0.0, 0.0, 0])
        got = [row["msg_rate_in"], row["msg_rate_out"], row["msg_throughput_in"]]
        assert got == expected[:3]
        assert row["num_bundles"] == expected[3]
        assert 0 < row["cpu_usage"] <= row["cpu_limit"] == 800.0
    assert set(sums) <= {(r["snapshot_ms"], r["broker"]) for r in brokers}


@pytest.mark.spark
def test_brokers_come_and_go_and_bundles_move(spark: SparkSession, generated: str) -> None:
    brokers = records(read_history(spark, generated, BROKERS), "snapshot_ms", "broker")
    per_snapshot = Counter(r["snapshot_ms"] for r in brokers)
    assert len(set(per_snapshot.values())) > 1  # the broker count changes
    plan = {p.broker: p for p in broker_plan(SPEC)}
    for row in brokers:
        index = (row["snapshot_ms"] - SPEC.start_ms) // SPEC.interval_ms
        assert plan[row["broker"]].join_at <= index < plan[row["broker"]].leave_at
    bundles = records(read_history(spark, generated, BUNDLES), "snapshot_ms", "bundle")
    owners: dict[str, set[str]] = defaultdict(set)
    for row in bundles:
        owners[row["bundle"]].add(row["broker"])
    assert any(len(o) > 1 for o in owners.values())


@pytest.mark.spark
def test_load_is_skewed_diurnal_and_bursty(spark: SparkSession, generated: str) -> None:
    bundles = records(read_history(spark, generated, BUNDLES), "snapshot_ms", "bundle")
    per_bundle: dict[str, list[float]] = defaultdict(list)
    for row in bundles:
        per_bundle[row["bundle"]].append(row["msg_rate_in"])
    means = sorted((sum(v) / len(v) for v in per_bundle.values()), reverse=True)
    assert means[0] > 5 * means[len(means) // 2]  # a few bundles carry much of the load
    # Bursts: some bundle jumps well above its own typical rate for a few minutes.
    assert any(max(v) > 1.8 * sorted(v)[len(v) // 2] for v in per_bundle.values())


@pytest.mark.spark
def test_same_spec_same_history_on_any_partitioning(
    spark: SparkSession, generated: str, tmp_path: Path
) -> None:
    spark.conf.set("spark.sql.shuffle.partitions", "5")  # broker sums in other groupings
    try:
        generate(spark, SPEC, str(tmp_path))
        with pytest.raises(PathError, match="already holds a history"):
            generate(spark, SPEC, str(tmp_path))  # never over a history without asking
        with held_for_writing(tmp_path), pytest.raises(HistoryError, match="another process"):
            generate(spark, SPEC, str(tmp_path), replace=True)  # an import is writing it
        generate(spark, SPEC, str(tmp_path), replace=True)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", "2")
    for table, keys in (
        (BROKERS, ("snapshot_ms", "broker")),
        (BUNDLES, ("snapshot_ms", "bundle")),
        (TOPICS, ("snapshot_ms", "topic")),
    ):
        first = records(read_history(spark, generated, table), *keys)
        again = records(read_history(spark, str(tmp_path), table), *keys)
        assert first == again, table.name
    # Rows depend only on their coordinates, not on how the snapshots are split into
    # ranges and partitions; Spark's writer (used off local file systems) gets the same rows.
    plan = spark.sparkContext.broadcast(static_plan(SPEC))
    try:
        for table, keys in (
            (BUNDLES, ("snapshot_ms", "bundle")),
            (BROKERS, ("snapshot_ms", "broker")),
        ):
            split = [
                records(
                    synthetic_rows(
                        spark.createDataFrame(ranges, RANGES_SCHEMA).repartition(len(ranges)),
                        SPEC,
                        plan,
                        table,
                    ),
                    *keys,
                )
                for ranges in ([(0, 45)], [(0, 7), (7, 20), (20, 45)])
            ]
            assert split[0] == split[1] == records(read_history(spark, generated, table), *keys)
    finally:
        plan.destroy()


@pytest.mark.spark
def test_hashes_are_sparks_xxhash64(spark: SparkSession) -> None:
    ids = spark.range(0, 500).select(
        F.col("id"),
        (F.col("id") * 7919 - 10**12).alias("other"),
        F.xxhash64(F.lit(5).cast("long"), F.lit(3).cast("long"), "id", "other").alias("hash"),
    )
    rows = ids.toPandas()
    ours = xxhash64(5, 3, rows["id"].to_numpy(), rows["other"].to_numpy())
    assert np.array_equal(ours, rows["hash"].to_numpy())
