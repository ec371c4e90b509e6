"""What a synthetic history looks like: its parameters (:class:`GenerateSpec`) and the small
per-namespace and per-broker plan derived from them on the driver (pure Python, seeded).

The model (the per-row arithmetic lives in :mod:`ballast.pipeline.synthetic_arrays`):

- ``namespaces`` namespaces over ``tenants`` tenants. Namespace ``n`` weighs
  ``(n + 1) ** -skew`` (Zipf): its share of the topics and of the traffic. Bundles are spread
  sub-linearly (``weight ** 0.7``), so the big namespaces have more topics per bundle, as in
  clusters whose busy namespaces were not split enough. Every namespace has at least one
  bundle and one topic; its bundles are Pulsar's equal ranges.
- Topic ``j`` of a namespace is ``persistent://<tenant>/<ns>/topic-<j>``, lands in the bundle
  its CRC-32 hash falls in, and weighs ``floor(2**20 * (j + 1) ** -skew) + 1`` within the
  namespace (Zipf again), integer so that sums are exact.
- Traffic per bundle and minute: the namespace's rate times the bundle's share of topic
  weight, times a diurnal wave (amplitude 0.6, a phase per namespace), bursts (a bundle has a
  burst of 2-10x lasting 3-10 minutes in 2 % of its 20-minute windows) and +-10 % noise.
- Brokers ``0 .. brokers-1``; a ``churn`` fraction of them (the highest ids) either join late
  or leave early. A bundle is owned by the first of its 8 hash-chosen candidate brokers that is
  up, else by a hash-chosen always-up broker; so bundles move when brokers come and go.

Every random choice is a hash of the seed and the row's coordinates (never Spark's ``rand``),
and every generated rate is a multiple of 2**-10 (throughputs whole bytes), so broker sums are
exact: the same spec gives the same history on any number of partitions or machines.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from ballast.model.bundles import RING_SIZE

DEFAULT_START_MS = 1_767_571_200_000  # 2026-01-05T00:00:00Z, a Monday
CANDIDATE_BROKERS = 8
LAST_MS = 253_402_300_799_999
"""9999-12-31T23:59:59.999Z: the last time a history's ``date=`` partition can name."""
MAX_TOPICS = 20_000_000
"""The most topics in all: the driver's plan holds each topic's name (twice the topics of
the largest history measured, 1,000,000 bundles of 10)."""
MAX_BUNDLES = 10_000_000
MAX_BROKERS = 1_000_000
LONG_MAX = 2**63 - 1


class SpecError(ValueError):
    """A generate parameter out of range."""


@dataclass(frozen=True, slots=True)
class GenerateSpec:
    """Parameters of a synthetic history. ``snapshots`` snapshots ``interval_ms`` apart from
    ``start_ms``; topic rows every ``topic_every`` snapshots and in the last one (0: none)."""

    cluster: str = "synthetic"
    start_ms: int = DEFAULT_START_MS
    snapshots: int = 60
    interval_ms: int = 60_000
    brokers: int = 10
    bundles: int = 64
    namespaces: int = 8
    tenants: int = 2
    topics_per_bundle: float = 10.0
    topic_every: int = 15
    seed: int = 1
    skew: float = 1.1
    churn: float = 0.2
    mean_bundle_msg_rate: float = 500.0

    def __post_init__(self) -> None:
        numbers = {
            "topics per bundle": self.topics_per_bundle,
            "skew": self.skew,
            "churn": self.churn,
            "mean bundle msg rate": self.mean_bundle_msg_rate,
        }
        for name, value in numbers.items():
            if not math.isfinite(value):
                raise SpecError(f"{name} must be a finite number, not {value}")
        checks = (
            (self.snapshots >= 1, f"snapshots must be >= 1, not {self.snapshots}"),
            (self.interval_ms >= 1, f"interval must be >= 1 ms, not {self.interval_ms}"),
            (self.start_ms >= 0, f"start must not be before 1970 ({self.start_ms} ms)"),
            (
                self.start_ms + (self.snapshots - 1) * self.interval_ms <= LAST_MS,
                "the last snapshot would be after 9999-12-31 (start, snapshots and interval)",
            ),
            (1 <= self.brokers <= MAX_BROKERS, f"brokers must be 1 to {MAX_BROKERS:,}"),
            (self.bundles <= MAX_BUNDLES, f"bundles must be at most {MAX_BUNDLES:,}"),
            (-LONG_MAX - 1 <= self.seed <= LONG_MAX, "seed must fit a 64-bit integer"),
            (self.namespaces >= 1, f"namespaces must be >= 1, not {self.namespaces}"),
            (
                self.bundles >= self.namespaces,
                f"bundles ({self.bundles}) must be >= namespaces ({self.namespaces})",
            ),
            (
                1 <= self.tenants <= self.namespaces,
                f"tenants ({self.tenants}) must be between 1 and namespaces ({self.namespaces})",
            ),
            (
                self.topics_per_bundle * self.bundles >= self.namespaces,
                "topics per bundle too small: every namespace needs a topic",
            ),
            (
                self.topics_per_bundle * self.bundles <= MAX_TOPICS,
                f"bundles x topics per bundle must be at most {MAX_TOPICS:,} topics",
            ),
            (self.topic_every >= 0, f"topic-every must be >= 0, not {self.topic_every}"),
            (0.0 <= self.churn < 1.0, f"churn must be in [0, 1), not {self.churn}"),
            (self.skew >= 0.0, f"skew must be >= 0, not {self.skew}"),
            (self.mean_bundle_msg_rate > 0.0, "mean bundle msg rate must be > 0"),
            (bool(self.cluster), "cluster name is empty"),
        )
        for ok, message in checks:
            if not ok:
                raise SpecError(message)

    @property
    def topics(self) -> int:
        return max(self.namespaces, round(self.bundles * self.topics_per_bundle))

    @property
    def stable_brokers(self) -> int:
        """Brokers up for the whole history (at least one)."""
        return max(1, self.brokers - round(self.brokers * self.churn))

    @property
    def topic_snapshots(self) -> tuple[int, ...]:
        """Indexes of the snapshots that carry topic rows."""
        if self.topic_every == 0:
            return ()
        every = set(range(0, self.snapshots, self.topic_every))
        return tuple(sorted(every | {self.snapshots - 1}))


@dataclass(frozen=True, slots=True)
class NamespacePlan:
    """One namespace: its bundles (global ids ``bundle_offset ..``), topics and traffic."""

    index: int
    tenant: str
    namespace: str
    bundle_count: int
    bundle_offset: int
    topic_count: int
    msg_rate: float  # msg/s published to the namespace at the diurnal mean
    fanout: int  # subscriptions per topic: msg_rate_out = fanout * msg_rate_in
    msg_size: int  # bytes per message
    phase: float  # diurnal phase, fraction of a day


@dataclass(frozen=True, slots=True)
class BrokerPlan:
    """One broker and the snapshots it is up: ``join_at <= s < leave_at``."""

    index: int
    broker: str
    join_at: int
    leave_at: int


def _apportion(total: int, weights: list[float], minimum: int) -> list[int]:
    """``total`` split in proportion to ``weights`` (largest remainder), each >= minimum."""
    spare = total - minimum * len(weights)
    whole = sum(weights)
    exact = [spare * w / whole for w in weights]
    counts = [math.floor(x) for x in exact]
    order = sorted(range(len(weights)), key=lambda i: (counts[i] - exact[i], i))
    for i in order[: spare - sum(counts)]:
        counts[i] += 1
    return [c + minimum for c in counts]


def namespace_plan(spec: GenerateSpec) -> tuple[NamespacePlan, ...]:
    weights = [(n + 1) ** -spec.skew for n in range(spec.namespaces)]
    bundles = _apportion(spec.bundles, [w**0.7 for w in weights], 1)
    topics = _apportion(spec.topics, weights, 1)
    total_rate = spec.bundles * spec.mean_bundle_msg_rate
    whole = sum(weights)
    rng = random.Random(spec.seed)
    plans: list[NamespacePlan] = []
    offset = 0
    for n in range(spec.namespaces):
        tenant = f"tenant-{n % spec.tenants}"
        plans.append(
            NamespacePlan(
                index=n,
                tenant=tenant,
                namespace=f"{tenant}/ns-{n}",
                bundle_count=bundles[n],
                bundle_offset=offset,
                topic_count=topics[n],
                msg_rate=total_rate * weights[n] / whole,
                fanout=1 + n % 3,
                msg_size=256 * 2 ** (n % 5),
                phase=rng.random(),
            )
        )
        offset += bundles[n]
    return tuple(plans)


def broker_name(index: int) -> str:
    return f"broker-{index:04d}:8080"


def broker_plan(spec: GenerateSpec) -> tuple[BrokerPlan, ...]:
    """Stable brokers are up throughout; each other one either joins after up to 80 % of
    the history or leaves after 20-100 % of it."""
    rng = random.Random(spec.seed * 7919 + 1)
    plans: list[BrokerPlan] = []
    for index in range(spec.brokers):
        join_at, leave_at = 0, spec.snapshots
        if index >= spec.stable_brokers:
            if rng.random() < 0.5:
                join_at = math.floor(rng.random() * 0.8 * spec.snapshots)
            else:
                leave_at = max(1, math.floor((0.2 + 0.8 * rng.random()) * spec.snapshots))
        plans.append(BrokerPlan(index, broker_name(index), join_at, leave_at))
    return tuple(plans)


def segment(bundle_count: int) -> int:
    """Width of each equal bundle of a namespace (the last takes the remainder)."""
    return RING_SIZE // bundle_count
