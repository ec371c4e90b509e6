"""A broker's non-persistent topics (``non-persistent://``, Pulsar's ``NonPersistentTopic``):
their producers and subscriptions, the message path from a SEND to the consumers connected at
that moment, per-topic counters for the load report, and closing every client of a bundle this
broker stops serving.

- A topic is opened on the broker that owns its bundle (``BrokerNode.open_topic``); any other
  broker refuses with ServiceNotReady and the client looks the topic up again. While a bundle
  is being transferred *to* this broker (its record RELEASING with ``transferTo`` = this
  broker), requests for its topics wait for the take-over instead of failing — Pulsar's
  extensible load manager defers requests while ownership is in flight the same way — so
  clients sent here by a transfer's close commands connect without a lookup.
- When the broker stops serving a bundle (unload, transfer, split with unload, lost session)
  it closes the bundle's producers and consumers with CLOSE_PRODUCER / CLOSE_CONSUMER (Pulsar's
  ``Producer.disconnect`` / ``Consumer.disconnect``), carrying the destination's URL for a
  transfer (``assignedBrokerServiceUrl``, PIP-307); clients then reconnect there at once, or
  look the topic up again. A split without unload keeps every client where it is.
- A topic with no producers and no subscriptions is dropped (nothing of it is stored). Still
  listed as served, it is deleted after ``brokerDeleteInactiveTopicsFrequencySeconds`` without
  them (Pulsar's ``checkGC`` with ``brokerDeleteInactiveTopicsEnabled``; the inactive time
  defaults to the check's period there too), so a namespace whose clients left is empty again.

Concurrency contract: one event loop. Registration after :meth:`TopicService.open` must follow
it without an intervening await, so a bundle removed meanwhile cannot keep a client.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from ballast.broker.binary.keys import key_hash
from ballast.broker.binary.subscriptions import Consumer, Link, Subscription
from ballast.broker.caches import NamespaceNotFoundError
from ballast.broker.lookup import partitions_of
from ballast.broker.topics import ServedChange
from ballast.broker.traffic import MeasuredTraffic, TopicMeter, WindowedRates
from ballast.clock import Clock
from ballast.coordination.ownership import OwnershipState, read_owner
from ballast.metadata.store import MetadataError
from ballast.model.naming import TopicName
from ballast.protocol.commands import ServerError, SubType
from ballast.protocol.frames import FrameError, parse_payload

if TYPE_CHECKING:
    from ballast.broker.node import BrokerNode

log = logging.getLogger(__name__)

TRANSFER_WAIT_S = 5.0
_TRANSFER_POLL_S = 0.02


class TopicRefused(Exception):
    """A topic (or a client on it) the broker will not serve, with Pulsar's error."""

    def __init__(self, error: ServerError, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


class TopicInUseError(Exception):
    """A topic with producers or subscriptions was to be deleted without force."""

    def __init__(self, name: TopicName) -> None:
        super().__init__(f"Topic {name} has active producers/subscriptions")


class ProducerHandle:
    """A producer attached to a topic, with what it published (for the topic's stats)."""

    __slots__ = (
        "access_mode",
        "bytes_in",
        "connected_since_ms",
        "epoch",
        "link",
        "msgs_in",
        "name",
        "producer_id",
        "topic",
        "window",
    )

    def __init__(
        self,
        producer_id: int,
        name: str,
        link: Link,
        topic: NonPersistentTopic,
        epoch: int,
        access_mode: int,
        connected_since_ms: int,
        window: WindowedRates,
    ) -> None:
        self.producer_id = producer_id
        self.name = name
        self.link = link
        self.topic = topic
        self.epoch = epoch
        self.access_mode = access_mode
        self.connected_since_ms = connected_since_ms
        self.window = window  # of (msgs_in, bytes_in)
        self.msgs_in = 0
        self.bytes_in = 0

    def publish(self, section: bytes, num_messages: int) -> None:
        """Count a published message and relay it to the topic's subscriptions."""
        self.msgs_in += num_messages
        self.bytes_in += len(section)
        self.topic.publish(section, num_messages)


def _no_key() -> int:
    raise AssertionError("no Key_Shared subscription asked for a key")


class NonPersistentTopic:
    """One topic: producers by name, subscriptions by name, and its meter."""

    def __init__(self, name: TopicName, meter: TopicMeter) -> None:
        self.name = name
        self.name_text = str(name)
        self.meter = meter
        self.producers: dict[str, ProducerHandle] = {}
        self.subscriptions: dict[str, Subscription] = {}
        self._key_shared = 0

    @property
    def idle(self) -> bool:
        return not self.producers and not self.subscriptions

    def publish(self, section: bytes, num_messages: int) -> None:
        """Relay a published message (its payload section verbatim) to every subscription."""
        meter = self.meter
        meter.msgs_in += num_messages
        meter.bytes_in += len(section)
        if not self.subscriptions:
            return
        key: Callable[[], int] = _no_key
        if self._key_shared:
            key = _lazy_key_hash(section)
        for subscription in self.subscriptions.values():
            if subscription.dispatch(section, num_messages, key) is not None:
                meter.msgs_out += num_messages
                meter.bytes_out += len(section)

    def subscription(
        self, name: str, sub_type: int, key_shared_mode: int, now: float
    ) -> Subscription:
        """The subscription ``name``, made at ``now`` (monotonic) if it is new."""
        found = self.subscriptions.get(name)
        if found is None:
            window = WindowedRates(now, self.meter.window_s, 3)
            found = Subscription(self.name_text, name, sub_type, key_shared_mode, window)
            self.subscriptions[name] = found
            if sub_type == SubType.KEY_SHARED:
                self._key_shared += 1
        return found

    def drop_subscription(self, name: str) -> None:
        found = self.subscriptions.pop(name, None)
        if found is not None and found.sub_type == SubType.KEY_SHARED:
            self._key_shared -= 1


def _lazy_key_hash(section: bytes) -> Callable[[], int]:
    computed: list[int] = []

    def compute() -> int:
        if not computed:
            try:
                key = parse_payload(section, verify=False).decode_metadata().sticky_key
            except FrameError:
                key = None
            computed.append(key_hash(key))
        return computed[0]

    return compute


class TopicService:
    """The non-persistent topics of one broker and the clients attached to them."""

    def __init__(
        self,
        node: BrokerNode,
        traffic: MeasuredTraffic,
        clock: Clock,
        *,
        transfer_wait_s: float = TRANSFER_WAIT_S,
    ) -> None:
        self.node = node
        self.traffic = traffic
        self.clock = clock
        self.transfer_wait_s = transfer_wait_s
        self.topics: dict[TopicName, NonPersistentTopic] = {}
        # When each served non-persistent topic was last seen active (created, or with a
        # client at a sweep): Pulsar's ``lastActive``.
        self._last_active: dict[TopicName, float] = {}
        self._names = itertools.count()
        self._name_prefix = f"{node.settings.get_str('clusterName')}-{node.identity.broker_port}"
        self.closed_by_broker = 0  # producers and consumers closed because their bundle left
        node.served.add_listener(self._on_served)

    # -- opening ------------------------------------------------------------------------------

    async def open(self, topic: TopicName) -> NonPersistentTopic:
        """The topic, if this broker may serve it now; TopicRefused otherwise. Callers must
        attach their client before awaiting anything else."""
        if topic.is_persistent:
            raise TopicRefused(
                ServerError.NOT_ALLOWED_ERROR,
                f"{topic}: persistent topics need a storage layer, which Ballast does not have "
                "yet; use non-persistent:// topics",
            )
        try:
            if topic.is_partition and topic not in self.topics:
                await self._check_partition(topic)
            if await self.node.open_topic(topic):
                return self._topic(topic)
            if await self._transfer_to_me(topic):
                return self._topic(topic)
        except NamespaceNotFoundError as exc:
            raise TopicRefused(ServerError.TOPIC_NOT_FOUND, str(exc)) from None
        except MetadataError as exc:  # retried on the same connection (see lookup errors)
            raise TopicRefused(ServerError.METADATA_ERROR, f"metadata unavailable: {exc}") from None
        raise TopicRefused(
            ServerError.SERVICE_NOT_READY,
            f"Namespace bundle for topic ({topic}) not served by this instance: "
            f"{self.node.broker_id}. Please redo the lookup.",
        )

    async def _check_partition(self, topic: TopicName) -> None:
        """TopicRefused (TopicNotFound) for a partition its partitioned topic does not have:
        Pulsar's ``BrokerService.getTopic`` serves a non-persistent ``…-partition-N`` only
        while the partitioned topic has more than N partitions (a name past the count, or of
        no partitioned topic, would be a stray topic no partitioned client reads)."""
        partitions = await partitions_of(self.node.store, topic.partitioned_parent)
        if topic.partition_index >= partitions:
            having = f"has {partitions} partitions" if partitions else "is not a partitioned topic"
            raise TopicRefused(
                ServerError.TOPIC_NOT_FOUND,
                f"Topic {topic} does not exist: {topic.partitioned_parent} {having}",
            )

    async def _transfer_to_me(self, topic: TopicName) -> bool:
        node = self.node
        bundle = await node.lookups.bundle_of(topic)
        owner = await read_owner(node.store, bundle)
        if (
            owner is None
            or owner.state is not OwnershipState.RELEASING
            or owner.data.transfer_to != node.broker_id
        ):
            return False
        deadline = self.clock.monotonic() + self.transfer_wait_s
        while self.clock.monotonic() < deadline and not node.stopped:
            await self.clock.sleep(_TRANSFER_POLL_S)
            if node.ownership.state_of(bundle) is OwnershipState.OWNED and bundle in node.served:
                return await node.open_topic(topic)
        return False

    def _topic(self, name: TopicName) -> NonPersistentTopic:
        found = self.topics.get(name)
        if found is None:
            found = NonPersistentTopic(name, self.traffic.meter(name))
            self.topics[name] = found
            self._last_active[name] = self.clock.monotonic()
        return found

    def delete_inactive(self, max_inactive_s: float) -> list[TopicName]:
        """Stop serving the non-persistent topics that have had no producer and no
        subscription for more than ``max_inactive_s`` (Pulsar's ``checkGC`` in
        ``delete_when_no_subscriptions`` mode): a topic with a client is marked active now,
        one without is deleted once its last active time is that old. Only topics this
        service opened are looked at (every one it serves has a last active time), not every
        topic the broker serves. The deleted topics."""
        now = self.clock.monotonic()
        inactive: list[TopicName] = []
        for name, since in list(self._last_active.items()):
            topic = self.topics.get(name)
            if topic is not None and not topic.idle:
                self._last_active[name] = now
            elif now - since > max_inactive_s:
                inactive.append(name)
        for name in inactive:
            log.info("deleting %s: no producers or subscriptions for %.0f s", name, max_inactive_s)
            self._forget(name)
        return inactive

    def delete(self, name: TopicName, *, force: bool) -> bool:
        """Delete a loaded topic (an admin's delete, Pulsar's ``NonPersistentTopic.delete``):
        refused while it has producers or subscriptions unless ``force``, which closes them
        (their clients look the topic up again, and it is created anew as they come back).
        False when this broker has no such topic loaded."""
        topic = self.topics.get(name)
        if topic is None:
            return False
        if not topic.idle:
            if not force:
                raise TopicInUseError(name)
            self._close_clients(topic, None)
        log.info("deleting %s: asked to%s", name, " (forced)" if force else "")
        self._forget(name)
        return True

    def _forget(self, name: TopicName) -> None:
        self._last_active.pop(name, None)
        if self.topics.pop(name, None) is not None:
            self.traffic.forget(name)
        self.node.served.remove_topic(name)

    def new_producer_name(self) -> str:
        """A name unique in the cluster for a producer that brought none (Pulsar names them
        ``<cluster>-<generator>-<n>``)."""
        return f"{self._name_prefix}-{self.node.store.session_id:x}-{next(self._names)}"

    # -- attaching and detaching ----------------------------------------------------------------

    def add_producer(self, producer: ProducerHandle) -> None:
        producer.topic.producers[producer.name] = producer
        producer.topic.meter.producers += 1

    def remove_producer(self, producer: ProducerHandle) -> None:
        topic = producer.topic
        if topic.producers.get(producer.name) is producer:
            del topic.producers[producer.name]
            topic.meter.producers -= 1
            self._note_if_idle(topic)

    def add_consumer(
        self, topic: NonPersistentTopic, subscription: Subscription, consumer: Consumer
    ) -> None:
        subscription.add(consumer)
        topic.meter.consumers += 1

    def remove_consumer(self, topic: NonPersistentTopic, consumer: Consumer) -> None:
        subscription = topic.subscriptions.get(consumer.subscription)
        if subscription is None or not subscription.remove(consumer):
            return
        topic.meter.consumers -= 1
        if not subscription.consumers:
            topic.drop_subscription(subscription.name)  # non-persistent: nothing to keep
        self._note_if_idle(topic)

    def release(self, topic: NonPersistentTopic) -> None:
        """A request that opened ``topic`` attached nothing."""
        self._note_if_idle(topic)

    def _note_if_idle(self, topic: NonPersistentTopic) -> None:
        """A topic whose last client left stays loaded, its counters and stats with it, until
        the inactivity sweep (:meth:`delete_inactive`) deletes it, as Pulsar's does until its
        ``checkGC``; it is idle from now."""
        if topic.idle and self.topics.get(topic.name) is topic:
            self._last_active[topic.name] = self.clock.monotonic()

    # -- bundles leaving ------------------------------------------------------------------------

    def _on_served(self, change: ServedChange) -> None:
        if change.added or change.split:
            return  # a split re-cuts bundles on this broker: every client stays
        url: str | None = None
        if change.transfer_to is not None:
            urls = self.node.lookups.known_urls(change.transfer_to)
            url = urls.broker_url if urls is not None else None
        for name in change.topics:
            self._last_active.pop(name, None)
            topic = self.topics.pop(name, None)
            if topic is None:
                continue
            self.traffic.forget(name)
            self._close_clients(topic, url)

    def _close_clients(self, topic: NonPersistentTopic, assigned_url: str | None) -> None:
        # Consumers first (Pulsar closes producers first): a client reconnecting both to the
        # same broker then subscribes before its producer resends what was in flight, so
        # fewer of those messages find no subscription to go to.
        for subscription in list(topic.subscriptions.values()):
            for consumer in list(subscription.consumers):
                consumer.link.consumer_closed_by_broker(consumer.consumer_id, assigned_url)
                self.closed_by_broker += 1
        for producer in list(topic.producers.values()):
            producer.link.producer_closed_by_broker(producer.producer_id, assigned_url)
            self.closed_by_broker += 1
        topic.producers.clear()
        topic.subscriptions.clear()
        log.info(
            "closed the clients of %s%s",
            topic.name,
            f" (to {assigned_url})" if assigned_url else "",
        )

    def close_all(self) -> None:
        """The broker is stopping: forget every topic (connections are closed by the server)."""
        for name in list(self.topics):
            self.traffic.forget(name)
        self.topics.clear()
        self._last_active.clear()
