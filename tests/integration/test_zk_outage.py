"""A ZooKeeper outage longer than the brokers' sessions: the restarted ZooKeeper still holds
the old sessions' records for one more session timeout. A broker replaces its own records of
the session it lost (its registration, its bundles' ownership) at once. Before, its first try
to own its heartbeat bundle again found it "taken" and it never tried again, since no leader
places a heartbeat bundle: every broker's health check failed for good after such an
outage."""

from __future__ import annotations

from pathlib import Path

import pytest

from ballast.broker.cluster import LocalCluster
from ballast.broker.identity import BrokerIdentity
from ballast.clock import Clock
from ballast.metadata.zkserver import LocalZooKeeper, ZooKeeperConfig, free_port
from ballast.model.config import load_settings
from tests.support.waiting import eventually

pytestmark = [pytest.mark.real_time, pytest.mark.integration]

SESSION_MS = 6000


async def test_a_broker_serves_its_heartbeat_bundle_again_after_a_long_outage(
    clock: Clock, tmp_path: Path
) -> None:
    server = LocalZooKeeper(ZooKeeperConfig(data_dir=tmp_path / "zk", port=free_port()))
    await server.start(clock)
    settings = load_settings(overrides=[f"metadataStoreSessionTimeoutMillis={SESSION_MS}"]).settings
    cluster = LocalCluster(clock, settings=settings, store_url=f"{server.url}/outage")
    try:
        node = await cluster.add_broker(BrokerIdentity("127.0.0.1", free_port(), free_port()))
        await eventually(lambda: cluster.leader() is not None, clock, what="a leader")
        assert node.heartbeat_bundle in node.served
        server.stop()
        await clock.sleep(2 * SESSION_MS / 1000)  # past the session: the broker gives it up
        assert node.heartbeat_bundle not in node.served
        await server.start(clock)
        back = clock.monotonic()
        await eventually(
            lambda: (
                node.heartbeat_bundle in node.served
                and node.registration.registered
                and cluster.leader() is node
            ),
            clock,
            what="the heartbeat bundle served again, the broker registered and leading",
            timeout_s=6 * SESSION_MS / 1000 + 10,
        )
        # Its own records of the lost session, which the restarted ZooKeeper keeps for one
        # more session timeout, are replaced (the leader's: removed) at once rather than
        # waited out.
        assert clock.monotonic() - back < SESSION_MS / 1000 * 0.75
    finally:
        await cluster.close()
        server.stop()
