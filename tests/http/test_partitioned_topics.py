"""Partitioned topics over real HTTP, on Pulsar's paths and status codes: created, read, raised
and deleted through a follower (which forwards changes to the leader), listed per domain, and
counted as topics when their namespace is deleted."""

from __future__ import annotations

import json

import pytest

from ballast.broker.http.topics_api import METADATA_TYPE
from ballast.clock import Clock
from ballast.metadata import paths
from ballast.model.naming import NamespaceName, TopicName
from tests.support.http_api import Api, api_for, follower

pytestmark = [pytest.mark.real_time, pytest.mark.integration]

ORDERS = "/admin/v2/non-persistent/t/ns/orders/partitions"


async def _reason(api: Api, method: str, path: str, json: object, broker: int) -> tuple[int, str]:
    status, body, _ = await api.call(method, path, json=json, broker=broker)
    assert isinstance(body, dict) and isinstance(body.get("reason"), str), (path, body)
    return status, body["reason"]


async def test_a_partitioned_topic_is_created_raised_and_deleted(clock: Clock) -> None:
    async for api in api_for(clock):
        other = follower(api)
        assert (await api.call("PUT", "/admin/v2/namespaces/t/ns"))[0] == 204
        status, body, _ = await api.call("PUT", ORDERS, json=3, broker=other)
        assert status == 204, body
        for broker in range(3):  # every broker reads the one record
            assert (await api.call("GET", ORDERS, broker=broker))[1] == {"partitions": 3}
        listing = "/admin/v2/non-persistent/t/ns/partitioned"
        assert (await api.call("GET", listing, broker=other))[1] == ["non-persistent://t/ns/orders"]
        assert (await api.call("GET", "/admin/v2/persistent/t/ns/partitioned"))[1] == []
        # A v1 topic's count, as a client with an http:// URL asks for it.
        v1 = "/admin/non-persistent/t/standalone/ns/orders/partitions"
        assert (await _reason(api, "GET", v1, None, other))[0] == 404  # no such namespace
        v1_namespace = NamespaceName.parse("t/standalone/ns")
        store = next(iter(api.cluster.nodes.values())).store
        await store.put(paths.namespace_policies(v1_namespace), b"{}")
        creating = "?checkAllowAutoCreation=true"  # as clients ask: a plain topic, 0
        assert (await api.call("GET", v1 + creating))[:2] == (200, {"partitions": 0})
        # Asked as an admin tool asks (no checkAllowAutoCreation), a plain topic that does
        # not exist is 404, as in Pulsar: here a non-persistent topic no broker has loaded.
        assert await _reason(api, "GET", v1, None, other) == (
            404,
            "Topic non-persistent://t/standalone/ns/orders not found",
        )
        # A topic of a namespace that does not exist is not a plain topic: 404, as Pulsar
        # answers after reading the namespace's policies.
        missing = "/admin/v2/persistent/t/nope/orders/partitions"
        assert await _reason(api, "GET", missing, None, other) == (
            404,
            "namespace t/nope does not exist",
        )
        # Ballast's ceiling: 2^31 persistent partitions, each recorded, held the leader.
        huge = "/admin/v2/persistent/t/ns/huge/partitions"
        assert await _reason(api, "PUT", huge, 2**31 - 1, other) == (
            406,
            "Number of partitions should be less than or equal to 10000",
        )
        # Raised, never lowered; the same count is a no-op.
        assert await _reason(api, "POST", ORDERS, 2, other) == (
            422,
            "Expect partitions 2 can't less than current partitions 3.",
        )
        assert (await api.call("POST", ORDERS, json=3, broker=other))[0] == 204
        assert (await api.call("POST", ORDERS, json=5, broker=other))[0] == 204
        assert (await api.call("GET", ORDERS))[1] == {"partitions": 5}
        # Nothing is loaded, so it goes without force; then it is a plain topic again.
        assert (await api.call("DELETE", ORDERS, broker=other))[0] == 204
        assert (await api.call("GET", ORDERS + "?checkAllowAutoCreation=true"))[1] == {
            "partitions": 0
        }
        assert (await api.call("GET", ORDERS))[0] == 404
        assert (await api.call("GET", listing))[1] == []
        assert await _reason(api, "DELETE", ORDERS, None, other) == (
            404,
            "Partitioned topic does not exist",
        )
        assert await _reason(api, "POST", ORDERS, 6, other) == (
            409,
            "Topic non-persistent://t/ns/orders is not the partitioned topic.",
        )


async def test_bad_partitioned_topic_requests_get_pulsar_status_codes(clock: Clock) -> None:
    async for api in api_for(clock, overrides=("maxNumPartitionsPerPartitionedTopic=8",)):
        other = follower(api)
        assert (await api.call("PUT", "/admin/v2/namespaces/t/ns"))[0] == 204
        assert (await api.call("PUT", ORDERS, json="4", broker=other))[0] == 204  # as Jackson
        cases: list[tuple[str, str, object, int, str]] = [
            ("PUT", ORDERS, 4, 409, "This topic already exists"),
            ("PUT", "/admin/v2/non-persistent/t/ns/x/partitions", 0, 406, "more than 0"),
            ("PUT", "/admin/v2/non-persistent/t/ns/x/partitions", None, 406, "more than 0"),
            ("PUT", "/admin/v2/non-persistent/t/ns/x/partitions", 9, 406, "equal to 8"),
            ("POST", ORDERS, 9, 422, "Expect partitions 9 greater than maximum partitions per"),
            ("PUT", "/admin/v2/non-persistent/t/ns/x/partitions", "four", 400, "JSON integer"),
            ("PUT", "/admin/v2/non-persistent/t/ns/x/partitions", True, 400, "JSON integer"),
            (
                "PUT",
                "/admin/v2/non-persistent/t/ns/x/partitions",
                2**31,
                400,
                "integer up to 2147483647",
            ),
            (
                "PUT",
                "/admin/v2/non-persistent/t/ns/x-partition-1/partitions",
                2,
                412,
                "-partition-",
            ),
            ("DELETE", "/admin/v2/non-persistent/t/ns/x-partition-1/partitions", None, 412, ""),
            ("PUT", "/admin/v2/non-persistent/t/none/x/partitions", 2, 404, "t/none does not"),
            ("PUT", "/admin/v2/queue/t/ns/x/partitions", 2, 400, "domain"),
            ("GET", "/admin/v2/persistent/t/none/partitioned", None, 404, "t/none does not"),
        ]
        for method, path, body, status, why in cases:
            got = await _reason(api, method, path, body, other)
            assert got[0] == status and why in got[1], (method, path, body, got)
        # None of the refused ones was created.
        assert (await api.call("GET", "/admin/v2/non-persistent/t/ns/partitioned"))[1] == [
            "non-persistent://t/ns/orders"
        ]


async def test_stored_partitions_bound_a_new_partitioned_topic(clock: Clock) -> None:
    """Pulsar refuses to create a partitioned topic over a stored topic of the same name, or
    with fewer partitions than are stored (a topic recreated after its metadata was lost)."""
    async for api in api_for(clock):
        assert (await api.call("PUT", "/admin/v2/namespaces/t/ns"))[0] == 204
        store = next(iter(api.cluster.nodes.values())).store
        for name in ("persistent://t/ns/plain", "persistent://t/ns/old-partition-3"):
            await store.put(paths.managed_ledger(TopicName.parse(name)), b"")
        plain = "/admin/v2/persistent/t/ns/plain/partitions"
        assert await _reason(api, "PUT", plain, 2, 0) == (409, "This topic already exists")
        old = "/admin/v2/persistent/t/ns/old/partitions"
        assert await _reason(api, "PUT", old, 3, 0) == (
            409,
            "The topic has a max partition index of 3, the number of partitions must be at least 4",
        )
        assert (await api.call("PUT", old, json=4))[0] == 204
        assert (await api.call("GET", old))[1] == {"partitions": 4}
        # A stored plain topic exists: 0 partitions, also without checkAllowAutoCreation.
        assert (await api.call("GET", plain))[:2] == (200, {"partitions": 0})


async def test_partitioned_topics_make_a_namespace_non_empty(clock: Clock) -> None:
    async for api in api_for(clock, overrides=("forceDeleteNamespaceAllowed=true",)):
        assert (await api.call("PUT", "/admin/v2/namespaces/t/ns"))[0] == 204
        made = "/admin/v2/persistent/t/ns/p/partitions"
        topics = "/admin/v2/namespaces/t/ns/topics"
        # Persistent partitions are stored, as Pulsar creates their managed ledgers: listed
        # with the namespace's topics, made when the count rises, gone with the topic.
        assert (await api.call("PUT", made, json=2))[0] == 204
        assert (await api.call("GET", topics))[1] == [
            f"persistent://t/ns/p-partition-{i}" for i in range(2)
        ]
        assert (await api.call("POST", made, json=3))[0] == 204
        assert (await api.call("GET", topics))[1] == [
            f"persistent://t/ns/p-partition-{i}" for i in range(3)
        ]
        assert (await api.call("DELETE", made))[0] == 204
        assert (await api.call("GET", topics))[1] == []
        assert (await api.call("PUT", made, json=2))[0] == 204
        assert (await _reason(api, "DELETE", "/admin/v2/namespaces/t/ns", None, 0))[0] == 409
        assert (await api.call("DELETE", "/admin/v2/namespaces/t/ns?force=true"))[0] == 204
        # A namespace made again under the same name starts without them.
        assert (await api.call("PUT", "/admin/v2/namespaces/t/ns"))[0] == 204
        assert (await api.call("GET", "/admin/v2/persistent/t/ns/partitioned"))[1] == []
        assert (await api.call("GET", "/admin/v2/persistent/t/ns/p/partitions"))[0] == 404
        document = (await api.call("GET", "/openapi.json"))[1]
        assert isinstance(document, dict)
        operations = document["paths"]["/admin/v2/{domain}/{tenant}/{namespace}/{topic}/partitions"]
        assert set(operations) == {"get", "put", "post", "delete"}


async def test_a_partitioned_topic_is_created_with_its_properties(clock: Clock) -> None:
    """Pulsar's admin clients send the count and the topic's properties as a
    ``PartitionedTopicMetadata`` of their own body type when there are properties; the
    metadata read back carries them."""
    async for api in api_for(clock):
        assert (await api.call("PUT", "/admin/v2/namespaces/t/ns"))[0] == 204
        typed = {"Content-Type": METADATA_TYPE}
        body = {"partitions": 3, "properties": {"owner": "team-a", "tier": "gold"}}
        async with api.session.put(
            api.urls[follower(api)] + ORDERS, data=json.dumps(body), headers=typed
        ) as response:
            assert response.status == 204, await response.text()
        assert (await api.call("GET", ORDERS))[1] == body
        assert (await api.call("POST", ORDERS, json=4))[0] == 204  # raised, properties kept
        assert (await api.call("GET", ORDERS))[1] == {**body, "partitions": 4}
        # Its partitions exist (a plain topic each, to an admin tool), beyond them nothing:
        partition = "/admin/v2/non-persistent/t/ns/orders-partition-{}/partitions"
        assert (await api.call("GET", partition.format(3)))[:2] == (200, {"partitions": 0})
        assert (await api.call("GET", partition.format(4)))[0] == 404
        plain = "/admin/v2/non-persistent/t/ns/bare/partitions"
        async with api.session.put(api.urls[0] + plain, data="2", headers=typed) as response:
            assert response.status == 204  # a bare count of that type too
        assert (await api.call("GET", plain))[1] == {"partitions": 2}
        bad = {"partitions": 2, "properties": {"n": 1}}
        async with api.session.put(
            api.urls[0] + "/admin/v2/non-persistent/t/ns/bad/partitions",
            data=json.dumps(bad),
            headers=typed,
        ) as response:
            assert response.status == 400
            assert "properties are a JSON object of strings" in (await response.json())["reason"]
