"""One message to many subscriptions of one client connection: each subscription with room in
its receiver queue gets it. The copies queued for the subscriptions before counted as unsent
data of the connection, so past 4 MiB of them the later subscriptions' copies were dropped
(1 MB messages to 6 subscriptions: the sixth got none), where Pulsar, whose writes wait on
the event loop, delivers them all."""

from __future__ import annotations

import asyncio
from typing import Any

import pulsar
import pytest

from ballast.clock import Clock
from tests.support.official_client import close_all, new_client, pulsar_url, start_cluster

pytestmark = [pytest.mark.real_time, pytest.mark.integration]

TOPIC = "non-persistent://t/fan/big"
SUBSCRIPTIONS = 6
MESSAGES = 5


async def test_a_large_message_reaches_every_subscription_of_one_connection(
    clock: Clock,
) -> None:
    cluster = await start_cluster(clock, "t/fan", 1, brokers=1)
    closeables: list[Any] = []
    try:
        client = await new_client(pulsar_url(next(iter(cluster.nodes.values()))))
        closeables.append(client)
        consumers = [
            await asyncio.to_thread(client.subscribe, TOPIC, f"s{i}") for i in range(SUBSCRIPTIONS)
        ]
        producer = await asyncio.to_thread(client.create_producer, TOPIC, batching_enabled=False)
        closeables[:0] = [producer, *consumers]
        for _ in range(MESSAGES):
            await asyncio.to_thread(producer.send, b"x" * 1_000_000)
            await clock.sleep(0.3)  # the copies go out before the next: no real backlog

        def count(consumer: Any) -> int:
            got = 0
            while True:
                try:
                    consumer.receive(2000)
                except pulsar.Timeout:
                    return got
                got += 1

        received = [await asyncio.to_thread(count, consumer) for consumer in consumers]
        assert received == [MESSAGES] * SUBSCRIPTIONS
    finally:
        await close_all(closeables)
        await cluster.close()
