"""Fixtures of the metadata contract suite: the backends, and a real ZooKeeper server for the
whole session (installed from Debian's packages when missing, stopped at the end)."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ballast.clock import Clock, SystemClock
from ballast.metadata.zkserver import LocalZooKeeper, ZooKeeperConfig, ensure_installed, free_port
from tests.support.harness import (
    BackendSpec,
    Harness,
    MemoryHarness,
    ZooKeeperHarness,
    sqlite_url,
)

BACKENDS = [
    BackendSpec("memory", real_time=False),
    BackendSpec("sqlite", real_time=False),
    BackendSpec("zookeeper", real_time=True),
]


@pytest.fixture(scope="session")
def zookeeper_server() -> Iterator[LocalZooKeeper]:
    ensure_installed()
    with tempfile.TemporaryDirectory(prefix="ballast-zk-") as tmp:
        server = LocalZooKeeper(ZooKeeperConfig(data_dir=Path(tmp), port=free_port()))
        asyncio.run(server.start(SystemClock()))
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture(params=BACKENDS, ids=lambda spec: spec.name)
def backend(request: pytest.FixtureRequest) -> BackendSpec:
    spec: BackendSpec = request.param
    return spec


@pytest.fixture
def harness(
    request: pytest.FixtureRequest,
    backend: BackendSpec,
    clock: Clock,
    loop: asyncio.AbstractEventLoop,
    tmp_path: Path,
) -> Iterator[Harness]:
    made: Harness
    if backend.name == "memory":
        made = MemoryHarness(clock)
    elif backend.name == "sqlite":
        made = MemoryHarness(clock, sqlite_url(tmp_path))
    else:
        made = ZooKeeperHarness(request.getfixturevalue("zookeeper_server"))
    yield made
    loop.run_until_complete(made.close())
