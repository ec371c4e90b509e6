"""The official Pulsar client (``pulsar-client``, the C++ client's Python wrapper) driven from
an asyncio test, and a three-broker cluster for it to talk to.

The client's blocking calls run in worker threads (``asyncio.to_thread``) so the brokers, on
the test's event loop, keep serving meanwhile; what consumers receive is recorded by message
listeners (the client's own threads) in :class:`Inbox`. The client logs to the console at
warning level only.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulsar

from ballast.broker.cluster import LocalCluster
from ballast.broker.identity import BrokerIdentity
from ballast.broker.node import BrokerNode
from ballast.clock import Clock
from ballast.controller.requests import CreateNamespace, CreateTenant
from ballast.model.bundles import BundleName, NamespaceBundles
from ballast.model.config import load_settings
from ballast.model.naming import NamespaceName, TopicName
from tests.support.live import distinct_free_ports
from tests.support.waiting import eventually

CLUSTER_SETTINGS = (
    "metadataStoreSessionTimeoutMillis=10000",
    # The tests move bundles themselves; the load manager must not move them meanwhile.
    "loadBalancerSheddingEnabled=false",
    "loadBalancerAutoBundleSplitEnabled=false",
    "statsUpdateFrequencyInSecs=1",
)


async def start_cluster(
    clock: Clock,
    namespace: str,
    bundles: int,
    brokers: int = 3,
    overrides: tuple[str, ...] = (),
) -> LocalCluster:
    """``brokers`` brokers on free loopback ports, each serving HTTP and the binary protocol,
    with a tenant and ``namespace`` of ``bundles`` bundles (settings: ``key=value``
    ``overrides``)."""
    settings = load_settings(overrides=[*CLUSTER_SETTINGS, *overrides]).settings
    cluster = LocalCluster(clock, settings=settings, serve_http=True)
    for _ in range(brokers):
        web, binary = distinct_free_ports(2)
        await cluster.add_broker(BrokerIdentity("127.0.0.1", web, binary))
    await eventually(lambda: cluster.leader() is not None, clock, what="a leader")
    tenant = namespace.split("/", maxsplit=1)[0]
    assert (await cluster.request(CreateTenant(tenant=tenant))).ok
    assert (await cluster.request(CreateNamespace(namespace=namespace, bundles=bundles))).ok
    return cluster


def topics_per_bundle(namespace: str, bundles: int, prefix: str = "topic") -> list[TopicName]:
    """One non-persistent topic in each of the namespace's ``bundles`` equal bundles."""
    ns = NamespaceName.parse(namespace)
    layout = NamespaceBundles.equal(ns, bundles)
    chosen: dict[BundleName, TopicName] = {}
    i = 0
    while len(chosen) < bundles:
        topic = TopicName.parse(f"non-persistent://{namespace}/{prefix}-{i}")
        chosen.setdefault(layout.find(topic), topic)
        i += 1
    return [chosen[b] for b in sorted(chosen, key=lambda b: b.range.lower)]


def pulsar_url(node: BrokerNode) -> str:
    return node.identity.pulsar_service_url


def http_url(node: BrokerNode) -> str:
    return node.identity.web_service_url


async def new_client(url: str) -> pulsar.Client:
    return await asyncio.to_thread(
        pulsar.Client,
        url,
        operation_timeout_seconds=30,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn),
    )


@dataclass
class Inbox:
    """Messages received by one subscription's consumers: (consumer name, payload, key)."""

    received: list[tuple[str, bytes, str]] = field(default_factory=list)

    def listener(self, consumer: Any, message: Any) -> None:
        # The client's listener thread; list.append is atomic under the GIL.
        self.received.append((consumer.consumer_name(), message.data(), message.partition_key()))

    def payloads(self) -> list[bytes]:
        return [payload for _, payload, _ in list(self.received)]

    def count(self) -> Counter[bytes]:
        return Counter(self.payloads())

    def by_consumer(self) -> dict[str, list[tuple[bytes, str]]]:
        found: dict[str, list[tuple[bytes, str]]] = {}
        for name, payload, key in list(self.received):
            found.setdefault(name, []).append((payload, key))
        return found


@dataclass
class Sent:
    """What a producer sent (payloads in order) and the outcome of each send."""

    payloads: list[bytes] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def callback(self, result: Any, _message_id: Any) -> None:
        with self._lock:
            self.results.append("Ok" if result == pulsar.Result.Ok else str(result))

    def failures(self) -> list[str]:
        return [r for r in list(self.results) if r != "Ok"]


async def close_all(closeables: Iterable[Any]) -> None:
    for item in closeables:
        try:
            await asyncio.to_thread(item.close)
        except Exception:  # closing after a failed test must not hide its error
            pass


def missing_and_duplicates(
    sent: Sequence[bytes], received: Counter[bytes]
) -> tuple[list[bytes], list[bytes]]:
    """Payloads sent but never received, and payloads received more than once (or never
    sent)."""
    expected = set(sent)
    missing = [p for p in sent if received[p] == 0]
    extra = [p for p, n in received.items() if n > 1 or p not in expected]
    return missing, extra
