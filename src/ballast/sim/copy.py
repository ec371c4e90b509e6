"""A cluster's load copied into a scenario, as Pulsar's load-simulation controller copies a
live cluster (its ``copy`` command): every bundle of the source becomes a namespace of one
bundle whose topics carry the bundle's traffic, so that a strategy can be tried on the load a
real cluster has.

The source is a load snapshot (what ``ballast decide`` reads: a snapshot JSON file or a dump
of Pulsar's ``/loadbalance`` tree). A bundle's traffic is what its broker last reported for it
(``lastStats``: rates, throughputs, topics, connections); a bundle only the leader's bundle
data knows (``bundle-data``) is copied from its long-term averages. Beyond Pulsar's copy,
which gives each bundle one topic at the mean of its in and out rates, the copy keeps the
topic count, the publish rate, the message size (throughput in over rate in) and the fan-out
(rate out over rate in), so the simulated bundle reports the source's rates and throughput
in again (and throughput out as rate out times that size).

The brokers' capacity follows the source's reports (cores, NIC and memory from their limits,
the CPU cost of traffic scaled to the CPU they report using), so a copied cluster starts as
loaded as the source; brokers whose limits differ keep their own capacity (a cluster of mixed
machines stays mixed). ``[cluster.capacity]`` overrides any of it.

Not copied: which broker owns which bundle (the simulated cluster places them itself, as
Pulsar's copy does), the namespaces' policies (every copied namespace is an ordinary one of
the scenario's tenant), and traffic out of a bundle nothing is published to (consumers
reading a backlog): the simulated load comes from publishing.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType

from ballast.balance.snapshot import LoadSnapshot
from ballast.balance.snapshot_json import ParsedSnapshot
from ballast.broker.host_usage import BrokerCapacity
from ballast.model.bundles import BundleName, BundleRange, InvalidBundle
from ballast.model.codec import ModelError
from ballast.model.loaddata import LocalBrokerData, NamespaceBundleStats, ResourceUsage
from ballast.model.naming import NamespaceName
from ballast.sim.namespace_spec import NamespaceSpec
from ballast.sim.processes import ProcessSpec, Recorded
from ballast.sim.schema import ScenarioError
from ballast.snapshot_files import read_snapshot_path

DEFAULT_SIZE = 1024.0
DEFAULT_CAPACITY = BrokerCapacity()
EMPTY_SERIES: Mapping[str, Recorded] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class CopySpec:
    """The ``[copy]`` table: where the load comes from and what to do with it.
    ``rate_multiplier`` scales every rate (Pulsar's ``--rate-multiplier``); ``popularity``
    and ``processes`` apply to the topics of every copied bundle as in ``[[namespaces]]``;
    ``capacity``: the brokers' capacity follows the source's reports
    (:func:`fit_capacity`); ``cluster``, ``replay`` and ``replay_brokers``: for a load
    history, which cluster, whether the rates follow its snapshots
    (:mod:`ballast.sim.history_source`) and whether its brokers join and leave as it shows
    (:mod:`ballast.sim.churn`)."""

    source: str
    rate_multiplier: float = 1.0
    popularity: float = 0.0
    processes: tuple[ProcessSpec, ...] = ()
    capacity: bool = True
    cluster: str | None = None
    replay: bool = True
    replay_brokers: bool = True


@dataclass(frozen=True, slots=True)
class BrokerLimits:
    """What one source broker reports it has (0: not reported): CPU in percent of a core
    summed over its cores, heap in MiB, and NIC each way as reported (Pulsar: kbit/s)."""

    cpu: float = 0.0
    memory_mb: float = 0.0
    nic_in: float = 0.0
    nic_out: float = 0.0

    @classmethod
    def of(cls, report: LocalBrokerData) -> BrokerLimits:
        return cls(
            report.cpu.limit,
            report.memory.limit,
            report.bandwidth_in.limit,
            report.bandwidth_out.limit,
        )


@dataclass(frozen=True, slots=True)
class CapacityFit:
    """The brokers' capacity fitted to the source's reports (:func:`fit_capacity`): ``alike``
    is what every broker has when they are all the same machine (the median broker's cores
    and memory); ``nic_in`` and ``nic_out``, where the reports give them, the NIC fitted each
    way (bytes/s) and the brokers' mean reported limit it stands for."""

    alike: BrokerCapacity
    nic_in: tuple[float, float] | None = None
    nic_out: tuple[float, float] | None = None

    def of(self, limits: BrokerLimits) -> BrokerCapacity:
        """One broker's own capacity: ``alike`` with the broker's cores and memory, and its
        NIC as much above or below the fitted one as its limit is against the mean (the
        busier direction, as for ``alike``). A limit left at 0 keeps ``alike``'s figure; the
        CPU costs of traffic stay the cluster's (they belong to the software, not the
        machine)."""
        alike = self.alike
        nics = []
        for fitted, limit in ((self.nic_in, limits.nic_in), (self.nic_out, limits.nic_out)):
            if fitted is not None and limit > 0.0:
                nic, mean = fitted
                # a broker at the mean keeps the fitted NIC exactly (the mean of equal
                # limits can be off by a rounding)
                nics.append(nic if math.isclose(limit, mean) else nic * limit / mean)
        return replace(
            alike,
            cores=limits.cpu / 100.0 if limits.cpu > 0.0 else alike.cores,
            memory_mb=limits.memory_mb if limits.memory_mb > 0.0 else alike.memory_mb,
            nic_bytes_per_s=min(nics) if nics else alike.nic_bytes_per_s,
        )


@dataclass(frozen=True, slots=True)
class CopiedLoad:
    """What a copy gives the scenario: the source's broker count, one namespace per bundle,
    the capacity fit (None: not fitted), the bundles left out (no topic and no traffic;
    stale bundle data) and those whose traffic out was not copied (nothing published to
    them); ``capacities``: each source broker's own capacity in name order (the simulated
    brokers' order), empty when not fitted or when every broker has the same."""

    brokers: int
    namespaces: tuple[NamespaceSpec, ...]
    fit: CapacityFit | None
    idle_bundles: int
    outbound_only_bundles: int
    stale_bundles: int
    capacities: tuple[BrokerCapacity, ...] = ()

    @property
    def capacity(self) -> BrokerCapacity | None:
        """The capacity every broker has when they are alike."""
        return None if self.fit is None else self.fit.alike

    def notes(self, source: str) -> tuple[str, ...]:
        """What the user should know of the copy (shown by ``ballast simulate``)."""
        notes = [f"copied {len(self.namespaces)} bundles on {self.brokers} brokers from {source}"]
        kinds = len(set(self.capacities))
        if kinds:
            notes.append(f"the brokers' capacities copied broker by broker ({kinds} kinds)")
        if self.outbound_only_bundles:
            notes.append(
                f"{self.outbound_only_bundles} bundles had traffic out but none in; their "
                "topics are copied without it"
            )
        if self.idle_bundles:
            notes.append(f"{self.idle_bundles} bundles without topics or traffic left out")
        if self.stale_bundles:
            notes.append(
                f"{self.stale_bundles} bundles of bundle data left out: their ranges overlap "
                "bundles taken already (stale data of split or moved bundles)"
            )
        return tuple(notes)


def copied_namespace_name(tenant: str, bundle: str) -> str:
    """``public/default/0x00000000_0x40000000`` → ``TENANT/public.default.0x00000000_0x40000000``:
    the source's tenant, namespace and range, kept readable in one namespace name (valid
    whenever the source's bundle name is: every part's characters, and ``.``, are allowed in a
    namespace name)."""
    return f"{tenant}/{bundle.replace('/', '.')}"


def _overlaps(bundle: BundleName, taken: Sequence[BundleRange]) -> bool:
    return any(bundle.range.lower < r.upper and r.lower < bundle.range.upper for r in taken)


def bundle_traffic(snapshot: LoadSnapshot) -> tuple[dict[str, NamespaceBundleStats], int]:
    """Every bundle's traffic, and how many bundles were left out as stale: as its broker
    reported it, else the leader's long-term averages (with its topic count) if they hold a
    sample. A bundle two brokers report is taken from the first, as ``ballast decide`` takes
    its owner. Bundle data whose range overlaps a bundle already taken is stale (Pulsar keeps
    the data of a bundle after it is split or unloaded) and left out, so no load is counted
    twice."""
    traffic: dict[str, NamespaceBundleStats] = {}
    taken: dict[NamespaceName, list[BundleRange]] = {}
    for data in snapshot.brokers.values():
        for bundle, stats in data.local_data.last_stats.items():
            if bundle not in traffic:
                traffic[bundle] = stats
                parsed = BundleName.parse(bundle)
                taken.setdefault(parsed.namespace, []).append(parsed.range)
    stale = 0
    for bundle, averaged in sorted(snapshot.bundles.items()):
        if bundle in traffic or averaged.long_term_data.num_samples == 0:
            continue  # reported, or never sampled (Pulsar's default figures, not load)
        parsed = BundleName.parse(bundle)
        ranges = taken.setdefault(parsed.namespace, [])
        if _overlaps(parsed, ranges):
            stale += 1
            continue
        ranges.append(parsed.range)
        long_term = averaged.long_term_data
        traffic[bundle] = NamespaceBundleStats(
            msg_rate_in=long_term.msg_rate_in,
            msg_rate_out=long_term.msg_rate_out,
            msg_throughput_in=long_term.msg_throughput_in,
            msg_throughput_out=long_term.msg_throughput_out,
            topics=averaged.topics,
        )
    return traffic, stale


def copy_load(
    snapshot: LoadSnapshot,
    spec: CopySpec,
    tenant: str,
    series: Mapping[str, Recorded] = EMPTY_SERIES,
    size_series: Mapping[str, Recorded] = EMPTY_SERIES,
) -> CopiedLoad:
    """The scenario's share of ``snapshot`` (pure): per bundle with topics or traffic, a
    namespace of one bundle whose topics together publish its rate in (times the
    multiplier), at its message size, each message delivered rate-out / rate-in times;
    connections per topic rounded from the bundle's counts (at least one producer where
    messages come in, one consumer where they go out). A bundle with a recorded ``series``
    follows it over time, after the copy's own processes, and its message size follows
    ``size_series``."""
    traffic, stale = bundle_traffic(snapshot)
    namespaces: list[NamespaceSpec] = []
    idle = outbound_only = 0
    for bundle, stats in sorted(traffic.items()):
        rate_in = stats.msg_rate_in
        if rate_in <= 0.0 and stats.msg_rate_out > 0.0:
            outbound_only += 1  # its topics are copied, the backlog they drain is not
        elif rate_in <= 0.0 and stats.topics == 0:
            idle += 1
            continue
        topics = max(stats.topics, 1)
        published = rate_in > 0.0
        namespaces.append(
            NamespaceSpec(
                name=copied_namespace_name(tenant, bundle),
                bundles=1,
                topics=topics,
                rate=rate_in * spec.rate_multiplier / topics,
                size=max(stats.msg_throughput_in / rate_in, 1.0) if published else DEFAULT_SIZE,
                fan_out=stats.msg_rate_out / rate_in if published else 1.0,
                # a topic published to has a producer, one read from a consumer
                producers=max(round(stats.producer_count / topics), int(published)),
                consumers=max(round(stats.consumer_count / topics), int(stats.msg_rate_out > 0)),
                popularity=spec.popularity,
                processes=(*spec.processes, series[bundle]) if bundle in series else spec.processes,
                size_series=size_series.get(bundle),
            )
        )
    fit = fit_capacity(snapshot, traffic.values()) if spec.capacity else None
    own = (
        tuple(fit.of(BrokerLimits.of(snapshot.local(b))) for b in sorted(snapshot.brokers))
        if fit is not None
        else ()
    )
    capacities = own if len(set(own)) > 1 else ()
    return CopiedLoad(
        len(snapshot.brokers), tuple(namespaces), fit, idle, outbound_only, stale, capacities
    )


def _median(values: Sequence[float]) -> float | None:
    known = sorted(v for v in values if v > 0.0)
    return statistics.median(known) if known else None


def fit_capacity(
    snapshot: LoadSnapshot,
    traffic: Iterable[NamespaceBundleStats],
    base: BrokerCapacity = DEFAULT_CAPACITY,
) -> CapacityFit:
    """``base`` fitted to the source's reports, so that the copied traffic loads the
    simulated brokers as much as the source's brokers report (a cluster at 60% CPU
    simulates at 60%): cores and memory from the median broker's limits; the CPU costs of a
    message and a byte scaled so that the traffic costs the CPU the brokers report using in
    all; the NIC set so that the traffic fills it as much as the brokers report their NICs
    filled (the busier of in and out). What the reports leave at 0 stays as in ``base``.
    :meth:`CapacityFit.of` gives each broker its own cores, memory and NIC from there."""
    reports = [data.local_data for data in snapshot.brokers.values()]
    stats = list(traffic)
    cores = _median([r.cpu.limit / 100.0 for r in reports])
    memory_mb = _median([r.memory.limit for r in reports])
    used_cores = sum(r.cpu.usage for r in reports) / 100.0
    modelled_cores = sum(
        (s.msg_rate_in + s.msg_rate_out) * base.cpu_per_msg_s
        + (s.msg_throughput_in + s.msg_throughput_out) * base.cpu_per_byte_s
        for s in stats
    )
    scale = used_cores / modelled_cores if used_cores > 0.0 and modelled_cores > 0.0 else 1.0
    directions = (
        ([r.bandwidth_in for r in reports], [s.msg_throughput_in for s in stats]),
        ([r.bandwidth_out for r in reports], [s.msg_throughput_out for s in stats]),
    )
    nic_in, nic_out = (_nic_fit(*d) for d in directions)
    nics = [fit[0] for fit in (nic_in, nic_out) if fit is not None]
    alike = replace(
        base,
        cores=cores if cores is not None else base.cores,
        nic_bytes_per_s=min(nics) if nics else base.nic_bytes_per_s,
        memory_mb=memory_mb if memory_mb is not None else base.memory_mb,
        cpu_per_msg_s=base.cpu_per_msg_s * scale,
        cpu_per_byte_s=base.cpu_per_byte_s * scale,
    )
    return CapacityFit(alike, nic_in, nic_out)


def _nic_fit(
    usage: Sequence[ResourceUsage], throughput: Sequence[float]
) -> tuple[float, float] | None:
    """The NIC (bytes/s, every broker alike) that ``throughput`` in all fills as much as the
    brokers report theirs filled (``usage`` in kbit/s of a limit), and the mean limit of the
    brokers that report one; None without figures."""
    known = [u for u in usage if u.limit > 0.0]
    used = sum(u.usage for u in known)
    limit = sum(u.limit for u in known)
    total = sum(throughput)
    if used <= 0.0 or limit <= 0.0 or total <= 0.0:
        return None
    return total / (len(usage) * used / limit), limit / len(known)


def is_history(path: Path) -> bool:
    """Whether ``path`` is a load history root (it has the ``bundles`` table's directory; a
    ``/loadbalance`` dump has ``bundle-data`` instead)."""
    return (path / "bundles").is_dir()


def read_source(path: Path) -> ParsedSnapshot:
    """The snapshot at ``path``: a snapshot JSON file, a metadata dump file or a dump
    directory. Problems are :class:`ScenarioError` naming ``copy.source`` and the file or
    JSON path."""
    try:
        parsed = read_snapshot_path(path)
    except OSError as exc:
        raise ScenarioError(f"copy.source: {path}: {exc.strerror or exc}") from None
    except (ModelError, InvalidBundle, ValueError) as exc:
        raise ScenarioError(f"copy.source: {path}: malformed snapshot: {exc}") from None
    if not parsed.snapshot.brokers:
        raise ScenarioError(f"copy.source: {path}: the snapshot has no brokers")
    return parsed
