"""A real cluster: a ZooKeeper server and three ``ballast broker`` processes talking HTTP.
Topics are looked up and owned; ``kill -9`` of the leader elects another and its bundles are
owned again within the session timeout plus one cycle; ``kill -9`` of a follower does the same
for its bundles; nothing is owned twice at any sampled moment."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from ballast.clock import Clock
from ballast.metadata.zkserver import LocalZooKeeper, free_port
from tests.conftest import REPO
from tests.support.waiting import eventually

pytestmark = [pytest.mark.real_time, pytest.mark.integration]

SESSION_MS = 3000
CYCLE_S = 10.0  # margin for one report/placement cycle on a loaded machine
_chroots = itertools.count()


@dataclass
class BrokerProcess:
    broker_id: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://{self.broker_id}"

    @property
    def alive(self) -> bool:
        return self.process.poll() is None


@pytest.fixture
def brokers(zookeeper_server: LocalZooKeeper, tmp_path: Path) -> Iterator[list[BrokerProcess]]:
    store = f"{zookeeper_server.url}/it-{next(_chroots)}-{os.getpid()}"
    started: list[BrokerProcess] = []
    for i in range(3):
        web = free_port()
        log = tmp_path / f"broker-{i}.log"
        command = [
            sys.executable, "-m", "ballast", "broker", "--store", store, "--host-usage", "model",
            "--set", f"webServicePort={web}", "--set", f"brokerServicePort={free_port()}",
            "--set", "bindAddress=127.0.0.1", "--set", "advertisedAddress=127.0.0.1",
            "--set", f"metadataStoreSessionTimeoutMillis={SESSION_MS}",
            "--set", "brokerShutdownTimeoutMs=5000",
        ]  # fmt: skip
        with log.open("wb") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
        started.append(BrokerProcess(f"127.0.0.1:{web}", process, log))
    yield started
    for broker in started:
        if broker.alive:
            broker.process.send_signal(signal.SIGKILL)
        broker.process.wait()


async def get(session: aiohttp.ClientSession, url: str) -> tuple[int, object]:
    try:
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=5)) as response:
            if response.content_type == "application/json":
                return response.status, await response.json()
            return response.status, await response.text()
    except (aiohttp.ClientError, TimeoutError, OSError):
        return 0, None


async def owned(session: aiohttp.ClientSession, broker: BrokerProcess) -> set[str] | None:
    status, body = await get(
        session, f"{broker.url}/admin/v2/brokers/standalone/{broker.broker_id}/ownedNamespaces"
    )
    if status != 200 or not isinstance(body, dict):
        return None
    return {b for b, s in body.items() if s["is_active"] and not b.startswith("pulsar/")}


async def leader_of(session: aiohttp.ClientSession, brokers: list[BrokerProcess]) -> str | None:
    for broker in brokers:
        if broker.alive:
            status, body = await get(session, f"{broker.url}/admin/v2/brokers/leaderBroker")
            if status == 200 and isinstance(body, dict):
                return str(body["brokerId"])
    return None


async def test_three_brokers_on_zookeeper_survive_kill_9(
    clock: Clock, brokers: list[BrokerProcess]
) -> None:
    doubles: list[str] = []
    async with aiohttp.ClientSession() as session:

        async def all_up() -> bool:
            for broker in brokers:
                status, body = await get(session, f"{broker.url}/admin/v2/brokers/standalone")
                if status != 200 or not isinstance(body, list) or len(body) != 3:
                    return False
            return await leader_of(session, brokers) is not None

        await eventually(
            all_up, clock, what="three brokers and a leader", timeout_s=60, interval_s=0.2
        )
        first = brokers[0].url
        async with session.put(f"{first}/admin/v2/tenants/t", json={}) as response:
            assert response.status == 204, await response.text()
        async with session.put(
            f"{first}/admin/v2/namespaces/t/ns", json={"bundles": {"numBundles": 12}}
        ) as response:
            assert response.status == 204, await response.text()
        for i in range(40):  # a client follows the 307s to the owner
            status, body = await get(
                session, f"{brokers[i % 3].url}/lookup/v2/topic/persistent/t/ns/topic-{i}"
            )
            assert status == 200 and isinstance(body, dict), body

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
                victim.process.send_signal(signal.SIGKILL)
                victim.process.wait()
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
