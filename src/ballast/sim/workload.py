"""The workload: every topic of the scenario with its base rate (Zipf popularity), message size,
fan-out and connections, and its rate at any time (base × scale events × the namespace's
processes). Topics are numbered in creation order; arrays are indexed by that number.

Randomness: one ``numpy`` generator per namespace, seeded with the scenario's seed and the
namespace's position, so adding a namespace never changes the draws of another.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ballast.model.naming import TopicName
from ballast.sim.namespace_spec import NamespaceSpec
from ballast.sim.processes import RateProcess, make_process
from ballast.sim.scenario import Scenario

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]


def topic_local_name(number: int) -> str:
    return f"t{number:06d}"


@dataclass(slots=True)
class _SizeSeries:
    """The namespaces whose message sizes follow recorded series over one list of times (a
    replayed history's, one namespace per copied bundle): their sizes are set all at once,
    and only when the time passes into another of the times."""

    times: Floats
    factors: list[Floats] = field(default_factory=list)  # per namespace, per time
    entries: list[_Namespace] = field(default_factory=list)
    applied: int = -1  # the index of the time the sizes show (-1: not set since a change)
    # every namespace's topics one after the other, each topic's namespace by its place
    # here, and the factors as time × namespace (None: to build again after a change)
    _layout: tuple[Ints, Ints, Floats] | None = None

    def add(self, entry: _Namespace, factors: Floats) -> None:
        self.entries.append(entry)
        self.factors.append(factors)
        self.changed()

    def layout(self) -> tuple[Ints, Ints, Floats]:
        if self._layout is None:
            self._layout = (
                np.concatenate([e.indexes for e in self.entries]),
                np.repeat(np.arange(len(self.entries)), [e.indexes.size for e in self.entries]),
                np.column_stack(self.factors),
            )
        return self._layout

    def changed(self) -> None:
        """A namespace joined or gained topics: the sizes are set again at the next call."""
        self._layout = None
        self.applied = -1


@dataclass(slots=True)
class _Namespace:
    spec: NamespaceSpec
    position: int
    indexes: Ints
    rng: np.random.Generator
    zipf_norm: float = 1.0
    processes: list[RateProcess] = field(default_factory=list)
    _hash_order: Ints | None = None
    sizes: _SizeSeries | None = None


class Workload:
    """Every topic and its rate over time. Not thread-safe; one simulation owns it."""

    def __init__(self, scenario: Scenario) -> None:
        self.seed = scenario.seed
        self.names: list[TopicName] = []
        self.index: dict[TopicName, int] = {}
        self.namespace_of: Ints = np.zeros(0, dtype=np.int64)
        self.hashes: Ints = np.zeros(0, dtype=np.int64)
        self.base_rate: Floats = np.zeros(0)
        self.size: Floats = np.zeros(0)  # now: the drawn sizes, times any size series
        self._base_size: Floats = np.zeros(0)  # the drawn sizes (and events' changes)
        self.fan_out: Floats = np.zeros(0)
        self.producers: Ints = np.zeros(0, dtype=np.int64)
        self.consumers: Ints = np.zeros(0, dtype=np.int64)
        self.scale: Floats = np.zeros(0)
        self._namespaces: dict[str, _Namespace] = {}
        self._size_series: dict[tuple[float, ...], _SizeSeries] = {}
        for spec in scenario.namespaces:
            self.add_namespace(spec)

    @property
    def count(self) -> int:
        return len(self.names)

    def namespace_names(self) -> list[str]:
        return list(self._namespaces)

    def spec(self, namespace: str) -> NamespaceSpec:
        return self._namespaces[namespace].spec

    def topics_of(self, namespace: str) -> Ints:
        return self._namespaces[namespace].indexes

    def add_namespace(self, spec: NamespaceSpec) -> list[TopicName]:
        """Add a namespace and its topics; returns the new topics."""
        if spec.name in self._namespaces:
            raise ValueError(f"namespace {spec.name} exists")
        position = len(self._namespaces)
        entry = _Namespace(
            spec=spec,
            position=position,
            indexes=np.zeros(0, dtype=np.int64),
            rng=np.random.default_rng([self.seed, position]),
        )
        self._namespaces[spec.name] = entry
        if spec.popularity > 0 and spec.topics > 0:
            ranks = np.arange(1, spec.topics + 1, dtype=np.float64)
            entry.zipf_norm = spec.topics / float(np.sum(ranks**-spec.popularity))
        added = self._grow(entry, spec.topics)
        if spec.size_series is not None:
            times = spec.size_series.times_s
            group = self._size_series.get(times)
            if group is None:
                group = self._size_series[times] = _SizeSeries(np.asarray(times, dtype=np.float64))
            group.add(entry, np.asarray(spec.size_series.factors, dtype=np.float64))
            entry.sizes = group
        for number, process in enumerate(spec.processes):
            entry.processes.append(
                make_process(
                    process,
                    entry.indexes.size,
                    seed=(self.seed, position, number),
                    hash_order=self._hash_order_of(entry),
                )
            )
        return added

    def add_topics(self, namespace: str, count: int, *, idle: bool = False) -> list[TopicName]:
        """``count`` more topics of ``namespace``, publishing as its spec says, or nothing
        (``idle``: they count as topics, with their connections, and carry no traffic)."""
        entry = self._namespaces[namespace]
        added = self._grow(entry, count, idle=idle)
        for process in entry.processes:
            process.grow(count)
        if entry.sizes is not None:
            entry.sizes.changed()
        return added

    def _hash_order_of(self, entry: _Namespace) -> Callable[[], Ints]:
        def order() -> Ints:
            if entry._hash_order is None or entry._hash_order.size != entry.indexes.size:
                entry._hash_order = np.argsort(self.hashes[entry.indexes], kind="stable")
            return entry._hash_order

        return order

    def _grow(self, entry: _Namespace, count: int, *, idle: bool = False) -> list[TopicName]:
        spec = entry.spec
        first_number = entry.indexes.size
        start = len(self.names)
        new_names = [
            TopicName.parse(f"persistent://{spec.name}/{topic_local_name(first_number + k)}")
            for k in range(count)
        ]
        rng = entry.rng
        if spec.popularity > 0:
            # Zipf: the k-th most popular topic gets k^-s; ranks shuffled over the topics.
            ranks = rng.permutation(count).astype(np.float64) + 1 + first_number
            weights = ranks**-spec.popularity * entry.zipf_norm
        else:
            weights = np.ones(count)
        if spec.size_sigma > 0:
            sigma = spec.size_sigma
            sizes = spec.size * np.exp(rng.standard_normal(count) * sigma - sigma * sigma / 2)
        else:
            sizes = np.full(count, spec.size)
        # drawn after the sizes, so that a namespace without rate_max keeps its draws
        rates = (
            np.full(count, spec.rate)
            if spec.rate_max is None
            else rng.uniform(spec.rate, spec.rate_max, count)
        )
        self.names.extend(new_names)
        for offset, name in enumerate(new_names):
            self.index[name] = start + offset
        hashes = np.array(
            [zlib.crc32(str(name).encode("utf-8")) for name in new_names], dtype=np.int64
        )
        self.namespace_of = np.concatenate(
            [self.namespace_of, np.full(count, entry.position, dtype=np.int64)]
        )
        self.hashes = np.concatenate([self.hashes, hashes])
        # the draws above are made for idle topics too: later topics get the same ones
        base = np.zeros(count) if idle else rates * weights
        self.base_rate = np.concatenate([self.base_rate, base])
        self.size = np.concatenate([self.size, np.maximum(sizes, 1.0)])
        self._base_size = np.concatenate([self._base_size, np.maximum(sizes, 1.0)])
        self.fan_out = np.concatenate([self.fan_out, np.full(count, spec.fan_out)])
        self.producers = np.concatenate(
            [self.producers, np.full(count, spec.producers, dtype=np.int64)]
        )
        self.consumers = np.concatenate(
            [self.consumers, np.full(count, spec.consumers, dtype=np.int64)]
        )
        self.scale = np.concatenate([self.scale, np.ones(count)])
        entry.indexes = np.concatenate([entry.indexes, np.arange(start, start + count)])
        return new_names

    def scale_rates(self, topics: Ints, factor: float) -> None:
        """Multiply the rates of ``topics`` by ``factor`` from now on. Factors that compound
        past a double's range make infinite rates, which the run refuses where it measures
        them (``Simulation.record``), so numpy's warning is not wanted here."""
        with np.errstate(over="ignore"):
            self.scale[topics] *= factor

    def scale_sizes(self, topics: Ints, factor: float) -> None:
        """Multiply the message sizes of ``topics`` by ``factor`` from now on (at least a
        byte; a namespace's size series applies on top, at the next :meth:`follow_sizes`)."""
        self._base_size[topics] = np.maximum(self._base_size[topics] * factor, 1.0)
        self.size[topics] = np.maximum(self.size[topics] * factor, 1.0)

    def follow_sizes(self, t_s: float) -> None:
        """Set the message sizes of the namespaces with a size series to theirs at ``t_s``
        (at least a byte; before the first time, at the first factor)."""
        for group in self._size_series.values():
            at = max(int(np.searchsorted(group.times, t_s, side="right")) - 1, 0)
            if at == group.applied:
                continue
            topics, columns, matrix = group.layout()
            self.size[topics] = np.maximum(self._base_size[topics] * matrix[at][columns], 1.0)
            group.applied = at

    def most_popular(self, namespace: str | None, share: float) -> Ints:
        """The ``share`` of topics (of a namespace, or all) with the highest base rates."""
        pool = np.arange(self.count) if namespace is None else self.topics_of(namespace)
        keep = max(1, round(share * pool.size))
        order = np.argsort(-self.base_rate[pool], kind="stable")
        return np.sort(pool[order[:keep]])

    def rates(self, t_s: float) -> Floats:
        """Every topic's publish rate (msg/s) at ``t_s`` (call with non-decreasing times)."""
        out = self.base_rate * self.scale
        for entry in self._namespaces.values():
            if not entry.processes or entry.indexes.size == 0:
                continue
            factor = np.ones(entry.indexes.size)
            for process in entry.processes:
                factor *= process.factors(t_s)
            out[entry.indexes] *= factor
        return out
