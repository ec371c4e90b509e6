"""End to end with the official client on a partitioned topic made through the admin API: the
client reads the partition count, produces to and consumes from every partition (each a topic
of its own, in its own bundle), and the partitioned topic cannot be deleted from under it
without force."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import aiohttp
import pulsar
import pytest

from ballast.clock import Clock
from ballast.model.naming import TopicName
from tests.support.official_client import (
    Inbox,
    Sent,
    close_all,
    http_url,
    missing_and_duplicates,
    new_client,
    pulsar_url,
    start_cluster,
)
from tests.support.waiting import eventually

pytestmark = [pytest.mark.real_time, pytest.mark.integration]

NAMESPACE = "t/parts"
TOPIC = f"non-persistent://{NAMESPACE}/orders"
PARTITIONS = 4
MESSAGES = 400


async def test_clients_use_every_partition_of_a_partitioned_topic(clock: Clock) -> None:
    cluster = await start_cluster(clock, NAMESPACE, bundles=16)
    nodes = list(cluster.nodes.values())
    admin = f"{http_url(nodes[1])}/admin/v2/non-persistent/{NAMESPACE}/orders/partitions"
    closeables: list[Any] = []
    try:
        async with aiohttp.ClientSession() as session:
            async with session.put(admin, json=PARTITIONS) as response:
                assert response.status == 204, await response.text()
            client = await new_client(pulsar_url(nodes[0]))
            closeables.append(client)
            names = await asyncio.to_thread(client.get_topic_partitions, TOPIC)
            assert names == [f"{TOPIC}-partition-{i}" for i in range(PARTITIONS)]
            inbox = Inbox()
            id_partitions: list[tuple[str, int]] = []
            consumer = await asyncio.to_thread(
                client.subscribe, TOPIC, "all", message_listener=_with_topic(inbox, id_partitions)
            )
            # Failover consumers share the partitions, i % 2 (Pulsar's rule), sorted by name.
            standby: dict[str, Inbox] = {"f1": Inbox(), "f2": Inbox()}
            for name in ("f2", "f1"):
                closeables.insert(
                    0,
                    await asyncio.to_thread(
                        client.subscribe, TOPIC, "fo", consumer_name=name,
                        consumer_type=pulsar.ConsumerType.Failover,
                        message_listener=_with_topic(standby[name]),
                    ),
                )  # fmt: skip
            producer = await asyncio.to_thread(
                client.create_producer, TOPIC, batching_enabled=False
            )
            closeables[:0] = [producer, consumer]
            sent = Sent()
            for i in range(MESSAGES):
                payload = f"m{i}".encode()
                sent.payloads.append(payload)
                producer.send_async(payload, sent.callback, partition_key=f"key-{i}")
            await asyncio.to_thread(producer.flush)
            await eventually(lambda: len(sent.results) == MESSAGES, clock, what="every receipt")
            assert sent.failures() == []
            await eventually(
                lambda: len(inbox.received) >= MESSAGES, clock, timeout_s=20, what="every message"
            )
            assert missing_and_duplicates(sent.payloads, inbox.count()) == ([], [])
            # Each message's id names its partition, as the broker of Pulsar sends it (the
            # client takes it from the MESSAGE command).
            assert len(id_partitions) == MESSAGES
            assert {(topic, names.index(topic)) for topic, _ in id_partitions} == set(id_partitions)
            await eventually(
                lambda: sum(len(b.received) for b in standby.values()) >= MESSAGES,
                clock,
                timeout_s=20,
                what="every message to the failover subscription",
            )
            for name, partitions in (("f1", (0, 2)), ("f2", (1, 3))):
                assert {t for t, _, _ in standby[name].received} == {
                    names[i] for i in partitions
                }, name
            # Keys spread the messages over every partition, each served by its bundle's owner.
            per_partition = Counter(name for name, _, _ in inbox.received)
            assert sorted(per_partition) == names
            for name in names:
                owner = (await cluster.lookup(TopicName.parse(name))).broker_id
                assert owner is not None
                assert TopicName.parse(name) in cluster.binary[owner].topics.topics
            # A partition past the count is no topic (Pulsar's BrokerService.getTopic).
            with pytest.raises(pulsar.TopicNotFound):
                await asyncio.to_thread(client.create_producer, f"{TOPIC}-partition-{PARTITIONS}")
            # Its partitions are loaded: no delete without force; with force the metadata goes.
            async with session.delete(admin) as response:
                assert response.status == 412
                why = (await response.json())["reason"]
                assert f"{PARTITIONS} of its partitions have clients" in why
            async with session.get(admin) as response:
                assert await response.json() == {"partitions": PARTITIONS}
            closed_before = sum(b.topics.closed_by_broker for b in cluster.binary.values())
            async with session.delete(admin, params={"force": "true"}) as response:
                assert response.status == 204, await response.text()
            async with session.get(admin, params={"checkAllowAutoCreation": "true"}) as response:
                assert await response.json() == {"partitions": 0}  # a plain topic to clients
            # As in Pulsar, the forced delete disconnects every partition's clients (the
            # producer and the three consumers on each), and no broker serves one any more.
            partitions = {TopicName.parse(name) for name in names}

            def served() -> set[TopicName]:
                return {t for b in cluster.binary.values() for t in b.topics.topics} & partitions

            await eventually(lambda: not served(), clock, what="no partition served")
            closed = sum(b.topics.closed_by_broker for b in cluster.binary.values())
            assert closed - closed_before >= 4 * PARTITIONS
            # nor is a partition of no partitioned topic, or of no topic at all
            for stray in (f"{TOPIC}-x-partition-0", f"non-persistent://{NAMESPACE}/-partition-0"):
                with pytest.raises(pulsar.TopicNotFound):
                    await asyncio.to_thread(client.create_producer, stray)
    finally:
        await close_all(closeables)
        await cluster.close()


def _with_topic(inbox: Inbox, id_partitions: list[tuple[str, int]] | None = None) -> Any:
    """A listener that records the partition a message came from in place of the consumer
    (and, into ``id_partitions``, the partition its message id names)."""

    def listener(_consumer: Any, message: Any) -> None:
        inbox.received.append((message.topic_name(), message.data(), message.partition_key()))
        if id_partitions is not None:
            id_partitions.append((message.topic_name(), message.message_id().partition()))

    return listener
