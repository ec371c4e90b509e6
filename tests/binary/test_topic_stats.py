"""``GET /admin/v2/non-persistent/.../{topic}/stats`` while an official client produces and
consumes: the broker serving the topic answers with what it measured (the message counters
match what was sent and delivered, the producer and the subscription's consumers by name);
another broker redirects there; a topic nobody loaded is 404, as in Pulsar."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pulsar
import pytest

from ballast.clock import Clock
from tests.support.official_client import close_all, http_url, new_client, pulsar_url, start_cluster
from tests.support.waiting import eventually

pytestmark = [pytest.mark.real_time, pytest.mark.integration]

NAMESPACE = "t/stats"
TOPIC = f"non-persistent://{NAMESPACE}/orders"
MESSAGES = 40


async def test_a_topics_stats_count_what_its_clients_sent_and_received(clock: Clock) -> None:
    cluster = await start_cluster(clock, NAMESPACE, 4)
    nodes = list(cluster.nodes.values())
    closeables: list[Any] = []
    received: list[bytes] = []
    try:
        client = await new_client(pulsar_url(nodes[0]))
        closeables.append(client)
        consumers = [
            await asyncio.to_thread(
                client.subscribe,
                TOPIC,
                "audit",
                consumer_type=pulsar.ConsumerType.Shared,
                consumer_name=name,
                message_listener=lambda c, m: (received.append(m.data()), c.acknowledge(m)),
            )
            for name in ("auditor", "second")
        ]
        producer = await asyncio.to_thread(
            client.create_producer, TOPIC, producer_name="till", batching_enabled=False
        )
        closeables[:0] = [producer, *consumers]
        for i in range(MESSAGES):
            await asyncio.to_thread(producer.send, f"m{i}".encode())
        await eventually(lambda: len(received) == MESSAGES, clock, what="every message delivered")
        async with aiohttp.ClientSession() as http:
            answers = []
            for node in nodes:  # the owner answers; the others redirect to it
                url = f"{http_url(node)}/admin/v2/non-persistent/{NAMESPACE}/orders/stats"
                async with http.get(url) as answer:
                    assert answer.status == 200, await answer.text()
                    answers.append(await answer.json())
            stats = answers[0]
            assert stats["msgInCounter"] == MESSAGES
            assert stats["bytesInCounter"] > 0 and stats["msgOutCounter"] == MESSAGES
            assert [p["producerName"] for p in stats["publishers"]] == ["till"]
            assert stats["publishers"][0]["accessMode"] == "Shared"
            assert stats["publishers"][0]["clientVersion"].startswith("Pulsar-")
            assert stats["publishers"][0]["address"].startswith("127.0.0.1:")
            audit = stats["subscriptions"]["audit"]
            assert audit["type"] == "Shared" and audit["msgOutCounter"] == MESSAGES
            assert [c["consumerName"] for c in audit["consumers"]] == ["auditor", "second"]
            assert sum(c["msgOutCounter"] for c in audit["consumers"]) == MESSAGES
            assert audit["consumers"][0]["connectedSince"].endswith("Z")
            counters = [(a["msgInCounter"], a["msgOutCounter"]) for a in answers]
            assert counters == [(MESSAGES, MESSAGES)] * len(nodes)
            url = f"{http_url(nodes[0])}/admin/v2/non-persistent/{NAMESPACE}/orders/stats"

            async def stats_now() -> dict[str, Any]:
                async with http.get(url) as answer:
                    assert answer.status == 200, await answer.text()
                    found: dict[str, Any] = await answer.json()
                    return found

            # A consumer that leaves takes nothing from its subscription's counters.
            await asyncio.to_thread(consumers[1].close)  # returns once the broker answered
            after = (await stats_now())["subscriptions"]["audit"]
            assert [c["consumerName"] for c in after["consumers"]] == ["auditor"]
            assert after["msgOutCounter"] == MESSAGES
            # With no client left the topic stays loaded, with its counters, until the
            # inactivity sweep (it was "Topic not found" at once, though still listed).
            await asyncio.to_thread(consumers[0].close)
            await asyncio.to_thread(producer.close)
            idle = await stats_now()
            assert (idle["publishers"], idle["subscriptions"]) == ([], {})
            assert idle["msgInCounter"] == MESSAGES
            unused = f"{http_url(nodes[1])}/admin/v2/non-persistent/{NAMESPACE}/nobody/stats"
            async with http.get(unused) as missing:
                assert missing.status == 404
                assert (await missing.json())["reason"] == "Topic not found"
            elsewhere = f"{http_url(nodes[1])}/admin/v2/non-persistent/t/none/x/stats"
            async with http.get(elsewhere) as no_namespace:
                assert no_namespace.status == 404
    finally:
        await close_all(closeables)
        await cluster.close()
