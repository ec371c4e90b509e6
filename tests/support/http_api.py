"""Three brokers serving the HTTP API on free loopback ports, and a client of it for tests."""

from __future__ import annotations

import contextlib
import json as json_module
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import yarl

from ballast.broker.cluster import LocalCluster
from ballast.broker.identity import BrokerIdentity
from ballast.clock import Clock
from ballast.model.config import load_settings
from tests.support.live import distinct_free_ports
from tests.support.waiting import eventually


class Api:
    def __init__(self, cluster: LocalCluster, session: aiohttp.ClientSession) -> None:
        self.cluster = cluster
        self.session = session
        self.urls = [f"http://{b}" for b in cluster.nodes]

    async def call(
        self,
        method: str,
        path: str,
        *,
        broker: int = 0,
        json: object = None,
        text: str | None = None,
        redirects: bool = True,
        encoded: bool = False,
    ) -> tuple[int, object, aiohttp.ClientResponse]:
        """``encoded``: send ``path`` byte for byte (``%2E%2E`` stays escaped). ``text``: a
        bare body, sent as ``application/json`` as Pulsar's admin client sends strings. An
        answer is JSON when its type says so and it parses, else its text."""
        url = yarl.URL(self.urls[broker] + path, encoded=encoded)
        sent: dict[str, Any] = {"json": json}
        if text is not None:
            sent = {"data": text.encode(), "headers": {"Content-Type": "application/json"}}
        async with self.session.request(method, url, allow_redirects=redirects, **sent) as response:
            body: object = None
            if response.status != 204:
                body = await response.text()
            if response.content_type == "application/json" and isinstance(body, str):
                with contextlib.suppress(ValueError):
                    body = json_module.loads(body) if body.strip() else None
            return response.status, body, response


async def start(clock: Clock, brokers: int = 3, overrides: tuple[str, ...] = ()) -> LocalCluster:
    """``brokers`` brokers with a leader (settings: ``key=value`` ``overrides``)."""
    settings = load_settings(
        overrides=["metadataStoreSessionTimeoutMillis=10000", *overrides]
    ).settings
    cluster = LocalCluster(clock, settings=settings, serve_http=True)
    for _ in range(brokers):
        web, binary = distinct_free_ports(2)
        await cluster.add_broker(BrokerIdentity("127.0.0.1", web, binary))
    await eventually(lambda: cluster.leader() is not None, clock, what="a leader")
    return cluster


async def api_for(clock: Clock, overrides: tuple[str, ...] = ()) -> AsyncIterator[Api]:
    """A three-broker cluster with tenant ``t``, and its API client."""
    cluster = await start(clock, overrides=overrides)
    async with aiohttp.ClientSession() as session:
        api = Api(cluster, session)
        status, _, _ = await api.call(
            "PUT", "/admin/v2/tenants/t", json={"allowedClusters": ["standalone"]}
        )
        assert status == 204
        yield api
    await cluster.close()


def follower(api: Api) -> int:
    leader = api.cluster.leader()
    assert leader is not None
    return next(i for i, b in enumerate(api.cluster.nodes) if b != leader.broker_id)
