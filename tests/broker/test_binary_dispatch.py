"""Dispatch of non-persistent messages to the consumers of a subscription (exclusive,
failover, shared, Key_Shared), Pulsar's key hash, and measured topic rates."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ballast.broker.binary import keys as keys_module
from ballast.broker.binary.keys import (
    ConsistentHashSelector,
    RangeConflictError,
    StickyRangeSelector,
    key_hash,
    murmur3_32,
)
from ballast.broker.binary.subscriptions import Consumer, SubscribeRefused, Subscription
from ballast.broker.traffic import TopicMeter, WindowedRates
from ballast.protocol.commands import ActiveConsumerChange, ServerError, SubType
from ballast.protocol.fast import message_header
from ballast.protocol.messages import KeySharedMode
from tests.support.fake_link import FakeLink


def consumer(
    name: str,
    *,
    permits: int = 100,
    priority: int = 0,
    ranges: tuple[tuple[int, int], ...] = (),
    link: FakeLink | None = None,
) -> Consumer:
    made = Consumer(
        len(name),
        name,
        link or FakeLink(),
        "non-persistent://t/n/x",
        "s",
        priority,
        ranges,
        0,
        WindowedRates(0.0, 60.0, 2),
    )
    made.permits = permits
    return made


def no_key() -> int:
    raise AssertionError("only Key_Shared asks for a key")


SECTION = b"\x00\x00\x00\x00payload"


def test_murmur3_known_values() -> None:
    assert murmur3_32(b"") == 0
    assert murmur3_32(b"", 1) == 0x514E28B7
    assert murmur3_32(b"hello") == 0x248BFA47
    assert murmur3_32(b"The quick brown fox jumps over the lazy dog") == 0x2E4FF723
    assert murmur3_32(b"aaaa", 0x9747B28C) == 0x5A97808A
    assert key_hash(None) == key_hash(b"NONE_KEY") < 2**31


def test_exclusive_takes_one_consumer_and_writes_message_frames() -> None:
    subscription = Subscription("t", "s", SubType.EXCLUSIVE, 0, WindowedRates(0.0, 60.0, 3))
    first = consumer("a")
    subscription.check(SubType.EXCLUSIVE, 0, first)
    subscription.add(first)
    with pytest.raises(SubscribeRefused) as refused:
        subscription.check(SubType.EXCLUSIVE, 0, consumer("b"))
    assert refused.value.error is ServerError.CONSUMER_BUSY
    with pytest.raises(SubscribeRefused, match="different type"):
        subscription.check(SubType.SHARED, 0, consumer("c"))
    assert subscription.dispatch(SECTION, 3, no_key) is first
    assert first.permits == 97 and first.msgs_out == 3
    link = first.link
    assert isinstance(link, FakeLink)
    assert link.frames == [message_header(first.consumer_id, len(SECTION)) + SECTION]


def test_messages_without_permits_or_room_are_dropped() -> None:
    subscription = Subscription("t", "s", SubType.EXCLUSIVE, 0, WindowedRates(0.0, 60.0, 3))
    only = consumer("a", permits=1)
    subscription.add(only)
    assert subscription.dispatch(SECTION, 1, no_key) is only
    assert subscription.dispatch(SECTION, 1, no_key) is None  # no permits left
    only.permits = 10
    only.link = FakeLink(unsent=64 * 1024 * 1024)  # connection backed up
    assert subscription.dispatch(SECTION, 1, no_key) is None
    assert subscription.dropped == 2


def test_clients_before_v6_get_the_section_without_checksum() -> None:
    link = FakeLink(version=5)
    old = consumer("a", link=link)
    subscription = Subscription("t", "s", SubType.EXCLUSIVE, 0, WindowedRates(0.0, 60.0, 3))
    subscription.add(old)
    section = b"\x0e\x01\x01\x02\x03\x04" + SECTION
    subscription.dispatch(section, 1, no_key)
    assert link.frames[0].endswith(SECTION) and b"\x0e\x01\x01\x02" not in link.frames[0]


def test_failover_activates_by_priority_then_name_and_tells_everyone() -> None:
    subscription = Subscription(
        "non-persistent://t/n/x-partition-0", "s", SubType.FAILOVER, 0, WindowedRates(0.0, 60.0, 3)
    )
    b, a, low = consumer("b"), consumer("a"), consumer("z", priority=-1)
    for member in (b, a):
        subscription.add(member)
    assert subscription.dispatch(SECTION, 1, no_key) is a

    def last(member: Consumer) -> bool:
        link = member.link
        assert isinstance(link, FakeLink)
        command = link.commands[-1]
        assert isinstance(command, ActiveConsumerChange)
        assert command.consumer_id == member.consumer_id
        return command.is_active

    assert last(a) is True and last(b) is False
    subscription.add(low)  # higher priority (lower level) takes over
    assert subscription.dispatch(SECTION, 1, no_key) is low
    assert (last(low), last(a), last(b)) == (True, False, False)
    subscription.remove(low)
    assert subscription.dispatch(SECTION, 1, no_key) is a and last(a) is True


def active_on(topic: str, *members: Consumer) -> Consumer | None:
    subscription = Subscription(topic, "s", SubType.FAILOVER, 0, WindowedRates(0.0, 60.0, 3))
    for member in members:
        subscription.add(member)
    return subscription.dispatch(SECTION, 1, no_key)


def test_failover_shares_the_partitions_of_a_topic_among_its_consumers() -> None:
    """Pulsar gives partition i to consumer i % n of the highest priority, sorted by name;
    the lowest name took every partition."""
    c2, c1, spare = consumer("c2"), consumer("c1"), consumer("a-spare", priority=1)
    topic = "non-persistent://t/n/x-partition-{}"
    actives = [active_on(topic.format(i), c2, spare, c1) for i in range(5)]
    assert actives == [c1, c2, c1, c2, c1]  # the lower priority is never counted in n


def test_failover_treats_a_topic_that_is_no_partition_as_partition_0() -> None:
    """Pulsar's NonPersistentSubscription: the first consumer by priority, then name, on
    every such topic (a ring of consumer names is for persistent topics only)."""
    b, a, c = consumer("b"), consumer("a"), consumer("c")
    for i in range(20):
        assert active_on(f"non-persistent://t/n/topic-{i}", b, a, c) is a
    assert active_on("non-persistent://t/n/x-partition-01", b, a, c) is a  # no partition


def test_shared_round_robins_over_consumers_with_permits_by_priority() -> None:
    subscription = Subscription("t", "s", SubType.SHARED, 0, WindowedRates(0.0, 60.0, 3))
    x, y, spare = consumer("x"), consumer("y"), consumer("spare", priority=1)
    for member in (x, y, spare):
        subscription.add(member)
    got = Counter(subscription.dispatch(SECTION, 1, no_key) for _ in range(10))
    assert got == {x: 5, y: 5}  # the lower priority waits while others have permits
    x.permits = y.permits = 0
    assert subscription.dispatch(SECTION, 1, no_key) is spare


def test_key_shared_auto_split_keeps_a_key_on_one_consumer() -> None:
    subscription = Subscription(
        "t", "s", SubType.KEY_SHARED, KeySharedMode.AUTO_SPLIT, WindowedRates(0.0, 60.0, 3)
    )
    members = [consumer(f"c{i}") for i in range(3)]
    for member in members:
        subscription.add(member)
    owner: dict[bytes, Consumer] = {}
    for round_ in range(3):
        for i in range(60):
            key = f"key-{i}".encode()
            chosen = subscription.dispatch(SECTION, 1, lambda k=key: key_hash(k))
            assert chosen is not None
            assert owner.setdefault(key, chosen) is chosen, f"key {key!r} moved in round {round_}"
    assert len(set(owner.values())) == 3  # and the keys spread


def test_key_shared_sticky_ranges() -> None:
    subscription = Subscription(
        "t", "s", SubType.KEY_SHARED, KeySharedMode.STICKY, WindowedRates(0.0, 60.0, 3)
    )
    low, high = consumer("low", ranges=((0, 32767),)), consumer("high", ranges=((32768, 65535),))
    for member in (low, high):
        subscription.check(SubType.KEY_SHARED, KeySharedMode.STICKY, member)
        subscription.add(member)
    with pytest.raises(SubscribeRefused) as refused:
        subscription.check(
            SubType.KEY_SHARED, KeySharedMode.STICKY, consumer("x", ranges=((100, 200),))
        )
    assert refused.value.error is ServerError.CONSUMER_ASSIGN_ERROR
    with pytest.raises(SubscribeRefused, match="Key_Shared mode"):
        subscription.check(SubType.KEY_SHARED, KeySharedMode.AUTO_SPLIT, consumer("y"))
    assert subscription.dispatch(SECTION, 1, lambda: 65536 + 5) is low  # slot 5
    assert subscription.dispatch(SECTION, 1, lambda: 40000) is high


def test_sticky_selector_validates_ranges() -> None:
    selector: StickyRangeSelector[str] = StickyRangeSelector()
    with pytest.raises(RangeConflictError):
        selector.check("a", [(5, 70000)])
    with pytest.raises(RangeConflictError):
        selector.check("a", [(0, 10), (10, 20)])
    with pytest.raises(RangeConflictError):
        selector.check("a", [])
    selector.add("a", [(0, 9), (20, 29)], "a")
    assert [selector.select(h) for h in (0, 9, 10, 25, 30)] == ["a", "a", None, "a", None]
    selector.remove("a")
    assert selector.select(0) is None


def test_consistent_hash_moves_few_keys_when_a_consumer_joins() -> None:
    before = ConsistentHashSelector([(f"c{i}", f"c{i}") for i in range(4)])
    after = ConsistentHashSelector([(f"c{i}", f"c{i}") for i in range(5)])
    hashes = [key_hash(f"k{i}".encode()) for i in range(2000)]
    moved = sum(before.select(h) != after.select(h) for h in hashes)
    assert 0 < moved < 2000 * 0.35  # about a fifth move, not everything
    assert all(after.select(h) == "c4" for h in hashes if before.select(h) != after.select(h))


def test_consumers_sharing_a_name_share_its_keys() -> None:
    """Instances of one application subscribe under one consumer name: their points coincide,
    and each point's keys go to one of them by the key's hash (Pulsar 3's ``hash % count``),
    not all to the first."""
    ring = ConsistentHashSelector([("worker", "w1"), ("worker", "w2"), ("worker", "w3")])
    hashes = [key_hash(f"key-{i}".encode()) for i in range(600)]
    chosen = Counter(ring.select(h) for h in hashes)
    assert set(chosen) == {"w1", "w2", "w3"} and min(chosen.values()) > 100
    assert all(ring.select(h) == ("w1", "w2", "w3")[h % 3] for h in hashes)
    ring.remove("worker", "w1")
    assert {ring.select(h) for h in hashes} == {"w2", "w3"}


def test_topic_meter_rates_over_windows() -> None:
    meter = TopicMeter(now=100.0, window_s=10.0)
    meter.msgs_in, meter.bytes_in, meter.msgs_out, meter.bytes_out = 500, 50_000, 1000, 100_000
    meter.producers, meter.consumers = 2, 3
    assert meter.stats(105.0).msg_rate_in == 0.0  # the first window is not over
    stats = meter.stats(110.0)
    assert (stats.msg_rate_in, stats.msg_throughput_in) == (50.0, 5000.0)
    assert (stats.msg_rate_out, stats.msg_throughput_out) == (100.0, 10_000.0)
    assert (stats.producers, stats.consumers) == (2, 3)
    meter.msgs_in += 200
    assert meter.stats(115.0).msg_rate_in == 50.0  # held until the next window ends
    assert meter.stats(120.0).msg_rate_in == 20.0


@given(
    st.lists(
        st.tuples(st.booleans(), st.integers(0, 5), st.sampled_from(["a", "b", "c"])),
        max_size=25,
    )
)
def test_the_ring_changed_in_place_is_the_ring_built_afresh(
    changes: list[tuple[bool, int, str]],
) -> None:
    """Consumers join (True) and leave (False), namesakes among them: each key goes where a
    ring built from the consumers still there, in the order they joined, sends it."""
    ring: ConsistentHashSelector[str] = ConsistentHashSelector()
    present: list[tuple[str, str]] = []  # (name, consumer) in join order
    members: dict[tuple[str, int], str] = {}
    for joins, number, name in changes:
        # a distinct consumer, possibly sharing a name; the same object each time, as the
        # ring tells consumers apart by identity
        member = members.setdefault((name, number), f"{name}#{number}")
        if joins and (name, member) not in present:
            ring.add(name, member)
            present.append((name, member))
        elif not joins and (name, member) in present:
            ring.remove(name, member)
            present.remove((name, member))
    fresh = ConsistentHashSelector(present)
    for i in range(300):
        point = key_hash(f"k{i}".encode())
        assert ring.select(point) == fresh.select(point)


def test_a_consumer_joining_or_leaving_hashes_its_own_points_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The ring was rebuilt from every consumer's 100 points on each subscribe and close: a
    thousand consumers of one Key_Shared subscription held the event loop for 83 s."""
    hashed = Counter[str]()
    real = keys_module.key_hash

    def counting(key: bytes | None) -> int:
        hashed["all"] += 1
        return real(key)

    monkeypatch.setattr(keys_module, "key_hash", counting)
    subscription = Subscription(
        "t", "s", SubType.KEY_SHARED, KeySharedMode.AUTO_SPLIT, WindowedRates(0.0, 60.0, 3)
    )
    members = [consumer(f"c{i}") for i in range(30)]
    for member in members:
        subscription.add(member)
    assert hashed["all"] == 30 * keys_module.POINTS_PER_CONSUMER
    for member in members:
        assert subscription.remove(member)
    assert hashed["all"] == 60 * keys_module.POINTS_PER_CONSUMER
    assert subscription.dispatch(SECTION, 1, lambda: 12345) is None


@given(
    st.lists(st.tuples(st.integers(0, 200), st.integers(0, 20)), max_size=12),
    st.lists(st.tuples(st.integers(0, 200), st.integers(0, 20)), min_size=1, max_size=6),
)
def test_a_sticky_range_is_refused_exactly_when_it_overlaps_a_taken_one(
    taken: list[tuple[int, int]], wanted: list[tuple[int, int]]
) -> None:
    """The check by binary search refuses what comparing every pair refused, naming the same
    (the first) conflicting range."""
    selector: StickyRangeSelector[str] = StickyRangeSelector()
    held: list[tuple[int, int]] = []
    for start, length in taken:
        candidate = [(start, start + length)]
        try:
            selector.check(f"o{start}", candidate)
        except RangeConflictError:
            continue
        selector.add(f"o{start}", candidate, f"o{start}")
        held.append(candidate[0])
    ranges = sorted((start, start + length) for start, length in wanted)
    if any(a_end >= b_start for (_, a_end), (b_start, _) in itertools.pairwise(ranges)):
        return  # overlapping among themselves: another refusal
    conflicts = [
        (start, end, taken_start, taken_end)
        for start, end in ranges
        for taken_start, taken_end in sorted(held)
        if start <= taken_end and taken_start <= end
    ]
    if not conflicts:
        selector.check("new", ranges)
        return
    start, end, taken_start, taken_end = conflicts[0]
    with pytest.raises(RangeConflictError) as refused:
        selector.check("new", ranges)
    assert str(refused.value) == (
        f"range [{start}, {end}] conflicts with [{taken_start}, {taken_end}] "
        f"of consumer o{taken_start}"
    )
