"""Bundles move under live official clients: an admin unload, a transfer and a split (with
unload) while producers send steadily and consumers receive. The owner closes the bundle's
producers and consumers (CLOSE_PRODUCER / CLOSE_CONSUMER); the clients find the new owner —
by lookup after an unload or split, directly from the destination URL in the close commands
after a transfer — and carry on with the same producer and consumer objects.

What may be lost, and why (Pulsar's non-persistent semantics): a message reaches the consumers
connected to the owner at that moment. During a move each client reconnects on its own: a
producer resends the messages it had in flight as soon as it is back, and any that reach the
new owner before a subscription's consumer has re-subscribed (and granted permits) go to
nobody; the client also discards what it had queued but not yet handed to the listener when it
re-subscribes. So messages sent from shortly before a move until the topic flows again may be
missing. The test demands: no message is ever duplicated, every producer's send succeeds, only
messages sent inside a move's window are missing, each window lasts seconds at most, and every
message outside them arrives exactly once per subscription."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
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
    new_client,
    pulsar_url,
    start_cluster,
    topics_per_bundle,
)
from tests.support.waiting import eventually

pytestmark = [pytest.mark.real_time, pytest.mark.integration]

NAMESPACE = "t/moves"
ADMIN = f"/admin/v2/namespaces/{NAMESPACE}"
SEND_EVERY_S = 0.01
IN_FLIGHT_S = 0.5  # a message sent this long before a move may still be in flight
MAX_WINDOW_S = {"unload": 5.0, "transfer": 2.0, "split": 5.0}


def range_of(bundle: str) -> str:
    return bundle.rsplit("/", 1)[1]


@dataclass
class Window:
    kind: str
    topic: TopicName
    start: float
    end: float = 0.0


class Traffic:
    """Producers sending one message per topic every 10 ms, with the time each was sent."""

    def __init__(self, clock: Clock, producers: dict[TopicName, Any]) -> None:
        self.clock = clock
        self.producers = producers
        self.sent = {topic: Sent() for topic in producers}
        self.sent_at: dict[bytes, float] = {}
        self.running = True

    async def run(self) -> None:
        seq = 0
        while self.running:
            for topic, producer in self.producers.items():
                payload = f"{topic.local_name}:{seq}".encode()
                self.sent[topic].payloads.append(payload)
                self.sent_at[payload] = self.clock.monotonic()
                producer.send_async(payload, self.sent[topic].callback)
            seq += 1
            await self.clock.sleep(SEND_EVERY_S)


async def test_clients_follow_unload_transfer_and_split_under_load(clock: Clock) -> None:
    cluster = await start_cluster(clock, NAMESPACE, 4)
    nodes = list(cluster.nodes.values())
    topics = topics_per_bundle(NAMESPACE, 4)
    closeables: list[Any] = []
    try:
        binary = await new_client(pulsar_url(nodes[0]))
        http = await new_client(http_url(nodes[1]))
        closeables[:0] = [binary, http]
        inboxes: dict[tuple[TopicName, str], Inbox] = {}
        for topic in topics:
            for sub, kind, clients in (
                ("excl", pulsar.ConsumerType.Exclusive, (binary,)),
                ("shared", pulsar.ConsumerType.Shared, (binary, http)),
            ):
                inbox = inboxes[(topic, sub)] = Inbox()
                for i, client in enumerate(clients):
                    consumer = await asyncio.to_thread(
                        client.subscribe,
                        str(topic),
                        sub,
                        consumer_type=kind,
                        consumer_name=f"{sub}-{i}",
                        message_listener=inbox.listener,
                    )
                    closeables.insert(0, consumer)
        producers = {
            topic: await asyncio.to_thread((binary, http)[n % 2].create_producer, str(topic))
            for n, topic in enumerate(topics)
        }
        closeables[:0] = producers.values()
        traffic = Traffic(clock, producers)
        sending = asyncio.ensure_future(traffic.run())

        def flowing_since(topic: TopicName, since: float) -> Callable[[], bool]:
            """Both subscriptions got a message of ``topic`` sent after ``since``."""

            def check() -> bool:
                return all(
                    any(traffic.sent_at.get(p, 0.0) > since for p in inboxes[(topic, s)].payloads())
                    for s in ("excl", "shared")
                )

            return check

        def closed_by_brokers() -> int:
            return sum(server.topics.closed_by_broker for server in cluster.binary.values())

        def all_attached(topic: TopicName) -> Callable[[], bool]:
            """The topic's producer and its three consumers are attached again, wherever."""

            def check() -> bool:
                producers = consumers = 0
                for server in cluster.binary.values():
                    found = server.topics.topics.get(topic)
                    if found is not None:
                        producers += found.meter.producers
                        consumers += found.meter.consumers
                return (producers, consumers) == (1, 3)

            return check

        async def move(kind: str, topic: TopicName, path: str) -> Window:
            """Ask for a move through the admin API of a broker, as an operator would; wait
            until the topic flows again. Its producer and three consumers were closed."""
            closed = closed_by_brokers()
            window = Window(kind, topic, clock.monotonic())
            async with (
                aiohttp.ClientSession() as session,
                session.put(f"{http_url(nodes[2])}{path}") as response,
            ):
                assert response.status == 204, await response.text()
            done = clock.monotonic()
            await eventually(flowing_since(topic, done), clock, timeout_s=15, what=f"{kind} done")
            window.end = clock.monotonic()
            # One shared consumer receiving is enough for the flow; the move is over (and
            # its lookups done) only when every client is back.
            await eventually(all_attached(topic), clock, timeout_s=15, what=f"{kind}: clients back")
            assert closed_by_brokers() - closed == 4, kind
            return window

        async def owner_and_bundle(topic: TopicName) -> tuple[str, str]:
            answer = await cluster.lookup(topic)
            assert answer.broker_id is not None
            bundle = await cluster.nodes[answer.broker_id].lookups.bundle_of(topic)
            return answer.broker_id, str(bundle)

        await eventually(flowing_since(topics[3], clock.monotonic()), clock, what="traffic")
        windows: list[Window] = []

        owner, bundle = await owner_and_bundle(topics[0])
        windows.append(await move("unload", topics[0], f"{ADMIN}/{range_of(bundle)}/unload"))

        owner, bundle = await owner_and_bundle(topics[1])
        destination = next(n.broker_id for n in nodes if n.broker_id != owner)
        lookups_before = sum(n.lookups.stats.lookups for n in cluster.nodes.values())
        windows.append(
            await move(
                "transfer",
                topics[1],
                f"{ADMIN}/{range_of(bundle)}/unload?destinationBroker={destination}",
            )
        )
        # The clients went straight to the destination named in the close commands.
        assert sum(n.lookups.stats.lookups for n in cluster.nodes.values()) == lookups_before
        assert (await owner_and_bundle(topics[1]))[0] == destination
        served = cluster.binary[destination].topics.topics[topics[1]]
        assert len(served.producers) == 1 and len(served.subscriptions) == 2

        owner, bundle = await owner_and_bundle(topics[2])
        windows.append(
            await move("split", topics[2], f"{ADMIN}/{range_of(bundle)}/split?unload=true")
        )
        child = (await owner_and_bundle(topics[2]))[1]
        assert child != bundle and child.startswith(NAMESPACE), (bundle, child)

        await clock.sleep(0.5)
        traffic.running = False
        await sending
        for producer in producers.values():
            await asyncio.to_thread(producer.flush)
        total = sum(len(s.payloads) for s in traffic.sent.values())
        await eventually(
            lambda: sum(len(s.results) for s in traffic.sent.values()) == total,
            clock,
            what="every send acknowledged",
        )
        assert [s.failures() for s in traffic.sent.values()] == [[]] * len(topics)

        def in_window(topic: TopicName, payload: bytes) -> bool:
            at = traffic.sent_at[payload]
            return any(w.topic == topic and w.start - IN_FLIGHT_S <= at <= w.end for w in windows)

        def all_outside_windows_arrived() -> bool:
            for (topic, _), inbox in inboxes.items():
                got = inbox.count()
                if any(
                    got[p] == 0 for p in traffic.sent[topic].payloads if not in_window(topic, p)
                ):
                    return False
            return True

        await eventually(all_outside_windows_arrived, clock, timeout_s=15, what="delivery")
        for window in windows:
            assert window.end - window.start <= MAX_WINDOW_S[window.kind], window
        for (topic, sub), inbox in inboxes.items():
            got = inbox.count()
            duplicates = {p: n for p, n in got.items() if n > 1}
            assert duplicates == {}, f"{topic} {sub}"
            assert set(got) <= set(traffic.sent[topic].payloads)
            missing = [p for p in traffic.sent[topic].payloads if got[p] == 0]
            assert all(in_window(topic, p) for p in missing), f"{topic} {sub}: {missing[:5]}"
            if topic == topics[3]:
                assert missing == [], "a topic that never moved loses nothing"
    finally:
        await close_all(closeables)
        await cluster.close()
