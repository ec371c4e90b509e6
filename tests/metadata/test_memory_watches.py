"""The memory store forgets the watches its clients cancel."""

from __future__ import annotations

from ballast.clock import Clock
from ballast.metadata.memory import MemoryMetadataStore, MemoryServer
from ballast.metadata.store import Notification


async def test_cancelled_watches_leave_the_client(clock: Clock) -> None:
    """A client kept every watch it ever set: a standalone's brokers forwarding 9,540 admin
    changes to the leader left 6,417 cancelled watches (and their callbacks) behind."""
    store = MemoryMetadataStore(MemoryServer(clock))
    heard: list[Notification] = []
    watches = [await store.watch(f"/w/{i}", heard.append) for i in range(100)]
    kept = await store.watch("/w/kept", heard.append)
    for watch in watches:
        watch.cancel()
    assert list(store._watches.values()) == [kept]
    await store.put("/w/1", b"x")
    await store.put("/w/kept", b"x")
    await clock.sleep(0.01)
    assert [n.path for n in heard] == ["/w/kept"]
    await store.close()
    assert store._watches == {}
