"""The demo load of ``ballast standalone``, like ``pulsar-perf`` producing to many topics:
topics with Zipf-skewed message rates, and after a while a hot spot (one bundle's topics get
much busier) for the load manager to deal with. Simulated clients look their topics up, so
bundles get owned, and look up again when a bundle moved or lost its owner.

A workload file (TOML) sets the same fields::

    namespace = "public/demo"   # created if missing
    bundles = 16
    topics = 240
    rate = 200.0                # mean msg/s per topic
    size = 1024                 # bytes per message
    fan_out = 1.0               # subscriptions reading each message
    skew = 0.6                  # Zipf exponent of topic popularity (0 = uniform)
    hotspot_after_s = 60.0      # 0 = no hot spot
    hotspot_factor = 10.0       # how much busier the hot bundle's topics get
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ballast.broker.traffic import TopicStats, WorkloadTraffic
from ballast.model.bundles import MAX_CREATED_BUNDLES, NamespaceBundles, topic_hash
from ballast.model.naming import InvalidNameError, NamespaceName, TopicName
from ballast.protocol.versions import DEFAULT_MAX_MESSAGE_SIZE


class WorkloadError(ValueError):
    pass


# The largest number a workload field takes (as the simulator's scenarios): past it, products
# of rates, sizes and factors overflow the load figures.
MAX_VALUE = 1e15
# The most topics the demo drives: this one process records, keeps and looks up every one
# (about 70 us each to record at the start: 300,000 held the console back 20 s, a million
# made the brokers answer nothing for a minute). More topics: `ballast broker` processes.
MAX_TOPICS = 100_000
# Each number's range, least and most.
BOUNDS: dict[str, tuple[float, float]] = {
    "bundles": (1, MAX_CREATED_BUNDLES),
    "topics": (1, MAX_TOPICS),
    "rate": (0, MAX_VALUE),
    "size": (0, DEFAULT_MAX_MESSAGE_SIZE),  # a message the brokers would take
    "fan_out": (0, MAX_VALUE),
    "skew": (0, MAX_VALUE),
    "hotspot_after_s": (0, MAX_VALUE),
    "hotspot_factor": (1, MAX_VALUE),
}


@dataclass(frozen=True, slots=True)
class DemoWorkload:
    namespace: str = "public/demo"
    bundles: int = 16
    topics: int = 240
    rate: float = 200.0
    size: int = 1024
    fan_out: float = 1.0
    skew: float = 0.6
    hotspot_after_s: float = 60.0
    hotspot_factor: float = 10.0

    def __post_init__(self) -> None:
        try:
            parsed = NamespaceName.parse(self.namespace)
        except InvalidNameError as exc:
            raise WorkloadError(f"namespace: {exc}") from None
        if not parsed.is_v2:  # refused by the leader only once the cluster had started
            raise WorkloadError(f"namespace: {self.namespace} is not tenant/namespace")
        for name, (least, most) in BOUNDS.items():
            value = getattr(self, name)
            if not (math.isfinite(value) and least <= value <= most):
                shown = f"{most:,}" if isinstance(most, int) else f"{most:g}"
                limit = f"at most {shown}" if value > most else f"at least {least}"
                raise WorkloadError(f"{name} = {value} is out of range ({limit})")

    @classmethod
    def from_toml(cls, path: Path) -> DemoWorkload:
        try:
            raw: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8-sig"))
        except OSError as exc:
            raise WorkloadError(f"cannot read {path}: {exc.strerror or exc}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
            raise WorkloadError(f"{path}: not TOML: {exc}") from None
        known = {f.name: f.type for f in fields(cls)}
        unknown = sorted(set(raw) - set(known))
        if unknown:
            raise WorkloadError(f"{path}: unknown keys {', '.join(unknown)}")
        values: dict[str, Any] = {}
        for key, value in raw.items():
            wanted = known[key]
            if wanted == "str" and not isinstance(value, str):
                raise WorkloadError(f"{path}: {key} must be a string")
            if wanted == "int" and (not isinstance(value, int) or isinstance(value, bool)):
                raise WorkloadError(f"{path}: {key} must be an integer")
            if wanted == "float" and (
                not isinstance(value, int | float) or isinstance(value, bool)
            ):
                raise WorkloadError(f"{path}: {key} must be a number")
            values[key] = float(value) if wanted == "float" else value
        try:
            return cls(**values)
        except WorkloadError as exc:  # a value out of range: named with its file too
            raise WorkloadError(f"{path}: {exc}") from None

    @property
    def namespace_name(self) -> NamespaceName:
        return NamespaceName.parse(self.namespace)

    def topic_names(self) -> list[TopicName]:
        return [self.topic_name(i) for i in range(self.topics)]

    def topic_name(self, index: int) -> TopicName:
        return TopicName.parse(f"persistent://{self.namespace}/perf-topic-{index}")

    def base_rates(self) -> dict[TopicName, TopicStats]:
        """Zipf-skewed rates with the configured mean."""
        names = self.topic_names()
        # exp(-skew * ln(rank)): a large skew underflows to 0 where (rank) ** skew overflowed
        weights = [math.exp(-self.skew * math.log(i + 1)) for i in range(len(names))]
        scale = self.rate * len(names) / sum(weights)
        return {
            topic: TopicStats.of(weight * scale, self.size, fan_out=self.fan_out)
            for topic, weight in zip(names, weights, strict=True)
        }

    def hot_topics(self, bundles: NamespaceBundles | None = None) -> list[TopicName]:
        """The topics of the bundle that holds the busiest topic: they get hot. ``bundles``:
        the namespace's bundles as they are (a namespace of an earlier run on a ``sqlite:``
        store keeps its own count); the workload's count when not given."""
        names = self.topic_names()
        if bundles is None:
            bundles = NamespaceBundles.equal(self.namespace_name, self.bundles)
        target = bundles.range_for_hash(topic_hash(names[0]))
        return [t for t in names if target.contains(topic_hash(t))]

    def apply(
        self, traffic: WorkloadTraffic, *, hot: bool, bundles: NamespaceBundles | None = None
    ) -> None:
        rates = self.base_rates()
        if hot:
            for topic in self.hot_topics(bundles):
                base = rates[topic]
                rates[topic] = TopicStats.of(
                    base.msg_rate_in * self.hotspot_factor, self.size, fan_out=self.fan_out
                )
        traffic.set_many(rates)
