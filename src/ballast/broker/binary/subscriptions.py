"""Subscriptions of a non-persistent topic and how they dispatch (Pulsar's
``NonPersistentSubscription`` and its dispatchers).

Non-persistent semantics: a message goes, once per subscription, to a consumer connected at
that moment that has permits (granted by FLOW, one per message of a batch) and whose
connection is not backed up; otherwise that subscription drops it. Nothing is stored,
acknowledgements change nothing, and a subscription disappears with its last consumer.

- Exclusive: one consumer; a second is refused (ConsumerBusy).
- Failover: one active consumer, chosen as Pulsar's ``AbstractDispatcherSingleActiveConsumer``
  does among the consumers of the highest priority (lowest level), sorted by name: consumer
  ``partition % n`` — a topic that is not a partition counts as partition 0, as Pulsar's
  ``NonPersistentSubscription`` counts it (its hash ring is for persistent topics). So the
  consumers of a partitioned topic share its partitions. Every consumer is told by
  ACTIVE_CONSUMER_CHANGE whenever the active one changes.
- Shared: round-robin over the consumers with permits, highest priority level first.
- Key_Shared: by key hash (:mod:`ballast.broker.binary.keys`), AUTO_SPLIT or STICKY; all
  consumers of a subscription use the same mode.

Concurrency contract: one event loop; dispatch is synchronous.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ballast.broker.binary.keys import (
    ConsistentHashSelector,
    RangeConflictError,
    StickyRangeSelector,
)
from ballast.broker.traffic import WindowedRates
from ballast.model.naming import partition_index
from ballast.protocol.commands import ActiveConsumerChange, Command, ServerError, SubType
from ballast.protocol.fast import message_header
from ballast.protocol.frames import without_checksum
from ballast.protocol.messages import KeySharedMode
from ballast.protocol.versions import V_ACTIVE_CONSUMER_CHANGE, V_CHECKSUM

# A consumer whose connection has this much unsent data is not writable: non-persistent
# messages for it are dropped rather than buffered without bound (Pulsar checks the channel's
# writability the same way). What counts is what the socket has not taken
# (:meth:`Link.unsent_bytes`), not the output of this turn of the loop.
MAX_UNSENT_BYTES = 4 * 1024 * 1024


class Link(Protocol):
    """What producers, consumers and topics need of a client's connection."""

    protocol_version: int
    closed: bool
    remote: str  # the client's address, host:port
    client_version: str  # as the client's CONNECT gave it

    def producer_closed_by_broker(self, producer_id: int, assigned_url: str | None) -> None:
        """Tell the client its producer is closed (CLOSE_PRODUCER) and forget it."""
        ...

    def consumer_closed_by_broker(self, consumer_id: int, assigned_url: str | None) -> None:
        """Tell the client its consumer is closed (CLOSE_CONSUMER) and forget it."""
        ...

    def send(self, data: bytes) -> None: ...

    def send_parts(self, header: bytes, body: bytes) -> None: ...

    def send_command(self, command: Command) -> None: ...

    def unsent_bytes(self) -> int:
        """Bytes written to the socket and not yet sent: what the channel's writability
        measures in Pulsar. Output queued in this turn of the loop is not counted, as
        Pulsar's writes, queued to the event loop, are not: the copies of one message for
        the subscriptions before this one would otherwise make it look backed up."""
        ...


class Consumer:
    """A consumer connected to a subscription. Plain class with slots: touched per message."""

    __slots__ = (
        "bytes_out",
        "connected_since_ms",
        "consumer_id",
        "link",
        "msgs_out",
        "name",
        "partition",
        "permits",
        "priority",
        "ranges",
        "subscription",
        "topic",
        "window",
    )

    def __init__(
        self,
        consumer_id: int,
        name: str,
        link: Link,
        topic: str,
        subscription: str,
        priority: int,
        ranges: tuple[tuple[int, int], ...],
        connected_since_ms: int,
        window: WindowedRates,
    ) -> None:
        self.consumer_id = consumer_id
        self.name = name
        self.link = link
        self.topic = topic
        self.subscription = subscription
        self.priority = priority
        self.ranges = ranges
        self.connected_since_ms = connected_since_ms
        self.window = window  # of (msgs_out, bytes_out)
        self.partition = partition_index(topic)  # in every message id, as Pulsar's Consumer
        self.permits = 0
        self.msgs_out = 0
        self.bytes_out = 0

    def ready(self) -> bool:
        return self.permits > 0 and self.link.unsent_bytes() < MAX_UNSENT_BYTES

    def deliver(self, section: bytes, num_messages: int) -> None:
        """Write a MESSAGE with ``section`` (the payload section as published)."""
        link = self.link
        if link.protocol_version < V_CHECKSUM:
            section = without_checksum(section)
        link.send_parts(message_header(self.consumer_id, len(section), self.partition), section)
        self.permits -= num_messages
        self.msgs_out += num_messages
        self.bytes_out += len(section)


class SubscribeRefused(Exception):
    """A consumer the subscription cannot take, with the error Pulsar answers."""

    def __init__(self, error: ServerError, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


KeyHash = Callable[[], int]


class Subscription:
    """One subscription of a topic and its consumers, in the order they joined."""

    def __init__(
        self, topic: str, name: str, sub_type: int, key_shared_mode: int, window: WindowedRates
    ) -> None:
        self.topic = topic
        self.name = name
        self.sub_type = sub_type
        self.key_shared_mode = key_shared_mode
        self.consumers: list[Consumer] = []
        self._active: Consumer | None = None
        self._levels: list[list[Consumer]] = []
        self._round_robin: list[int] = []
        self._ring: ConsistentHashSelector[Consumer] = ConsistentHashSelector()
        self._sticky: StickyRangeSelector[Consumer] = StickyRangeSelector()
        # Pulsar's NonPersistentSubscription: "for non partition topics, assume index 0"
        self._partition = max(partition_index(topic), 0)
        self.dropped = 0
        self.window = window  # of (msgs_out, bytes_out, dropped)
        # What the consumers that left had been sent: a subscription's counters never go
        # back (Pulsar's AbstractSubscription adds its removed consumers' to the others').
        self._msgs_out_of_gone = 0
        self._bytes_out_of_gone = 0

    @property
    def msgs_out(self) -> int:
        """Messages sent to the subscription's consumers, those that left included."""
        return self._msgs_out_of_gone + sum(c.msgs_out for c in self.consumers)

    @property
    def bytes_out(self) -> int:
        """Bytes sent to the subscription's consumers, those that left included."""
        return self._bytes_out_of_gone + sum(c.bytes_out for c in self.consumers)

    @property
    def type_name(self) -> str:
        return {0: "Exclusive", 1: "Shared", 2: "Failover", 3: "Key_Shared"}.get(
            self.sub_type, str(self.sub_type)
        )

    # -- membership -----------------------------------------------------------------------------

    def check(self, sub_type: int, key_shared_mode: int, consumer: Consumer) -> None:
        """SubscribeRefused if ``consumer`` cannot join (Pulsar's checks, same errors)."""
        if sub_type != self.sub_type:
            raise SubscribeRefused(ServerError.CONSUMER_BUSY, "Subscription is of different type")
        if sub_type == SubType.EXCLUSIVE and self.consumers:
            raise SubscribeRefused(
                ServerError.CONSUMER_BUSY, "Exclusive consumer is already connected"
            )
        if sub_type == SubType.KEY_SHARED:
            if key_shared_mode != self.key_shared_mode:
                raise SubscribeRefused(
                    ServerError.CONSUMER_BUSY,
                    "Subscription is of a different Key_Shared mode",
                )
            if key_shared_mode == KeySharedMode.STICKY:
                try:
                    self._sticky.check(consumer.name, consumer.ranges)
                except RangeConflictError as exc:
                    raise SubscribeRefused(ServerError.CONSUMER_ASSIGN_ERROR, str(exc)) from None

    def add(self, consumer: Consumer) -> None:
        """Add a consumer that passed :meth:`check`."""
        self.consumers.append(consumer)
        if self.sub_type == SubType.KEY_SHARED:
            if self.key_shared_mode == KeySharedMode.STICKY:
                self._sticky.add(consumer.name, consumer.ranges, consumer)
            else:
                self._ring.add(consumer.name, consumer)
        active_before = self._active
        self._rebuild()  # tells every consumer when the active one changed
        if self.sub_type == SubType.FAILOVER and self._active is active_before:
            self._notify(consumer)  # unchanged: only the newcomer learns it is on standby

    def remove(self, consumer: Consumer) -> bool:
        """Remove a consumer; whether it was here."""
        if consumer not in self.consumers:
            return False
        self.consumers.remove(consumer)
        self._msgs_out_of_gone += consumer.msgs_out
        self._bytes_out_of_gone += consumer.bytes_out
        if self.sub_type == SubType.KEY_SHARED:
            if self.key_shared_mode == KeySharedMode.STICKY:
                self._sticky.remove(consumer)
            else:
                self._ring.remove(consumer.name, consumer)
        self._rebuild()
        return True

    def _rebuild(self) -> None:
        by_level: dict[int, list[Consumer]] = {}
        for consumer in self.consumers:
            by_level.setdefault(consumer.priority, []).append(consumer)
        self._levels = [by_level[level] for level in sorted(by_level)]
        self._round_robin = [0] * len(self._levels)
        if self.sub_type in (SubType.EXCLUSIVE, SubType.FAILOVER):
            active = self._pick_active()
            if active is not self._active:
                self._active = active
                if self.sub_type == SubType.FAILOVER and active is not None:
                    for consumer in self.consumers:
                        self._notify(consumer)

    def _pick_active(self) -> Consumer | None:
        """Pulsar's ``pickAndScheduleActiveConsumer`` (an exclusive subscription has one
        consumer, so it picks that one)."""
        if not self.consumers:
            return None
        # Java's List.sort is stable and compares names by UTF-16 code unit
        ordered = sorted(self.consumers, key=lambda c: (c.priority, c.name.encode("utf-16-be")))
        top = [c for c in ordered if c.priority == ordered[0].priority]
        return top[self._partition % len(top)]

    def _notify(self, consumer: Consumer) -> None:
        if consumer.link.protocol_version >= V_ACTIVE_CONSUMER_CHANGE:
            consumer.link.send_command(
                ActiveConsumerChange(
                    consumer_id=consumer.consumer_id, is_active=consumer is self._active
                )
            )

    # -- dispatch -------------------------------------------------------------------------------

    def dispatch(self, section: bytes, num_messages: int, key_hash: KeyHash) -> Consumer | None:
        """Deliver a message to one consumer (returned) or drop it (None)."""
        sub_type = self.sub_type
        consumer: Consumer | None
        if sub_type == SubType.SHARED:
            consumer = self._next_shared()
        elif sub_type == SubType.KEY_SHARED:
            if self.key_shared_mode == KeySharedMode.STICKY:
                consumer = self._sticky.select(key_hash())
            else:
                consumer = self._ring.select(key_hash())
            if consumer is not None and not consumer.ready():
                consumer = None
        else:
            consumer = self._active
            if consumer is not None and not consumer.ready():
                consumer = None
        if consumer is None:
            self.dropped += num_messages
            return None
        consumer.deliver(section, num_messages)
        return consumer

    def _next_shared(self) -> Consumer | None:
        for index, level in enumerate(self._levels):
            count = len(level)
            start = self._round_robin[index]
            for step in range(count):
                consumer = level[(start + step) % count]
                if consumer.ready():
                    self._round_robin[index] = (start + step + 1) % count
                    return consumer
        return None
