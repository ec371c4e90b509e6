"""The brokers' watched caches: a value is read once, dropped when its record changes, and a
deleted record's watches are let go."""

from __future__ import annotations

from ballast.broker.caches import WatchedCache
from ballast.clock import Clock
from ballast.metadata.memory import MemoryMetadataStore, MemoryServer


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
