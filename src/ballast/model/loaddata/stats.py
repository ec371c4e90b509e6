"""Per-bundle traffic as its owner reports it: Pulsar's ``NamespaceBundleStats``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated

import msgspec

NonNegativeFloat = Annotated[float, msgspec.Meta(ge=0.0)]
NonNegativeInt = Annotated[int, msgspec.Meta(ge=0)]

# NamespaceBundleStats.compareTo resolutions: differences at or below these count as equal.
_THROUGHPUT_RESOLUTION = 1e5
_MSG_RATE_RESOLUTION = 100.0
_TOPIC_CONNECTION_RESOLUTION = 500
_CACHE_SIZE_RESOLUTION = 100000


# gc=False: only numbers (and structs of numbers) inside, so no reference cycles; the leader
# and the simulator make millions of these, and untracked ones cost the collector nothing.
class NamespaceBundleStats(msgspec.Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    """Rates (msg/s), throughputs (bytes/s) and counts of one bundle."""

    msg_rate_in: NonNegativeFloat = 0.0
    msg_throughput_in: NonNegativeFloat = 0.0
    msg_rate_out: NonNegativeFloat = 0.0
    msg_throughput_out: NonNegativeFloat = 0.0
    consumer_count: NonNegativeInt = 0
    producer_count: NonNegativeInt = 0
    topics: NonNegativeInt = 0
    cache_size: NonNegativeInt = 0

    @property
    def msg_rate(self) -> float:
        return self.msg_rate_in + self.msg_rate_out

    @property
    def msg_throughput(self) -> float:
        return self.msg_throughput_in + self.msg_throughput_out

    def compare(self, other: NamespaceBundleStats) -> int:
        """Pulsar's ``compareTo``: by throughput in, throughput out, total message rate,
        topics + connections, cache size — each step treating small differences as equal.
        Returns -1, 0 or 1."""
        steps: tuple[tuple[float, float, float], ...] = (
            (self.msg_throughput_in, other.msg_throughput_in, _THROUGHPUT_RESOLUTION),
            (self.msg_throughput_out, other.msg_throughput_out, _THROUGHPUT_RESOLUTION),
            (self.msg_rate, other.msg_rate, _MSG_RATE_RESOLUTION),
            (
                self.topics + self.consumer_count + self.producer_count,
                other.topics + other.consumer_count + other.producer_count,
                _TOPIC_CONNECTION_RESOLUTION,
            ),
            (self.cache_size, other.cache_size, _CACHE_SIZE_RESOLUTION),
        )
        for mine, theirs, resolution in steps:
            if abs(mine - theirs) > resolution:
                return -1 if mine < theirs else 1
        return 0


def total_of(stats: Iterable[NamespaceBundleStats]) -> NamespaceBundleStats:
    """The sums over several bundles (a broker's traffic), in one pass and in the given order;
    the cache size is not summed (a broker report has no total of it)."""
    rate_in = rate_out = tput_in = tput_out = 0.0
    producers = consumers = topics = 0
    for s in stats:
        rate_in += s.msg_rate_in
        rate_out += s.msg_rate_out
        tput_in += s.msg_throughput_in
        tput_out += s.msg_throughput_out
        producers += s.producer_count
        consumers += s.consumer_count
        topics += s.topics
    return NamespaceBundleStats(
        msg_rate_in=rate_in,
        msg_rate_out=rate_out,
        msg_throughput_in=tput_in,
        msg_throughput_out=tput_out,
        producer_count=producers,
        consumer_count=consumers,
        topics=topics,
    )


# Pulsar's defaults for a bundle with no history (ModularLoadManagerImpl DEFAULT_MESSAGE_*).
DEFAULT_MESSAGE_RATE = 50.0
DEFAULT_MESSAGE_THROUGHPUT = 50000.0
DEFAULT_BUNDLE_STATS = NamespaceBundleStats(
    msg_rate_in=DEFAULT_MESSAGE_RATE,
    msg_rate_out=DEFAULT_MESSAGE_RATE,
    msg_throughput_in=DEFAULT_MESSAGE_THROUGHPUT,
    msg_throughput_out=DEFAULT_MESSAGE_THROUGHPUT,
)
