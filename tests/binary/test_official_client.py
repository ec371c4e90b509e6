"""End to end with the official client (``pulsar-client``): three brokers, each with the HTTP
API and the binary listener; clients given one broker's ``pulsar://`` URL and another's
``http://`` URL look topics up, produce and consume on non-persistent topics in every bundle.

Here no bundle moves and every consumer is connected before the first message is sent, so
Pulsar's non-persistent semantics promise delivery to each subscription exactly once: the test
demands it of every subscription type, batched and single messages, a regex subscription, and
checks that the measured traffic becomes the bundle stats of the load reports."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pulsar
import pytest

from ballast.broker.cluster import LocalCluster
from ballast.clock import Clock
from ballast.model.naming import TopicName
from ballast.protocol import commands as c
from ballast.protocol.frames import FrameReader, decode_frame, encode_frame
from tests.support.official_client import (
    Inbox,
    Sent,
    close_all,
    http_url,
    missing_and_duplicates,
    new_client,
    pulsar_url,
    start_cluster,
    topics_per_bundle,
)
from tests.support.waiting import eventually

pytestmark = [pytest.mark.real_time, pytest.mark.integration]

NAMESPACE = "t/e2e"
BUNDLES = 8
MESSAGES = 200
SUBSCRIPTIONS = {
    "excl": pulsar.ConsumerType.Exclusive,
    "shared": pulsar.ConsumerType.Shared,
    "fail": pulsar.ConsumerType.Failover,
    "keys": pulsar.ConsumerType.KeyShared,
}


async def owner_of(cluster: LocalCluster, topic: TopicName) -> str:
    answer = await cluster.lookup(topic)
    assert answer.broker_id is not None, answer
    return answer.broker_id


async def test_clients_produce_and_consume_exactly_once_in_every_bundle(clock: Clock) -> None:
    cluster = await start_cluster(clock, NAMESPACE, BUNDLES)
    nodes = list(cluster.nodes.values())
    topics = topics_per_bundle(NAMESPACE, BUNDLES)
    closeables: list[Any] = []
    try:
        # One client through a broker's binary port, one through another's HTTP lookup.
        binary = await new_client(pulsar_url(nodes[0]))
        http = await new_client(http_url(nodes[1]))
        closeables[:0] = [binary, http]
        inboxes: dict[tuple[TopicName, str], Inbox] = {}
        consumers: list[Any] = []
        for topic in topics:
            for sub, kind in SUBSCRIPTIONS.items():
                inbox = inboxes[(topic, sub)] = Inbox()
                members = 1 if kind == pulsar.ConsumerType.Exclusive else 2
                for i in range(members):
                    client = (binary, http)[i % 2]
                    consumers.append(
                        await asyncio.to_thread(
                            client.subscribe,
                            str(topic),
                            sub,
                            consumer_type=kind,
                            consumer_name=f"{sub}-{i}",
                            message_listener=inbox.listener,
                        )
                    )
        closeables[:0] = consumers
        # Pattern subscriptions list the namespace's topics: over the binary protocol
        # (GET_TOPICS_OF_NAMESPACE) and over HTTP; non-persistent topics come from the brokers.
        regex_inboxes = [Inbox(), Inbox()]
        for n, (client, inbox) in enumerate(zip((binary, http), regex_inboxes, strict=True)):
            regex = await asyncio.to_thread(
                client.subscribe,
                re.compile(f"{NAMESPACE}/topic-.*"),
                f"regex-{n}",
                message_listener=inbox.listener,
                regex_subscription_mode=pulsar.RegexSubscriptionMode.NonPersistentOnly,
            )
            closeables.insert(0, regex)
        sent: dict[TopicName, Sent] = {}
        producers = []
        for n, topic in enumerate(topics):
            batched = n % 2 == 1  # half the topics get batches of several messages
            producer = await asyncio.to_thread(
                (binary, http)[n % 2].create_producer,
                str(topic),
                batching_enabled=batched,
                batching_max_publish_delay_ms=5,
                batching_type=pulsar.BatchingType.KeyBased,
            )
            producers.append(producer)
            record = sent[topic] = Sent()
            for i in range(MESSAGES):
                payload = f"{topic.local_name}:{i}".encode()
                record.payloads.append(payload)
                producer.send_async(payload, record.callback, partition_key=f"k{i % 7}")
        closeables[:0] = producers
        for producer in producers:
            await asyncio.to_thread(producer.flush)
        await eventually(
            lambda: all(len(s.results) == MESSAGES for s in sent.values()),
            clock,
            what="every send acknowledged",
        )
        assert [s.failures() for s in sent.values()] == [[]] * len(topics)

        def complete() -> bool:
            return all(len(inbox.received) >= MESSAGES for inbox in inboxes.values()) and all(
                len(inbox.received) >= MESSAGES * len(topics) for inbox in regex_inboxes
            )

        await eventually(complete, clock, timeout_s=20, what="every subscription fed")
        for (topic, sub), inbox in inboxes.items():
            missing, extra = missing_and_duplicates(sent[topic].payloads, inbox.count())
            assert (missing, extra) == ([], []), f"{topic} {sub}"
        everything = [p for s in sent.values() for p in s.payloads]
        for inbox in regex_inboxes:
            assert missing_and_duplicates(everything, inbox.count()) == ([], [])

        for topic in topics:
            # Failover: only the active consumer gets messages; Shared: both take a part;
            # Key_Shared (single messages or key-based batches): each key on one consumer.
            by = inboxes[(topic, "fail")].by_consumer()
            assert len(by) == 1, f"{topic}: failover delivered to {sorted(by)}"
            keys = inboxes[(topic, "keys")].by_consumer()
            owners = [{key for _, key in got} for got in keys.values()]
            assert sum(len(k) for k in owners) == len(set().union(*owners)) == 7, topic
        shared_split = [len(inboxes[(t, "shared")].by_consumer()) for t in topics]
        assert max(shared_split) == 2, shared_split

        # The brokers measured that traffic: it is the bundle stats of their load reports.
        for topic in topics:
            owner = cluster.nodes[await owner_of(cluster, topic)]
            bundle = str(await owner.lookups.bundle_of(topic))
            meter = owner.traffic.topic_stats(topic)
            assert (meter.producers, meter.consumers) == (1, 7 + 2), topic
            stats = owner.bundle_stats()[bundle]
            assert (stats.producer_count, stats.consumer_count, stats.topics) == (1, 9, 1)
            server = cluster.binary[owner.broker_id]
            counted = server.topics.topics[topic].meter
            assert counted.msgs_in == MESSAGES and counted.msgs_out == MESSAGES * 6
        # Unsubscribing the exclusive consumer ends its subscription on the owner; a shared
        # subscription with another consumer left cannot be unsubscribed by one of them.
        owner = cluster.nodes[await owner_of(cluster, topics[0])]
        served = cluster.binary[owner.broker_id].topics.topics[topics[0]]
        await asyncio.to_thread(consumers[0].unsubscribe)  # topic 0, "excl"
        assert "excl" not in served.subscriptions
        with pytest.raises(Exception, match="MetadataError"):  # as Pulsar answers it
            await asyncio.to_thread(consumers[1].unsubscribe)  # topic 0, "shared", first
        assert len(served.subscriptions["shared"].consumers) == 2
        assert {n.broker_id for n in nodes} == {await owner_of(cluster, t) for t in topics}, (
            "the topics should spread over all brokers"
        )
    finally:
        await close_all(closeables)
        await cluster.close()


async def test_seek_on_a_non_persistent_topic_does_nothing_as_in_pulsar(clock: Clock) -> None:
    """Pulsar's non-persistent subscription resets no cursor and answers success (its
    ``resetCursor`` is a no-op), so code that seeks runs unchanged; Ballast refused it with
    NotAllowedError. The last message id is refused by both."""
    cluster = await start_cluster(clock, "t/seek", 1, brokers=1)
    closeables: list[Any] = []
    try:
        client = await new_client(pulsar_url(next(iter(cluster.nodes.values()))))
        closeables.append(client)
        topic = "non-persistent://t/seek/topic"
        consumer = await asyncio.to_thread(client.subscribe, topic, "s")
        reader = await asyncio.to_thread(client.create_reader, topic, pulsar.MessageId.latest)
        producer = await asyncio.to_thread(client.create_producer, topic, batching_enabled=False)
        closeables[:0] = [producer, reader, consumer]
        await asyncio.to_thread(producer.send, b"first")
        first = await asyncio.to_thread(consumer.receive, 5000)
        await asyncio.to_thread(consumer.seek, first.message_id())
        await asyncio.to_thread(consumer.seek, int(clock.wall_ms()) - 60_000)
        await asyncio.to_thread(reader.seek, pulsar.MessageId.earliest)
        # nothing replayed (nothing is stored; the client drops what it had queued), and what
        # comes next still arrives
        await asyncio.to_thread(producer.send, b"second")
        assert (await asyncio.to_thread(consumer.receive, 5000)).data() == b"second"
        assert (await asyncio.to_thread(reader.read_next, 5000)).data() == b"second"
        with pytest.raises(pulsar.NotAllowedError):
            await asyncio.to_thread(consumer.get_last_message_id)
        # a seek to neither a message nor a time is refused, as Pulsar refuses it
        node = next(iter(cluster.nodes.values()))
        reader_, writer = await asyncio.open_connection("127.0.0.1", node.identity.broker_port)
        try:
            writer.write(encode_frame(c.Connect(client_version="raw", protocol_version=20)))
            writer.write(encode_frame(c.Seek(consumer_id=1, request_id=7)))
            frames, got = FrameReader(), []
            while not any(isinstance(x, c.Error) for x in got):
                data = await asyncio.wait_for(reader_.read(4096), timeout=10)
                got.extend(decode_frame(frame).command for frame in frames.feed(data))
            (error,) = [x for x in got if isinstance(x, c.Error)]
            assert (error.request_id, error.error) == (7, c.ServerError.METADATA_ERROR)
            assert error.message == "Message id and message publish time were not present"
        finally:
            writer.close()
    finally:
        await close_all(closeables)
        await cluster.close()


async def test_producer_access_modes_are_refused_as_pulsar_refuses_them(
    clock: Clock, capfd: pytest.CaptureFixture[str]
) -> None:
    """Pulsar's topic epoch rules: an Exclusive producer finding other producers is fenced
    (ProducerFenced, which clients tell apart from a busy name), a Shared one finding an
    exclusive producer is busy (ProducerBusy). The modes Ballast lacks are refused by name
    (it said "producer access mode 2")."""
    cluster = await start_cluster(clock, "t/modes", 1, brokers=1)
    closeables: list[Any] = []
    try:
        client = await new_client(pulsar_url(next(iter(cluster.nodes.values()))))
        closeables.append(client)
        shared_topic, exclusive_topic = "non-persistent://t/modes/a", "non-persistent://t/modes/b"
        exclusive = pulsar.ProducerAccessMode.Exclusive
        shared = await asyncio.to_thread(client.create_producer, shared_topic)
        closeables.insert(0, shared)
        with pytest.raises(pulsar.ProducerFenced):
            await asyncio.to_thread(client.create_producer, shared_topic, access_mode=exclusive)
        first = await asyncio.to_thread(
            client.create_producer, exclusive_topic, access_mode=exclusive
        )
        closeables.insert(0, first)
        with pytest.raises(pulsar.ProducerFenced):
            await asyncio.to_thread(client.create_producer, exclusive_topic, access_mode=exclusive)
        with pytest.raises(pulsar.ProducerBusy):
            await asyncio.to_thread(client.create_producer, exclusive_topic)
        waiting = pulsar.ProducerAccessMode.WaitForExclusive
        with pytest.raises(pulsar.NotAllowedError):
            await asyncio.to_thread(client.create_producer, shared_topic, access_mode=waiting)
        # the client logs the broker's words (on stderr, as its console logger does)
        said = capfd.readouterr()
        assert "producer access mode WaitForExclusive is not supported" in said.out + said.err
    finally:
        await close_all(closeables)
        await cluster.close()


async def test_a_topic_no_broker_can_serve_is_refused_at_once(clock: Clock) -> None:
    """``.`` and ``..`` pass the client's name checks; answered InvalidTopicName, which the
    client retries, they failed only at its operation timeout, with a bare Timeout."""
    cluster = await start_cluster(clock, "t/dots", 1, brokers=1)
    closeables: list[Any] = []
    try:
        client = await new_client(pulsar_url(next(iter(cluster.nodes.values()))))
        closeables.append(client)
        for name in (".", ".."):
            with pytest.raises(pulsar.NotAllowedError):
                await asyncio.to_thread(client.create_producer, f"non-persistent://t/dots/{name}")
    finally:
        await close_all(closeables)
        await cluster.close()
