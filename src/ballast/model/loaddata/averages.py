"""Time-averaged load: Pulsar's ``TimeAverageMessageData`` (a bundle's short- and long-term
moving averages), ``BundleData`` (stored at ``/loadbalance/bundle-data/<bundle>``) and
``TimeAverageBrokerData`` (``/loadbalance/broker-time-average/<broker>``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from typing import Annotated

import msgspec

from ballast.model.codec import decode, encode
from ballast.model.loaddata.stats import (
    DEFAULT_BUNDLE_STATS,
    NamespaceBundleStats,
    NonNegativeFloat,
    NonNegativeInt,
)

NUM_SHORT_SAMPLES = 10
NUM_LONG_SAMPLES = 1000

PositiveInt = Annotated[int, msgspec.Meta(ge=1)]

# How far rounding can carry an average past the largest sample it averages, relative to that
# sample: each update rounds three times and keeps (n - 1) / n of the error it inherits, so the
# excess stays below 3 * n * 2**-53 (3.3e-13 for the long term's 1000 samples). 1e-9 holds
# with a wide margin for any window up to a million samples.
AVERAGE_ROUNDING_SLACK = 1e-9


def average_ceiling(largest_sample: float) -> float:
    """A value no moving average (:meth:`TimeAverageMessageData.updated`) of samples at most
    ``largest_sample`` exceeds, whatever it started at: the first sample replaces the
    starting value. The split rules use it to skip bundles whose samples never come near a
    limit (``pipeline split-plan``)."""
    return largest_sample + abs(largest_sample) * AVERAGE_ROUNDING_SLACK


# gc=False: only numbers (and structs of numbers) inside, so no reference cycles; the leader
# and the simulator make millions of these, and untracked ones cost the collector nothing.
class TimeAverageMessageData(msgspec.Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    """Moving averages of one bundle's rates and throughputs over at most ``max_samples``
    samples: a plain mean until ``max_samples`` is reached, then each new sample weighs
    ``1 / max_samples``."""

    max_samples: PositiveInt = 1
    num_samples: NonNegativeInt = 0
    msg_throughput_in: NonNegativeFloat = 0.0
    msg_throughput_out: NonNegativeFloat = 0.0
    msg_rate_in: NonNegativeFloat = 0.0
    msg_rate_out: NonNegativeFloat = 0.0

    @classmethod
    def starting_at(
        cls, max_samples: int, defaults: NamespaceBundleStats = DEFAULT_BUNDLE_STATS
    ) -> TimeAverageMessageData:
        """Pulsar's ``TimeAverageMessageData(maxSamples, defaultStats)``: values start at the
        defaults with no samples, so the first update overwrites them."""
        return cls(
            max_samples=max_samples,
            msg_throughput_in=defaults.msg_throughput_in,
            msg_throughput_out=defaults.msg_throughput_out,
            msg_rate_in=defaults.msg_rate_in,
            msg_rate_out=defaults.msg_rate_out,
        )

    def updated(
        self, throughput_in: float, throughput_out: float, rate_in: float, rate_out: float
    ) -> TimeAverageMessageData:
        """Add one sample: ``n = min(n + 1, max)``; ``f = ((n - 1) * f + new) / n``."""
        # min() without its call: the leader runs this for every bundle on every update.
        n = self.num_samples + 1 if self.num_samples < self.max_samples else self.max_samples
        return TimeAverageMessageData(
            max_samples=self.max_samples,
            num_samples=n,
            msg_throughput_in=((n - 1) * self.msg_throughput_in + throughput_in) / n,
            msg_throughput_out=((n - 1) * self.msg_throughput_out + throughput_out) / n,
            msg_rate_in=((n - 1) * self.msg_rate_in + rate_in) / n,
            msg_rate_out=((n - 1) * self.msg_rate_out + rate_out) / n,
        )

    def updated_with(self, sample: NamespaceBundleStats) -> TimeAverageMessageData:
        return self.updated(
            sample.msg_throughput_in,
            sample.msg_throughput_out,
            sample.msg_rate_in,
            sample.msg_rate_out,
        )

    @property
    def total_msg_rate(self) -> float:
        return self.msg_rate_in + self.msg_rate_out

    @property
    def total_msg_throughput(self) -> float:
        return self.msg_throughput_in + self.msg_throughput_out


class BundleData(msgspec.Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    """A bundle's short-term (10 samples) and long-term (1000 samples) averages and its topic
    count, as the leader keeps them."""

    short_term_data: TimeAverageMessageData = TimeAverageMessageData(max_samples=NUM_SHORT_SAMPLES)
    long_term_data: TimeAverageMessageData = TimeAverageMessageData(max_samples=NUM_LONG_SAMPLES)
    topics: NonNegativeInt = 0

    @classmethod
    def new_default(
        cls,
        short_samples: int = NUM_SHORT_SAMPLES,
        long_samples: int = NUM_LONG_SAMPLES,
        defaults: NamespaceBundleStats = DEFAULT_BUNDLE_STATS,
    ) -> BundleData:
        """Data for a bundle never seen before: both averages start at Pulsar's defaults
        (50 msg/s and 50000 B/s each way)."""
        return cls(
            short_term_data=TimeAverageMessageData.starting_at(short_samples, defaults),
            long_term_data=TimeAverageMessageData.starting_at(long_samples, defaults),
        )

    def updated(self, stats: NamespaceBundleStats) -> BundleData:
        """Add one report of the bundle to both averages; ``topics`` follows the report."""
        t_in, t_out = stats.msg_throughput_in, stats.msg_throughput_out
        r_in, r_out = stats.msg_rate_in, stats.msg_rate_out
        return BundleData(
            short_term_data=self.short_term_data.updated(t_in, t_out, r_in, r_out),
            long_term_data=self.long_term_data.updated(t_in, t_out, r_in, r_out),
            topics=stats.topics,
        )

    def to_json(self) -> bytes:
        return encode(self)

    @classmethod
    def from_json(cls, data: bytes | str, *, root: str = "$") -> BundleData:
        return decode(data, cls, root=root)


class TimeAverageBrokerData(msgspec.Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    """The sums of a broker's bundles' short- and long-term averages."""

    short_term_msg_throughput_in: NonNegativeFloat = 0.0
    short_term_msg_throughput_out: NonNegativeFloat = 0.0
    short_term_msg_rate_in: NonNegativeFloat = 0.0
    short_term_msg_rate_out: NonNegativeFloat = 0.0
    long_term_msg_throughput_in: NonNegativeFloat = 0.0
    long_term_msg_throughput_out: NonNegativeFloat = 0.0
    long_term_msg_rate_in: NonNegativeFloat = 0.0
    long_term_msg_rate_out: NonNegativeFloat = 0.0

    @classmethod
    def from_bundles(
        cls,
        bundles: Iterable[str],
        bundle_data: Mapping[str, BundleData],
        defaults: NamespaceBundleStats = DEFAULT_BUNDLE_STATS,
    ) -> TimeAverageBrokerData:
        """Pulsar's ``reset``: sum each bundle's averages; a bundle without data counts as
        ``defaults`` in both the short and long term."""
        # Eight running sums, added in the bundles' order exactly as Pulsar's loop does
        # (unrolled: the leader sums every broker's bundles on each update).
        unknown = BundleData.new_default(defaults=defaults)  # both terms at the defaults
        s_t_in = s_t_out = s_r_in = s_r_out = 0.0
        l_t_in = l_t_out = l_r_in = l_r_out = 0.0
        for bundle in bundles:
            data = bundle_data.get(bundle)
            if data is None:
                data = unknown
            short, long = data.short_term_data, data.long_term_data
            s_t_in += short.msg_throughput_in
            s_t_out += short.msg_throughput_out
            s_r_in += short.msg_rate_in
            s_r_out += short.msg_rate_out
            l_t_in += long.msg_throughput_in
            l_t_out += long.msg_throughput_out
            l_r_in += long.msg_rate_in
            l_r_out += long.msg_rate_out
        return cls(
            short_term_msg_throughput_in=s_t_in,
            short_term_msg_throughput_out=s_t_out,
            short_term_msg_rate_in=s_r_in,
            short_term_msg_rate_out=s_r_out,
            long_term_msg_throughput_in=l_t_in,
            long_term_msg_throughput_out=l_t_out,
            long_term_msg_rate_in=l_r_in,
            long_term_msg_rate_out=l_r_out,
        )

    @property
    def long_term_msg_rate(self) -> float:
        return self.long_term_msg_rate_in + self.long_term_msg_rate_out

    def to_json(self) -> bytes:
        return encode(self)

    @classmethod
    def from_json(cls, data: bytes | str, *, root: str = "$") -> TimeAverageBrokerData:
        return decode(data, cls, root=root)


def add_report_samples(
    bundle_data: MutableMapping[str, BundleData],
    reports: Sequence[Mapping[str, NamespaceBundleStats]],
) -> list[TimeAverageBrokerData]:
    """Pulsar's ``updateAll`` on bundle data, object by object: each report's stats, report
    after report, become one sample of their bundles' averages (:meth:`BundleData.updated`;
    a bundle without data starts at :meth:`BundleData.new_default`), stored in
    ``bundle_data``. Returns each report's broker sums
    (:meth:`TimeAverageBrokerData.from_bundles` over its keys, after all the updates: a
    bundle mid-transfer is in two reports, and both brokers sum its latest averages). The
    definition the leader's column-held table (:mod:`ballast.model.loaddata.table`) is held
    to, bit for bit."""
    get = bundle_data.get
    for report in reports:
        for bundle, stats in report.items():
            known = get(bundle)
            bundle_data[bundle] = (known or BundleData.new_default()).updated(stats)
    return [TimeAverageBrokerData.from_bundles(report.keys(), bundle_data) for report in reports]
