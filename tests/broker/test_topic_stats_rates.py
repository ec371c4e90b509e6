"""A topic's stats as ``pulsar-admin topics stats`` shows them: rates per producer,
subscription and consumer over the broker's stats window, drops per subscription, and the
clients' addresses and versions, next to the counters."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ballast.broker.binary.subscriptions import Consumer
from ballast.broker.binary.topics import NonPersistentTopic, ProducerHandle
from ballast.broker.http.topic_stats import topic_stats
from ballast.broker.traffic import TopicMeter, WindowedRates
from ballast.model.naming import TopicName
from ballast.protocol.commands import SubType
from ballast.protocol.types import ProducerAccessMode
from tests.support.fake_link import FakeLink

WINDOW_S = 10.0
SECTION = b"\x00\x00\x00\x00" + b"x" * 96  # 100 bytes as published


def a_topic() -> tuple[NonPersistentTopic, ProducerHandle, Consumer]:
    """A topic made at t=0 with a producer and a Shared subscription's consumer (10 permits)."""
    topic = NonPersistentTopic(
        TopicName.parse("non-persistent://t/n/orders"), TopicMeter(0.0, WINDOW_S)
    )
    producer = ProducerHandle(
        1, "till", FakeLink(), topic, 0, ProducerAccessMode.SHARED, 1_700_000_000_000,
        WindowedRates(0.0, WINDOW_S, 2),
    )  # fmt: skip
    topic.producers[producer.name] = producer
    subscription = topic.subscription("audit", SubType.SHARED, 0, 0.0)
    consumer = Consumer(
        7, "auditor", FakeLink(), topic.name_text, "audit", 0, (), 1_700_000_001_000,
        WindowedRates(0.0, WINDOW_S, 2),
    )  # fmt: skip
    subscription.check(SubType.SHARED, 0, consumer)
    subscription.add(consumer)
    consumer.permits = 10
    return topic, producer, consumer


def test_rates_per_producer_subscription_and_consumer_over_the_window() -> None:
    topic, producer, _ = a_topic()
    for _ in range(30):  # 10 delivered, then 20 dropped: the consumer has no permits left
        producer.publish(SECTION, 1)
    early = topic_stats(topic, 5.0)
    assert early["publishers"][0]["msgRateIn"] == 0.0  # the first window is not over
    stats = topic_stats(topic, 10.0)
    publisher = stats["publishers"][0]
    assert (publisher["msgRateIn"], publisher["msgThroughputIn"]) == (3.0, 300.0)
    assert publisher["averageMsgSize"] == 100.0 and publisher["msgDropRate"] == 0.0
    assert publisher["address"] == "127.0.0.1:50000"
    assert publisher["clientVersion"] == "fake-client 1.0"
    assert publisher["connectedSince"] == "2023-11-14T22:13:20.000Z"
    assert (stats["msgRateIn"], stats["msgRateOut"]) == (3.0, 1.0)
    audit = stats["subscriptions"]["audit"]
    assert (audit["msgRateOut"], audit["msgThroughputOut"]) == (1.0, 100.0)
    assert (audit["msgDropRate"], audit["msgDropCounter"]) == (2.0, 20)
    consumer = audit["consumers"][0]
    assert (consumer["msgRateOut"], consumer["msgThroughputOut"]) == (1.0, 100.0)
    assert consumer["connectedSince"] == "2023-11-14T22:13:21.000Z"
    assert stats["msgDropRate"] == 0.0  # nothing is dropped on publish


def test_a_window_counts_only_what_happened_in_it() -> None:
    topic, producer, consumer = a_topic()
    for _ in range(10):
        producer.publish(SECTION, 1)
    topic_stats(topic, 10.0)
    consumer.permits = 40
    producer.publish(SECTION, 40)  # one batch of 40 messages, in the second window
    stats = topic_stats(topic, 30.0)
    assert stats["publishers"][0]["msgRateIn"] == 2.0  # 40 in 20 s
    assert stats["publishers"][0]["averageMsgSize"] == 2.5  # bytes per message of the batch
    assert stats["subscriptions"]["audit"]["consumers"][0]["msgRateOut"] == 2.0
    assert stats["subscriptions"]["audit"]["msgDropRate"] == 0.0
    assert stats["publishers"][0]["msgRateIn"] == topic_stats(topic, 35.0)["msgRateIn"]


@given(
    st.lists(st.integers(0, 10**9), min_size=1, max_size=5),
    st.floats(10.0, 1e6, allow_nan=False),
)
def test_windowed_rates_times_the_window_give_back_the_counts(
    counts: list[int], elapsed: float
) -> None:
    window = WindowedRates(100.0, WINDOW_S, len(counts))
    assert window.rates(100.0 + WINDOW_S / 2, tuple(counts)) == (0.0,) * len(counts)
    rates = window.rates(100.0 + elapsed, tuple(counts))
    assert all(abs(r * elapsed - c) <= 1e-6 * max(c, 1) for r, c in zip(rates, counts, strict=True))
    doubled = tuple(2 * c for c in counts)
    again = window.rates(100.0 + 2 * elapsed, doubled)
    assert all(abs(a * elapsed - c) <= 1e-6 * max(c, 1) for a, c in zip(again, counts, strict=True))
