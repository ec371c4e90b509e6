"""A broker process stopped (SIGSTOP: a paused VM, a machine swapping) for longer than its
ZooKeeper session: ZooKeeper expires the session and another broker takes its bundles. When
it runs again it must not serve the clients it had, whose messages waited in its sockets all
along: before, it acknowledged every one of them to the producer and delivered them only to
its own subscribers, while a subscription made on the new owner meanwhile never got them."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pulsar
import pytest

from ballast.clock import Clock
from ballast.metadata.zkserver import LocalZooKeeper
from tests.support.official_client import Inbox, close_all, new_client
from tests.support.waiting import eventually
from tests.support.zkbrokers import (
    BrokerProcess,
    broker_processes,
    fresh_store,
    get,
    serve_namespace,
    until_registered,
)

pytestmark = [pytest.mark.real_time, pytest.mark.integration]

SESSION_MS = 3000
TOPIC = "non-persistent://t/ns/paused"


@pytest.fixture
def brokers(zookeeper_server: LocalZooKeeper, tmp_path: Path) -> Iterator[list[BrokerProcess]]:
    store = fresh_store(zookeeper_server.url, "paused")
    settings = ("loadBalancerSheddingEnabled=false", "loadBalancerAutoBundleSplitEnabled=false")
    with broker_processes(store, tmp_path, 2, session_ms=SESSION_MS, settings=settings) as started:
        yield started


class Sender:
    """Sends numbered messages without waiting, from a thread of its own (as an application
    does, whatever its broker is doing), and keeps which were acknowledged."""

    def __init__(self, producer: Any) -> None:
        self.producer = producer
        self.sent = 0
        self.acked: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            number = self.sent
            self.sent += 1
            self.producer.send_async(f"{number}".encode(), self._acked(number))

    def _acked(self, number: int) -> Any:
        def callback(result: Any, _message_id: Any) -> None:
            if result == pulsar.Result.Ok:
                self.acked.add(number)

        return callback

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.producer.flush()


async def test_a_broker_woken_after_its_session_expired_serves_no_stale_client(
    clock: Clock, brokers: list[BrokerProcess]
) -> None:
    closeables: list[Any] = []
    async with aiohttp.ClientSession() as session:
        await until_registered(session, brokers, clock)
        await serve_namespace(session, brokers, clock, bundles=1, topics=0)
        status, found = await get(
            session, f"{brokers[0].url}/lookup/v2/topic/non-persistent/t/ns/paused"
        )
        assert status == 200 and isinstance(found, dict), found
        owner = str(found["httpUrl"]).removeprefix("http://")
        victim = next(b for b in brokers if b.broker_id == owner)
        other = next(b for b in brokers if b is not victim)
        try:
            client = await new_client(other.url)  # lookups go through the broker not stopped
            closeables.append(client)
            first = Inbox()
            closeables.append(
                await asyncio.to_thread(
                    client.subscribe, TOPIC, "first", message_listener=first.listener
                )
            )
            producer = await asyncio.to_thread(
                client.create_producer, TOPIC, batching_enabled=False, send_timeout_millis=60_000
            )
            closeables.append(producer)
            sender = Sender(producer)
            await clock.sleep(1)
            victim.process.send_signal(signal.SIGSTOP)
            try:
                await clock.sleep(SESSION_MS / 1000 + 2)  # ZooKeeper expires its session
                second_client = await new_client(other.url)
                closeables.append(second_client)
                second = Inbox()
                closeables.insert(
                    0,
                    await asyncio.to_thread(
                        second_client.subscribe,
                        TOPIC,
                        "second",
                        message_listener=second.listener,
                    ),
                )
                since = sender.sent  # every message sent from here on is for "second" too
                await clock.sleep(1)
            finally:
                victim.process.send_signal(signal.SIGCONT)
            await clock.sleep(5)
            await asyncio.to_thread(sender.stop)
            assert sender.acked, "nothing was acknowledged"

            def undelivered() -> list[int]:
                received = {int(p) for p in second.payloads()}
                return sorted(n for n in sender.acked if n >= since and n not in received)

            await eventually(
                lambda: not undelivered(),
                clock,
                what="every acknowledged message since the second subscription delivered",
                timeout_s=10,
            )
            assert max(sender.acked) > since + 100  # the producer went on, on the new owner
        finally:
            await close_all(closeables)
