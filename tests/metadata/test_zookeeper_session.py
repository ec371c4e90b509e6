"""The session timeout a ZooKeeper store works by is the one the server granted: ZooKeeper
bounds the timeout asked by its minSessionTimeout and maxSessionTimeout, and expires the
session by what it granted, so a broker that asked for more must stop serving sooner."""

from __future__ import annotations

import pytest

from ballast.metadata.zkserver import LocalZooKeeper
from ballast.metadata.zookeeper import ZooKeeperMetadataStore

pytestmark = [pytest.mark.real_time, pytest.mark.integration]


@pytest.mark.parametrize(
    ("asked_s", "granted_s"),
    [
        (90.0, 60.0),  # the server's maxSessionTimeout (ballast zookeeper's, 60 s)
        (0.2, 1.0),  # its minSessionTimeout, two ticks of 500 ms
        (7.5, 7.5),  # within the bounds: as asked
    ],
)
async def test_the_session_timeout_is_the_one_granted(
    zookeeper_server: LocalZooKeeper, asked_s: float, granted_s: float
) -> None:
    store = await ZooKeeperMetadataStore.connect(
        f"{zookeeper_server.hosts}/granted", session_timeout_s=asked_s
    )
    try:
        assert store.session_timeout_s == granted_s
    finally:
        await store.close()
