"""A real cluster: a ZooKeeper server and three ``ballast broker`` processes talking HTTP.
Topics are looked up and owned; ``kill -9`` of the leader elects another and its bundles are
owned again within the session timeout plus one cycle; ``kill -9`` of a follower does the same
for its bundles; nothing is owned twice at any sampled moment."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from ballast.clock import Clock
from ballast.metadata.zkserver import LocalZooKeeper
from tests.support.waiting import eventually
from tests.support.zkbrokers import (
    BrokerProcess,
    broker_processes,
    fresh_store,
    get,
    leader_of,
    serve_namespace,
    until_registered,
)

pytestmark = [pytest.mark.real_time, pytest.mark.integration]

SESSION_MS = 3000
CYCLE_S = 10.0  # margin for one report/placement cycle on a loaded machine


@pytest.fixture
def brokers(zookeeper_server: LocalZooKeeper, tmp_path: Path) -> Iterator[list[BrokerProcess]]:
    store = fresh_store(zookeeper_server.url, "it")
    with broker_processes(store, tmp_path, 3, session_ms=SESSION_MS) as started:
        yield started


async def owned(session: aiohttp.ClientSession, broker: BrokerProcess) -> set[str] | None:
    status, body = await get(
        session, f"{broker.url}/admin/v2/brokers/standalone/{broker.broker_id}/ownedNamespaces"
    )
    if status != 200 or not isinstance(body, dict):
        return None
    return {b for b, s in body.items() if s["is_active"] and not b.startswith("pulsar/")}


async def test_three_brokers_on_zookeeper_survive_kill_9(
    clock: Clock, brokers: list[BrokerProcess]
) -> None:
    doubles: list[str] = []
    async with aiohttp.ClientSession() as session:
        await until_registered(session, brokers, clock)
        await serve_namespace(session, brokers, clock, bundles=12, topics=40)

        async def sample() -> None:
            while True:
                seen: dict[str, str] = {}
                for broker in brokers:
                    if not broker.alive:
                        continue
                    bundles = await owned(session, broker) or set()
                    for bundle in bundles:
                        if bundle in seen:
                            doubles.append(f"{bundle}: {seen[bundle]} and {broker.broker_id}")
                        seen[bundle] = broker.broker_id
                await clock.sleep(0.2)

        sampler = asyncio.get_running_loop().create_task(sample())
        try:
            for role in ("leader", "follower"):
                leader = await leader_of(session, brokers)
                assert leader is not None
                live = [b for b in brokers if b.alive]
                victim = next(b for b in live if (b.broker_id == leader) == (role == "leader"))
                await clock.sleep(6)  # its load report carries what it owns (written every 5 s)
                held = await owned(session, victim)
                assert held, f"{victim.broker_id} owns nothing to lose"
                victim.kill()
                killed_at = clock.monotonic()
                others = [b for b in brokers if b.alive]

                async def taken_over(
                    others: list[BrokerProcess] = others, held: set[str] = held
                ) -> bool:
                    now: set[str] = set()
                    for broker in others:
                        now |= await owned(session, broker) or set()
                    return held <= now

                await eventually(
                    taken_over,
                    clock,
                    what=f"the {role}'s bundles owned again",
                    timeout_s=SESSION_MS / 1000 + CYCLE_S + 10,
                    interval_s=0.2,
                )
                assert clock.monotonic() - killed_at <= SESSION_MS / 1000 + CYCLE_S
                new_leader = await leader_of(session, brokers)
                assert new_leader is not None and new_leader != victim.broker_id
        finally:
            sampler.cancel()
    assert doubles == []
