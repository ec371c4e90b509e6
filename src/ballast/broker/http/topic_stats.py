"""A non-persistent topic's stats,
``GET /admin/v2/non-persistent/{tenant}/{namespace}/{topic}/stats`` (what ``pulsar-admin
topics stats`` asks): answered by the broker that serves the topic, from
what its binary listener measures, in the field names of Pulsar's ``NonPersistentTopicStats``.

As in Pulsar (``NonPersistentTopics.getStats``), another broker redirects to the owner, and a
topic no broker has loaded (no client since the last inactivity sweep) is 404 "Topic not
found". Only what Ballast measures is given: the topic's rates and counters, its producers
(id, name, access mode, rates, address, client version, since when), its subscriptions (type,
rates, messages and bytes delivered, messages dropped) and their consumers (name, permits,
rates, messages and bytes, address, client version, since when). Every rate is over a window
of at least ``statsUpdateFrequencyInSecs`` (60 s by default, as Pulsar's): zero until the first
has passed, and each entity's window starts when it does, so the parts' rates add up to the
topic's only over steady traffic.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from aiohttp import web

from ballast.broker.http.errors import reason
from ballast.broker.http.lookup_api import admin_topic, serve_topic_here
from ballast.protocol.types import ProducerAccessMode

if TYPE_CHECKING:
    from ballast.broker.binary.subscriptions import Consumer, Subscription
    from ballast.broker.binary.topics import NonPersistentTopic, ProducerHandle, TopicService
    from ballast.broker.node import BrokerNode


def topic_stats(topic: NonPersistentTopic, now: float) -> dict[str, Any]:
    """``topic``'s stats at ``now`` (the broker's monotonic clock, which its meters read)."""
    meter = topic.meter
    rates = meter.stats(now)
    subscriptions = {
        name: _subscription_stats(subscription, now)
        for name, subscription in topic.subscriptions.items()
    }
    return {
        "msgRateIn": rates.msg_rate_in,
        "msgThroughputIn": rates.msg_throughput_in,
        "msgRateOut": rates.msg_rate_out,
        "msgThroughputOut": rates.msg_throughput_out,
        "averageMsgSize": _average_size(rates.msg_rate_in, rates.msg_throughput_in),
        "msgInCounter": meter.msgs_in,
        "bytesInCounter": meter.bytes_in,
        "msgOutCounter": meter.msgs_out,
        "bytesOutCounter": meter.bytes_out,
        # Pulsar's: messages its publishers' connections dropped (more in flight than
        # allowed). Ballast never drops on publish; what no consumer could take is counted
        # per subscription.
        "msgDropRate": 0.0,
        "publishers": [_publisher_stats(producer, now) for producer in topic.producers.values()],
        "subscriptions": subscriptions,
        "replication": {},
    }


def _average_size(rate: float, throughput: float) -> float:
    return throughput / rate if rate > 0 else 0.0


def _since(wall_ms: int) -> str:
    """An instant as Pulsar's stats write it: ISO 8601, UTC, milliseconds."""
    at = datetime.datetime.fromtimestamp(wall_ms / 1000, datetime.UTC)
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _publisher_stats(producer: ProducerHandle, now: float) -> dict[str, Any]:
    rate, throughput = producer.window.rates(now, (producer.msgs_in, producer.bytes_in))
    return {
        "producerId": producer.producer_id,
        "producerName": producer.name,
        "accessMode": ProducerAccessMode.name_of(producer.access_mode),
        "msgRateIn": rate,
        "msgThroughputIn": throughput,
        "averageMsgSize": _average_size(rate, throughput),
        "msgDropRate": 0.0,  # see the topic's
        "address": producer.link.remote,
        "clientVersion": producer.link.client_version,
        "connectedSince": _since(producer.connected_since_ms),
    }


def _subscription_stats(subscription: Subscription, now: float) -> dict[str, Any]:
    counters = (subscription.msgs_out, subscription.bytes_out, subscription.dropped)
    rate, throughput, dropped = subscription.window.rates(now, counters)
    return {
        "type": subscription.type_name,
        "msgRateOut": rate,
        "msgThroughputOut": throughput,
        "msgOutCounter": subscription.msgs_out,
        "bytesOutCounter": subscription.bytes_out,
        # Messages no consumer could take (none ready, or its connection backed up).
        "msgDropRate": dropped,
        "msgDropCounter": subscription.dropped,  # Ballast's: Pulsar gives the rate only
        "consumers": [_consumer_stats(consumer, now) for consumer in subscription.consumers],
    }


def _consumer_stats(consumer: Consumer, now: float) -> dict[str, Any]:
    rate, throughput = consumer.window.rates(now, (consumer.msgs_out, consumer.bytes_out))
    return {
        "consumerName": consumer.name,
        "msgRateOut": rate,
        "msgThroughputOut": throughput,
        "availablePermits": consumer.permits,
        "msgOutCounter": consumer.msgs_out,
        "bytesOutCounter": consumer.bytes_out,
        "address": consumer.link.remote,
        "clientVersion": consumer.link.client_version,
        "connectedSince": _since(consumer.connected_since_ms),
    }


class TopicStatsApi:
    """The stats endpoint of one broker; ``clients`` is its binary listener's topics (None
    for a broker without one: it serves no topic, so it only redirects)."""

    def __init__(self, node: BrokerNode, clients: TopicService | None) -> None:
        self.node = node
        self.clients = clients

    async def stats(self, request: web.Request) -> web.StreamResponse:
        topic = admin_topic(request)
        await serve_topic_here(self.node, topic, request)
        loaded = None if self.clients is None else self.clients.topics.get(topic)
        if loaded is None:
            return reason(404, "Topic not found")
        return web.json_response(topic_stats(loaded, self.node.clock.monotonic()))
