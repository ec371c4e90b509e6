"""A consumer's first SUBSCRIBE refused with an error the official client retries (the store
failing, or the bundle not served here at that moment) must be retried, not left hanging: the
C++ client keeps the connection of a refused first SUBSCRIBE as the consumer's own and skips
every retry as "already connected" until its operation timeout, unless the broker closes the
consumer after the refusal. Refusals a client does not retry are not followed by a close, and
clients too old to understand a close are not sent one."""

from __future__ import annotations

import asyncio
from typing import Any

import pulsar
import pytest

from ballast.broker.node import BrokerNode
from ballast.clock import Clock
from ballast.metadata.store import MetadataError
from ballast.model.naming import TopicName
from ballast.protocol import commands as c
from ballast.protocol.frames import FrameReader, decode_frame, encode_frame
from tests.support.official_client import close_all, pulsar_url, start_cluster, topics_per_bundle
from tests.support.waiting import eventually

pytestmark = [pytest.mark.real_time, pytest.mark.integration]

NAMESPACE = "t/refused"
# Shorter than the tests' usual 30 s: a client that does not retry fails within it.
OPERATION_TIMEOUT_S = 10


@pytest.mark.parametrize("refusal", ["store failing", "bundle not served"])
async def test_a_first_subscribe_refused_for_now_is_retried(
    clock: Clock, monkeypatch: pytest.MonkeyPatch, refusal: str
) -> None:
    cluster = await start_cluster(clock, NAMESPACE, 1, brokers=1)
    node = next(iter(cluster.nodes.values()))
    topic = topics_per_bundle(NAMESPACE, 1)[0]
    opened: list[TopicName] = []
    open_topic = BrokerNode.open_topic

    async def refusing_once(self: BrokerNode, name: TopicName) -> bool:
        opened.append(name)
        if len(opened) == 1:
            if refusal == "store failing":  # answered MetadataError
                raise MetadataError("/namespace", "connection to the store lost")
            return False  # answered ServiceNotReady
        return await open_topic(self, name)

    monkeypatch.setattr(BrokerNode, "open_topic", refusing_once)
    closeables: list[Any] = []
    try:
        client = await asyncio.to_thread(
            pulsar.Client,
            pulsar_url(node),
            operation_timeout_seconds=OPERATION_TIMEOUT_S,
            logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
        )
        closeables.append(client)
        received: list[bytes] = []
        consumer = await asyncio.to_thread(
            client.subscribe,
            str(topic),
            "sub",
            message_listener=lambda _consumer, message: received.append(message.data()),
        )
        closeables.insert(0, consumer)
        assert opened == [topic, topic]  # refused, then opened on the client's retry
        producer = await asyncio.to_thread(client.create_producer, str(topic))
        closeables.insert(0, producer)
        await asyncio.to_thread(producer.send, b"after the retry")
        await eventually(lambda: received == [b"after the retry"], clock, what="the message")
        served = cluster.binary[node.broker_id].topics.topics[topic]
        assert len(served.subscriptions["sub"].consumers) == 1
    finally:
        await close_all(closeables)
        await cluster.close()


async def subscribe_raw(port: int, topic: str, protocol_version: int) -> list[c.Command]:
    """A bare client's SUBSCRIBE (consumer 7) and what the broker sends until it answers the
    PING sent after its answer (commands are sent in order: nothing it sent with the answer
    can come later)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        connect = c.Connect(client_version="raw-test", protocol_version=protocol_version)
        subscribe = c.Subscribe(
            topic=topic, subscription="s", sub_type=0, consumer_id=7, request_id=1
        )
        writer.write(encode_frame(connect) + encode_frame(subscribe))
        frames, seen = FrameReader(), []
        pinged = False
        while not any(isinstance(x, c.Pong) for x in seen):
            data = await asyncio.wait_for(reader.read(65536), timeout=10)
            assert data, f"closed early: {seen}"
            seen.extend(decode_frame(f).command for f in frames.feed(data))
            if not pinged and any(isinstance(x, (c.Error, c.Success)) for x in seen):
                writer.write(encode_frame(c.Ping()))
                pinged = True
        return [x for x in seen if not isinstance(x, (c.Connected, c.Pong))]
    finally:
        writer.close()


async def test_only_refusals_the_client_retries_are_followed_by_a_close(clock: Clock) -> None:
    cluster = await start_cluster(clock, NAMESPACE, 1, brokers=2)
    try:
        topic = topics_per_bundle(NAMESPACE, 1)[0]
        owner = (await cluster.lookup(topic)).broker_id
        other = next(n for n in cluster.nodes.values() if n.broker_id != owner)
        port = other.identity.broker_port

        # Not served by this broker: ServiceNotReady, then the consumer is closed.
        got = await subscribe_raw(port, str(topic), protocol_version=20)
        assert [type(x) for x in got] == [c.Error, c.CloseConsumer], got
        error, close = got
        assert isinstance(error, c.Error) and error.error == c.ServerError.SERVICE_NOT_READY
        assert isinstance(close, c.CloseConsumer) and close.consumer_id == 7
        assert close.assigned_broker_service_url is None  # the client looks the topic up

        # A client of protocol version 4 does not know CLOSE_CONSUMER: the refusal alone.
        got = await subscribe_raw(port, str(topic), protocol_version=4)
        assert [type(x) for x in got] == [c.Error], got

        # TopicNotFound is not retried: nothing to close.
        got = await subscribe_raw(port, "non-persistent://t/nosuch/x", protocol_version=20)
        assert [(type(x), getattr(x, "error", None)) for x in got] == [
            (c.Error, c.ServerError.TOPIC_NOT_FOUND)
        ], got
    finally:
        await cluster.close()
