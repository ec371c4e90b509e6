"""A cluster whose brokers' store reads can be made to take a round trip, as they do on
ZooKeeper: the memory store answers at once, which hides the races that only a read taking
time lets happen."""

from __future__ import annotations

from ballast.broker.cluster import LocalCluster
from ballast.broker.identity import BrokerIdentity
from ballast.broker.node import BrokerNode
from ballast.clock import Clock
from ballast.metadata.store import Record
from ballast.model.config import load_settings
from tests.support.waiting import eventually


class SlowReads:
    """An ``on_node`` hook: while :attr:`on`, each broker's ``store.get`` waits ``delay_s``
    (on the cluster's clock) before it reads."""

    def __init__(self, clock: Clock, delay_s: float) -> None:
        self.clock = clock
        self.delay_s = delay_s
        self.on = False

    def __call__(self, node: BrokerNode) -> None:
        get = node.store.get

        async def slowly(path: str) -> Record | None:
            if self.on:
                await self.clock.sleep(self.delay_s)
            return await get(path)

        node.store.get = slowly  # type: ignore[method-assign]


async def slow_cluster(
    clock: Clock,
    slow: SlowReads,
    brokers: list[BrokerIdentity],
    session_s: float,
    *overrides: str,
) -> LocalCluster:
    """``brokers`` started with ``slow`` on every node, and a leader elected."""
    settings = load_settings(
        overrides=[f"metadataStoreSessionTimeoutMillis={int(session_s * 1000)}", *overrides]
    ).settings
    cluster = LocalCluster(clock, settings=settings, on_node=slow)
    for identity in brokers:
        await cluster.add_broker(identity)
    await eventually(lambda: cluster.leader() is not None, clock, what="a leader")
    return cluster
