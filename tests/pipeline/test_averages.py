"""Time averages in Spark equal the model's incremental updates, to the last bit."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from ballast.model.loaddata import BundleData, NamespaceBundleStats, TimeAverageBrokerData
from ballast.pipeline.schema import BROKERS, BUNDLES
from ballast.pipeline.transforms.averages import (
    SAMPLE_COLUMNS,
    SAMPLE_LIST_SCHEMA,
    broker_time_averages,
    bundle_time_averages,
    latest_rows,
    long_term_averages,
    merged_sample_lists,
    rows_at,
    sample_lists,
)
from ballast.pipeline.transforms.split_rows import by_cluster, sample_lists_of

from .helpers import frame, records

pytestmark = pytest.mark.spark

KEYS = ("msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out")


def model_row(cluster: str, bundle: str, last_ms: int, data: BundleData) -> dict[str, Any]:
    """The expected ``bundle_averages`` row of a model BundleData."""
    row: dict[str, Any] = {
        "snapshot_ms": last_ms,
        "cluster": cluster,
        "bundle": bundle,
        "namespace": bundle.rpartition("/")[0],
        "topics": data.topics,
    }
    for term, averages in (("short", data.short_term_data), ("long", data.long_term_data)):
        row[f"{term}_num_samples"] = averages.num_samples
        row[f"{term}_max_samples"] = averages.max_samples
        for key in KEYS:
            row[f"{term}_{key}"] = getattr(averages, key)
    return row


def random_sample(rng: random.Random) -> dict[str, Any]:
    return {
        "msg_rate_in": rng.random() * 5000,
        "msg_rate_out": rng.random() * 20000,
        "msg_throughput_in": rng.random() * 5e6,
        "msg_throughput_out": rng.random() * 2e7,
        "topics": rng.randrange(0, 50),
    }


def test_first_sample_replaces_defaults_and_second_averages(spark: SparkSession) -> None:
    bundles = frame(
        spark,
        BUNDLES,
        [
            {
                "snapshot_ms": 2000,
                "cluster": "c",
                "broker": "b:1",
                "bundle": "t/n/0x0_0x1",
                "namespace": "t/n",
                "msg_rate_in": 30.0,
                "msg_throughput_in": 300.0,
                "topics": 3,
            },
            {
                "snapshot_ms": 1000,
                "cluster": "c",
                "broker": "b:1",
                "bundle": "t/n/0x0_0x1",
                "namespace": "t/n",
                "msg_rate_in": 10.0,
                "msg_throughput_in": 100.0,
                "topics": 2,
            },
        ],
    )
    [row] = records(bundle_time_averages(bundles), "bundle")
    assert row["snapshot_ms"] == 2000
    assert row["topics"] == 3  # the latest sample's
    assert (row["short_num_samples"], row["long_num_samples"]) == (2, 2)
    assert (row["short_max_samples"], row["long_max_samples"]) == (10, 1000)
    # mean of 10 and 30; the default 50 msg/s never shows once a sample exists
    assert row["short_msg_rate_in"] == row["long_msg_rate_in"] == 20.0
    assert row["long_msg_throughput_in"] == 200.0
    assert row["long_msg_rate_out"] == 0.0


def test_bundle_averages_equal_model_updates_bit_for_bit(spark: SparkSession) -> None:
    rng = random.Random(8)
    rows: list[dict[str, Any]] = []
    model: dict[tuple[str, str], BundleData] = {}
    last_ms: dict[tuple[str, str], int] = {}
    bundles = [
        ("c1", "t/a/0x00000000_0x80000000"),
        ("c1", "t/a/0x80000000_0xffffffff"),
        ("c2", "t/a/0x00000000_0x80000000"),
    ]
    # 1600 snapshots: past the long-term window of 1000, so the moving phase is covered.
    for snapshot in range(1600):
        for cluster, bundle in bundles:
            if rng.random() < 0.3 and snapshot % 7:
                continue  # not every bundle reports in every snapshot
            # During a transfer two brokers report the same bundle; broker order decides.
            brokers = ["b:2", "b:1"] if snapshot % 97 == 0 else ["b:1"]
            for broker in sorted(brokers):
                sample = random_sample(rng)
                rows.append(
                    {
                        "snapshot_ms": 1_000_000 + snapshot * 60_000,
                        "cluster": cluster,
                        "broker": broker,
                        "bundle": bundle,
                        "namespace": "t/a",
                        **sample,
                    }
                )
                key = (cluster, bundle)
                model[key] = model.get(key, BundleData.new_default()).updated(
                    NamespaceBundleStats(**sample)
                )
                last_ms[key] = 1_000_000 + snapshot * 60_000
    rng.shuffle(rows)  # input order must not matter
    result = records(bundle_time_averages(frame(spark, BUNDLES, rows)), "cluster", "bundle")
    expected = sorted(
        (model_row(c, b, last_ms[(c, b)], data) for (c, b), data in model.items()),
        key=lambda r: (r["cluster"], r["bundle"]),
    )
    assert result == expected  # exact float equality, every column
    assert all(r["long_num_samples"] == 1000 for r in result)


def test_long_term_averages_equal_model_updates_bit_for_bit(spark: SparkSession) -> None:
    rng = random.Random(12)
    rows: list[dict[str, Any]] = []
    model: dict[str, BundleData] = {}
    bundles = ["t/a/0x00000000_0x80000000", "t/a/0x80000000_0xffffffff"]
    for snapshot in range(1100):  # past the 1000-sample window
        for bundle in bundles:
            if rng.random() < 0.2:
                continue
            brokers = ["b:1", "b:2"] if snapshot % 89 == 0 else ["b:1"]
            for broker in brokers:
                sample = random_sample(rng)
                rows.append(
                    {
                        "snapshot_ms": snapshot,
                        "cluster": "c",
                        "broker": broker,
                        "bundle": bundle,
                        "namespace": "t/a",
                        **sample,
                    }
                )
                model[bundle] = model.get(bundle, BundleData.new_default()).updated(
                    NamespaceBundleStats(**sample)
                )
    rng.shuffle(rows)
    history = frame(spark, BUNDLES, rows)
    result = records(long_term_averages(sample_lists(history)), "bundle")
    expected = [
        {
            "cluster": "c",
            "bundle": bundle,
            "long_num_samples": model[bundle].long_term_data.num_samples,
            **{f"long_{k}": getattr(model[bundle].long_term_data, k) for k in KEYS},
        }
        for bundle in sorted(model)
    ]
    assert result == expected  # exact float equality

    # The same from lists made in pieces, as split-plan's tasks make them: the rows cut in
    # pieces of any size and order, each listed per bundle, the pieces merged.
    table = pa.Table.from_pylist(rows).select(list(SAMPLE_COLUMNS))
    wanted = by_cluster([("c", bundle) for bundle in bundles])
    cuts = sorted(rng.sample(range(1, table.num_rows), 7))
    pieces = [
        sample_lists_of(table.slice(start, end - start), wanted)
        for start, end in zip([0, *cuts], [*cuts, table.num_rows], strict=True)
    ]
    assert sum(piece.num_rows for piece in pieces) > len(bundles)  # some bundles in several
    lists = merged_sample_lists(
        spark.createDataFrame(pa.concat_tables(pieces).to_pylist(), SAMPLE_LIST_SCHEMA)
    )
    assert records(long_term_averages(lists), "bundle") == expected
    assert records(lists, "bundle") == records(sample_lists(history), "bundle")


def test_broker_averages_sum_latest_bundles_like_the_model(spark: SparkSession) -> None:
    rng = random.Random(3)
    bundle_rows: list[dict[str, Any]] = []
    model: dict[str, BundleData] = {}
    owners = {
        0: {"b:1": ["t/n/0x0_0x1", "t/n/0x1_0x2", "t/n/0x2_0x3"], "b:9": ["t/n/0x3_0x4"]},
        # latest snapshot: b:9 is gone, b:1 kept two bundles, b:2 took two, b:3 has none
        1: {
            "b:1": ["t/n/0x2_0x3", "t/n/0x0_0x1"],
            "b:2": ["t/n/0x1_0x2", "t/n/0x3_0x4"],
            "b:3": [],
        },
    }
    broker_rows = []
    for snapshot, brokers in owners.items():
        for broker, owned in brokers.items():
            broker_rows.append({"snapshot_ms": snapshot, "cluster": "c", "broker": broker})
            for bundle in owned:
                sample = random_sample(rng)
                bundle_rows.append(
                    {
                        "snapshot_ms": snapshot,
                        "cluster": "c",
                        "broker": broker,
                        "bundle": bundle,
                        "namespace": "t/n",
                        **sample,
                    }
                )
                model[bundle] = model.get(bundle, BundleData.new_default()).updated(
                    NamespaceBundleStats(**sample)
                )
    bundles = frame(spark, BUNDLES, bundle_rows)
    averages = bundle_time_averages(bundles)
    result = records(
        broker_time_averages(frame(spark, BROKERS, broker_rows), bundles, averages), "broker"
    )
    expected = []
    for broker, owned in sorted(owners[1].items()):
        data = TimeAverageBrokerData.from_bundles(sorted(owned), model)
        expected.append(
            {
                "snapshot_ms": 1,
                "cluster": "c",
                "broker": broker,
                "num_bundles": len(owned),
                **{
                    f"{t}_{k}": getattr(data, f"{t}_term_{k}")
                    for t in ("short", "long")
                    for k in KEYS
                },
            }
        )
    assert result == expected
    assert result[-1]["long_msg_rate_in"] == 0.0  # b:3 owns nothing


def test_bundle_without_averages_counts_as_defaults(spark: SparkSession) -> None:
    brokers = frame(spark, BROKERS, [{"snapshot_ms": 5, "cluster": "c", "broker": "b:1"}])
    bundles = frame(
        spark,
        BUNDLES,
        [{"snapshot_ms": 5, "cluster": "c", "broker": "b:1", "bundle": "t/n/0x0_0x1"}],
    )
    no_averages = bundle_time_averages(bundles).limit(0)
    [row] = records(broker_time_averages(brokers, bundles, no_averages), "broker")
    expected = TimeAverageBrokerData.from_bundles(["t/n/0x0_0x1"], {})
    assert row["short_msg_rate_in"] == expected.short_term_msg_rate_in == 50.0
    assert row["long_msg_throughput_out"] == expected.long_term_msg_throughput_out == 50000.0


def test_latest_rows_is_per_cluster(spark: SparkSession) -> None:
    brokers = frame(
        spark,
        BROKERS,
        [
            {"snapshot_ms": 1, "cluster": "a", "broker": "x"},
            {"snapshot_ms": 2, "cluster": "a", "broker": "y"},
            {"snapshot_ms": 1, "cluster": "b", "broker": "z"},
        ],
    )
    latest = records(latest_rows(brokers), "cluster", "broker")
    assert [(r["cluster"], r["broker"]) for r in latest] == [("a", "y"), ("b", "z")]


def test_rows_at_picks_each_clusters_snapshot(spark: SparkSession) -> None:
    brokers = frame(
        spark,
        BROKERS,
        [{"snapshot_ms": s, "cluster": c, "broker": f"{c}{s}"} for c in ("a", "b") for s in (1, 2)],
    )
    picked = records(rows_at(brokers, {"a": 2, "b": 1}), "broker")
    assert [r["broker"] for r in picked] == ["a2", "b1"]
    assert rows_at(brokers, {}).count() == 0
