"""The brokers' watched caches: a value is read once, dropped when its record changes, and a
deleted record's watches are let go, as are those of a namespace that does not exist."""

from __future__ import annotations

from typing import Any

import pytest

from ballast.broker.caches import NamespaceBundlesCache, NamespaceNotFoundError, WatchedCache
from ballast.broker.topics import NamespaceTopicIndex
from ballast.clock import Clock
from ballast.metadata import paths
from ballast.metadata.memory import MemoryMetadataStore, MemoryServer
from ballast.metadata.store import ConnectionLossError
from ballast.model.naming import NamespaceName


async def test_a_deleted_records_watches_are_let_go(clock: Clock) -> None:
    """The watches of every key ever read stayed armed: 4,199 of them after 280 namespaces
    created and deleted in a standalone."""
    store = MemoryMetadataStore(MemoryServer(clock))
    reads: list[str] = []

    async def load(key: str) -> bytes | None:
        reads.append(key)
        record = await store.get(f"/r/{key}")
        return None if record is None else record.value

    cache: WatchedCache[str, bytes | None] = WatchedCache(store, load, lambda k: [f"/r/{k}"])
    await store.put("/r/a", b"1")
    assert await cache.get("a") == b"1"
    assert await cache.get("a") == b"1" and reads == ["a"]  # cached
    await store.put("/r/a", b"2")  # a change: dropped, read again, still watched
    await clock.sleep(0.01)
    assert await cache.get("a") == b"2" and reads == ["a", "a"]
    assert len(store._watches) == 1
    await store.delete("/r/a")
    await clock.sleep(0.01)
    assert cache.peek("a") is None
    assert store._watches == {} and cache._watches == {} and cache._generation == {}
    # Read again, it is watched again: a record created later is seen.
    assert await cache.get("a") is None
    await store.put("/r/a", b"3")
    await clock.sleep(0.01)
    assert await cache.get("a") == b"3"
    cache.close()
    await store.close()


async def test_a_namespace_that_does_not_exist_is_not_watched(clock: Clock) -> None:
    """A lookup of a name nobody created (a typo, or a client trying names) left two watches
    armed for good, one per policies record: a store, ZooKeeper's server among them, would
    hold a watch for every such name ever asked for."""
    store = MemoryMetadataStore(MemoryServer(clock))
    cache = NamespaceBundlesCache(store)
    for n in range(3):
        with pytest.raises(NamespaceNotFoundError):
            await cache.bundles(NamespaceName.parse(f"t/ghost-{n}"))
    assert store._watches == {}
    # Created later, it is found (and watched: a split is seen).
    namespace = NamespaceName.parse("t/ghost-0")
    await store.put(paths.namespace_policies(namespace), b'{"bundles": {"numBundles": 4}}')
    assert len((await cache.bundles(namespace)).bundles) == 4
    assert len(store._watches) == 2
    cache.close()
    await store.close()


async def test_a_deleted_namespace_lets_go_of_its_topic_index(clock: Clock) -> None:
    """The index of a namespace's persistent topics watches a directory that a namespace
    without persistent topics never has, so no deletion is seen there: the namespace's own
    deletion, seen on its policies, lets it go (a watch per namespace ever served stayed)."""
    store = MemoryMetadataStore(MemoryServer(clock))
    index = NamespaceTopicIndex(store)
    cache = NamespaceBundlesCache(store, on_deleted=index.forget)
    namespace = NamespaceName.parse("t/gone")
    await store.put(paths.namespace_policies(namespace), b"{}")
    await cache.bundles(namespace)
    assert await index.topics_of(namespace) == []
    assert len(store._watches) == 3  # two policies records, the topics directory
    await store.delete(paths.namespace_policies(namespace))
    await clock.sleep(0.01)
    assert store._watches == {}
    cache.close()
    index.close()
    await store.close()


async def test_watches_set_before_a_store_failure_are_let_go(clock: Clock) -> None:
    """A namespace is watched on two records: when the store fails on the second, the first
    one's watch was kept with no entry to release it."""
    store = MemoryMetadataStore(MemoryServer(clock))
    watch = store.watch
    calls: list[str] = []

    async def failing_second(path: str, callback: Any) -> Any:
        calls.append(path)
        if len(calls) == 2:
            raise ConnectionLossError(path)
        return await watch(path, callback)

    store.watch = failing_second  # type: ignore[method-assign]
    cache = NamespaceBundlesCache(store)
    with pytest.raises(ConnectionLossError):
        await cache.bundles(NamespaceName.parse("t/ns"))
    assert len(calls) == 2 and store._watches == {}
    cache.close()
    await store.close()
