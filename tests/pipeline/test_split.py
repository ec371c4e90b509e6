"""Split plans: Pulsar's selection rules, and cut points equal to the model's algorithms."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ballast.model.bundles import BundleRange, InvalidBundle, hash_key, split_boundaries
from ballast.model.config import SplitConfig, load_settings
from ballast.model.split_algorithms import (
    FLOW_OR_QPS_EQUALLY_DIVIDE,
    MIB,
    RANGE_EQUALLY_DIVIDE,
    TOPIC_COUNT_EQUALLY_DIVIDE,
    FlowOrQpsThresholds,
    SplitRequest,
    TopicLoad,
    split_algorithm,
)
from ballast.pipeline.schema import BROKERS, BUNDLES, TOPICS
from ballast.pipeline.transforms.averages import (
    bundle_time_averages,
    long_term_averages,
    rows_at,
    sample_lists,
)
from ballast.pipeline.transforms.split import (
    UnsupportedAlgorithm,
    averaged_bundles,
    busy_bundles,
    malformed_bundle,
    split_candidates,
    split_plan,
    split_points,
)

from .helpers import frame, records

pytestmark = pytest.mark.spark


def config(*overrides: str) -> SplitConfig:
    return SplitConfig.from_settings(load_settings(overrides=overrides).settings)


def history(
    spark: SparkSession, latest: list[dict[str, Any]], brokers: tuple[str, ...] = ("b:1", "b:2")
) -> tuple[DataFrame, DataFrame]:
    """Brokers and bundles of cluster c: an older snapshot 5 where every bundle was quiet,
    and the latest snapshot 10 with ``latest``."""
    bundle_rows = []
    for row in latest:
        quiet = {k: v for k, v in row.items() if not k.startswith("msg_")}
        bundle_rows.append({**quiet, "snapshot_ms": 5})
        bundle_rows.append({**row, "snapshot_ms": 10})
    broker_rows = [
        {"snapshot_ms": s, "cluster": "c", "broker": b} for s in (5, 10) for b in brokers
    ]
    filled = [
        {"cluster": "c", "namespace": r["bundle"].rpartition("/")[0], **r} for r in bundle_rows
    ]
    return frame(spark, BROKERS, broker_rows), frame(spark, BUNDLES, filled)


def candidates(spark: SparkSession, latest: list[dict[str, Any]], cfg: SplitConfig) -> list[Any]:
    brokers, bundles = history(spark, latest)
    chosen = split_candidates(brokers, bundles, bundle_time_averages(bundles), cfg)
    return records(chosen, "bundle")


def test_selection_follows_pulsar_thresholds(spark: SparkSession) -> None:
    latest = [
        # one topic: never split, however hot
        {"broker": "b:1", "bundle": "t/a/0x00000000_0x10000000", "topics": 1, "msg_rate_in": 1e6},
        {"broker": "b:1", "bundle": "t/a/0x10000000_0x20000000", "topics": 1001},
        {
            "broker": "b:2",
            "bundle": "t/a/0x20000000_0x30000000",
            "topics": 2,
            "producer_count": 600,
            "consumer_count": 401,
        },
        # long-term average of 0 (snapshot 5) and 60002 is 30001 > 30000
        {
            "broker": "b:1",
            "bundle": "t/a/0x30000000_0x40000000",
            "topics": 2,
            "msg_rate_in": 60000.0,
            "msg_rate_out": 2.0,
        },
        {
            "broker": "b:2",
            "bundle": "t/a/0x40000000_0x50000000",
            "topics": 2,
            "msg_throughput_out": 200 * MIB + 2.0,
        },
        # exactly at every threshold: not above any
        {
            "broker": "b:2",
            "bundle": "t/a/0x50000000_0x60000000",
            "topics": 1000,
            "producer_count": 1000,
            "msg_rate_in": 60000.0,
            "msg_throughput_in": 200.0 * MIB,
        },
    ]
    chosen = candidates(spark, latest, config())
    assert [(r["bundle"], r["broker"], r["reason"]) for r in chosen] == [
        ("t/a/0x10000000_0x20000000", "b:1", "topics 1001 > 1000"),
        ("t/a/0x20000000_0x30000000", "b:2", "sessions 1001 > 1000"),
        ("t/a/0x30000000_0x40000000", "b:1", "long-term msg rate 30001.0 > 30000.0 msg/s"),
        ("t/a/0x40000000_0x50000000", "b:2", "long-term throughput 100.00 > 100.00 MiB/s"),
    ]
    assert chosen[0]["snapshot_ms"] == 10
    assert chosen[1]["sessions"] == 1001
    assert chosen[2]["long_msg_rate"] == 30001.0


def test_a_nan_average_is_over_no_limit(spark: SparkSession) -> None:
    """Java's ``NaN > limit`` is false: Pulsar splits no such bundle, and the model does not
    either. Spark orders NaN above every number, so the plan selected and cut it."""
    latest = [
        {
            "broker": "b:1",
            "bundle": "t/a/0x00000000_0x80000000",
            "topics": 2,
            "msg_rate_in": float("nan"),
            "msg_throughput_in": float("nan"),
        }
    ]
    assert candidates(spark, latest, config()) == []
    with_topics = [{**latest[0], "topics": 1001}]  # another rule still selects it
    (chosen,) = candidates(spark, with_topics, config())
    assert chosen["reason"] == "topics 1001 > 1000"


def test_names_that_give_no_range_to_cut_are_found(spark: SparkSession) -> None:
    """A history another tool wrote may name bundles anyhow: ``t/ns/junk00`` failed the
    job with Spark's stack, and a reversed range was cut outside itself."""
    names = {
        "t/ns/0x00000000_0x80000000": False,
        "t/ns/0X0_0xffffffff": False,
        "p/c/ns/0x80000000_0xc0000000": False,
        "t/ns/junk00": True,
        "t/ns/0x80000000_0x00000000": True,
        "t/ns/0x10_0x10": True,
        "0x00000000_0x10000000": True,
        "t/ns/0x00000000_0x100000000": True,
        "t/ns/0xg0000000_0x10000000": True,
    }
    rows = spark.createDataFrame([(name,) for name in names], "bundle string")
    found = rows.select("bundle", malformed_bundle(F.col("bundle")).alias("bad")).collect()
    assert {row["bundle"]: row["bad"] for row in found} == names


def test_sessions_check_disabled_at_zero(spark: SparkSession) -> None:
    latest = [
        {
            "broker": "b:1",
            "bundle": "t/a/0x00000000_0xffffffff",
            "topics": 5,
            "producer_count": 5000,
        }
    ]
    assert candidates(spark, latest, config("loadBalancerNamespaceBundleMaxSessions=0")) == []
    assert len(candidates(spark, latest, config())) == 1


def test_namespace_cap_counts_bundles_selected_in_the_run(spark: SparkSession) -> None:
    hot = {"topics": 2000}
    latest = [
        {"broker": "b:2", "bundle": "t/a/0x00000000_0x40000000", **hot},
        {"broker": "b:1", "bundle": "t/a/0x40000000_0x80000000", **hot},
        {"broker": "b:1", "bundle": "t/a/0x80000000_0xc0000000", **hot},
        {"broker": "b:1", "bundle": "t/a/0xc0000000_0xffffffff", **hot},
        {"broker": "b:2", "bundle": "t/b/0x00000000_0xffffffff", **hot},
    ]
    chosen = candidates(spark, latest, config("loadBalancerNamespaceMaximumBundles=6"))
    # t/a has 4 bundles: 6 - 4 = 2 may be added, in (broker, bundle) order; t/b has room.
    assert [r["bundle"] for r in chosen] == [
        "t/a/0x40000000_0x80000000",
        "t/a/0x80000000_0xc0000000",
        "t/b/0x00000000_0xffffffff",
    ]
    assert candidates(spark, latest, config("loadBalancerNamespaceMaximumBundles=4")) == [
        r for r in chosen if r["bundle"].startswith("t/b/")
    ]


def test_no_split_with_a_single_broker(spark: SparkSession) -> None:
    latest = [{"broker": "b:1", "bundle": "t/a/0x00000000_0xffffffff", "topics": 5000}]
    brokers, bundles = history(spark, latest, brokers=("b:1",))
    plan = split_candidates(brokers, bundles, bundle_time_averages(bundles), config())
    assert plan.count() == 0


# -- which bundles need averages --------------------------------------------------------------


def needed(spark: SparkSession, latest: list[dict[str, Any]], cfg: SplitConfig) -> list[str]:
    _, bundles = history(spark, latest)
    keys = averaged_bundles(busy_bundles(bundles, cfg), rows_at(bundles, {"c": 10}), cfg)
    return [row["bundle"] for row in records(keys, "bundle")]


def test_only_bundles_that_could_be_selected_are_averaged(spark: SparkSession) -> None:
    def bundle(i: int, **fields: Any) -> dict[str, Any]:
        return {
            "broker": f"b:{1 + i % 2}",
            "bundle": f"t/a/0x{i}0000000_0x{i + 1}0000000",
            **fields,
        }

    latest = [
        bundle(0, topics=1, msg_rate_in=1e6),  # one topic: never split, however hot
        bundle(1, topics=1001),
        bundle(2, topics=2, producer_count=1001),
        # a sample over half the limit one way, though the average (of 0 and 20000) is not
        bundle(3, topics=2, msg_rate_out=20_000.0),
        bundle(4, topics=2, msg_throughput_in=60.0 * MIB),
        # every sample under half a limit each way: in + out cannot average over it
        bundle(5, topics=1000, msg_rate_in=14_999.0, msg_rate_out=14_999.0),
        bundle(6, topics=1000, msg_throughput_in=49.9 * MIB, msg_throughput_out=49.9 * MIB),
    ]
    assert needed(spark, latest, config()) == [
        "t/a/0x10000000_0x20000000",
        "t/a/0x20000000_0x30000000",
        "t/a/0x30000000_0x40000000",
        "t/a/0x40000000_0x50000000",
    ]
    assert "t/a/0x20000000_0x30000000" not in needed(
        spark, latest, config("loadBalancerNamespaceBundleMaxSessions=0")
    )


@pytest.mark.parametrize("seed", range(3))
def test_averaging_only_those_bundles_selects_the_same(spark: SparkSession, seed: int) -> None:
    # Each bundle's rates and sizes near a level around the limits, so that averages fall
    # just under or over a limit while single samples cross it.
    rng = random.Random(seed)
    limit, size = 30_000.0, 100 * MIB
    names = [f"t/n{i % 3}/0x{i:08x}_0x{i + 1:08x}" for i in range(40)]
    levels = {name: rng.choice([0.0, 0.5, 0.97, 1.0, 1.03, 1.08]) for name in names}
    bundle_rows = []
    for snapshot, name in itertools.product(range(1, 6), names):
        level = levels[name]
        bundle_rows.append(
            {
                "snapshot_ms": snapshot,
                "cluster": "c",
                "broker": f"b:{rng.randint(1, 3)}",
                "bundle": name,
                "namespace": name.rpartition("/")[0],
                "topics": rng.choice([1, 2, 5, 5, 5, 1200]),
                "producer_count": rng.choice([0, 0, 1200]),
                "msg_rate_in": level * limit * rng.uniform(0.48, 0.55),
                "msg_rate_out": level * limit * rng.uniform(0.48, 0.55),
                "msg_throughput_in": rng.choice([0.0, level]) * size * rng.uniform(0.9, 1.1),
            }
        )
    brokers = frame(
        spark,
        BROKERS,
        [
            {"snapshot_ms": s, "cluster": "c", "broker": f"b:{b}"}
            for s in range(1, 6)
            for b in (1, 2, 3)
        ],
    )
    bundles = frame(spark, BUNDLES, bundle_rows)
    latest = rows_at(bundles, {"c": 5})
    cfg = config("loadBalancerNamespaceMaximumBundles=1000")
    every = split_candidates(brokers, latest, long_term_averages(sample_lists(bundles)), cfg)
    keys = averaged_bundles(busy_bundles(bundles, cfg), latest, cfg)
    some = split_candidates(
        brokers,
        latest,
        long_term_averages(
            sample_lists(bundles.join(keys, on=["cluster", "bundle"], how="left_semi"))
        ),
        cfg,
    )
    selected = records(every, "bundle")
    assert selected  # the case exercises selection
    assert records(some, "bundle") == selected
    assert keys.count() < len(names)  # and skips some bundles


# -- cut points -------------------------------------------------------------------------------

THRESHOLDS = FlowOrQpsThresholds(
    max_msg_rate=1000, max_bandwidth_mbytes=1, difference_threshold_percentage=10
)
PLAN_MS = 10_000


def topic_cases() -> tuple[dict[str, list[TopicLoad]], list[dict[str, Any]]]:
    """Bundles and their topics as the model sees them, and the ``topics`` history rows
    (latest snapshot at PLAN_MS, plus snapshots that must be ignored)."""
    rng = random.Random(11)
    bundles = {
        "t/n/0x00000000_0x40000000": 60,
        "t/n/0x40000000_0x80000000": 25,
        "t/n/0x80000000_0xc0000000": 3,
        "t/n/0xc0000000_0xffffffff": 40,
        "t/m/0x00000000_0x80000000": 1,
        "t/m/0x80000000_0xffffffff": 0,
    }
    by_bundle: dict[str, list[TopicLoad]] = {b: [] for b in bundles}
    for bundle, wanted in bundles.items():
        namespace, _, text = bundle.rpartition("/")
        span = BundleRange.parse(text)
        index = 0
        while sum(span.contains(t.hash) for t in by_bundle[bundle]) < wanted:
            name = f"persistent://{namespace}/topic-{index}"
            index += 1
            if not span.contains(hash_key(name)):
                continue
            kind = rng.random()
            rate = 0.0 if kind < 0.15 else rng.random() * 400
            size = 0.0 if kind < 0.15 or kind > 0.9 else rng.random() * 300_000
            by_bundle[bundle].append(
                TopicLoad(
                    name,
                    msg_rate_in=rate * 0.4,
                    msg_rate_out=rate * 0.6,
                    msg_throughput_in=size,
                    msg_throughput_out=size * 0.5,
                )
            )
    # Two names with equal CRC-32 (any common prefix keeps the collision).
    for suffix in ("plumless", "buckeroo"):
        name = f"persistent://t/n/{suffix}"
        owner = next(b for b in bundles if BundleRange.parse(b[-21:]).contains(hash_key(name)))
        by_bundle[owner].append(TopicLoad(name, msg_rate_in=300.0, msg_throughput_in=9e5))
    # A topic reported under a bundle whose range does not hold its hash: not owned.
    stray = "persistent://t/n/topic-0"
    wrong = next(
        b
        for b in bundles
        if b.startswith("t/n/") and not BundleRange.parse(b[-21:]).contains(hash_key(stray))
    )
    by_bundle[wrong].append(TopicLoad(stray, msg_rate_in=5000.0))
    rows: list[dict[str, Any]] = []
    for bundle, topics in by_bundle.items():
        for topic in topics:
            row = {
                "cluster": "c",
                "broker": "b:1",
                "bundle": bundle,
                "namespace": bundle.rpartition("/")[0],
                "topic": topic.name,
                "msg_rate_in": topic.msg_rate_in,
                "msg_rate_out": topic.msg_rate_out,
                "msg_throughput_in": topic.msg_throughput_in,
                "msg_throughput_out": topic.msg_throughput_out,
            }
            rows.append({**row, "snapshot_ms": PLAN_MS})
            rows.append({**row, "snapshot_ms": PLAN_MS - 5000, "msg_rate_in": 1e9})
            rows.append({**row, "snapshot_ms": PLAN_MS + 1, "msg_rate_in": 1e9})
    return by_bundle, rows


def planned(spark: SparkSession, bundles: list[str], topics: DataFrame, algorithm: str) -> Any:
    rows = [
        {
            "snapshot_ms": PLAN_MS,
            "cluster": "c",
            "broker": "b:1",
            "bundle": b,
            "namespace": b.rpartition("/")[0],
            "topics": 9,
            "sessions": 0,
            "long_msg_rate": 0.0,
            "long_msg_throughput": 0.0,
            "reason": "test",
        }
        for b in bundles
    ]
    spark_rows = spark.createDataFrame(rows)
    return records(split_points(spark_rows, topics, algorithm, THRESHOLDS), "bundle")


def expected_children(bundle: str, points: tuple[int, ...]) -> list[str]:
    parent = BundleRange.parse(bundle.rpartition("/")[2])
    try:
        bounds = split_boundaries(parent, points)
    except InvalidBundle:
        return []
    return [str(BundleRange(a, b)) for a, b in itertools.pairwise(bounds)]


@pytest.mark.parametrize(
    "algorithm", [TOPIC_COUNT_EQUALLY_DIVIDE, FLOW_OR_QPS_EQUALLY_DIVIDE, RANGE_EQUALLY_DIVIDE]
)
def test_cut_points_equal_model(spark: SparkSession, algorithm: str) -> None:
    by_bundle, rows = topic_cases()
    topics = frame(spark, TOPICS, rows)
    result = planned(spark, sorted(by_bundle), topics, algorithm)
    assert [r["bundle"] for r in result] == sorted(by_bundle)
    found = 0
    for row in result:
        bundle = row["bundle"]
        request = SplitRequest(
            bundle=BundleRange.parse(bundle.rpartition("/")[2]),
            topics=sorted(by_bundle[bundle], key=lambda t: (t.hash, t.name)),
            thresholds=THRESHOLDS,
        )
        model = split_algorithm(algorithm)(request)
        assert row["split_points"] == list(model.points), bundle
        assert row["algorithm"] == algorithm
        assert row["children"] == expected_children(bundle, model.points), bundle
        if model.found:
            found += 1
            assert row["no_split_reason"] is None
        elif "msg/s" not in model.reason:  # float formatting differs between Java and Python
            assert row["no_split_reason"] == model.reason, bundle
        else:
            assert row["no_split_reason"].startswith("bundle load ")
    assert found >= 3  # the cases are not all refusals
    if algorithm == FLOW_OR_QPS_EQUALLY_DIVIDE:
        assert max(len(r["split_points"]) for r in result) > 2  # several cuts in one bundle


def test_topic_algorithms_need_topic_rows(spark: SparkSession) -> None:
    no_topics = frame(spark, TOPICS, [])
    [row] = planned(spark, ["t/n/0x00000000_0xffffffff"], no_topics, TOPIC_COUNT_EQUALLY_DIVIDE)
    assert row["split_points"] == []
    assert row["children"] == []
    assert row["no_split_reason"] == "no per-topic load in the history"


def test_plan_rejects_specified_positions(spark: SparkSession) -> None:
    with pytest.raises(UnsupportedAlgorithm, match="specified_positions_divide"):
        planned(
            spark,
            ["t/n/0x00000000_0xffffffff"],
            frame(spark, TOPICS, []),
            "specified_positions_divide",
        )


def test_whole_plan_from_history(spark: SparkSession) -> None:
    by_bundle, topic_rows = topic_cases()
    latest = [
        {"broker": "b:1", "bundle": b, "topics": len(t), "msg_rate_in": 80_000.0}
        for b, t in by_bundle.items()
    ]
    brokers, bundles = history(spark, latest)
    bundles = bundles.withColumn("snapshot_ms", bundles["snapshot_ms"] * 1000)
    brokers = brokers.withColumn("snapshot_ms", brokers["snapshot_ms"] * 1000)
    plan = records(
        split_plan(
            brokers,
            bundles,
            bundle_time_averages(bundles),
            frame(spark, TOPICS, topic_rows),
            config=config("defaultNamespaceBundleSplitAlgorithm=topic_count_equally_divide"),
        ),
        "bundle",
    )
    # every bundle with 2+ topics is above 30000 msg/s long-term (mean of 0 and 80000)
    assert [r["bundle"] for r in plan] == sorted(b for b, t in by_bundle.items() if len(t) >= 2)
    for row in plan:
        request = SplitRequest(
            bundle=BundleRange.parse(row["bundle"].rpartition("/")[2]),
            topics=by_bundle[row["bundle"]],
        )
        model = split_algorithm(TOPIC_COUNT_EQUALLY_DIVIDE)(request)
        assert row["split_points"] == list(model.points)
        assert row["reason"] == "long-term msg rate 40000.0 > 30000.0 msg/s"
