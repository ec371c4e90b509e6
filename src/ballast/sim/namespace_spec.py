"""A namespace of a scenario's workload: its bundles, topics and their traffic."""

from __future__ import annotations

from dataclasses import dataclass

from ballast.sim.processes import ProcessSpec, Recorded


@dataclass(frozen=True, slots=True)
class NamespaceSpec:
    """A namespace and its topics. ``rate`` is the mean publish rate per topic (msg/s), or
    with ``rate_max`` the lower end of a uniform draw per topic (Pulsar's load-simulation
    ``--rand-rate``), ``size`` the mean message size (bytes; log-normal with ``size_sigma``
    when above 0),
    ``popularity`` the Zipf exponent of topic rates (0: every topic alike), ``processes`` what
    the rates do over time (multiplied together), ``size_series`` what the message sizes do
    (a replayed load history's: multiples of ``size`` over time; None: they stay)."""

    name: str
    bundles: int
    topics: int
    rate: float = 10.0
    size: float = 1024.0
    size_sigma: float = 0.0
    fan_out: float = 1.0
    producers: int = 1
    consumers: int = 1
    popularity: float = 0.0
    processes: tuple[ProcessSpec, ...] = ()
    anti_affinity_group: str | None = None
    rate_max: float | None = None
    size_series: Recorded | None = None
