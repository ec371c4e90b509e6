"""``PUT`` and ``DELETE /admin/v2/non-persistent/{tenant}/{namespace}/{topic}`` (what
``pulsar-admin topics create`` and ``delete`` send) were 405: the path is the bundle listing's.
Created, a topic is loaded on its owner (any broker redirects there) and listed; deleted
with clients, it is refused unless forced, which closes them, and an official client
reconnects and goes on."""

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

NAMESPACE = "t/admin"


async def test_a_topic_is_created_and_deleted_on_the_broker_serving_it(clock: Clock) -> None:
    cluster = await start_cluster(clock, NAMESPACE, 4)
    nodes = list(cluster.nodes.values())
    closeables: list[Any] = []
    received: list[bytes] = []
    try:
        async with aiohttp.ClientSession() as http:

            async def call(method: str, path: str, node: int = 0) -> tuple[int, Any]:
                url = f"{http_url(nodes[node])}/admin/v2/non-persistent/{NAMESPACE}"
                url += f"/{path}" if path else ""
                async with http.request(method, url) as answer:
                    text = await answer.text()
                    return answer.status, (await answer.json() if text else None)

            # The same create from every broker at once, its bundle owned by none yet: one
            # makes it (each one waiting for the bundle made it).
            raced = await asyncio.gather(*(call("PUT", "raced", node=i % 3) for i in range(6)))
            assert sorted(status for status, _ in raced) == [204, 409, 409, 409, 409, 409]
            for i in range(len(nodes)):  # from any broker: created on its owner
                assert await call("PUT", f"made-{i}", node=i) == (204, None)
            # Followed by hand, a create goes to the leader if need be, which sends it to the
            # broker it chose, told so (authoritative): that one takes the bundle. It could send
            # the create back and forth meanwhile.
            async with http.put(
                f"{http_url(nodes[0])}/admin/v2/namespaces/t/hops",
                json={"bundles": {"numBundles": 16}},
            ) as answer:
                assert answer.status == 204, await answer.text()
            told = 0  # creates sent on to the chosen broker with authoritative
            for i in range(8):  # in bundles no broker owns yet: each is placed
                url = f"{http_url(nodes[i % 3])}/admin/v2/non-persistent/t/hops/hop-{i}"
                visited: list[str] = []
                while True:
                    visited.append(url)
                    async with http.put(url, allow_redirects=False) as answer:
                        if answer.status != 307:
                            assert answer.status == 204, await answer.text()
                            break
                        url = answer.headers["Location"]
                        assert "authoritative=true" not in visited[-1], visited  # it took it
                assert len(visited) <= 3, visited
                told += any("authoritative=true" in hop for hop in visited)
            assert told > 0  # 8 bundles placed over 3 brokers: some elsewhere than asked
            listed: set[str] = set()
            for i in range(len(nodes)):
                status, names = await call("GET", "", node=i)  # the namespace's topics
                assert status == 200
                listed.update(names)
            assert {f"non-persistent://{NAMESPACE}/made-{i}" for i in range(len(nodes))} <= listed
            status, stats = await call("GET", "made-0/stats", node=2)
            assert status == 200 and stats["publishers"] == []
            status, body = await call("PUT", "made-0", node=2)
            assert (status, body["reason"]) == (409, "This topic already exists")
            assert (await call("DELETE", "made-1", node=1)) == (204, None)
            status, body = await call("DELETE", "made-1")
            assert (status, body["reason"]) == (404, "Topic not found")
            async with http.put(
                f"{http_url(nodes[0])}/admin/v2/non-persistent/{NAMESPACE}/split/partitions",
                json=3,
            ) as answer:
                assert answer.status == 204, await answer.text()
            assert (await call("PUT", "split-partition-1"))[0] == 204
            status, body = await call("PUT", "split-partition-7")  # as Pulsar: 412, not 404
            assert (status, body["reason"]) == (
                412,
                f"Topic non-persistent://{NAMESPACE}/split-partition-7 does not exist: "
                f"non-persistent://{NAMESPACE}/split has 3 partitions",
            )
            # A loaded partition without clients is deleted with its partitioned topic, as
            # Pulsar deletes idle partitions; it refused the delete (412) until the sweep.
            async with http.delete(
                f"{http_url(nodes[2])}/admin/v2/non-persistent/{NAMESPACE}/split/partitions"
            ) as answer:
                assert answer.status == 204, await answer.text()
            assert (await call("GET", "split-partition-1/stats"))[0] == 404  # unloaded
            missing = f"{http_url(nodes[0])}/admin/v2/non-persistent/t/none/x"
            async with http.put(missing) as answer:
                assert answer.status == 404

            # With clients: refused unless forced; forced, the clients reconnect.
            client = await new_client(pulsar_url(nodes[0]))
            closeables.append(client)
            consumer = await asyncio.to_thread(
                client.subscribe,
                f"non-persistent://{NAMESPACE}/busy",
                "audit",
                message_listener=lambda c, m: (received.append(m.data()), c.acknowledge(m)),
            )
            producer = await asyncio.to_thread(
                client.create_producer,
                f"non-persistent://{NAMESPACE}/busy",
                batching_enabled=False,
                send_timeout_millis=2000,
            )
            closeables[:0] = [producer, consumer]
            await asyncio.to_thread(producer.send, b"before")
            await eventually(lambda: received == [b"before"], clock, what="the first message")
            status, body = await call("DELETE", "busy", node=2)
            assert status == 412
            assert body["reason"].endswith("has active producers/subscriptions (force=true "
                                           "closes them)")  # fmt: skip
            assert (await call("DELETE", "busy?force=true", node=2)) == (204, None)

            async def sent_after() -> bool:
                try:
                    await asyncio.to_thread(producer.send, b"after")
                except pulsar.PulsarException:
                    return False
                return True

            # The producer and the consumer reconnect (the consumer may come back after the
            # producer's first send: non-persistent messages go to the subscriptions there are).
            for _ in range(30):
                if await sent_after() and b"after" in received:
                    break
                await clock.sleep(0.5)
            assert b"after" in received
    finally:
        await close_all(closeables)
        await cluster.close()
