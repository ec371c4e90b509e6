"""A non-persistent topic's stats,
``GET /admin/v2/non-persistent/{tenant}/{namespace}/{topic}/stats`` (what ``pulsar-admin
topics stats`` asks): answered by the broker that serves the topic, from
what its binary listener measures, in the field names of Pulsar's ``NonPersistentTopicStats``.

As in Pulsar (``NonPersistentTopics.getStats``), another broker redirects to the owner, and a
topic no broker has loaded (no client since the last inactivity sweep) is 404 "Topic not
found". Only what Ballast measures is given: the topic's rates and counters, its producers
(id, name, access mode), its subscriptions (type, messages and bytes delivered and dropped)
and their consumers (name, permits, messages and bytes, since when); per-producer and
per-consumer rates, addresses and client versions are left out rather than made up.
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
    from ballast.broker.binary.topics import NonPersistentTopic, TopicService
    from ballast.broker.node import BrokerNode

_ACCESS_MODES: dict[int, str] = {
    ProducerAccessMode.SHARED: "Shared",
    ProducerAccessMode.EXCLUSIVE: "Exclusive",
    ProducerAccessMode.WAIT_FOR_EXCLUSIVE: "WaitForExclusive",
    ProducerAccessMode.EXCLUSIVE_WITH_FENCING: "ExclusiveWithFencing",
}


def topic_stats(topic: NonPersistentTopic, now: float) -> dict[str, Any]:
    """``topic``'s stats at ``now`` (the broker's monotonic clock, which its meter reads)."""
    meter = topic.meter
    rates = meter.stats(now)
    return {
        "msgRateIn": rates.msg_rate_in,
        "msgThroughputIn": rates.msg_throughput_in,
        "msgRateOut": rates.msg_rate_out,
        "msgThroughputOut": rates.msg_throughput_out,
        "averageMsgSize": (
            rates.msg_throughput_in / rates.msg_rate_in if rates.msg_rate_in > 0 else 0.0
        ),
        "msgInCounter": meter.msgs_in,
        "bytesInCounter": meter.bytes_in,
        "msgOutCounter": meter.msgs_out,
        "bytesOutCounter": meter.bytes_out,
        "publishers": [
            {
                "producerId": producer.producer_id,
                "producerName": producer.name,
                "accessMode": _ACCESS_MODES.get(producer.access_mode, str(producer.access_mode)),
            }
            for producer in topic.producers.values()
        ],
        "subscriptions": {
            name: _subscription_stats(subscription)
            for name, subscription in topic.subscriptions.items()
        },
        "replication": {},
    }


def _subscription_stats(subscription: Subscription) -> dict[str, Any]:
    return {
        "type": subscription.type_name,
        "msgOutCounter": subscription.msgs_out,
        "bytesOutCounter": subscription.bytes_out,
        "msgDropCounter": subscription.dropped,  # Ballast's: Pulsar gives a rate only
        "consumers": [_consumer_stats(consumer) for consumer in subscription.consumers],
    }


def _consumer_stats(consumer: Consumer) -> dict[str, Any]:
    since = datetime.datetime.fromtimestamp(consumer.connected_since_ms / 1000, datetime.UTC)
    return {
        "consumerName": consumer.name,
        "availablePermits": consumer.permits,
        "msgOutCounter": consumer.msgs_out,
        "bytesOutCounter": consumer.bytes_out,
        "connectedSince": since.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
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
