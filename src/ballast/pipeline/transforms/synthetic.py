"""Synthetic history rows, computed entirely in Spark from id ranges (the model is described
in :mod:`ballast.pipeline.synthetic_spec`).

Each function turns small frames (the namespace plan, id ranges the job makes with
``spark.range``) into history rows; nothing is collected to the driver, so the size of a
history is bounded by disk, not memory. Every value is a pure function of the spec and the
row's coordinates, so results do not depend on partitioning.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ballast.pipeline.synthetic_spec import (
    CANDIDATE_BROKERS,
    BrokerPlan,
    GenerateSpec,
    NamespacePlan,
)

MIB = 1024 * 1024
_TWO_53 = float(2**53)
_WEIGHT_SCALE = float(2**20)
_DAY_MS = 86_400_000
_BURST_WINDOW = 20
_BURST_PROBABILITY = 0.02
_DIURNAL_AMPLITUDE = 0.6
_CORES = 8
_NIC_KBITS = 10.0 * 1024 * 1024  # 10 Gbit/s in kbit/s, as Pulsar reports NIC limits
_HEAP_MIB = 8192.0
_DIRECT_MIB = 4096.0

# Salts keep the hash streams of different choices apart.
_SALT_BURST, _SALT_SIZE, _SALT_START, _SALT_LENGTH, _SALT_NOISE = 1, 2, 3, 4, 5
_SALT_CANDIDATE, _SALT_FALLBACK, _SALT_HEAP = 6, 7, 8


# Integer quotients below are computed as floor(double / double): with operands below 2**53
# the correctly rounded quotient never reaches the next integer, so they are exact.


def uniform(seed: int, salt: int, *coordinates: Column) -> Column:
    """A number in [0, 1) that is a hash of the seed, the salt and the coordinates."""
    hashed = F.xxhash64(F.lit(seed).cast("long"), F.lit(salt).cast("long"), *coordinates)
    return F.shiftrightunsigned(hashed, 11).cast("double") / F.lit(_TWO_53)


def _binary_fraction(value: Column) -> Column:
    """Round to a multiple of 2**-10: sums of such numbers are exact in doubles."""
    return F.floor(value * F.lit(1024.0) + F.lit(0.5)).cast("double") / F.lit(1024.0)


def _whole(value: Column) -> Column:
    return F.floor(value + F.lit(0.5)).cast("double")


def namespace_rows(plans: Sequence[NamespacePlan]) -> list[tuple[object, ...]]:
    """The plan as rows for ``spark.createDataFrame(rows, NAMESPACE_PLAN_SCHEMA)``."""
    return [
        (
            p.index,
            p.tenant,
            p.namespace,
            p.bundle_count,
            p.bundle_offset,
            p.topic_count,
            p.msg_rate,
            p.fanout,
            p.msg_size,
            p.phase,
        )
        for p in plans
    ]


NAMESPACE_PLAN_SCHEMA = (
    "ns_index long, tenant string, namespace string, bundle_count long, bundle_offset long, "
    "topic_count long, ns_msg_rate double, fanout long, msg_size long, phase double"
)


def synthetic_topics(namespaces: DataFrame, spec: GenerateSpec) -> DataFrame:
    """Every topic: ``bundle_id``, ``topic``, integer ``weight``, producers, consumers."""
    exploded = namespaces.select(
        "*", F.explode(F.sequence(F.lit(0).cast("long"), F.col("topic_count") - 1)).alias("j")
    )
    topic = F.format_string("persistent://%s/topic-%d", F.col("namespace"), F.col("j"))
    segment = F.floor(F.lit(2.0**32) / F.col("bundle_count")).cast("long")
    position = F.least(F.floor(F.col("hash") / segment).cast("long"), F.col("bundle_count") - 1)
    weight = F.floor(F.pow(F.col("j") + 1, F.lit(-spec.skew)) * F.lit(_WEIGHT_SCALE)) + 1
    return (
        exploded.withColumn("topic", topic)
        .withColumn("hash", F.crc32(F.col("topic").cast("binary")))
        .select(
            "namespace",
            "ns_index",
            "topic",
            "j",
            (F.col("bundle_offset") + position).alias("bundle_id"),
            weight.cast("long").alias("weight"),
            (F.lit(1) + F.pmod(F.col("j"), F.lit(2))).cast("long").alias("producers"),
            F.col("fanout").cast("long").alias("consumers"),
        )
    )


def synthetic_bundles(namespaces: DataFrame, topics: DataFrame, spec: GenerateSpec) -> DataFrame:
    """Every bundle with its static traits: name, range, topic count and weight, base
    rate, sessions, traffic shape and candidate brokers."""
    exploded = namespaces.select(
        "*", F.explode(F.sequence(F.lit(0).cast("long"), F.col("bundle_count") - 1)).alias("i")
    )
    segment = F.floor(F.lit(2.0**32) / F.col("bundle_count")).cast("long")
    lower = F.col("i") * segment
    upper = F.when(
        F.col("i") == F.col("bundle_count") - 1, F.lit(0xFFFFFFFF).cast("long")
    ).otherwise((F.col("i") + 1) * segment)
    ranges = exploded.select(
        (F.col("bundle_offset") + F.col("i")).alias("bundle_id"),
        F.format_string("%s/0x%08x_0x%08x", F.col("namespace"), lower, upper).alias("bundle"),
        "namespace",
        "ns_index",
        "ns_msg_rate",
        "fanout",
        "msg_size",
        "phase",
    )
    per_bundle = topics.groupBy("bundle_id").agg(
        F.count("*").alias("topics"),
        F.sum("weight").alias("bundle_weight"),
        F.sum("producers").alias("producers"),
        F.sum("consumers").alias("consumers"),
    )
    per_namespace = topics.groupBy("ns_index").agg(F.sum("weight").alias("namespace_weight"))
    candidates = F.array(
        *(
            F.pmod(
                F.xxhash64(
                    F.lit(spec.seed).cast("long"),
                    F.lit(_SALT_CANDIDATE).cast("long"),
                    F.col("bundle_id"),
                    F.lit(i).cast("long"),
                ),
                F.lit(spec.brokers).cast("long"),
            )
            for i in range(CANDIDATE_BROKERS)
        )
    )
    fallback = F.pmod(
        F.xxhash64(
            F.lit(spec.seed).cast("long"), F.lit(_SALT_FALLBACK).cast("long"), F.col("bundle_id")
        ),
        F.lit(spec.stable_brokers).cast("long"),
    )
    weight = F.coalesce(F.col("bundle_weight"), F.lit(0).cast("long"))
    return (
        ranges.join(per_bundle, on="bundle_id", how="left")
        .join(per_namespace, on="ns_index", how="left")
        .select(
            "bundle_id",
            "bundle",
            "namespace",
            F.coalesce(F.col("topics"), F.lit(0).cast("long")).alias("topics"),
            weight.alias("bundle_weight"),
            (F.col("ns_msg_rate") * weight.cast("double") / F.col("namespace_weight")).alias(
                "base_rate"
            ),
            F.coalesce(F.col("producers"), F.lit(0).cast("long")).alias("producers"),
            F.coalesce(F.col("consumers"), F.lit(0).cast("long")).alias("consumers"),
            "fanout",
            "msg_size",
            "phase",
            candidates.alias("candidates"),
            fallback.alias("fallback"),
        )
    )


def traffic_factor(spec: GenerateSpec, snapshot: Column) -> Column:
    """Diurnal wave x burst x noise for the row's ``bundle_id`` at snapshot index
    ``snapshot`` (uses the row's ``phase``)."""
    time_ms = F.lit(spec.start_ms) + snapshot * F.lit(spec.interval_ms)
    day_fraction = F.pmod(time_ms, F.lit(_DAY_MS)).cast("double") / F.lit(float(_DAY_MS))
    diurnal = F.lit(1.0) + F.lit(_DIURNAL_AMPLITUDE) * F.sin(
        F.lit(2 * math.pi) * (day_fraction - F.col("phase"))
    )
    window = F.floor(snapshot / F.lit(_BURST_WINDOW)).cast("long")
    within = F.pmod(snapshot, F.lit(_BURST_WINDOW))
    bundle = F.col("bundle_id")
    start = F.floor(uniform(spec.seed, _SALT_START, bundle, window) * 10)
    length = F.lit(3) + F.floor(uniform(spec.seed, _SALT_LENGTH, bundle, window) * 8)
    size = F.lit(2.0) + F.lit(8.0) * uniform(spec.seed, _SALT_SIZE, bundle, window)
    burst = F.when(
        (uniform(spec.seed, _SALT_BURST, bundle, window) < F.lit(_BURST_PROBABILITY))
        & (within >= start)
        & (within < start + length),
        size,
    ).otherwise(F.lit(1.0))
    noise = F.lit(0.9) + F.lit(0.2) * uniform(spec.seed, _SALT_NOISE, bundle, snapshot)
    return diurnal * burst * noise


def lifetimes(brokers: Sequence[BrokerPlan]) -> tuple[Column, Column]:
    """Literal arrays of the brokers' first and past-last snapshot indexes."""
    joins = F.array(*(F.lit(b.join_at).cast("long") for b in brokers))
    leaves = F.array(*(F.lit(b.leave_at).cast("long") for b in brokers))
    return joins, leaves


def is_up(broker: Column, snapshot: Column, spans: tuple[Column, Column]) -> Column:
    joins, leaves = spans
    position = (broker + 1).cast("int")
    return (snapshot >= F.element_at(joins, position)) & (snapshot < F.element_at(leaves, position))


def owner(snapshot: Column, brokers: Sequence[BrokerPlan]) -> Column:
    """Index of the broker owning the row's bundle at ``snapshot``: its first candidate
    that is up, else its always-up fallback."""
    spans = lifetimes(brokers)
    picks = [
        F.when(is_up(F.col("candidates")[i], snapshot, spans), F.col("candidates")[i])
        for i in range(CANDIDATE_BROKERS)
    ]
    return F.coalesce(*picks, F.col("fallback"))


def broker_id(index: Column) -> Column:
    """``broker-0042:8080`` as :func:`ballast.pipeline.synthetic_spec.broker_name` (built
    with concatenation: ``format_string`` costs a microsecond per row)."""
    digits = index.cast("string")
    padded = F.when(index < 10000, F.lpad(digits, 4, "0")).otherwise(digits)
    return F.concat(F.lit("broker-"), padded, F.lit(":8080"))


def bundle_samples(
    ids: DataFrame, bundles: DataFrame, spec: GenerateSpec, brokers: Sequence[BrokerPlan]
) -> DataFrame:
    """``bundles`` history rows for ``ids`` = ``spark.range(snapshots * bundle_count)``
    (snapshot-major), plus ``broker_index``."""
    count = spec.bundles
    rows = ids.select(
        F.floor(F.col("id") / F.lit(count)).cast("long").alias("snapshot"),
        F.pmod(F.col("id"), F.lit(count)).cast("long").alias("bundle_id"),
    ).join(F.broadcast(bundles), on="bundle_id")
    snapshot = F.col("snapshot")
    rate_in = _binary_fraction(F.col("base_rate") * traffic_factor(spec, snapshot))
    rate_out = _binary_fraction(F.col("msg_rate_in") * F.col("fanout"))
    return (
        rows.withColumn("broker_index", owner(snapshot, brokers))
        .withColumn("msg_rate_in", rate_in)
        .withColumn("msg_rate_out", rate_out)
        .select(
            (F.lit(spec.start_ms) + snapshot * F.lit(spec.interval_ms)).alias("snapshot_ms"),
            F.lit(spec.cluster).alias("cluster"),
            broker_id(F.col("broker_index")).alias("broker"),
            "bundle",
            "namespace",
            "msg_rate_in",
            "msg_rate_out",
            _whole(F.col("msg_rate_in") * F.col("msg_size")).alias("msg_throughput_in"),
            _whole(F.col("msg_rate_out") * F.col("msg_size")).alias("msg_throughput_out"),
            "topics",
            F.col("producers").alias("producer_count"),
            F.col("consumers").alias("consumer_count"),
            F.least(F.floor(F.col("msg_rate_in") * F.col("msg_size") * 30), F.lit(512 * MIB))
            .cast("long")
            .alias("cache_size"),
            "broker_index",
        )
    )


_RATES = ("msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out")
_COUNTS = ("topics", "consumer_count", "producer_count")


def broker_samples(
    grid: DataFrame,
    bundle_rows: DataFrame,
    spec: GenerateSpec,
    brokers: Sequence[BrokerPlan],
    cpu_capacity_msg_rate: float,
) -> DataFrame:
    """``brokers`` history rows for ``grid`` = ``spark.range(snapshots * brokers)`` (only
    brokers that are up), summing ``bundle_rows`` (from :func:`bundle_samples`); host usage
    follows the load: CPU from the message rate against ``cpu_capacity_msg_rate`` (msg/s at
    full CPU, 5 % idle floor), bandwidth from throughput, direct memory from inbound bytes."""
    count = spec.brokers
    # Brokers that are up contribute a zero row each, so idle brokers report too; a union
    # and one aggregation (no join) keeps the expensive bundle rows computed once.
    idle = (
        grid.select(
            F.floor(F.col("id") / F.lit(count)).cast("long").alias("snapshot"),
            F.pmod(F.col("id"), F.lit(count)).cast("long").alias("broker_index"),
        )
        .filter(is_up(F.col("broker_index"), F.col("snapshot"), lifetimes(brokers)))
        .select(
            (F.lit(spec.start_ms) + F.col("snapshot") * F.lit(spec.interval_ms)).alias(
                "snapshot_ms"
            ),
            "broker_index",
            *(F.lit(0.0).alias(k) for k in _RATES),
            *(F.lit(0).cast("long").alias(k) for k in _COUNTS),
            F.lit(0).cast("long").alias("bundles"),
        )
    )
    loads = bundle_rows.select(
        "snapshot_ms",
        "broker_index",
        *_RATES,
        *(F.col(k).cast("long").alias(k) for k in _COUNTS),
        F.lit(1).cast("long").alias("bundles"),
    )
    joined = (
        loads.unionByName(idle)
        .groupBy("snapshot_ms", "broker_index")
        .agg(
            *(F.sum(k).alias(k) for k in _RATES),
            F.sum("topics").alias("num_topics"),
            F.sum("bundles").alias("num_bundles"),
            F.sum("consumer_count").alias("num_consumers"),
            F.sum("producer_count").alias("num_producers"),
        )
        .withColumn(
            "snapshot",
            F.floor((F.col("snapshot_ms") - F.lit(spec.start_ms)) / F.lit(spec.interval_ms)).cast(
                "long"
            ),
        )
    )
    cpu_limit = float(_CORES * 100)
    load = (F.col("msg_rate_in") + F.col("msg_rate_out")) / F.lit(cpu_capacity_msg_rate)
    cpu = F.least(F.lit(cpu_limit), F.lit(cpu_limit) * (F.lit(0.05) + F.lit(0.95) * load))
    heap = F.lit(1024.0) + F.lit(2048.0) * uniform(
        spec.seed, _SALT_HEAP, F.col("broker_index"), F.col("snapshot")
    )
    direct = F.least(
        F.lit(_DIRECT_MIB), F.lit(256.0) + F.col("msg_throughput_in") / F.lit(float(MIB)) * 4
    )
    return joined.select(
        "snapshot_ms",
        F.lit(spec.cluster).alias("cluster"),
        broker_id(F.col("broker_index")).alias("broker"),
        _binary_fraction(cpu).alias("cpu_usage"),
        F.lit(cpu_limit).alias("cpu_limit"),
        _whole(heap).alias("memory_usage"),
        F.lit(_HEAP_MIB).alias("memory_limit"),
        _whole(direct).alias("direct_memory_usage"),
        F.lit(_DIRECT_MIB).alias("direct_memory_limit"),
        _binary_fraction(F.col("msg_throughput_in") * 8 / 1024).alias("bandwidth_in_usage"),
        F.lit(_NIC_KBITS).alias("bandwidth_in_limit"),
        _binary_fraction(F.col("msg_throughput_out") * 8 / 1024).alias("bandwidth_out_usage"),
        F.lit(_NIC_KBITS).alias("bandwidth_out_limit"),
        "msg_rate_in",
        "msg_rate_out",
        "msg_throughput_in",
        "msg_throughput_out",
        "num_topics",
        "num_bundles",
        "num_consumers",
        "num_producers",
        F.col("snapshot_ms").alias("last_update_ms"),
    )


def topic_samples(
    snapshots: DataFrame,
    topics: DataFrame,
    bundles: DataFrame,
    spec: GenerateSpec,
    brokers: Sequence[BrokerPlan],
) -> DataFrame:
    """``topics`` history rows at the snapshot indexes in ``snapshots`` (column
    ``snapshot``): each topic carries its weight's share of its bundle's traffic."""
    placed = topics.select("bundle_id", "topic", "weight", "producers", "consumers").join(
        F.broadcast(bundles.drop("topics", "producers", "consumers")), on="bundle_id"
    )
    rows = placed.crossJoin(F.broadcast(snapshots))
    snapshot = F.col("snapshot")
    bundle_rate = F.col("base_rate") * traffic_factor(spec, snapshot)
    share = F.col("weight").cast("double") / F.col("bundle_weight").cast("double")
    rate_in = _binary_fraction(bundle_rate * share)
    return (
        rows.withColumn("msg_rate_in", rate_in)
        .withColumn("msg_rate_out", _binary_fraction(F.col("msg_rate_in") * F.col("fanout")))
        .select(
            (F.lit(spec.start_ms) + snapshot * F.lit(spec.interval_ms)).alias("snapshot_ms"),
            F.lit(spec.cluster).alias("cluster"),
            broker_id(owner(snapshot, brokers)).alias("broker"),
            "bundle",
            "namespace",
            "topic",
            "msg_rate_in",
            "msg_rate_out",
            _whole(F.col("msg_rate_in") * F.col("msg_size")).alias("msg_throughput_in"),
            _whole(F.col("msg_rate_out") * F.col("msg_size")).alias("msg_throughput_out"),
            F.col("producers").alias("producer_count"),
            F.col("consumers").alias("consumer_count"),
        )
    )
