"""End to end over real HTTP: three brokers serving Pulsar's lookup and admin API, talking to
each other over HTTP, checked with an HTTP client."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging

import pytest
import yarl

from ballast.broker.caches import OwnershipCache
from ballast.broker.http.server import ApiServer
from ballast.clock import Clock
from ballast.metadata.store import MetadataStore
from ballast.model.bundles import BundleName
from ballast.model.naming import NamespaceName, TopicName
from tests.support.harness import memory
from tests.support.http_api import api_for, follower
from tests.support.invariants import ownership_records
from tests.support.live import distinct_free_ports
from tests.support.waiting import eventually

pytestmark = [pytest.mark.real_time, pytest.mark.integration]

JSON = {"Content-Type": "application/json"}  # what pulsar-admin sends with a body


async def test_a_v1_name_is_looked_up_at_pulsars_v1_path(clock: Clock) -> None:
    """A client with an http:// URL looks a v1 name (with a cluster) up at Pulsar's
    ``/lookup/v2/destination/...``; the lookup was served at a path of its own, and that one
    answered "Not Found"."""
    async for api in api_for(clock):
        status, body, _ = await api.call("GET", "/lookup/v2/destination/persistent/t/c1/ns/x")
        assert status == 404 and "t/c1/ns" in str(body), body  # the namespace, not the path
        status, body, _ = await api.call("GET", "/lookup/v2/topic/persistent/t/c1/ns/x")
        assert status == 404 and "t/c1/ns" not in str(body), body


async def test_lookup_connects_or_redirects_to_the_owner(clock: Clock) -> None:
    async for api in api_for(clock):
        status, _, _ = await api.call(
            "PUT", "/admin/v2/namespaces/t/ns", json={"bundles": {"numBundles": 8}}
        )
        assert status == 204
        path = "/lookup/v2/topic/persistent/t/ns/orders"
        # From a follower, with redirects shown: a 307 chain ends at the owner.
        where = follower(api)
        url = api.urls[where] + path
        hops = 0
        while True:
            async with api.session.get(url, allow_redirects=False) as response:
                if response.status == 307:
                    location = response.headers["Location"]
                    assert "/lookup/v2/topic/persistent/t/ns/orders" in location
                    assert "authoritative=" in location
                    url, hops = location, hops + 1
                    assert hops <= 3
                    continue
                assert response.status == 200, await response.text()
                data = await response.json()
                break
        assert set(data) == {"brokerUrl", "brokerUrlTls", "httpUrl", "httpUrlTls", "nativeUrl"}
        assert data["nativeUrl"] == data["brokerUrl"]
        owner = data["httpUrl"].removeprefix("http://")
        assert owner in api.cluster.nodes
        records = await ownership_records(api.cluster.nodes[owner].store)
        assert (
            records[
                "t/ns/0x00000000_0x20000000"
                if False
                else next(b for b in records if b.startswith("t/ns/"))
            ][0]
            == owner
        )
        # Every broker now answers 200 with the same owner (followed or direct).
        for i in range(3):
            status, body, _ = await api.call("GET", path, broker=i)
            assert status == 200 and isinstance(body, dict) and body["httpUrl"] == data["httpUrl"]
        # A listener name goes along encoded: its "&" and "#" once made a parameter x=1 and a
        # fragment of the rest.
        status, _, _ = await api.call("PUT", "/admin/v2/namespaces/t/fresh")
        assert status == 204
        named = "a&x=1#b c"
        async with api.session.get(
            api.urls[where] + "/lookup/v2/topic/persistent/t/fresh/x",
            params={"listenerName": named},
            allow_redirects=False,
        ) as response:
            assert response.status == 307, await response.text()  # to the leader, to assign
            location = yarl.URL(response.headers["Location"])
        assert dict(location.query) == {"authoritative": "false", "listenerName": named}
        assert location.fragment == "" and location.path.endswith("/t/fresh/x")


async def test_unload_and_split_change_ownership(clock: Clock) -> None:
    async for api in api_for(clock):
        assert (
            await api.call(
                "PUT", "/admin/v2/namespaces/t/moves", json={"bundles": {"numBundles": 2}}
            )
        )[0] == 204
        for i in range(20):
            await api.call("GET", f"/lookup/v2/topic/persistent/t/moves/topic-{i}")
        status, bundles, _ = await api.call("GET", "/admin/v2/namespaces/t/moves/bundles")
        assert status == 200 and isinstance(bundles, dict)
        assert bundles == {
            "boundaries": ["0x00000000", "0x80000000", "0xffffffff"],
            "numBundles": 2,
        }
        store = next(iter(api.cluster.nodes.values())).store
        records = await ownership_records(store)
        first = "t/moves/0x00000000_0x80000000"
        owner = records[first][0]
        other = next(b for b in api.cluster.nodes if b != owner)
        # Unload with a destination: a transfer.
        status, body, _ = await api.call(
            "PUT",
            f"/admin/v2/namespaces/t/moves/0x00000000_0x80000000/unload?destinationBroker={other}",
            broker=follower(api),
        )
        assert status == 204, body
        assert (await ownership_records(store))[first][0] == other
        # To where it is already (given as a web URL, as Pulsar also takes it; a trailing /
        # was taken for part of the id, "not available"): it stays.
        again = f"/admin/v2/namespaces/t/moves/0x00000000_0x80000000/unload?destinationBroker=http://{other}/"
        assert (await api.call("PUT", again))[0] == 204
        assert (await ownership_records(store))[first][0] == other
        # Plain unload: no owner until the next lookup.
        status, _, _ = await api.call(
            "PUT", "/admin/v2/namespaces/t/moves/0x00000000_0x80000000/unload"
        )
        assert status == 204
        assert first not in await ownership_records(store)
        # A destination that is no broker is refused, owned bundle or not (it was taken for ok).
        status, body, _ = await api.call(
            "PUT",
            "/admin/v2/namespaces/t/moves/0x00000000_0x80000000/unload?destinationBroker=nobody:1",
        )
        assert status == 412 and "destination broker nobody:1 is not available" in str(body)
        for wrong in ("127.0.0.1:abc", "http://127.0.0.1:8080/admin", "ftp://h:1"):
            status, body, _ = await api.call(
                "PUT",
                f"/admin/v2/namespaces/t/moves/0x00000000_0x80000000/unload?destinationBroker={wrong}",
            )
            assert status == 412 and "is no broker id (host:port) nor web service URL" in str(body)
        # Split the other bundle in two, owned by its owner.
        second = "t/moves/0x80000000_0xffffffff"
        status, _, _ = await api.call(
            "PUT",
            "/admin/v2/namespaces/t/moves/0x80000000_0xffffffff/split?splitAlgorithmName=range_equally_divide",
        )
        assert status == 204
        status, bundles, _ = await api.call("GET", "/admin/v2/namespaces/t/moves/bundles")
        assert bundles == {
            "boundaries": ["0x00000000", "0x80000000", "0xbfffffff", "0xffffffff"],
            "numBundles": 3,
        }
        after = await ownership_records(store)
        assert second not in after
        assert {"t/moves/0x80000000_0xbfffffff", "t/moves/0xbfffffff_0xffffffff"} <= set(after)
        # A split that finds no cut point (here a position outside the bundle) leaves the
        # bundle as it was and answers 204, as Pulsar does.
        status, body, _ = await api.call(
            "PUT",
            "/admin/v2/namespaces/t/moves/0xbfffffff_0xffffffff/split"
            "?splitAlgorithmName=specified_positions_divide",
            json=[1],
        )
        assert status == 204, body
        assert (await api.call("GET", "/admin/v2/namespaces/t/moves/bundles"))[1] == bundles
        assert await ownership_records(store) == after


async def test_bad_requests_get_pulsar_status_codes(clock: Clock) -> None:
    async for api in api_for(clock):
        await api.call("PUT", "/admin/v2/namespaces/t/ns", json={"bundles": {"numBundles": 4}})
        cases = [
            ("GET", "/lookup/v2/topic/persistent/t/none/x", 404),
            ("GET", "/lookup/v2/topic/queue/t/ns/x", 400),
            ("GET", "/lookup/v2/topic/persistent/t/n$s/x", 400),
            ("PUT", "/admin/v2/namespaces/t/ns", 409),
            ("PUT", "/admin/v2/namespaces/nobody/ns", 404),
            ("PUT", "/admin/v2/namespaces/t/bad name", 400),
            ("GET", "/admin/v2/namespaces/t/missing", 404),
            ("PUT", "/admin/v2/namespaces/t/ns/0x00000000_0x10000000/unload", 412),
            ("PUT", "/admin/v2/namespaces/t/ns/nonsense/unload", 412),
            (
                "PUT",
                "/admin/v2/namespaces/t/ns/0x00000000_0x40000000/split?splitAlgorithmName=halves",
                412,
            ),
            ("PUT", "/admin/v2/namespaces/t/missing/0x00000000_0xffffffff/unload", 404),
            ("PUT", "/admin/v2/namespaces/pulsar/127.0.0.1:1234", 412),  # a heartbeat namespace
            ("DELETE", "/admin/v2/namespaces/pulsar/127.0.0.1:1234", 412),
            ("PUT", "/admin/v2/tenants/t", 412),  # clusters are checked first: none given
            ("DELETE", "/admin/v2/tenants/t", 409),
            ("GET", "/admin/v2/no/such/path", 404),
            ("GET", "/admin/v2/brokers/othercluster", 404),
        ]
        for method, path, expected in cases:
            status, body, _ = await api.call(method, path, broker=follower(api))
            assert status == expected, (method, path, status, body)
            assert isinstance(body, dict) and isinstance(body.get("reason"), str), (path, body)
            assert body["reason"]
        again = {"allowedClusters": ["standalone"]}
        status, body, _ = await api.call("PUT", "/admin/v2/tenants/t", json=again)
        assert status == 409, body
        # TenantInfo's are sets in Pulsar: a name given twice was stored twice
        twice = {"allowedClusters": ["standalone"] * 2, "adminRoles": ["b", "a", "b"]}
        status, body, _ = await api.call("PUT", "/admin/v2/tenants/t6", json=twice)
        assert status == 204, body
        status, info, _ = await api.call("GET", "/admin/v2/tenants/t6")
        assert isinstance(info, dict) and info["allowedClusters"] == ["standalone"]
        assert info["adminRoles"] == ["b", "a"]


async def test_a_body_nested_past_the_parsers_depth_is_a_bad_request(clock: Clock) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    async for api in api_for(clock):
        for method, path in [
            ("PUT", "/admin/v2/tenants/t2"),
            ("PUT", "/admin/v2/persistent/t/ns/deep/partitions"),
        ]:
            url = api.urls[0] + path
            async with api.session.request(method, url, data=deep, headers=JSON) as response:
                assert response.status == 400, (path, await response.text())
                reason = (await response.json())["reason"]
                assert reason.startswith("body is not JSON: maximum recursion depth"), reason


async def test_bodies_that_are_no_text_or_not_as_encoded_are_bad_requests(
    clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """Both were 500s ("internal error: UnicodeEncodeError", "RequestPayloadError") with
    tracebacks in the log, the first after reaching the controller. Then the second's 400
    still logged three tracebacks ("Unhandled exception") and reset the connection it had
    kept open: it is closed after the answer now."""
    async for api in api_for(clock):
        lone = b'{"allowedClusters": ["standalone"], "adminRoles": ["ok", "\\ud800"]}'
        async with api.session.put(
            api.urls[0] + "/admin/v2/tenants/t2", data=lone, headers=JSON
        ) as response:
            assert response.status == 400
            assert (await response.json())["reason"] == (
                "body is not Unicode text: a lone surrogate in $.adminRoles[1]"
            )
        pair = lone.replace(b"\\ud800", b"\\ud83d\\ude00")  # an emoji, as JSON escapes it
        async with api.session.put(
            api.urls[0] + "/admin/v2/tenants/t2", data=pair, headers=JSON
        ) as response:
            assert response.status == 204, await response.text()
        gzip = {"Content-Encoding": "gzip", **JSON}
        for method, path in [
            ("PUT", "/admin/v2/tenants/t3"),
            ("PUT", "/admin/v2/persistent/t/ns/p/partitions"),
        ]:
            async with api.session.request(
                method, api.urls[1] + path, data=b"hello", headers=gzip
            ) as response:
                assert response.status == 400, path
                assert response.headers.get("Connection", "").lower() == "close"
                reason = (await response.json())["reason"]
                assert reason.startswith(
                    "cannot read the body: 400, message: Can not decode content-encoding: gzip"
                ), reason
        status, tenants, _ = await api.call("GET", "/admin/v2/tenants")
        assert status == 200 and isinstance(tenants, list) and "t3" not in tenants
        assert "Unhandled exception" not in caplog.text
        # a body said to be of another type is refused as Pulsar's JSON-only resources do;
        # it was read as JSON and the tenant made
        for kind in ("text/plain", "application/x-www-form-urlencoded", "application/xml"):
            async with api.session.put(
                api.urls[0] + "/admin/v2/tenants/t5", data=pair, headers={"Content-Type": kind}
            ) as response:
                assert response.status == 415, kind
                assert (await response.json())["reason"] == (
                    f"Unsupported Media Type: the body must be application/json, not {kind}"
                )
        status, tenants, _ = await api.call("GET", "/admin/v2/tenants")
        assert status == 200 and isinstance(tenants, list) and "t5" not in tenants


async def _raw(url: str, request: bytes, *, answer: bool = True) -> bytes:
    """Send bytes as they are to a broker's web port; its answer (or nothing)."""
    address = yarl.URL(url)
    reader, writer = await asyncio.open_connection(address.host, address.port)
    writer.write(request)
    await writer.drain()
    data = await reader.read(65536) if answer else b""
    writer.close()
    with contextlib.suppress(ConnectionError):
        await writer.wait_closed()
    return data


async def test_a_clients_mistake_is_one_warning_line(
    clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """aiohttp logged a request line past 8,190 bytes as an ERROR with an 11-line traceback,
    and a client hanging up mid-body as "PUT ... failed" with a 500 attempted."""
    async for api in api_for(clock):
        with caplog.at_level(logging.DEBUG, logger="ballast.broker.http"):
            long_line = b"GET /admin/v2/tenants/" + b"x" * 10_000 + b" HTTP/1.1\r\nHost: a\r\n\r\n"
            assert (await _raw(api.urls[0], long_line)).startswith(b"HTTP/1.0 400")
            cut = b"PUT /admin/v2/tenants/slow HTTP/1.1\r\nHost: a\r\nContent-Length: 40\r\n\r\n{"
            await _raw(api.urls[0], cut, answer=False)

            def hang_up_seen() -> bool:
                return any(
                    "the client closed the connection" in r.getMessage() for r in caplog.records
                )

            await eventually(hang_up_seen, clock, what="the hang-up logged")
        mine = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert [(r.name, r.levelname, r.exc_info) for r in mine] == [
            ("ballast.broker.http.protocol", "WARNING", None)
        ], [r.getMessage() for r in mine]
        assert "that is not HTTP: 400, message: Got more than 8190 bytes" in mine[0].getMessage()
        status, tenants, _ = await api.call("GET", "/admin/v2/tenants")
        assert status == 200 and isinstance(tenants, list) and "slow" not in tenants


async def test_listing_loaded_topics_asks_only_about_owned_bundles(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A namespace's non-persistent topics (a listing, and the check before deleting it)
    asked for the owner of every one of its bundles: with 300,000 bundles the delete held
    every broker of the process for 4.5 s."""
    asked: list[str] = []
    owner = OwnershipCache.owner

    async def counted(self: OwnershipCache, bundle: BundleName) -> object:
        asked.append(str(bundle))
        return await owner(self, bundle)

    async for api in api_for(clock):
        await api.call("PUT", "/admin/v2/namespaces/t/many?numBundles=4096")
        status, data, _ = await api.call("GET", "/lookup/v2/topic/non-persistent/t/many/x")
        assert status == 200 and isinstance(data, dict)
        owned = [
            b
            for b in await ownership_records(
                api.cluster.nodes[data["httpUrl"].removeprefix("http://")].store
            )
            if b.startswith("t/many/")
        ]
        assert len(owned) == 1
        monkeypatch.setattr(OwnershipCache, "owner", counted)
        for broker in range(3):
            status, names, _ = await api.call(
                "GET", "/admin/v2/non-persistent/t/many", broker=broker
            )
            assert status == 200 and names == [], names  # nothing loaded: no producer on x
        assert set(asked) <= set(owned) and len(asked) <= 3  # not 4096 per listing
        assert (await api.call("DELETE", "/admin/v2/namespaces/t/many"))[0] == 204


async def test_head_answers_every_get_and_a_405_says_what_is_allowed(clock: Clock) -> None:
    async for api in api_for(clock):
        for path in ["/admin/v2/brokers/health", "/metrics", "/admin/v2/tenants"]:
            async with api.session.head(api.urls[0] + path) as response:
                assert response.status == 200, path  # it was 405
        async with api.session.options(api.urls[0] + "/admin/v2/tenants") as response:
            assert response.status == 405
            assert "GET" in response.headers["Allow"].split(",")
            assert (await response.json())["reason"] == "Method Not Allowed"
        big = b"[" + b"0," * 600_000 + b"0]"  # past the 1 MiB a body may have
        async with api.session.put(
            api.urls[0] + "/admin/v2/tenants/t4", data=big, headers=JSON
        ) as response:
            assert response.status == 413
            reason = (await response.json())["reason"]
            assert reason.startswith("Maximum request body size 1048576 exceeded"), reason


async def test_a_namespace_is_unloaded_and_its_topics_listed_per_domain(clock: Clock) -> None:
    async for api in api_for(clock):
        assert (await api.call("PUT", "/admin/v2/namespaces/t/u?numBundles=4"))[0] == 204
        for i in range(40):  # own every bundle
            assert (await api.call("GET", f"/lookup/v2/topic/persistent/t/u/x{i}"))[0] == 200
        store = next(iter(api.cluster.nodes.values())).store
        assert sum(b.startswith("t/u/") for b in await ownership_records(store)) == 4
        status, body, _ = await api.call("PUT", "/admin/v2/namespaces/t/u/unload", broker=1)
        assert status == 204, body
        assert not any(b.startswith("t/u/") for b in await ownership_records(store))
        assert (await api.call("PUT", "/admin/v2/namespaces/t/none/unload"))[0] == 404
        # pulsar-admin's topics list: one domain's topics of a namespace.
        assert (await api.call("PUT", "/admin/v2/persistent/t/u/p/partitions", json=2))[0] == 204
        assert (await api.call("GET", "/admin/v2/persistent/t/u", broker=2))[1] == [
            "persistent://t/u/p-partition-0",
            "persistent://t/u/p-partition-1",
        ]
        assert (await api.call("GET", "/admin/v2/non-persistent/t/u"))[1] == []
        assert (await api.call("GET", "/admin/v2/non-persistent/t/none"))[0] == 404
        # ?bundle=RANGE: the topics its bundle serves (Pulsar's getList); none for a range
        # that is no bundle of the namespace. The four bundles of t/u hold p's partitions:
        bundles = await api.cluster.running()[0].bundles.bundles(NamespaceName.parse("t/u"))
        partitions = [TopicName.parse(f"persistent://t/u/p-partition-{i}") for i in range(2)]
        for found in bundles.ranges:  # four bundles, two topics: some lists are empty
            status, names, _ = await api.call("GET", f"/admin/v2/persistent/t/u?bundle={found}")
            served = [str(t) for t in partitions if bundles.find(t).range == found]
            assert status == 200 and names == served, (found, names)
        whole = "0x00000000_0xffffffff"
        assert (await api.call("GET", f"/admin/v2/persistent/t/u?bundle={whole}"))[1] == []
        status, body, _ = await api.call("GET", "/admin/v2/persistent/t/u?bundle=garbage")
        assert status == 412 and "bundle garbage" in body["reason"], body  # type: ignore[index]
        # A bundle no broker owns (all were unloaded above): 204, no body, as Pulsar, whose
        # own namespace listing asks every bundle; a range that is no bundle: 412.
        first = bundles.ranges[0]
        status, body, _ = await api.call("GET", f"/admin/v2/non-persistent/t/u/{first}")
        assert (status, body) == (204, None)
        status, body, _ = await api.call("GET", f"/admin/v2/non-persistent/t/u/{whole}")
        assert status == 412 and "is not a bundle of t/u" in body["reason"]  # type: ignore[index]
        assert (await api.call("GET", f"/admin/v2/non-persistent/t/none/{first}"))[0] == 404


async def test_setting_an_isolation_policy_unloads_what_it_moves(clock: Clock) -> None:
    """As Pulsar: the namespaces a new or changed policy matches are unloaded, so that
    placement puts their bundles on its brokers (``unload_scope`` "none" keeps them)."""
    async for api in api_for(clock):
        for ns in ("iso", "other"):
            assert (await api.call("PUT", f"/admin/v2/namespaces/t/{ns}?numBundles=2"))[0] == 204
            for i in range(20):
                assert (await api.call("GET", f"/lookup/v2/topic/persistent/t/{ns}/x{i}"))[0] == 200
        store = next(iter(api.cluster.nodes.values())).store
        assert (await _owned(store, "iso"), await _owned(store, "other")) == (2, 2)
        path = "/admin/v2/clusters/standalone/namespaceIsolationPolicies/p"
        policy: dict[str, object] = {
            "namespaces": ["t/iso"],
            "primary": [".*"],
            "secondary": [],
            "auto_failover_policy": {"policy_type": "min_available", "parameters": {}},
        }
        status, body, _ = await api.call("POST", path, json=policy)
        assert status == 400 and "min_limit and usage_threshold" in body["reason"]  # type: ignore[index]
        untyped = {**policy, "auto_failover_policy": {"parameters": {"min_limit": "1"}}}
        status, body, _ = await api.call("POST", path, json=untyped)
        assert status == 400 and "auto_failover_policy.policy_type" in body["reason"]  # type: ignore[index]
        policy["auto_failover_policy"] = {
            "policy_type": "min_available",
            "parameters": {"min_limit": "1", "usage_threshold": "80"},
        }
        assert (await api.call("POST", path, json={**policy, "unload_scope": "none"}))[0] == 204
        assert (await _owned(store, "iso"), await _owned(store, "other")) == (2, 2)
        assert (await api.call("GET", path))[1] == {**policy, "unload_scope": "none"}
        assert (await api.call("POST", path, json={**policy, "primary": ["127.*"]}))[0] == 204
        await eventually(functools.partial(_none_owned, store, "iso"), clock, what="t/iso unloaded")
        assert await _owned(store, "other") == 2  # not matched: left where it is
        # Unloaded, its bundles are placed afresh by the policy: no preallocation of an
        # earlier placement sends one back to its broker (it did, past the policy, until the
        # broker's report listed the bundle, which an unchanged report never did).
        leader = next(n.controller for n in api.cluster.nodes.values() if n.controller)
        snapshot = leader.image.snapshot()
        iso = [b for b in snapshot.bundles if b.startswith("t/iso/")]
        assert len(iso) == 2 and [snapshot.preallocated_broker(b) for b in iso] == [None, None]
        assert (await api.call("POST", path, json={**policy, "unload_scope": "some"}))[0] == 400


async def _owned(store: MetadataStore, namespace: str) -> int:
    """How many bundles of ``t/<namespace>`` have an owner."""
    return sum(b.startswith(f"t/{namespace}/") for b in await ownership_records(store))


async def _none_owned(store: MetadataStore, namespace: str) -> bool:
    return await _owned(store, namespace) == 0


async def test_forced_deletion_only_where_the_brokers_allow_it(clock: Clock) -> None:
    """Pulsar's forceDeleteNamespaceAllowed and forceDeleteTenantAllowed, false by default."""
    refused = {
        "/admin/v2/namespaces/t/a?force=true": "Broker doesn't allow forced deletion of namespaces",
        "/admin/v2/tenants/t?force=true": "Broker doesn't allow forced deletion of tenants",
    }
    async for api in api_for(clock):
        assert (await api.call("PUT", "/admin/v2/namespaces/t/a"))[0] == 204
        for path, why in refused.items():
            assert (await api.call("DELETE", path))[:2] == (405, {"reason": why})
        assert (await api.call("GET", "/admin/v2/namespaces/t"))[1] == ["t/a"]
    allowed = ("forceDeleteNamespaceAllowed=true", "forceDeleteTenantAllowed=true")
    async for api in api_for(clock, overrides=allowed):
        for ns in ("a", "b"):
            assert (await api.call("PUT", f"/admin/v2/namespaces/t/{ns}"))[0] == 204
        assert (await api.call("PUT", "/admin/v2/persistent/t/a/p/partitions", json=2))[0] == 204
        assert (await api.call("DELETE", "/admin/v2/tenants/t"))[0] == 409  # not empty
        assert (await api.call("DELETE", "/admin/v2/tenants/t?force=true", broker=1))[0] == 204
        assert (await api.call("GET", "/admin/v2/tenants"))[1] == []
        store = next(iter(api.cluster.nodes.values())).store
        for root in ("/admin/partitioned-topics", "/managed-ledgers", "/admin/local-policies"):
            assert await store.exists(f"{root}/t") is None, root  # nothing of it left
    # A tenant without namespaces needs only the tenant flag, as in Pulsar.
    async for api in api_for(clock, overrides=("forceDeleteTenantAllowed=true",)):
        assert (await api.call("DELETE", "/admin/v2/tenants/t?force=true"))[0] == 204


async def test_a_heartbeat_topic_is_served_by_its_broker(clock: Clock) -> None:
    """``pulsar/<broker>`` has no policies: its topics are looked up on that broker (Pulsar's
    health check produces to one), from any broker."""
    async for api in api_for(clock):
        brokers = list(api.cluster.nodes)
        for i, broker in enumerate(brokers):
            path = f"/lookup/v2/topic/non-persistent/pulsar/{broker}/healthcheck"
            asked = (i + 1) % len(brokers)
            status, _, response = await api.call("GET", path, broker=asked, redirects=False)
            assert status == 307 and "authoritative=true" in response.headers["Location"]
            assert response.headers["Location"].startswith(f"http://{broker}/")
            status, body, _ = await api.call("GET", path, broker=asked)
            assert status == 200 and isinstance(body, dict), (broker, status, body)
            assert body["httpUrl"] == f"http://{broker}"


async def test_split_positions_jackson_would_refuse_are_refused(clock: Clock) -> None:
    """``[true]`` once passed as positions: the owner refused the split command and the
    leader sent it again for ever, so every later command to that broker waited behind it."""
    async for api in api_for(clock):
        assert (await api.call("PUT", "/admin/v2/namespaces/t/w?numBundles=1"))[0] == 204
        assert (await api.call("GET", "/lookup/v2/topic/persistent/t/w/x"))[0] == 200
        whole = "/admin/v2/namespaces/t/w/0x00000000_0xffffffff"
        split = f"{whole}/split?splitAlgorithmName=specified_positions_divide"
        for body in ([True], [2**63], [1.5], "0x10"):
            status, answer, _ = await asyncio.wait_for(
                api.call("PUT", split, json=body, broker=follower(api)), 30
            )
            assert status == 400 and isinstance(answer, dict), (body, status, answer)
            assert answer["reason"] == "split boundaries are a JSON list of integers"
        # pulsar-admin-go sends a JSON "" for no positions: the default algorithm's split.
        halves = f"{whole}/split?unload=false"
        assert (await asyncio.wait_for(api.call("PUT", halves, json=""), 30))[0] == 204
        assert (await api.call("GET", "/admin/v2/namespaces/t/w/bundles"))[1]["numBundles"] == 2  # type: ignore[index]


async def test_names_no_metadata_path_can_hold_are_bad_requests(clock: Clock) -> None:
    async for api in api_for(clock):
        await api.call("PUT", "/admin/v2/namespaces/t/ns")
        domains = "/admin/v2/clusters/standalone/failureDomains"
        isolation = "/admin/v2/clusters/standalone/namespaceIsolationPolicies"
        cases = [
            ("PUT", "/admin/v2/tenants/%2E%2E", "is not a name"),
            ("GET", "/admin/v2/tenants/%2E", "is not a name"),
            ("DELETE", "/admin/v2/tenants/%2E%2E", "is not a name"),
            ("GET", "/admin/v2/tenants/%00", "characters outside"),
            ("GET", "/admin/v2/namespaces/%2E%2E", "is not a name"),
            ("PUT", "/admin/v2/namespaces/t/%2E%2E", "is not a name"),
            ("GET", "/admin/v2/namespaces/t/%2E/bundles", "is not a name"),
            ("GET", "/admin/v2/persistent/t/ns/%2E%2E/partitions", "is not a name"),
            ("GET", "/lookup/v2/topic/persistent/t/ns/%2E%2E", "is not a name"),
            ("GET", "/lookup/v2/topic/non-persistent/t/ns/%2E", "is not a name"),
            ("POST", f"{domains}/%2E%2E", "is not a name"),
            ("POST", f"{isolation}/bad%20name", "characters outside"),
            ("DELETE", f"{isolation}/%2E%2E", "is not a name"),
            ("DELETE", f"{domains}/%2E%2E", "is not a name"),
        ]
        for method, path, why in cases:
            status, body, _ = await api.call(
                method, path, json={"brokers": []}, encoded=True, broker=follower(api)
            )
            assert status == 400, (method, path, status, body)
            assert isinstance(body, dict) and why in body["reason"], (path, body)


async def test_a_tenant_body_is_checked_as_pulsar_does(clock: Clock) -> None:
    async for api in api_for(clock):
        cases: list[tuple[object, int, str]] = [
            ({"adminRoles": 5}, 400, "adminRoles"),
            ({"adminRoles": "abc"}, 400, "Expected `array | null`, got `str`"),
            ({"adminRoles": [1, None]}, 400, "adminRoles[0]"),
            ({"allowedClusters": ["nope", "other"]}, 412, "Clusters do not exist: nope, other"),
            ({"allowedClusters": ["standalone", " "]}, 412, "Clusters can not be empty"),
            ({}, 412, "Clusters can not be empty"),
            ({"adminRoles": ["ops"], "allowedClusters": []}, 412, "Clusters can not be empty"),
            ([1], 400, "a tenant body is a JSON object"),
            ([], 400, "a tenant body is a JSON object"),  # taken for an empty body: 412
            (0, 400, "a tenant body is a JSON object"),
        ]
        for body, status, why in cases:
            got, answer, _ = await api.call("PUT", "/admin/v2/tenants/x", json=body)
            assert got == status and isinstance(answer, dict), (body, got, answer)
            assert why in answer["reason"], (body, answer)
        assert (await api.call("GET", "/admin/v2/tenants/x"))[0] == 404  # none was created
        fine = {"adminRoles": None, "allowedClusters": ["standalone", "global"]}
        assert (await api.call("PUT", "/admin/v2/tenants/x", json=fine))[0] == 204
        assert (await api.call("GET", "/admin/v2/tenants/x"))[1] == {
            "adminRoles": [],
            "allowedClusters": ["standalone", "global"],
        }
        # An update replaces the TenantInfo, checked as a create's.
        roles = {"adminRoles": ["ops"], "allowedClusters": ["standalone"]}
        assert (await api.call("POST", "/admin/v2/tenants/x", json=roles, broker=1))[0] == 204
        assert (await api.call("GET", "/admin/v2/tenants/x"))[1] == roles
        no_clusters = {"adminRoles": ["ops"]}
        assert (await api.call("POST", "/admin/v2/tenants/x", json=no_clusters))[0] == 412
        assert (await api.call("GET", "/admin/v2/tenants/x"))[1] == roles
        status, answer, _ = await api.call(
            "POST", "/admin/v2/tenants/x", json={"allowedClusters": ["no"]}
        )
        assert status == 412 and answer == {"reason": "Clusters do not exist: no"}
        assert (await api.call("POST", "/admin/v2/tenants/none", json=roles))[0] == 404
        assert (await api.call("GET", "/admin/v2/tenants/x"))[1] == roles
        # A cluster its namespaces replicate to stays (Pulsar's canUpdateCluster).
        assert (await api.call("PUT", "/admin/v2/namespaces/x/n"))[0] == 204
        status, answer, _ = await api.call(
            "POST", "/admin/v2/tenants/x", json={"allowedClusters": ["global"]}
        )
        assert status == 409 and "active namespaces are present in colos ['standalone']" in str(
            answer
        )
        assert (await api.call("GET", "/admin/v2/tenants/x"))[1] == roles


async def test_a_broker_is_in_one_failure_domain(clock: Clock) -> None:
    async for api in api_for(clock):
        domains = "/admin/v2/clusters/standalone/failureDomains"
        first, second = list(api.cluster.nodes)[:2]
        assert (await api.call("POST", f"{domains}/d1", json={"brokers": [first]}))[0] == 204
        status, body, _ = await api.call("POST", f"{domains}/d2", json={"brokers": [second, first]})
        assert status == 409 and isinstance(body, dict), body
        assert body["reason"] == f"failure domain d1 already has broker {first}"
        # the domain that holds it may list it again, with others
        renewed = {"brokers": [first, second]}
        assert (await api.call("POST", f"{domains}/d1", json=renewed))[0] == 204
        assert (await api.call("GET", domains))[1] == {"d1": renewed}


async def test_admin_reads_policies_metrics_and_openapi(clock: Clock) -> None:
    async for api in api_for(clock):
        assert (
            await api.call("PUT", "/admin/v2/namespaces/t/a", json={"bundles": {"numBundles": 3}})
        )[0] == 204
        assert (await api.call("PUT", "/admin/v2/namespaces/t/b?numBundles=2"))[0] == 204
        # The body is read as Jackson reads BundlesData: a number in a string is a number.
        as_text = {"bundles": {"numBundles": "5"}}
        assert (await api.call("PUT", "/admin/v2/namespaces/t/c", json=as_text))[0] == 204
        assert (await api.call("GET", "/admin/v2/namespaces/t/c/bundles"))[1]["numBundles"] == 5  # type: ignore[index]
        for wrong in (True, 1.5, [2]):
            status, body, _ = await api.call(
                "PUT", "/admin/v2/namespaces/t/d", json={"bundles": {"numBundles": wrong}}
            )
            assert status == 400 and isinstance(body, dict), (wrong, status, body)
            assert "numBundles" in body["reason"]
        assert (await api.call("GET", "/admin/v2/namespaces/t/d"))[0] == 404
        # No count above 0 is the default count (4), as Pulsar's validatePolicies reads it.
        negative = {"bundles": {"numBundles": -1}}
        assert (await api.call("PUT", "/admin/v2/namespaces/t/e", json=negative))[0] == 204
        assert (await api.call("GET", "/admin/v2/namespaces/t/e/bundles"))[1]["numBundles"] == 4  # type: ignore[index]
        assert (await api.call("DELETE", "/admin/v2/namespaces/t/e"))[0] == 204
        # replication_clusters: this cluster only, as no tenant may allow another (Pulsar's
        # 403); before, any name was taken and replaced by this cluster's.
        status, body, _ = await api.call(
            "PUT", "/admin/v2/namespaces/t/d", json={"replication_clusters": ["elsewhere"]}
        )
        assert status == 403 and "Cluster [elsewhere] is not in the list" in body["reason"]  # type: ignore[index]
        status, body, _ = await api.call(
            "PUT", "/admin/v2/namespaces/t/d", json={"replication_clusters": "standalone"}
        )
        assert status == 400 and "a JSON list of cluster names" in body["reason"]  # type: ignore[index]
        for not_policies in ([1], "str", 5, [], 0, False):  # each made one with the defaults
            status, body, _ = await api.call("PUT", "/admin/v2/namespaces/t/d", json=not_policies)
            assert status == 400 and "body must be a JSON object" in body["reason"]  # type: ignore[index]
        # Pulsar's int range, but every boundary is stored and held: 2^31 - 1 killed the broker
        status, body, _ = await api.call("PUT", "/admin/v2/namespaces/t/d?numBundles=2147483647")
        assert status == 400 and isinstance(body, dict)
        assert "more than a namespace can be created with (1048576)" in body["reason"]
        for loose in ("1_000", "%201", "2.0"):  # Python's int() took the first two
            status, body, _ = await api.call("PUT", f"/admin/v2/namespaces/t/d?numBundles={loose}")
            assert status == 400 and "is not a number" in body["reason"], (loose, body)  # type: ignore[index]
        assert (await api.call("GET", "/admin/v2/namespaces/t/d"))[0] == 404
        assert (await api.call("GET", "/admin/v2/tenants"))[1] == ["t"]
        assert (await api.call("GET", "/admin/v2/namespaces/t"))[1] == ["t/a", "t/b", "t/c"]
        status, policies, _ = await api.call("GET", "/admin/v2/namespaces/t/a", broker=2)
        assert status == 200 and isinstance(policies, dict)
        assert policies["bundles"]["numBundles"] == 3
        # Pulsar's admin client sends the group as bare text and reads it back so: Jersey,
        # not Jackson, reads and writes a String resource parameter.
        anti_affinity = "/admin/v2/namespaces/t/a/antiAffinity"
        assert (await api.call("POST", anti_affinity, text="group-1"))[0] == 204
        async with api.session.get(api.urls[0] + anti_affinity) as response:
            assert (response.status, await response.read()) == (200, b"group-1")
        assert (await api.call("POST", anti_affinity, json="group-2"))[0] == 204  # JSON too
        assert (await api.call("GET", anti_affinity, broker=1))[1] == "group-2"
        for blank in ("", "  ", '""'):
            status, body, _ = await api.call("POST", anti_affinity, text=blank)
            assert status == 412 and "empty" in body["reason"], (blank, body)  # type: ignore[index]
        assert (await api.call("POST", anti_affinity, text='"not JSON'))[0] == 204
        assert (await api.call("GET", anti_affinity))[1] == '"not JSON'
        assert (await api.call("DELETE", anti_affinity))[0] == 204
        assert (await api.call("GET", anti_affinity))[0] == 204
        policy = {
            "namespaces": ["t/a"],
            "primary": ["127.0.0.1"],
            "secondary": [],
            "auto_failover_policy": {
                "policy_type": "min_available",
                "parameters": {"min_limit": "1", "usage_threshold": "80"},
            },
        }
        path = "/admin/v2/clusters/standalone/namespaceIsolationPolicies/iso"
        assert (await api.call("POST", path, json=policy))[0] == 204
        assert (await api.call("GET", path))[1] == policy
        bad_regex = {**policy, "namespaces": ["t/("]}
        assert (await api.call("POST", path, json=bad_regex))[0] == 400
        unreadable = {
            "namespaces": ["t/a"],
            "primary": ["127.0.0.1"],
            "secondary": [],
            "auto_failover_policy": {"policy_type": "foo"},
        }
        assert (await api.call("POST", path, json={"namespaces": ["t/a"]}))[0] == 400
        assert (await api.call("POST", path, json=unreadable))[0] == 400
        assert (await api.call("GET", path))[1] == policy  # the refused one replaced nothing
        assert (await api.call("DELETE", path))[0] == 204
        assert (await api.call("GET", path))[0] == 404
        # Pulsar deletes a missing policy without complaint, and tells an unknown cluster by
        # 404 for the list, 412 for one policy.
        assert (await api.call("DELETE", path))[0] == 204
        elsewhere = "/admin/v2/clusters/elsewhere/namespaceIsolationPolicies"
        assert (await api.call("GET", elsewhere))[0] == 404
        for method in ("GET", "DELETE"):
            assert (await api.call(method, f"{elsewhere}/iso"))[0] == 412
        assert (await api.call("POST", f"{elsewhere}/iso", json=policy))[0] == 412
        domains = "/admin/v2/clusters/elsewhere/failureDomains/rack1"
        assert (await api.call("POST", domains, json={"brokers": []}))[0] == 412
        assert (await api.call("DELETE", domains))[0] == 412
        domain = "/admin/v2/clusters/standalone/failureDomains/rack1"
        brokers = list(api.cluster.nodes)[:2]
        twice = [brokers[0], *brokers, brokers[1]]  # a set in Pulsar: kept once each
        assert (await api.call("POST", domain, json={"brokers": twice}))[0] == 204
        assert (await api.call("GET", "/admin/v2/clusters/standalone/failureDomains"))[1] == {
            "rack1": {"brokers": brokers}
        }
        status, leader, _ = await api.call("GET", "/admin/v2/brokers/leaderBroker")
        assert status == 200 and isinstance(leader, dict)
        assert leader["brokerId"] == api.cluster.leader().broker_id  # type: ignore[union-attr]
        assert sorted((await api.call("GET", "/admin/v2/brokers/standalone"))[1]) == sorted(
            api.cluster.nodes
        )  # type: ignore[arg-type]
        assert sorted((await api.call("GET", "/admin/v2/brokers"))[1]) == sorted(api.cluster.nodes)  # type: ignore[arg-type]
        status, report, _ = await api.call("GET", "/admin/v2/broker-stats/load-report")
        assert (
            status == 200
            and isinstance(report, dict)
            and report["loadReportType"] == "LocalBrokerData"
        )
        status, text, _ = await api.call("GET", "/metrics")
        assert status == 200 and isinstance(text, str)
        assert "ballast_bundles_owned" in text and "ballast_lookups_total" in text
        leader_index = list(api.cluster.nodes).index(api.cluster.leader().broker_id)  # type: ignore[union-attr]
        leader_metrics = (await api.call("GET", "/metrics", broker=leader_index))[1]
        assert isinstance(leader_metrics, str) and "ballast_leader_epoch" in leader_metrics
        assert 'ballast_controller_events_total{event="request"}' in leader_metrics
        status, document, _ = await api.call("GET", "/openapi.json")
        assert status == 200 and isinstance(document, dict)
        assert "/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}" in document["paths"]
        assert (
            "put" in document["paths"]["/admin/v2/namespaces/{tenant}/{namespace}/{bundle}/split"]
        )
        status, partitions, _ = await api.call(
            "GET", "/admin/v2/persistent/t/a/x/partitions?checkAllowAutoCreation=true"
        )
        assert status == 200 and partitions == {"partitions": 0}
        status, _, _ = await api.call("DELETE", "/admin/v2/namespaces/t/b")
        assert status == 204
        assert (await api.call("GET", "/admin/v2/namespaces/t"))[1] == ["t/a", "t/c"]


async def test_owned_namespaces_of_another_broker_redirect_to_its_registered_url(
    clock: Clock,
) -> None:
    """Pulsar's ``maybeRedirectToBroker``: a registered broker's URL, never one made of the
    path (which was an open redirect), and 404 for a broker or cluster that is not there."""
    async for api in api_for(clock):
        ids = list(api.cluster.nodes)
        path = f"/admin/v2/brokers/standalone/{ids[1]}/ownedNamespaces"
        status, _, response = await api.call("GET", path, redirects=False)
        assert status == 307
        assert response.headers["Location"] == f"{api.urls[1]}{path}"
        assert (await api.call("GET", path))[0] == 200  # followed, answered by the broker
        for other in ("evil.example.com", "bad%2Fx", "127.0.0.1:1"):
            elsewhere = f"/admin/v2/brokers/standalone/{other}/ownedNamespaces"
            status, body, _ = await api.call("GET", elsewhere, redirects=False, encoded=True)
            assert status == 404 and "not found in available brokers" in str(body), body
        own = f"/admin/v2/brokers/nosuchcluster/{ids[0]}/ownedNamespaces"
        assert (await api.call("GET", own))[0] == 404


async def test_the_health_check_says_ok_until_the_broker_loses_its_store(clock: Clock) -> None:
    """``GET /admin/v2/brokers/health``: ``ok`` while the broker is a member; 500 naming why
    once it is cut off from the metadata store, and once its session is gone with the
    heartbeat bundle it served."""
    async for api in api_for(clock):
        for broker in range(3):
            status, text, _ = await api.call("GET", "/admin/v2/brokers/health", broker=broker)
            assert (status, text) == (200, "ok")
        node = api.cluster.nodes[list(api.cluster.nodes)[2]]
        memory(node.store).partition()
        status, body, _ = await api.call("GET", "/admin/v2/brokers/health", broker=2)
        assert status == 500 and isinstance(body, dict)
        assert body["reason"] == (
            f"broker {node.broker_id} is not healthy: its metadata store connection is suspended"
        )
        # what it owns is unknown meanwhile: it answered 200 {}, owning nothing
        owned = f"/admin/v2/brokers/standalone/{node.broker_id}/ownedNamespaces"
        status, body, _ = await api.call("GET", owned, broker=2)
        assert (status, body) == (
            503,
            {"reason": "the metadata store connection is suspended; retry"},
        ), body
        await clock.sleep(node.store.session_timeout_s + 1)  # the session expires
        status, body, _ = await api.call("GET", "/admin/v2/brokers/health", broker=2)
        assert status == 500 and isinstance(body, dict)
        assert (
            "its metadata store connection is lost; it is not registered; it does not "
            "serve its heartbeat bundle pulsar/" in body["reason"]
        )
        status, text, _ = await api.call("GET", "/admin/v2/brokers/health", broker=0)
        assert (status, text) == (200, "ok")  # the others are well


async def test_cluster_data_is_what_the_store_holds_else_the_brokers_own_urls(
    clock: Clock,
) -> None:
    """``GET /admin/v2/clusters/{cluster}``: each broker answers with its own URLs, unless
    the cluster's node holds Pulsar's ClusterData (a copied Pulsar tree), which is served as
    it is; another cluster is 404."""
    async for api in api_for(clock):
        path = "/admin/v2/clusters/standalone"
        for index, broker_id in enumerate(api.cluster.nodes):
            status, data, _ = await api.call("GET", path, broker=index)
            assert status == 200 and isinstance(data, dict)
            assert data["serviceUrl"] == f"http://{broker_id}"
            assert data["brokerServiceUrl"].startswith("pulsar://")
        assert (await api.call("GET", "/admin/v2/clusters/elsewhere"))[0] == 404
        node = next(iter(api.cluster.nodes.values()))
        copied = {"serviceUrl": "http://pulsar:8080", "brokerServiceUrl": "pulsar://pulsar:6650"}
        await node.store.put("/admin/clusters/standalone", json.dumps(copied).encode())
        assert (await api.call("GET", path))[1] == copied
        domain = "/admin/v2/clusters/standalone/failureDomains/rack1"
        assert (await api.call("GET", domain))[0] == 404
        brokers = list(api.cluster.nodes)[:1]
        assert (await api.call("POST", domain, json={"brokers": brokers}))[0] == 204
        assert (await api.call("GET", domain))[1] == {"brokers": brokers}
        elsewhere = "/admin/v2/clusters/elsewhere/failureDomains/rack1"
        assert (await api.call("GET", elsewhere))[0] == 412


async def test_a_request_that_stops_arriving_is_dropped(clock: Clock) -> None:
    """A client that sent part of a request and stopped held its connection (and, for a body,
    the handler) without end; after the idle timeout (30 s, Jetty's, by default; 2 s here)
    the headers are dropped with the connection, as Jetty's idle timeout does, and a body is
    a 408."""
    async for api in api_for(clock):
        node = api.cluster.nodes[next(iter(api.cluster.nodes))]
        (port,) = distinct_free_ports(1)
        server = ApiServer(node, "127.0.0.1", port, idle_timeout_s=2.0)
        await server.start()
        url = f"http://127.0.0.1:{port}"
        started = clock.monotonic()
        async with asyncio.timeout(20):  # both waited without end
            dropped = await _raw(url, b"GET /admin/v2/tenants HTTP/1.1\r\nHo")
        assert dropped == b""
        assert clock.monotonic() - started == pytest.approx(2, abs=0.9)
        started = clock.monotonic()
        cut = b"PUT /admin/v2/tenants/slow HTTP/1.1\r\nHost: a\r\nContent-Length: 40\r\n\r\n{"
        async with asyncio.timeout(20):
            answer = await _raw(url, cut)
        assert clock.monotonic() - started == pytest.approx(2, abs=0.9)
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert b'"the request body did not arrive within 2 s"' in answer, answer
        await server.stop()
        status, tenants, _ = await api.call("GET", "/admin/v2/tenants")
        assert status == 200 and isinstance(tenants, list) and "slow" not in tenants
