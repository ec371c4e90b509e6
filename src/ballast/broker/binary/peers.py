"""Asking the other brokers about what they serve: the non-persistent topics of a namespace live
only on the brokers whose bundles hold them (nothing about them is stored), so a topic list is
gathered from the owners, over the HTTP API's ``GET /admin/v2/non-persistent/{tenant}/
{namespace}/{bundle}`` (Pulsar's ``getListFromBundle``), and a loaded topic is deleted where
it is served.

Concurrency contract: one event loop; one HTTP session, opened on first use.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import aiohttp

from ballast.metadata import paths
from ballast.model.bundles import BundleName, BundleRange, InvalidBundle
from ballast.model.naming import NamespaceName, TopicName

if TYPE_CHECKING:
    from ballast.broker.node import BrokerNode


class PeerError(Exception):
    """Another broker could not be asked."""


class BundlesChangedError(PeerError):
    """A broker asked about a bundle no longer has it as one (split, or its namespace
    deleted, since the bundles were read): the listing may be taken again."""


class PeerTopics:
    """The non-persistent topics of a namespace, across the brokers serving it."""

    def __init__(self, node: BrokerNode, *, timeout_s: float = 10.0) -> None:
        self._node = node
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._session: aiohttp.ClientSession | None = None

    async def non_persistent_topics(self, namespace: NamespaceName) -> list[str]:
        """Every non-persistent topic loaded on some broker, in the namespace's bundles."""
        node = self._node
        found: list[str] = []
        asks: list[tuple[str, BundleName]] = []
        current = await node.bundles.bundles(namespace)
        for bundle, topics in node.served.bundle_topics():
            if bundle.namespace == namespace and current.contains(bundle.range):
                found.extend(str(t) for t in topics if not t.is_persistent)
        # Only bundles with an ownership record can have topics loaded elsewhere: walking
        # every bundle of the namespace (up to 2^20) held the event loop for seconds.
        for text in await node.store.children(paths.namespace_ownership(namespace)):
            try:
                bundle = BundleName(namespace, BundleRange.parse(text))
            except InvalidBundle:
                continue  # not a bundle's record
            if bundle in node.served or not current.contains(bundle.range):
                continue
            owner = await node.owners.owner(bundle)
            if owner is None or owner.broker_id == node.broker_id or not owner.data.http_url:
                continue  # nobody serves it: no topic of it is loaded anywhere
            asks.append((owner.data.http_url, bundle))
        if asks:
            session = self._open()
            for names in await asyncio.gather(
                *(self._ask(session, url, bundle) for url, bundle in asks)
            ):
                found.extend(names)
        return found

    async def _ask(
        self, session: aiohttp.ClientSession, http_url: str, bundle: BundleName
    ) -> list[str]:
        url = f"{http_url}/admin/v2/non-persistent/{bundle.namespace}/{bundle.range}"
        try:
            async with session.get(url) as response:
                if response.status == 204:  # no broker owns it (any more): no topic loaded
                    return []
                if response.status in (404, 412):  # not a bundle (any more), not a namespace
                    raise BundlesChangedError(f"{url} answered {response.status}")
                if response.status != 200:
                    raise PeerError(f"{url} answered {response.status}")
                body = await response.json()
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raise PeerError(f"{url}: {exc}") from None
        if not isinstance(body, list):
            raise PeerError(f"{url} did not answer a list")
        return [str(name) for name in body]

    async def delete(self, topic: TopicName) -> int:
        """Delete a non-persistent ``topic`` without force where it is loaded (``DELETE`` on
        this broker's API, which sends it on to the owner): the answer's status, 204
        deleted, 404 not loaded, 412 in use (producers or subscriptions)."""
        url = f"{self._node.identity.web_service_url}/admin/v2/{topic.lookup_name}"
        try:
            async with self._open().delete(url) as response:
                return response.status
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise PeerError(f"{url}: {exc}") from None

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
