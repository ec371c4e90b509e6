"""The invariants every runtime scenario checks after each step (once the cluster settles);
the checker lives in :mod:`ballast.sim.invariants`, which the simulator runs too."""

from __future__ import annotations

from ballast.broker.cluster import LocalCluster
from ballast.clock import Clock
from ballast.metadata.store import MetadataStore
from ballast.sim.invariants import (
    InvariantViolation,
    check_invariants,
    heartbeat,
    ownership_records,
)

__all__ = [
    "InvariantViolation",
    "check_invariants",
    "heartbeat",
    "ownership_records",
    "settle_and_check",
]


async def settle_and_check(
    cluster: LocalCluster, observer: MetadataStore, clock: Clock, seconds: float = 1.0
) -> None:
    await clock.sleep(seconds)
    await check_invariants(cluster, observer)
