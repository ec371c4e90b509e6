"""The simulator's traffic source: what every broker reports comes from here. A topic's traffic
flows only while its clients are connected to a broker that serves it; the per-bundle sums are
computed for all bundles at once (vectorised) when something changed, and each bundle's
``NamespaceBundleStats`` is kept until its figures change — so a report costs a dictionary
lookup per bundle, however many topics there are.

The source keys its sums by bundle, as :class:`~ballast.broker.traffic.TrafficSource` allows:
it learns which topics each bundle holds from the brokers' served-topic listeners (at most one
broker serves a bundle), so ``bundle_stats(bundle, topics)`` answers for the bundle and does
not walk ``topics``.

It also measures *topic-seconds without an owner*: the integral over (virtual) time of the
number of topics whose traffic does not flow, updated at every change — counted from the moment
the topic's clients start (``want``): a topic no client has asked for yet waits for no one.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ballast.broker.traffic import IDLE, TopicStats
from ballast.model.bundles import BundleName
from ballast.model.loaddata import NamespaceBundleStats
from ballast.model.naming import TopicName
from ballast.sim.workload import Workload

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]

# From this many changed bundles on, a refresh makes their stats at once rather than on demand.
_EAGER_STATS = 256


@dataclass(frozen=True, slots=True)
class TrafficSums:
    """Sums per group (bundle or broker): msg/s and bytes/s each way, connections, topics."""

    rate_in: Floats
    rate_out: Floats
    tput_in: Floats
    tput_out: Floats
    producers: Floats
    consumers: Floats
    topics: Floats

    def columns(self) -> tuple[Floats, ...]:
        return (
            self.rate_in,
            self.rate_out,
            self.tput_in,
            self.tput_out,
            self.producers,
            self.consumers,
            self.topics,
        )


class SimTraffic:
    """Topic traffic, connections and who serves what, for one simulation."""

    def __init__(self, workload: Workload, now: Callable[[], float]) -> None:
        self._workload = workload
        self._now = now
        count = workload.count
        self.rates: Floats = np.zeros(count)
        self.connected_to: Ints = np.full(count, -1, dtype=np.int64)
        self.served_in: Ints = np.full(count, -1, dtype=np.int64)
        self.wanted: Bools = np.zeros(count, dtype=np.bool_)
        self._bundle_ids: dict[BundleName, int] = {}
        self.bundle_names: list[BundleName] = []
        self._dirty = True
        self._revision = 0
        self._sums: TrafficSums | None = None
        self._stats: dict[int, NamespaceBundleStats] = {}
        self.recomputes = 0
        self._not_flowing = 0  # of the wanted topics
        self._since_s = now()
        self._unowned_topic_seconds = 0.0

    # -- state changes ------------------------------------------------------------------------

    def grow(self) -> None:
        """Topics were added to the workload: extend the arrays."""
        extra = self._workload.count - self.rates.size
        if extra > 0:
            self.rates = np.concatenate([self.rates, np.zeros(extra)])
            self.connected_to = np.concatenate(
                [self.connected_to, np.full(extra, -1, dtype=np.int64)]
            )
            self.served_in = np.concatenate([self.served_in, np.full(extra, -1, dtype=np.int64)])
            self.wanted = np.concatenate([self.wanted, np.zeros(extra, dtype=np.bool_)])
            self._changed()

    def _changed(self) -> None:
        self._dirty = True
        self._revision += 1

    @property
    def revision(self) -> int:
        return self._revision

    def set_rates(self, rates: Floats) -> None:
        self.rates = rates
        self._changed()

    def want(self, topics: Ints) -> None:
        """``topics``' clients start: from now on, while their traffic does not flow, they
        are without an owner."""
        self._integrate()
        fresh = topics[~self.wanted[topics]]
        self.wanted[fresh] = True
        self._not_flowing += int(np.count_nonzero(~self._flowing_of(fresh)))

    def bundle_id(self, bundle: BundleName) -> int:
        found = self._bundle_ids.get(bundle)
        if found is None:
            found = self._bundle_ids[bundle] = len(self.bundle_names)
            self.bundle_names.append(bundle)
        return found

    def serve(self, topics: Ints, bundle: BundleName) -> None:
        """A broker began serving ``topics`` in ``bundle``."""
        self._set(topics, self.served_in, self.bundle_id(bundle))

    def unserve(self, topics: Ints) -> None:
        self._set(topics, self.served_in, -1)

    def connect(self, topics: Ints, broker: int) -> None:
        """``topics``' clients are now connected to ``broker`` (its index)."""
        self._set(topics, self.connected_to, broker)

    def disconnect(self, topics: Ints) -> None:
        self._set(topics, self.connected_to, -1)

    def _set(self, topics: Ints, target: Ints, value: int) -> None:
        if topics.size == 0:
            return
        self._integrate()
        wanted = self.wanted[topics]
        before = int(np.count_nonzero(self._flowing_of(topics) & wanted))
        target[topics] = value
        after = int(np.count_nonzero(self._flowing_of(topics) & wanted))
        self._not_flowing -= after - before
        self._changed()

    def _flowing_of(self, topics: Ints) -> Bools:
        return (self.connected_to[topics] >= 0) & (self.served_in[topics] >= 0)

    def flowing(self) -> Bools:
        """Topics whose traffic flows: connected to a broker that serves them."""
        return (self.connected_to >= 0) & (self.served_in >= 0)

    # -- topic-seconds without an owner ---------------------------------------------------------

    def _integrate(self) -> None:
        now = self._now()
        self._unowned_topic_seconds += self._not_flowing * (now - self._since_s)
        self._since_s = now

    def not_flowing(self) -> int:
        """Topics whose clients have started but whose traffic does not flow right now."""
        return self._not_flowing

    def unowned_topic_seconds(self) -> float:
        """Topic-seconds without an owner so far."""
        self._integrate()
        return self._unowned_topic_seconds

    # -- the TrafficSource protocol -------------------------------------------------------------

    def topic_stats(self, topic: TopicName) -> TopicStats:
        index = self._workload.index.get(topic)
        if index is None or index >= self.rates.size or not self.flowing()[index]:
            return IDLE
        workload = self._workload
        return TopicStats.of(
            float(self.rates[index]),
            float(workload.size[index]),
            fan_out=float(workload.fan_out[index]),
            producers=int(workload.producers[index]),
            consumers=int(workload.consumers[index]),
        )

    def bundle_stats(
        self, bundle: BundleName, topics: Collection[TopicName]
    ) -> NamespaceBundleStats:
        del topics  # known from the served-topic listeners
        if self._dirty or self._sums is None:
            self._refresh()
        found = self._bundle_ids.get(bundle)
        if found is None:
            return NamespaceBundleStats()
        cached = self._stats.get(found)  # only ever holds bundles the sums cover
        if cached is not None:
            return cached
        if self._sums is not None and found >= self._sums.rate_in.size:
            self._changed()
            self._refresh()
        stats = self._stats.get(found)
        if stats is None:
            sums = self._sums
            assert sums is not None
            stats = self._stats[found] = NamespaceBundleStats(
                msg_rate_in=float(sums.rate_in[found]),
                msg_rate_out=float(sums.rate_out[found]),
                msg_throughput_in=float(sums.tput_in[found]),
                msg_throughput_out=float(sums.tput_out[found]),
                producer_count=int(sums.producers[found]),
                consumer_count=int(sums.consumers[found]),
                topics=int(sums.topics[found]),
            )
        return stats

    # -- sums ---------------------------------------------------------------------------------

    def sums_by(self, groups: Ints, size: int, *, only_flowing: bool = True) -> TrafficSums:
        """Traffic summed per group (``groups[topic]``, -1 for none): rates of the flowing
        topics (all topics with ``only_flowing`` False); ``topics`` counts every topic of the
        group."""
        workload = self._workload
        member = groups >= 0
        flowing = self.flowing() if only_flowing else np.ones(groups.size, dtype=np.bool_)
        active = member & flowing
        keys = groups[active]
        rate = self.rates[active]
        fan_out = workload.fan_out[active]
        size_b = workload.size[active]

        def total(weights: Floats) -> Floats:
            return np.bincount(keys, weights=weights, minlength=size)[:size].astype(np.float64)

        return TrafficSums(
            rate_in=total(rate),
            rate_out=total(rate * fan_out),
            tput_in=total(rate * size_b),
            tput_out=total(rate * size_b * fan_out),
            producers=total(workload.producers[active].astype(np.float64)),
            consumers=total(workload.consumers[active].astype(np.float64)),
            topics=np.bincount(groups[member], minlength=size)[:size].astype(np.float64),
        )

    def _refresh(self) -> None:
        if not self._dirty and self._sums is not None:
            return
        self._dirty = False
        self.recomputes += 1
        size = len(self.bundle_names)
        sums = self.sums_by(self.served_in, size)
        previous = self._sums
        if previous is None or previous.rate_in.size != size:
            self._stats.clear()
        else:
            changed = np.zeros(size, dtype=np.bool_)
            for new, old in zip(sums.columns(), previous.columns(), strict=True):
                changed |= new != old
            changed_ids = np.flatnonzero(changed)
            if changed_ids.size >= _EAGER_STATS:
                self._sums = sums
                self._make_stats(changed_ids)
                return
            for bundle_id in changed_ids.tolist():
                self._stats.pop(bundle_id, None)
        self._sums = sums

    def _make_stats(self, bundle_ids: Ints) -> None:
        """The stats of many bundles at once (a step's new rates change them all): the same
        values :meth:`bundle_stats` would make one at a time, from the columns as lists."""
        sums = self._sums
        assert sums is not None
        stats = self._stats
        columns = [column[bundle_ids].tolist() for column in sums.columns()]
        for bundle_id, rate_in, rate_out, tput_in, tput_out, producers, consumers, topics in zip(
            bundle_ids.tolist(), *columns, strict=True
        ):
            stats[bundle_id] = NamespaceBundleStats(
                msg_rate_in=rate_in,
                msg_rate_out=rate_out,
                msg_throughput_in=tput_in,
                msg_throughput_out=tput_out,
                producer_count=int(producers),
                consumer_count=int(consumers),
                topics=int(topics),
            )
