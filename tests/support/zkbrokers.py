"""Real ``ballast broker`` processes on a real ZooKeeper, for the integration tests: starting
them as a user would (one process each, HTTP admin API), asking them who leads, and killing
what a test started."""

from __future__ import annotations

import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from ballast.clock import Clock
from tests.conftest import REPO
from tests.support.live import distinct_free_ports
from tests.support.waiting import eventually


@dataclass
class BrokerProcess:
    """One ``ballast broker`` child process and the log its output goes to."""

    broker_id: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://{self.broker_id}"

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """``kill -9``: no shutdown, no release of locks; its session has to expire."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()


def fresh_store(zookeeper_url: str, name: str) -> str:
    """A store URL on ``zookeeper_url`` under a chroot no other test uses (the server is
    shared by the whole session)."""
    return f"{zookeeper_url}/{name}-{uuid.uuid4().hex[:12]}"


@contextmanager
def broker_processes(
    store: str,
    logs: Path,
    count: int,
    *,
    session_ms: int,
    settings: Sequence[str] = (),
) -> Iterator[list[BrokerProcess]]:
    """Start ``count`` brokers on the metadata store ``store`` (a ZooKeeper URL with a chroot),
    each with its own free ports and ``--set`` ``settings``; kill every one still running on
    exit."""
    started: list[BrokerProcess] = []
    try:
        for i in range(count):
            web, binary = distinct_free_ports(2)
            log = logs / f"broker-{i}.log"
            command = [
                sys.executable, "-m", "ballast", "broker", "--store", store,
                "--host-usage", "model",
                "--set", f"webServicePort={web}", "--set", f"brokerServicePort={binary}",
                "--set", "bindAddress=127.0.0.1", "--set", "advertisedAddress=127.0.0.1",
                "--set", f"metadataStoreSessionTimeoutMillis={session_ms}",
                "--set", "brokerShutdownTimeoutMs=5000",
            ]  # fmt: skip
            for setting in settings:
                command += ["--set", setting]
            with log.open("wb") as out:
                process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
            started.append(BrokerProcess(f"127.0.0.1:{web}", process, log))
        yield started
    finally:
        for broker in started:
            if broker.alive:
                broker.kill()


async def get(session: aiohttp.ClientSession, url: str) -> tuple[int, object]:
    """GET ``url``: its status and JSON (or text) body; status 0 when it did not answer."""
    try:
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=5)) as response:
            if response.content_type == "application/json":
                return response.status, await response.json()
            return response.status, await response.text()
    except (aiohttp.ClientError, TimeoutError, OSError):
        return 0, None


async def leader_of(session: aiohttp.ClientSession, brokers: list[BrokerProcess]) -> str | None:
    """The leader as the first live broker that answers names it."""
    for broker in brokers:
        if broker.alive:
            status, body = await get(session, f"{broker.url}/admin/v2/brokers/leaderBroker")
            if status == 200 and isinstance(body, dict):
                return str(body["brokerId"])
    return None


async def all_registered(
    session: aiohttp.ClientSession, brokers: list[BrokerProcess], cluster: str
) -> bool:
    """Every broker lists all of them as active, and one of them leads."""
    for broker in brokers:
        status, body = await get(session, f"{broker.url}/admin/v2/brokers/{cluster}")
        if status != 200 or not isinstance(body, list) or len(body) != len(brokers):
            return False
    return await leader_of(session, brokers) is not None


async def until_registered(
    session: aiohttp.ClientSession, brokers: list[BrokerProcess], clock: Clock
) -> None:
    """Wait (up to a minute: processes starting on a loaded machine) until every broker lists
    all of them as active and one of them leads."""
    await eventually(
        lambda: all_registered(session, brokers, "standalone"),
        clock,
        what=f"{len(brokers)} brokers and a leader",
        timeout_s=60,
        interval_s=0.2,
    )


async def serve_namespace(
    session: aiohttp.ClientSession,
    brokers: list[BrokerProcess],
    clock: Clock,
    *,
    bundles: int,
    topics: int,
) -> None:
    """Tenant ``t`` and namespace ``t/ns`` of ``bundles`` bundles, made through the first
    broker, and ``topics`` of its topics looked up through each broker in turn (a lookup
    gives the topic's bundle an owner). A request answered 503 (no leader ready: right after
    an election the new leader is still loading its image, longer on a loaded machine) and a
    lookup that fails are tried again, as a client does, for up to 30 s; any other answer
    than success fails the test."""
    first = brokers[0].url
    status, clusters = await get(session, f"{first}/admin/v2/clusters")
    assert status == 200, clusters
    tenant = {"allowedClusters": clusters}  # every cluster, as pulsar-admin fills in
    await _put_through_elections(session, clock, f"{first}/admin/v2/tenants/t", tenant)
    await _put_through_elections(
        session,
        clock,
        f"{first}/admin/v2/namespaces/t/ns",
        {"bundles": {"numBundles": bundles}},
    )
    for i in range(topics):
        url = f"{brokers[i % len(brokers)].url}/lookup/v2/topic/persistent/t/ns/topic-{i}"

        async def found(url: str = url) -> bool:
            status, body = await get(session, url)
            return status == 200 and isinstance(body, dict)

        await eventually(found, clock, what=f"a lookup of {url}", timeout_s=30, interval_s=0.5)


async def _put_through_elections(
    session: aiohttp.ClientSession, clock: Clock, url: str, body: object
) -> None:
    """PUT ``body`` until it succeeds (204), retrying only 503 answers."""

    async def done() -> bool:
        async with session.put(url, json=body) as response:
            if response.status == 503:
                return False
            assert response.status == 204, await response.text()
            return True

    await eventually(done, clock, what=f"PUT {url}", timeout_s=30, interval_s=0.5)
