"""A namespace whose non-persistent topics an official client is using: the admin API lists
them (``mode=ALL``) and refuses to delete the namespace without ``force`` (409), as Pulsar
does; these topics live only on the brokers, not in the store the leader checks."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from ballast.broker.binary.peers import PeerTopics
from ballast.clock import Clock
from ballast.metadata import paths
from ballast.metadata.store import MetadataStore
from ballast.model.bundles import BundleName, BundleRange
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

NAMESPACE = "t/busy"


async def test_a_namespace_with_live_topics_is_deleted_only_with_force(clock: Clock) -> None:
    cluster = await start_cluster(
        clock, NAMESPACE, 4, overrides=("forceDeleteNamespaceAllowed=true",)
    )
    nodes = list(cluster.nodes.values())
    topics = topics_per_bundle(NAMESPACE, 4)
    closeables: list[Any] = []
    store: MetadataStore | None = None
    try:
        client = await new_client(pulsar_url(nodes[0]))
        closeables.append(client)
        for topic in topics:
            closeables.append(await asyncio.to_thread(client.create_producer, str(topic)))
        base = f"{http_url(nodes[1])}/admin/v2/namespaces/{NAMESPACE}"
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/topics", params={"mode": "ALL"}) as listed:
                assert listed.status == 200
                assert sorted(await listed.json()) == sorted(str(t) for t in topics)
            async with http.get(f"{base}/topics") as persistent:  # Pulsar's default mode
                assert await persistent.json() == []
            async with http.delete(base) as refused:
                assert refused.status == 409, await refused.text()
                assert "non empty" in (await refused.json())["reason"]
            async with http.get(base) as still:
                assert still.status == 200
            async with http.delete(base, params={"force": "true"}) as deleted:
                assert deleted.status == 204, await deleted.text()
            async with http.get(base) as gone:
                assert gone.status == 404
            # Its bundles' ownership parent goes once their unloads are done, and the
            # tenant's with the tenant, as Pulsar deletes them (they were left for good).
            store = await cluster.connect()

            async def parent_gone() -> bool:
                return await store.children(f"{paths.OWNERSHIP}/t") == []

            await eventually(parent_gone, clock, what="the namespace's ownership parent gone")
            async with http.delete(f"{http_url(nodes[1])}/admin/v2/tenants/t") as tenant:
                assert tenant.status == 204, await tenant.text()
            assert await store.exists(f"{paths.OWNERSHIP}/t") is None
    finally:
        await close_all(reversed(closeables))
        if store is not None:
            await store.close()
        await cluster.close()


Ask = Callable[[PeerTopics, aiohttp.ClientSession, str, BundleName], Awaitable[list[str]]]


async def _whole_listing_with(
    clock: Clock, monkeypatch: pytest.MonkeyPatch, wrap: Callable[[Ask], Ask]
) -> None:
    """List the namespace's topics (``mode=ALL``) through a broker that asks the others with
    ``PeerTopics._ask`` wrapped by ``wrap``; the listing must be whole (200, every topic).
    ``t/idle`` exists too, its one bundle owned by nobody."""
    cluster = await start_cluster(clock, NAMESPACE, 4)
    nodes = list(cluster.nodes.values())
    topics = topics_per_bundle(NAMESPACE, 4)
    closeables: list[Any] = []
    try:
        async with aiohttp.ClientSession() as http:
            created = f"{http_url(nodes[0])}/admin/v2/namespaces/t/idle"
            async with http.put(created, json={"bundles": {"numBundles": 1}}) as made:
                assert made.status == 204, await made.text()
            client = await new_client(pulsar_url(nodes[0]))
            closeables.append(client)
            for topic in topics:
                closeables.append(await asyncio.to_thread(client.create_producer, str(topic)))
            monkeypatch.setattr(PeerTopics, "_ask", wrap(PeerTopics._ask))
            base = f"{http_url(nodes[1])}/admin/v2/namespaces/{NAMESPACE}"
            async with http.get(f"{base}/topics", params={"mode": "ALL"}) as listed:
                assert listed.status == 200, await listed.text()
                assert sorted(await listed.json()) == sorted(str(t) for t in topics)
    finally:
        await close_all(reversed(closeables))
        await cluster.close()


async def test_a_listing_whose_bundles_change_under_it_is_taken_again(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A split between the read of the bundles and a broker's answer made that broker answer
    412 (not a bundle any more), and the listing — and a delete without force, which lists
    the topics first — answered 503 with the broker's URL."""
    asked_stale = [0]

    def first_about_a_stale_bundle(ask: Ask) -> Ask:
        async def asked(
            self: PeerTopics, session: aiohttp.ClientSession, url: str, bundle: BundleName
        ) -> list[str]:
            if not asked_stale[0]:
                asked_stale[0] += 1
                lower, upper = bundle.range.lower, bundle.range.upper
                half = BundleName(bundle.namespace, BundleRange(lower, (lower + upper) // 2))
                return await ask(self, session, url, half)  # 412: no such bundle
            return await ask(self, session, url, bundle)

        return asked

    await _whole_listing_with(clock, monkeypatch, first_about_a_stale_bundle)
    assert asked_stale == [1]


async def test_a_bundle_nobody_owns_any_more_holds_no_topics(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broker asked about a bundle unloaded since the listing read its owner answers 204
    (no owner): that failed the listing, and a delete without force, with 503."""
    unowned: list[list[str]] = []

    def also_an_unowned_bundle(ask: Ask) -> Ask:
        async def asked(
            self: PeerTopics, session: aiohttp.ClientSession, url: str, bundle: BundleName
        ) -> list[str]:
            idle = BundleName.parse("t/idle/0x00000000_0xffffffff")  # nobody owns it: 204
            unowned.append(await ask(self, session, url, idle))
            return await ask(self, session, url, bundle)

        return asked

    await _whole_listing_with(clock, monkeypatch, also_an_unowned_bundle)
    assert unowned and all(names == [] for names in unowned)
