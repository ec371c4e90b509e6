"""A connection that breaks the protocol — a malformed frame, an oversized one, an unknown
command, anything before CONNECT — is answered with an error and closed (a SEND with a bad
checksum only with a SEND_ERROR); the broker keeps serving everyone else (an official client
on the same broker carries on). Connections that go silent are pinged and then closed; the
protocol version is negotiated down."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from ballast.clock import Clock
from ballast.model.naming import TopicName
from ballast.protocol import commands as c
from ballast.protocol.frames import (
    FrameReader,
    decode_frame,
    encode_frame,
    encode_payload_frame,
    payload_section,
)
from ballast.protocol.messages import MessageMetadata
from ballast.protocol.versions import DEFAULT_MAX_MESSAGE_SIZE, max_frame_size
from tests.support.official_client import (
    Inbox,
    close_all,
    new_client,
    pulsar_url,
    start_cluster,
    topics_per_bundle,
)
from tests.support.waiting import eventually

pytestmark = [pytest.mark.real_time, pytest.mark.integration]

CONNECT = encode_frame(c.Connect(client_version="raw-test", protocol_version=20))


async def exchange(port: int, *chunks: bytes) -> list[c.Command]:
    """Send ``chunks`` on a new connection; every command received until the broker closes
    it (a TimeoutError if it does not)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for chunk in chunks:
            writer.write(chunk)
        await writer.drain()
        frames = FrameReader()
        got: list[c.Command] = []
        while True:
            data = await asyncio.wait_for(reader.read(65536), timeout=10)
            if not data:
                return got
            got.extend(decode_frame(frame).command for frame in frames.feed(data))
    finally:
        writer.close()


def errors(commands: list[c.Command]) -> list[tuple[int, str]]:
    return [(x.error, x.message) for x in commands if isinstance(x, c.Error)]


async def test_protocol_breakers_are_closed_and_others_carry_on(clock: Clock) -> None:
    cluster = await start_cluster(clock, "t/bad", 2)
    closeables: list[Any] = []
    try:
        topic = topics_per_bundle("t/bad", 2)[0]
        owner = cluster.nodes[(await cluster.lookup(topic)).broker_id or ""]
        port = owner.identity.broker_port
        client = await new_client(pulsar_url(owner))
        inbox = Inbox()
        consumer = await asyncio.to_thread(
            client.subscribe, str(topic), "s", message_listener=inbox.listener
        )
        producer = await asyncio.to_thread(client.create_producer, str(topic))
        closeables[:0] = [producer, consumer, client]
        await asyncio.to_thread(producer.send, b"before")

        cases: dict[str, tuple[bytes, ...]] = {
            "command before CONNECT": (encode_frame(c.Ping()),),
            "command size past the frame": (CONNECT, b"\x00\x00\x00\x06\x00\x00\x00\x40\x08\x12"),
            "undecodable BaseCommand": (CONNECT, b"\x00\x00\x00\x06\x00\x00\x00\x02\x08\xff"),
            "unknown command type": (CONNECT, b"\x00\x00\x00\x06\x00\x00\x00\x02\x08\x63"),
            "client-bound command": (CONNECT, encode_frame(c.Success(request_id=1))),
            "oversized frame": (
                CONNECT,
                (max_frame_size(DEFAULT_MAX_MESSAGE_SIZE) + 1).to_bytes(4, "big"),
            ),
            "SEND for no producer": (
                CONNECT,
                encode_payload_frame(
                    c.Send(producer_id=9, sequence_id=0),
                    payload_section(
                        MessageMetadata(producer_name="x", sequence_id=0, publish_time=0), b"m"
                    ),
                ),
            ),
        }
        for case, chunks in cases.items():
            got = await exchange(port, *chunks)
            assert errors(got), f"{case}: no ERROR before the close, got {got}"

        # A bad checksum: the SEND is refused (SEND_ERROR ChecksumError) and nothing of it
        # reaches the consumer; the connection stays, as Pulsar's Producer.publishMessage keeps
        # it (its other producers and consumers carry on), and the next SEND is taken.
        section = bytearray(
            payload_section(
                MessageMetadata(producer_name="raw", sequence_id=0, publish_time=0), b"corrupt"
            )
        )
        section[-1] ^= 0xFF
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            CONNECT + encode_frame(c.Producer(topic=str(topic), producer_id=1, request_id=1))
        )
        frames = FrameReader()
        seen: list[c.Command] = []

        async def until(done: Callable[[c.Command], bool]) -> None:
            while not any(done(x) for x in seen):
                data = await asyncio.wait_for(reader.read(65536), timeout=10)
                assert data, f"closed: {seen}"
                seen.extend(decode_frame(f).command for f in frames.feed(data))

        await until(lambda x: isinstance(x, c.ProducerSuccess))
        writer.write(encode_payload_frame(c.Send(producer_id=1, sequence_id=0), bytes(section)))
        good = payload_section(
            MessageMetadata(producer_name="raw", sequence_id=1, publish_time=0), b"fixed"
        )
        writer.write(encode_payload_frame(c.Send(producer_id=1, sequence_id=1), good))
        await until(lambda x: isinstance(x, c.SendReceipt) and x.sequence_id == 1)
        writer.close()
        send_errors = [x for x in seen if isinstance(x, c.SendError)]
        assert [(x.error, x.sequence_id) for x in send_errors] == [
            (c.ServerError.CHECKSUM_ERROR, 0)
        ]
        assert errors(seen) == []

        # The official client's connection to the same broker was never disturbed.
        await asyncio.to_thread(producer.send, b"after")
        await eventually(
            lambda: inbox.payloads() == [b"before", b"fixed", b"after"], clock, what="after"
        )
        assert cluster.binary[owner.broker_id].refused == len(cases)
        served = cluster.binary[owner.broker_id].topics.topics[TopicName.parse(str(topic))]

        # What Pulsar's non-persistent topics refuse: a blank subscription name (the official
        # client refuses it itself; another client made a subscription named "  "), one of
        # the replicators' names, a compacted read (the official reader asks for one).
        reserved = "Subscription with reserved subscription name attempted"
        refused_subscribes = (
            ("", False, c.ServerError.PRODUCER_BUSY, "Empty subscription name"),
            ("  ", False, c.ServerError.PRODUCER_BUSY, "Empty subscription name"),
            ("pulsar.repl.x", False, c.ServerError.PRODUCER_BUSY, reserved),
            ("pulsar.replica", False, c.ServerError.PRODUCER_BUSY, reserved),
            (
                "compacted",
                True,
                c.ServerError.NOT_ALLOWED_ERROR,
                "readCompacted only valid on persistent topics",
            ),
        )
        for request_id, (name, compacted, error, message) in enumerate(refused_subscribes, 1):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(
                CONNECT
                + encode_frame(
                    c.Subscribe(
                        topic=str(topic),
                        subscription=name,
                        sub_type=0,
                        consumer_id=1,
                        request_id=request_id,
                        read_compacted=compacted,
                    )
                )
            )
            frames, seen = FrameReader(), []
            while not errors(seen):
                data = await asyncio.wait_for(reader.read(65536), timeout=10)
                assert data, f"closed early: {seen}"
                seen.extend(decode_frame(f).command for f in frames.feed(data))
            writer.close()
            assert errors(seen) == [(error, message)], name
            assert name not in served.subscriptions

        # PARTITIONED_METADATA for a namespace that does not exist is TopicNotFound, as LOOKUP
        # and the HTTP API answer it (it was a success with 0 partitions).
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        asked = ("non-persistent://t/nosuch/x", str(topic), "non-persistent://nosuch/ns/x")
        writer.write(
            CONNECT
            + b"".join(
                encode_frame(c.PartitionedMetadata(topic=name, request_id=n))
                for n, name in enumerate(asked)
            )
        )
        frames, answers = FrameReader(), {}
        while len(answers) < len(asked):
            data = await asyncio.wait_for(reader.read(65536), timeout=10)
            assert data, f"closed early: {answers}"
            for frame in frames.feed(data):
                command = decode_frame(frame).command
                if isinstance(command, c.PartitionedMetadataResponse):
                    answers[command.request_id] = (command.error, command.partitions)
        writer.close()
        assert answers == {
            0: (c.ServerError.TOPIC_NOT_FOUND, None),
            1: (None, 0),
            2: (c.ServerError.TOPIC_NOT_FOUND, None),
        }
    finally:
        await close_all(closeables)
        await cluster.close()


async def test_keep_alive_and_version_negotiation(clock: Clock) -> None:
    cluster = await start_cluster(
        clock, "t/alive", 1, brokers=1, overrides=("keepAliveIntervalSeconds=1",)
    )
    closeables: list[Any] = []
    try:
        node = next(iter(cluster.nodes.values()))
        port = node.identity.broker_port
        # The broker answers with the older of the two versions.
        for asked, agreed in ((5, 5), (99, 20)):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(encode_frame(c.Connect(client_version="raw", protocol_version=asked)))
            frames = FrameReader()
            got: list[c.Command] = []
            while not got:
                got.extend(
                    decode_frame(f).command
                    for f in frames.feed(await asyncio.wait_for(reader.read(4096), 10))
                )
            connected = got[0]
            assert isinstance(connected, c.Connected)
            assert (connected.protocol_version, connected.max_message_size) == (
                agreed,
                DEFAULT_MAX_MESSAGE_SIZE,
            )
            writer.close()
        # An official client answers the broker's pings and stays connected...
        client = await new_client(pulsar_url(node))
        topic = "non-persistent://t/alive/topic"
        producer = await asyncio.to_thread(client.create_producer, topic)
        closeables[:0] = [producer, client]
        # ... while a connection that never answers is pinged, then closed.
        started = clock.monotonic()
        got = await exchange(port, CONNECT)
        assert [type(x) for x in got] == [c.Connected, c.Ping]
        assert 1.5 <= clock.monotonic() - started <= 5
        got = await exchange(port)  # and one that never sends CONNECT is closed too
        assert errors(got) and "CONNECT" in errors(got)[0][1]
        await asyncio.to_thread(producer.send, b"still here")
        assert (
            cluster.binary[node.broker_id].topics.topics[TopicName.parse(topic)].meter.msgs_in == 1
        )
    finally:
        await close_all(closeables)
        await cluster.close()
