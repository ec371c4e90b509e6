"""Broker resource usage as Pulsar computes it, as Spark columns.

``percentUsage()`` is 32-bit float arithmetic (``(float) usage / (float) limit * 100``);
these columns reproduce it bit for bit (a correctly rounded float32 operation equals the
float64 operation rounded to float32, because 53 >= 2 * 24 + 2), as
:class:`ballast.model.loaddata.ResourceUsage` does. The maxima skip NaN like Java's
``max(double...)`` loop (Spark's ``greatest`` would rank NaN highest).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ballast.model.loaddata import ResourceWeights

RESOURCES = ("cpu", "memory", "direct_memory", "bandwidth_in", "bandwidth_out")
_NEGATIVE_INFINITY = float("-inf")


def _f32(value: Column) -> Column:
    """Round a double to float32 and widen it back (Java's ``(float)`` cast)."""
    return value.cast("float").cast("double")


def percent_usage(usage: Column, limit: Column) -> Column:
    """Pulsar's ``ResourceUsage.percentUsage()`` widened to double: 0 when ``limit <= 0``."""
    usage32 = _f32(usage)
    limit32 = _f32(limit)
    # A positive limit below the float32 range rounds to 0; Java then divides by zero.
    # (Spark orders NaN above every number, so NaN is tested first.)
    by_zero = (
        F.when(F.isnan(usage32), F.lit(float("nan")))
        .when(usage32 > 0, F.lit(float("inf")))
        .when(usage32 < 0, F.lit(_NEGATIVE_INFINITY))
        .otherwise(F.lit(float("nan")))
    )
    proportion = (
        F.when(F.isnan(limit) | (limit <= 0), F.lit(0.0))
        .when(limit32 == 0, by_zero)
        .otherwise(_f32(usage32 / limit32))
    )
    return _f32(proportion * F.lit(100.0))


def java_max(*values: Column) -> Column:
    """The largest non-NaN value, -infinity if there is none."""
    # nanvl names each value once; ``when(isnan(v), null).otherwise(v)`` names it twice, and
    # the generated code of the weighted usage then grew past what the JVM compiles (HotSpot
    # leaves methods over 8,000 bytes of bytecode interpreted): 2 µs a row instead of 0.2.
    cleaned = [F.nanvl(v, F.lit(None).cast("double")) for v in values]
    return F.coalesce(F.greatest(*cleaned), F.lit(_NEGATIVE_INFINITY))


def max_resource_usage() -> Column:
    """``getMaxResourceUsage()`` of a ``brokers`` row: the largest of CPU, direct memory and
    bandwidth in/out percent (heap skipped) / 100, in float32 as Pulsar returns it."""
    percents = [
        percent_usage(F.col(f"{r}_usage"), F.col(f"{r}_limit"))
        for r in ("cpu", "direct_memory", "bandwidth_in", "bandwidth_out")
    ]
    return _f32(java_max(*percents) / F.lit(100.0))


def weighted_max_resource_usage(weights: ResourceWeights) -> Column:
    """``getMaxResourceUsageWithWeight`` of a ``brokers`` row: ``max(percent_i * w_i) / 100``
    over all five resources, in double."""
    by_resource = {
        "cpu": weights.cpu,
        "memory": weights.memory,
        "direct_memory": weights.direct_memory,
        "bandwidth_in": weights.bandwidth_in,
        "bandwidth_out": weights.bandwidth_out,
    }
    terms = [
        percent_usage(F.col(f"{r}_usage"), F.col(f"{r}_limit")) * F.lit(float(w))
        for r, w in by_resource.items()
    ]
    return java_max(*terms) / F.lit(100.0)


def with_usage(brokers: DataFrame, weights: ResourceWeights) -> DataFrame:
    """``brokers`` rows plus ``max_resource_usage`` and ``weighted_usage`` (fractions),
    ``msg_rate`` (in + out, msg/s) and ``msg_throughput`` (in + out, bytes/s)."""
    return brokers.select(
        "*",
        max_resource_usage().alias("max_resource_usage"),
        weighted_max_resource_usage(weights).alias("weighted_usage"),
        (F.col("msg_rate_in") + F.col("msg_rate_out")).alias("msg_rate"),
        (F.col("msg_throughput_in") + F.col("msg_throughput_out")).alias("msg_throughput"),
    )
