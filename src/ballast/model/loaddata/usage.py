"""Host resource usage as a broker reports it: Pulsar's ``ResourceUsage`` (with its 32-bit
float percent arithmetic) and ``SystemResourceUsage``, and the per-resource weights the load
manager applies."""

from __future__ import annotations

import functools
import math
import struct
from dataclasses import dataclass

import msgspec

_F32 = struct.Struct("<f")


def f32(value: float) -> float:
    """Round to the nearest 32-bit float (Java's ``(float)`` cast), widened back to a double.
    Values beyond the float range become infinities, as in Java."""
    try:
        return float(_F32.unpack(_F32.pack(value))[0])
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")


def java_divide(numerator: float, denominator: float) -> float:
    """IEEE division as Java does it: dividing by zero gives an infinity, or NaN for 0/0 (a
    positive limit can round to 0 in 32 bits)."""
    if denominator == 0:
        if numerator == 0 or math.isnan(numerator):
            return math.nan
        return math.copysign(math.inf, numerator) * math.copysign(1.0, denominator)
    return numerator / denominator


def java_max(*values: float) -> float:
    """Pulsar's ``max(double...)``: starts at -infinity and takes ``d > max``, so NaN values
    are skipped."""
    result = -math.inf
    for value in values:
        result = max(result, value)
    return result


# gc=False: only numbers (and structs of numbers) inside, so no reference cycles; the leader
# and the simulator make millions of these, and untracked ones cost the collector nothing.
class ResourceUsage(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One resource: ``usage`` out of ``limit`` (CPU percent of all cores, memory MiB,
    bandwidth KB/s — whatever unit, both sides the same)."""

    usage: float = 0.0
    limit: float = 0.0

    def percent_usage(self) -> float:
        """``usage / limit * 100`` computed in 32-bit floats exactly as Pulsar's
        ``percentUsage()`` (0 when the limit is not positive). Correctly rounded float32
        division and multiplication equal the float64 result rounded to float32 (53 >= 2*24+2
        bits), so no float32 library is needed."""
        return _percent_usage(self.usage, self.limit)


@functools.lru_cache(maxsize=1 << 16)
def _percent_usage(usage: float, limit: float) -> float:
    # Memoised: the same reports are read again and again (every placement, every cycle).
    proportion = 0.0
    if limit > 0:
        proportion = f32(java_divide(f32(usage), f32(limit)))
    return f32(proportion * 100.0)


UNKNOWN_USAGE = ResourceUsage(usage=-1.0, limit=-1.0)


class SystemResourceUsage(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The five resources a host-usage provider measures. Pulsar defaults each to ``-1/-1``
    (unknown, which reads as 0%)."""

    cpu: ResourceUsage = UNKNOWN_USAGE
    memory: ResourceUsage = UNKNOWN_USAGE
    direct_memory: ResourceUsage = UNKNOWN_USAGE
    bandwidth_in: ResourceUsage = UNKNOWN_USAGE
    bandwidth_out: ResourceUsage = UNKNOWN_USAGE


@dataclass(frozen=True, slots=True)
class ResourceWeights:
    """Weights of each resource in the weighted max usage (``loadBalancer*ResourceWeight``);
    Pulsar's current defaults count CPU and bandwidth only."""

    cpu: float = 1.0
    memory: float = 0.0
    direct_memory: float = 0.0
    bandwidth_in: float = 1.0
    bandwidth_out: float = 1.0
