"""End to end on a real cluster: ``ballast broker`` processes on ZooKeeper keep one load
history (``loadBalancerHistoryPath``) across a ``kill -9`` of the leader (the next leader
appends to it), and a pipeline job reads what both leaders wrote."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import pytest

from ballast.clock import Clock
from ballast.metadata.zkserver import LocalZooKeeper
from ballast.pipeline.history import read_table
from ballast.pipeline.schema import BROKERS, BUNDLES
from tests.conftest import run_ballast
from tests.support.waiting import eventually
from tests.support.zkbrokers import (
    all_registered,
    broker_processes,
    fresh_store,
    leader_of,
    serve_namespace,
)

pytestmark = [pytest.mark.real_time, pytest.mark.integration, pytest.mark.spark]

SESSION_MS = 3000
CLUSTER = "zk-history"
# The leader writes a snapshot at each shedding cycle: a minute after it is elected, then
# every minute. Slack for a loaded machine.
CYCLE_WAIT_S = 60 + 45


def snapshot_times(history: Path) -> list[int]:
    return sorted(set(read_table(history, BROKERS).column("snapshot_ms").to_pylist()))


async def test_two_leaders_append_to_one_history_a_job_reads(
    clock: Clock, zookeeper_server: LocalZooKeeper, tmp_path: Path
) -> None:
    history = tmp_path / "history"
    store = fresh_store(zookeeper_server.url, "history")
    settings = [f"loadBalancerHistoryPath={history}", f"clusterName={CLUSTER}"]
    with broker_processes(store, tmp_path, 2, session_ms=SESSION_MS, settings=settings) as brokers:
        async with aiohttp.ClientSession() as session:
            await eventually(
                lambda: all_registered(session, brokers, CLUSTER),
                clock,
                what="two brokers and a leader",
                timeout_s=60,
                interval_s=0.2,
            )
            await serve_namespace(session, brokers, clock, bundles=4, topics=8)

            await eventually(
                lambda: len(snapshot_times(history)) >= 1,
                clock,
                what="the first leader's snapshot",
                timeout_s=CYCLE_WAIT_S,
                interval_s=1,
            )
            leader = await leader_of(session, brokers)
            assert leader is not None
            victim = next(b for b in brokers if b.broker_id == leader)
            victim.kill()
            killed_ms = clock.wall_ms()

            await eventually(
                lambda: snapshot_times(history)[-1] > killed_ms,
                clock,
                what="a snapshot by the next leader",
                timeout_s=SESSION_MS / 1000 + CYCLE_WAIT_S,
                interval_s=1,
            )
            survivor = next(b for b in brokers if b.alive)
            assert await leader_of(session, brokers) == survivor.broker_id

    brokers_rows = read_table(history, BROKERS)
    by_snapshot: dict[int, set[str]] = {}
    for snapshot_ms, broker in zip(
        brokers_rows.column("snapshot_ms").to_pylist(),
        brokers_rows.column("broker").to_pylist(),
        strict=True,
    ):
        by_snapshot.setdefault(snapshot_ms, set()).add(broker)
    before = [b for ms, b in by_snapshot.items() if ms < killed_ms]
    after = [b for ms, b in by_snapshot.items() if ms > killed_ms]
    # The first leader saw both brokers; the next one, after the session expired, itself only.
    assert any(len(seen) == 2 for seen in before)
    assert after and after[-1] == {survivor.broker_id}
    assert set(brokers_rows.column("cluster").to_pylist()) == {CLUSTER}
    assert not list(history.rglob(".*.tmp"))  # every file written whole
    bundles = read_table(history, BUNDLES)
    names = set(bundles.column("bundle").to_pylist())
    assert any(name.startswith("t/ns/") for name in names)

    averages = run_ballast(
        "pipeline", "time-averages", "--history", str(history), "--out", str(tmp_path / "out"),
        "--master", "local[1]",
    )  # fmt: skip
    assert averages.returncode == 0, averages.stderr
    summary = json.loads(averages.stdout)
    assert summary["bundles"] == len(names)  # every bundle either leader saw
    assert summary["brokers"] == 1  # broker averages are for the latest snapshot's brokers
