"""One harness per backend, so the contract suite runs the same tests against each: open
clients of one shared tree, and inject the faults a real deployment sees (a partition, a
session expiry, a crash)."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass
from pathlib import Path

from kazoo.client import KazooClient

from ballast.clock import Clock
from ballast.metadata.chunking import ChunkingStore
from ballast.metadata.factory import MetadataStores
from ballast.metadata.memory import MemoryMetadataStore
from ballast.metadata.store import MetadataStore
from ballast.metadata.zkserver import LocalZooKeeper
from ballast.metadata.zookeeper import ZooKeeperMetadataStore
from tests.support.tcp_proxy import FreezableProxy


@dataclass(frozen=True)
class BackendSpec:
    name: str
    real_time: bool


class Harness:
    """Opens clients of one tree and injects faults into them."""

    name: str
    session_timeout_s = 2.0

    async def open(self, session_timeout_s: float | None = None) -> MetadataStore:
        raise NotImplementedError

    async def partition(self, store: MetadataStore) -> None:
        raise NotImplementedError

    async def heal(self, store: MetadataStore) -> None:
        raise NotImplementedError

    async def expire(self, store: MetadataStore) -> None:
        raise NotImplementedError

    async def crash(self, store: MetadataStore) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError


class MemoryHarness(Harness):
    def __init__(self, clock: Clock, url: str = "memory:") -> None:
        self.name = url.split(":", maxsplit=1)[0]
        self.url = url
        self.clock = clock
        self.stores = MetadataStores(clock)
        self.opened: list[MetadataStore] = []

    async def open(self, session_timeout_s: float | None = None) -> MetadataStore:
        store = await self.stores.connect(
            self.url, session_timeout_s=session_timeout_s or self.session_timeout_s
        )
        self.opened.append(store)
        return store

    async def partition(self, store: MetadataStore) -> None:
        memory(store).partition()

    async def heal(self, store: MetadataStore) -> None:
        memory(store).heal()

    async def expire(self, store: MetadataStore) -> None:
        self.stores.server(self.url).expire_session(store.session_id)

    async def crash(self, store: MetadataStore) -> None:
        memory(store).crash()

    async def close(self) -> None:
        for store in self.opened:
            await store.close()
        self.stores.close()

    async def restart(self) -> None:
        """Simulate a process restart: every client and the in-process server go away."""
        await self.close()
        self.stores = MetadataStores(self.clock)
        self.opened = []


_chroots = itertools.count()


class ZooKeeperHarness(Harness):
    """Every client goes through its own freezable proxy, under a chroot of its own test."""

    name = "zookeeper"

    def __init__(self, server: LocalZooKeeper) -> None:
        self.server = server
        self.chroot = f"/contract-{next(_chroots)}"
        self.proxies: dict[int, FreezableProxy] = {}
        self.opened: list[MetadataStore] = []

    async def open(self, session_timeout_s: float | None = None) -> MetadataStore:
        proxy = FreezableProxy(("127.0.0.1", self.server.config.port))
        store = ChunkingStore(
            await ZooKeeperMetadataStore.connect(
                proxy.hosts + self.chroot,
                session_timeout_s=session_timeout_s or self.session_timeout_s,
            )
        )
        self.proxies[id(store)] = proxy
        self.opened.append(store)
        return store

    async def partition(self, store: MetadataStore) -> None:
        self.proxies[id(store)].freeze()

    async def heal(self, store: MetadataStore) -> None:
        self.proxies[id(store)].thaw()

    async def expire(self, store: MetadataStore) -> None:
        """ZooKeeper's own trick: a second client on the same session closes it."""
        assert isinstance(store, ChunkingStore)
        inner = store.inner
        assert isinstance(inner, ZooKeeperMetadataStore)
        client_id = (inner.session_id, inner.session_password)

        def close_session() -> None:
            other = KazooClient(hosts=self.server.hosts, client_id=client_id, timeout=10)
            other.start(timeout=10)
            other.stop()
            other.close()

        await asyncio.get_running_loop().run_in_executor(None, close_session)

    async def crash(self, store: MetadataStore) -> None:
        self.proxies[id(store)].freeze()  # silent forever: the server expires the session

    async def close(self) -> None:
        for store in self.opened:
            self.proxies[id(store)].thaw()
            await store.close()
        for proxy in self.proxies.values():
            proxy.close()


def memory(store: MetadataStore) -> MemoryMetadataStore:
    """The memory client under the chunking wrapper, for fault injection."""
    inner = store.inner if isinstance(store, ChunkingStore) else store
    assert isinstance(inner, MemoryMetadataStore)
    return inner


def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:{tmp_path / 'store.db'}"
