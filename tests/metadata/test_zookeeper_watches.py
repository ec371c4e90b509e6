"""A cancelled watch of the ZooKeeper store is taken back from the server, not only forgotten
here: ZooKeeper keeps a one-shot watch until it fires, so the watches of records that never
come (a namespace looked up under a name that does not exist) or no longer change (a
deleted namespace's) piled up on the server, and kazoo set them all again at each reconnect.
The server's own list of watched paths (``wchp``) is the judge."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from ballast.clock import Clock
from ballast.metadata.store import ConnectionLossError, Notification
from ballast.metadata.zkserver import LocalZooKeeper
from ballast.metadata.zookeeper import ZooKeeperMetadataStore
from tests.support.waiting import eventually

pytestmark = [pytest.mark.real_time, pytest.mark.integration]

_chroots = itertools.count()


async def watched_paths(server: LocalZooKeeper) -> set[str]:
    """The paths the server holds a watch on, for any session."""
    answer = await server.four_letter("wchp")
    return {line.strip() for line in answer.splitlines() if line.startswith("/")}


async def test_cancelled_watches_leave_the_server(
    zookeeper_server: LocalZooKeeper, clock: Clock
) -> None:
    chroot = f"/unwatch-{next(_chroots)}"
    store = await ZooKeeperMetadataStore.connect(zookeeper_server.hosts + chroot)
    try:
        await store.put("/there", b"1")
        missing = await store.watch("/missing", lambda _: None)  # an exists watch
        there = await store.watch("/there", lambda _: None)  # data and children watches
        seen: list[Notification] = []
        shared = [await store.watch("/shared", seen.append) for _ in range(2)]
        full = {f"{chroot}/{name}" for name in ("missing", "there", "shared")}
        assert full <= await watched_paths(zookeeper_server)

        missing.cancel()
        there.cancel()
        shared[0].cancel()  # another watch of the path is left: the server's stays

        async def gone() -> bool:
            return not (await watched_paths(zookeeper_server)) & (full - {f"{chroot}/shared"})

        await eventually(gone, clock, what="the cancelled watches removed from the server")
        assert f"{chroot}/shared" in await watched_paths(zookeeper_server)
        await store.put("/shared", b"x")
        await eventually(lambda: bool(seen), clock, what="the watch left on /shared")
        shared[1].cancel()

        async def all_gone() -> bool:
            return not (await watched_paths(zookeeper_server)) & full

        await eventually(all_gone, clock, what="the last watch of /shared removed")
        # kazoo no longer holds them either: nothing to set again at a reconnect
        tables = store._client._data_watchers, store._client._child_watchers
        assert not any(path in table for table in tables for path in full)
    finally:
        await store.close()


async def test_a_watch_that_could_not_be_armed_is_not_kept(
    zookeeper_server: LocalZooKeeper, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A watch asked for while the connection is down fails, and its caller has no handle to
    cancel: kept, it was armed at the reconnect and stayed for good (a lookup of an unknown
    name during a ZooKeeper outage left a watch per name on every broker)."""
    store = await ZooKeeperMetadataStore.connect(
        zookeeper_server.hosts + f"/unwatch-{next(_chroots)}"
    )
    try:
        arm = ZooKeeperMetadataStore._arm

        async def lost(self: ZooKeeperMetadataStore, watch: Any) -> Any:
            await arm(self, watch)  # the exists watch is set, then the connection drops
            raise ConnectionLossError(watch.path)

        monkeypatch.setattr(ZooKeeperMetadataStore, "_arm", lost)
        with pytest.raises(ConnectionLossError):
            await store.watch("/nothing", lambda _: None)
        assert store._watches == []
        tables = store._client._data_watchers, store._client._child_watchers
        assert not any(path.endswith("/nothing") for table in tables for path in table)
    finally:
        await store.close()
