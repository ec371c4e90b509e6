"""Inactive non-persistent topics are deleted (Pulsar's ``brokerDeleteInactiveTopicsEnabled``,
``delete_when_no_subscriptions``): once the official client's producers close, the topics
leave the broker's listing, and the namespace is deleted without ``force``; a topic with a
subscription stays."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from ballast.clock import Clock
from tests.support.official_client import (
    close_all,
    http_url,
    new_client,
    pulsar_url,
    start_cluster,
    topics_per_bundle,
)
from tests.support.waiting import eventually

pytestmark = [pytest.mark.real_time, pytest.mark.integration]

NAMESPACE = "t/fading"


async def _listed(http: aiohttp.ClientSession, base: str) -> list[str]:
    async with http.get(f"{base}/topics", params={"mode": "ALL"}) as listed:
        assert listed.status == 200
        return sorted(await listed.json())


async def test_topics_without_clients_are_deleted_and_the_namespace_with_them(
    clock: Clock,
) -> None:
    cluster = await start_cluster(
        clock, NAMESPACE, 2, overrides=("brokerDeleteInactiveTopicsFrequencySeconds=1",)
    )
    nodes = list(cluster.nodes.values())
    produced, subscribed = topics_per_bundle(NAMESPACE, 2)
    base = f"{http_url(nodes[0])}/admin/v2/namespaces/{NAMESPACE}"
    closeables: list[Any] = []
    try:
        client = await new_client(pulsar_url(nodes[1]))
        closeables.append(client)
        producer = await asyncio.to_thread(client.create_producer, str(produced))
        consumer = await asyncio.to_thread(client.subscribe, str(subscribed), "keeps-it")
        closeables.append(consumer)
        async with aiohttp.ClientSession() as http:
            assert await _listed(http, base) == sorted([str(produced), str(subscribed)])
            await asyncio.to_thread(producer.close)

            async def only_the_subscribed_left() -> bool:
                return await _listed(http, base) == [str(subscribed)]

            await eventually(
                only_the_subscribed_left, clock, timeout_s=15, interval_s=0.2, what="a deletion"
            )
            await clock.sleep(2.5)  # two more sweeps: a subscription keeps its topic
            assert await _listed(http, base) == [str(subscribed)]
            await asyncio.to_thread(consumer.close)

            async def empty() -> bool:
                return await _listed(http, base) == []

            await eventually(empty, clock, timeout_s=15, interval_s=0.2, what="the last deletion")
            async with http.delete(base) as deleted:  # no force needed any more
                assert deleted.status == 204, await deleted.text()
    finally:
        await close_all(reversed(closeables))
        await cluster.close()
