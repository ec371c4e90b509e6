"""What a simulation measures, as pure functions of arrays and records.

- A broker's **load** is its max resource usage, weighted as the load manager weights it
  (``loadBalancer*ResourceWeight``): CPU from messages and bytes handled, NIC in and out,
  memory — the same model :class:`~ballast.broker.host_usage.ModelledHostUsage` reports —
  computed from the traffic actually flowing through the broker at that instant (not from its
  last report).
- The **lower bound** of the best possible max load: no placement can do better than the
  cluster's mean load (each resource's total usage over the brokers' total capacity — the mean
  broker load when one resource dominates) nor than the load of the largest bundle alone on the
  biggest broker. ``ratio`` = achieved max load / bound (1.0 is perfect).
- **Convergence**: the time from a reference (the last event) until the standard deviation of
  broker loads stays at or below the target until the end.
- A **bounce**: a bundle the balancer moved off a broker that comes back to it less than the
  grace period later (by any decision: transfer, or placement after an unload).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ballast.broker.host_usage import BrokerCapacity
from ballast.model.loaddata.usage import ResourceWeights

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Capacities:
    """Brokers' capacities as arrays (one entry per broker)."""

    cores: Floats
    cpu_per_msg_s: Floats
    cpu_per_byte_s: Floats
    nic_bytes_per_s: Floats
    memory_mb: Floats
    base_memory_mb: Floats
    memory_per_topic_mb: Floats

    @classmethod
    def of(cls, capacities: Sequence[BrokerCapacity]) -> Capacities:
        return cls(
            **{
                name: np.array([getattr(c, name) for c in capacities], dtype=np.float64)
                for name in _CAPACITY_FIELDS
            }
        )

    @classmethod
    def repeated(cls, capacity: BrokerCapacity, count: int) -> Capacities:
        """``of([capacity] * count)`` without the list."""
        return cls(
            **{
                name: np.full(count, getattr(capacity, name), dtype=np.float64)
                for name in _CAPACITY_FIELDS
            }
        )


# Every column of Capacities, each named as the BrokerCapacity field it holds.
_CAPACITY_FIELDS = tuple(f.name for f in dataclasses.fields(Capacities))


@dataclass(frozen=True, slots=True)
class Usage:
    """Per broker (or per bundle): each resource's usage numerator and its capacity."""

    cpu: tuple[Floats, Floats]
    memory: tuple[Floats, Floats]
    bandwidth_in: tuple[Floats, Floats]
    bandwidth_out: tuple[Floats, Floats]

    def weighted(self, weights: ResourceWeights) -> list[tuple[float, Floats, Floats]]:
        return [
            (weights.cpu, *self.cpu),
            (weights.memory, *self.memory),
            (weights.bandwidth_in, *self.bandwidth_in),
            (weights.bandwidth_out, *self.bandwidth_out),
        ]


def usage_of(
    rate_in: Floats,
    rate_out: Floats,
    tput_in: Floats,
    tput_out: Floats,
    topics: Floats,
    capacity: Capacities,
) -> Usage:
    """Each resource's usage and limit for the given traffic (element-wise)."""
    busy_cores = (rate_in + rate_out) * capacity.cpu_per_msg_s + (
        tput_in + tput_out
    ) * capacity.cpu_per_byte_s
    memory = capacity.base_memory_mb + topics * capacity.memory_per_topic_mb
    return Usage(
        cpu=(busy_cores, capacity.cores),
        memory=(memory, capacity.memory_mb),
        bandwidth_in=(tput_in, capacity.nic_bytes_per_s),
        bandwidth_out=(tput_out, capacity.nic_bytes_per_s),
    )


def loads(usage: Usage, weights: ResourceWeights) -> Floats:
    """Weighted max resource usage, as a fraction, element-wise."""
    result: Floats | None = None
    for weight, used, limit in usage.weighted(weights):
        if weight <= 0:
            continue
        share = np.divide(used, limit, out=np.zeros_like(used), where=limit > 0) * weight
        result = share if result is None else np.maximum(result, share)
    if result is None:
        return np.zeros_like(usage.cpu[0])
    return result


def mean_load(usage: Usage, weights: ResourceWeights) -> float:
    """The cluster's mean load: for each weighted resource, total usage over total capacity;
    the largest of these."""
    best = 0.0
    for weight, used, limit in usage.weighted(weights):
        total = float(np.sum(limit))
        if weight > 0 and total > 0:
            best = max(best, float(np.sum(used)) / total * weight)
    return best


@dataclass(frozen=True, slots=True)
class LoadFigures:
    """The load statistics of one instant."""

    brokers: int
    mean: float
    std: float
    minimum: float
    maximum: float
    bound: float

    @property
    def max_over_mean(self) -> float:
        """The heaviest broker over the mean (0 at no load; NaN without brokers)."""
        if self.brokers == 0:
            return math.nan
        return self.maximum / self.mean if self.mean > 0 else 0.0

    @property
    def ratio(self) -> float:
        """Achieved max load over the lower bound of the best possible max load (NaN
        without brokers: there is no max load to compare)."""
        if self.brokers == 0:
            return math.nan
        return self.maximum / self.bound if self.bound > 0 else 1.0


def load_figures(broker_loads: Floats, cluster_mean: float, largest_bundle: float) -> LoadFigures:
    """Statistics of broker loads (population standard deviation) and the lower bound
    ``max(cluster_mean, largest_bundle)``. Without brokers every figure but the bound is NaN:
    an empty cluster is not a balanced one."""
    if broker_loads.size == 0:
        nan = math.nan
        return LoadFigures(0, nan, nan, nan, nan, max(cluster_mean, largest_bundle))
    return LoadFigures(
        brokers=int(broker_loads.size),
        mean=float(np.mean(broker_loads)),
        std=float(np.std(broker_loads)),
        minimum=float(np.min(broker_loads)),
        maximum=float(np.max(broker_loads)),
        bound=max(cluster_mean, largest_bundle),
    )


def convergence_time(
    times_s: Sequence[float], stds: Sequence[float], target: float, since_s: float
) -> float | None:
    """Seconds from ``since_s`` until the standard deviation stays at or below ``target`` to
    the last sample (0 if it already does at ``since_s``); None if the last sample is above
    the target or there is no sample after ``since_s``."""
    settled: float | None = None
    for time_s, std in zip(times_s, stds, strict=True):
        if time_s < since_s:
            continue
        if std <= target:
            if settled is None:
                settled = time_s
        else:
            settled = None
    if settled is None:
        return None
    return max(0.0, settled - since_s)


@dataclass(frozen=True, slots=True)
class Decision:
    """A decision of the leader, as the simulation recorded it (time in seconds from the
    start)."""

    t_s: float
    action: str
    bundle: str
    source: str | None
    destination: str | None
    origin: str
    reason: str


def count_bounces(decisions: Iterable[Decision], grace_period_s: float) -> int:
    """Bundles the balancer moved off a broker that it brought back there less than
    ``grace_period_s`` later (a shedding transfer back, or a lookup's placement back after a
    shedding unload); splits end a bundle's story. Moves made for other reasons (a broker
    draining, failing over) are not the balancer's: a bundle drained off a restarting broker
    may come home, and a bundle drained back is the broker's leaving, not an oscillation."""
    # bundle -> broker it was shed off -> (when, whether by an unload)
    left: dict[str, dict[str, tuple[float, bool]]] = {}
    bounces = 0
    for decision in decisions:
        history = left.setdefault(decision.bundle, {})
        if decision.action == "split":
            left.pop(decision.bundle, None)
            continue
        arrived = decision.destination
        balancer = decision.origin in ("shedding", "lookup")
        if arrived is not None and balancer and decision.action in ("transfer", "assign"):
            shed = history.pop(arrived, None)
            # A lookup places a bundle only when it has no owner: after a shedding unload
            # that is the balancer's doing; after a transfer, something else (a crash, a
            # drain) took the bundle off its new broker.
            back = shed is not None and (decision.action == "transfer" or shed[1])
            if back and shed is not None and decision.t_s - shed[0] < grace_period_s:
                bounces += 1
        if (
            decision.source is not None
            and decision.action in ("transfer", "unload")
            and decision.origin == "shedding"
        ):
            history[decision.source] = (decision.t_s, decision.action == "unload")
    return bounces


def moves_by_origin(decisions: Iterable[Decision]) -> dict[str, dict[str, int]]:
    """``{origin: {action: count}}``, sorted for stable output."""
    counts: dict[str, dict[str, int]] = {}
    for decision in decisions:
        by_action = counts.setdefault(decision.origin, {})
        by_action[decision.action] = by_action.get(decision.action, 0) + 1
    return {o: dict(sorted(a.items())) for o, a in sorted(counts.items())}


def shedding_moves(decisions: Iterable[Decision]) -> int:
    """Moves the shedding strategy made (transfers and unloads)."""
    return sum(
        1 for d in decisions if d.origin == "shedding" and d.action in ("transfer", "unload")
    )


def first_loaded(
    times_s: Sequence[float],
    loads_by_time: Sequence[Mapping[str, float]],
    broker: str,
    since: float,
) -> float | None:
    """The first time at or after ``since`` when ``broker`` carries load (> 0), or None."""
    for time_s, figures in zip(times_s, loads_by_time, strict=True):
        if time_s >= since and figures.get(broker, 0.0) > 0:
            return time_s
    return None
