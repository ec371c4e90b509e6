"""Resource usage columns equal the model's float32 arithmetic."""

from __future__ import annotations

import math
import random
from dataclasses import asdict, is_dataclass

import pytest
from pyspark.sql import SparkSession

from ballast.model.loaddata import LocalBrokerData, ResourceUsage, ResourceWeights
from ballast.pipeline.history import broker_row
from ballast.pipeline.schema import BROKERS
from ballast.pipeline.transforms.usage import with_usage

from .helpers import frame, records

pytestmark = pytest.mark.spark

EDGE_USAGES = [
    ResourceUsage(usage=999.0, limit=1000.0),  # 99.9000015258789 in float32
    ResourceUsage(usage=30.0, limit=100.0),
    ResourceUsage(usage=5.0, limit=0.0),  # no limit: 0 %
    ResourceUsage(usage=-1.0, limit=-1.0),  # unknown
    ResourceUsage(usage=2.0, limit=1e-50),  # limit rounds to 0 in float32: infinite
    ResourceUsage(usage=0.0, limit=1e-50),  # 0 / 0 in float32: NaN, skipped by the max
    ResourceUsage(usage=800.0, limit=200.0),  # over the limit: 400 %, not clamped
    ResourceUsage(usage=1e39, limit=1.0),  # beyond float32: infinite
]


def reports() -> list[LocalBrokerData]:
    rng = random.Random(4)
    made = []
    for index in range(60):
        picks = [
            EDGE_USAGES[(index + k) % len(EDGE_USAGES)]
            if index < 16
            else ResourceUsage(usage=rng.random() * 900, limit=rng.choice([100.0, 800.0, 1e4]))
            for k in range(5)
        ]
        made.append(
            LocalBrokerData(
                cpu=picks[0],
                memory=picks[1],
                direct_memory=picks[2],
                bandwidth_in=picks[3],
                bandwidth_out=picks[4],
                msg_rate_in=float(index),
                msg_rate_out=0.5,
            )
        )
    return made


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def test_usage_columns_equal_model(spark: SparkSession) -> None:
    weights = ResourceWeights(cpu=1.0, memory=0.5, direct_memory=2.0, bandwidth_in=1.0)
    models = reports()
    rows = [
        {"snapshot_ms": 0, "cluster": "c", **vars_of(broker_row(f"b{i:03d}", r))}
        for i, r in enumerate(models)
    ]
    result = records(with_usage(frame(spark, BROKERS, rows), weights), "broker")
    assert len(result) == len(models)
    for row, model in zip(result, models, strict=True):
        assert same(row["max_resource_usage"], model.max_resource_usage()), row["broker"]
        assert same(row["weighted_usage"], model.max_resource_usage_with_weight(weights)), row[
            "broker"
        ]
        assert row["msg_rate"] == model.msg_rate
    # the edge cases really are exercised
    assert any(math.isinf(r["max_resource_usage"]) for r in result)
    assert any(1.0 < r["max_resource_usage"] < math.inf for r in result)  # not clamped


def vars_of(row: object) -> dict[str, object]:
    assert is_dataclass(row) and not isinstance(row, type)
    return asdict(row)
