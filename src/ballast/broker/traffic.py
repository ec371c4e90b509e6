"""Where a broker's traffic figures come from. A :class:`TrafficSource` answers, for the topics
a broker serves, their message rates, throughputs and connections. The synthetic
:class:`WorkloadTraffic` (tests, ``ballast standalone``'s load generator, the simulator) holds
rates set by a workload; brokers speaking the binary protocol measure real traffic instead."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from ballast.clock import Clock
from ballast.model.bundles import BundleName
from ballast.model.loaddata import NamespaceBundleStats
from ballast.model.naming import TopicName


@dataclass(frozen=True, slots=True)
class TopicStats:
    """One topic's traffic: msg/s and bytes/s each way, and its connections."""

    msg_rate_in: float = 0.0
    msg_rate_out: float = 0.0
    msg_throughput_in: float = 0.0
    msg_throughput_out: float = 0.0
    producers: int = 0
    consumers: int = 0

    @classmethod
    def of(
        cls,
        rate_in: float,
        size_bytes: float,
        *,
        fan_out: float = 1.0,
        producers: int = 1,
        consumers: int = 1,
    ) -> TopicStats:
        """Traffic of ``rate_in`` messages/s of ``size_bytes``, each delivered ``fan_out``
        times."""
        return cls(
            rate_in,
            rate_in * fan_out,
            rate_in * size_bytes,
            rate_in * size_bytes * fan_out,
            producers,
            consumers,
        )


IDLE = TopicStats()


class TrafficSource(Protocol):
    def topic_stats(self, topic: TopicName) -> TopicStats:
        """The topic's current traffic (zero when unknown)."""
        ...

    def bundle_stats(
        self, bundle: BundleName, topics: Collection[TopicName]
    ) -> NamespaceBundleStats:
        """The sum over ``topics``, the topics the caller serves in ``bundle``, as Pulsar's
        per-bundle stats. A source may key caches by ``bundle``: a broker asks again for the
        same bundle only with the same topics, unless its served topics changed."""
        ...

    @property
    def revision(self) -> int | None:
        """Changes whenever any topic's traffic may have changed; None if the source cannot
        tell (measured traffic moves all the time). Callers may reuse what they derived
        from the stats while it stays the same number."""
        ...


def sum_stats(stats: Iterable[TopicStats]) -> NamespaceBundleStats:
    rate_in = rate_out = tput_in = tput_out = 0.0
    producers = consumers = topics = 0
    for s in stats:
        rate_in += s.msg_rate_in
        rate_out += s.msg_rate_out
        tput_in += s.msg_throughput_in
        tput_out += s.msg_throughput_out
        producers += s.producers
        consumers += s.consumers
        topics += 1
    return NamespaceBundleStats(
        msg_rate_in=rate_in,
        msg_rate_out=rate_out,
        msg_throughput_in=tput_in,
        msg_throughput_out=tput_out,
        producer_count=producers,
        consumer_count=consumers,
        topics=topics,
    )


class WorkloadTraffic:
    """Traffic set by a workload, shared by every broker of a process: whichever broker serves
    a topic reports its rates."""

    def __init__(self, rates: Mapping[TopicName, TopicStats] | None = None) -> None:
        self._rates: dict[TopicName, TopicStats] = dict(rates or {})
        self._revision = 0

    @property
    def revision(self) -> int:
        return self._revision

    def set(self, topic: TopicName, stats: TopicStats) -> None:
        self._rates[topic] = stats
        self._revision += 1

    def set_many(self, rates: Mapping[TopicName, TopicStats]) -> None:
        self._rates.update(rates)
        self._revision += 1

    def topics(self) -> list[TopicName]:
        return list(self._rates)

    def topic_stats(self, topic: TopicName) -> TopicStats:
        return self._rates.get(topic, IDLE)

    def bundle_stats(
        self, bundle: BundleName, topics: Collection[TopicName]
    ) -> NamespaceBundleStats:
        del bundle
        return sum_stats(self._rates.get(t, IDLE) for t in topics)


class WindowedRates:
    """Per-second rates of counters that only grow, over windows of at least ``window_s``: a
    new window starts when a reading finds one has passed since the last (Pulsar refreshes
    its rates every ``statsUpdateFrequencyInSecs``; here the readers set the pace). The
    first window starts when the counters were zero."""

    __slots__ = ("_rates", "_since", "_snapshot", "window_s")

    def __init__(self, now: float, window_s: float, counters: int) -> None:
        self.window_s = window_s
        self._since = now
        self._snapshot: tuple[int, ...] = (0,) * counters
        self._rates: tuple[float, ...] = (0.0,) * counters

    def rates(self, now: float, counters: tuple[int, ...]) -> tuple[float, ...]:
        """The counters' rates over the last completed window (zeros during the first)."""
        elapsed = now - self._since
        if elapsed >= self.window_s:
            self._rates = tuple(
                (count - before) / elapsed
                for count, before in zip(counters, self._snapshot, strict=True)
            )
            self._snapshot = counters
            self._since = now
        return self._rates


class TopicMeter:
    """One topic's measured traffic on one broker: counters the message path increments, and
    rates computed from them over windows of at least ``window_s``
    (:class:`WindowedRates`). Plain class with slots: it is touched once per message."""

    __slots__ = (
        "_window",
        "bytes_in",
        "bytes_out",
        "consumers",
        "msgs_in",
        "msgs_out",
        "producers",
    )

    def __init__(self, now: float, window_s: float) -> None:
        self.msgs_in = 0
        self.bytes_in = 0
        self.msgs_out = 0
        self.bytes_out = 0
        self.producers = 0
        self.consumers = 0
        self._window = WindowedRates(now, window_s, 4)

    @property
    def window_s(self) -> float:
        """The rate windows' least length, for the rates of the topic's clients too."""
        return self._window.window_s

    def stats(self, now: float) -> TopicStats:
        """Rates over the last completed window, with the current producer and consumer
        counts."""
        counters = (self.msgs_in, self.msgs_out, self.bytes_in, self.bytes_out)
        rate_in, rate_out, tput_in, tput_out = self._window.rates(now, counters)
        return TopicStats(rate_in, rate_out, tput_in, tput_out, self.producers, self.consumers)


class MeasuredTraffic:
    """The traffic of the clients connected to one broker, measured per topic by its binary
    listener; topics with no meter (no clients here) report what ``fallback`` says — the
    synthetic workload of ``ballast standalone``, when there is one — so real clients replace
    synthetic traffic topic by topic."""

    def __init__(
        self, clock: Clock, window_s: float, fallback: TrafficSource | None = None
    ) -> None:
        self._clock = clock
        self._window_s = window_s
        self._fallback = fallback
        self._meters: dict[TopicName, TopicMeter] = {}

    def meter(self, topic: TopicName) -> TopicMeter:
        """The topic's meter, created on first use."""
        found = self._meters.get(topic)
        if found is None:
            found = TopicMeter(self._clock.monotonic(), self._window_s)
            self._meters[topic] = found
        return found

    def forget(self, topic: TopicName) -> None:
        """The topic is no longer open here: its figures stop counting."""
        self._meters.pop(topic, None)

    def measured(self) -> list[TopicName]:
        return list(self._meters)

    @property
    def revision(self) -> None:
        return None  # the meters' windows move with the clock

    def topic_stats(self, topic: TopicName) -> TopicStats:
        found = self._meters.get(topic)
        if found is not None:
            return found.stats(self._clock.monotonic())
        return self._fallback.topic_stats(topic) if self._fallback is not None else IDLE

    def bundle_stats(
        self, bundle: BundleName, topics: Collection[TopicName]
    ) -> NamespaceBundleStats:
        del bundle
        return sum_stats(self.topic_stats(t) for t in topics)
