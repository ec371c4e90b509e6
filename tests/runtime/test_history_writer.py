"""The leader records the load history (setting ``loadBalancerHistoryPath``): one snapshot per
shedding cycle, in the layout the pipeline reads; a failing writer never hurts the leader."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow.compute as pc

from ballast.broker.cluster import LocalCluster
from ballast.broker.identity import BrokerIdentity
from ballast.cli.history import history_sink
from ballast.clock import Clock
from ballast.controller.history import HistorySink, inline
from ballast.controller.requests import CreateNamespace, CreateTenant
from ballast.model.config import Settings, load_settings
from ballast.model.loaddata import LoadData
from ballast.model.naming import TopicName
from ballast.pipeline.history import LeaderHistoryWriter, read_table
from ballast.pipeline.schema import BROKER_AVERAGES, BROKERS, BUNDLE_AVERAGES, BUNDLES
from tests.support.waiting import eventually

CYCLE_S = 60  # loadBalancerSheddingIntervalMinutes = 1


async def start_cluster(
    clock: Clock, sink: HistorySink, settings: Settings | None = None
) -> LocalCluster:
    settings = settings or load_settings(overrides=["clusterName=east"]).settings
    cluster = LocalCluster(clock, settings=settings, history=sink)
    for port in (8080, 8081, 8082):
        await cluster.add_broker(BrokerIdentity("10.0.0.1", port, port - 1430))
    await eventually(lambda: cluster.leader() is not None, clock)
    assert (await cluster.request(CreateTenant(tenant="t"))).ok
    assert (await cluster.request(CreateNamespace(namespace="t/ns", bundles=4))).ok
    node = cluster.running()[0]
    for i in range(8):
        topic = TopicName.parse(f"persistent://t/ns/topic-{i}")
        await node.topic_index.create(topic)
        await cluster.lookup(topic)
    return cluster


async def test_the_leader_writes_one_snapshot_per_cycle(clock: Clock, tmp_path: Path) -> None:
    settings = load_settings(
        overrides=["clusterName=east", f"loadBalancerHistoryPath={tmp_path}"]
    ).settings
    # The sink the runtime commands build from the setting, its writes run inline on the
    # virtual-time loop instead of in a thread.
    configured = history_sink(settings)
    assert configured is not None and configured.write == LeaderHistoryWriter(tmp_path, "east")
    sink = dataclasses.replace(configured, run_blocking=inline)
    cluster = await start_cluster(clock, sink, settings)
    await clock.sleep(3 * CYCLE_S + CYCLE_S / 2)
    leader = cluster.leader()
    assert leader is not None and leader.controller is not None
    recorder = leader.controller.history
    assert recorder is not None
    assert (recorder.written, recorder.failed, recorder.skipped) == (3, 0, 0)

    brokers = read_table(tmp_path, BROKERS)
    times = sorted(set(brokers.column("snapshot_ms").to_pylist()))
    assert len(times) == 3
    assert times[1] - times[0] == CYCLE_S * 1000
    assert set(brokers.column("cluster").to_pylist()) == {"east"}
    last = read_table(tmp_path, BROKERS, since_ms=times[-1])
    assert sorted(last.column("broker").to_pylist()) == sorted(cluster.nodes)
    bundles = read_table(tmp_path, BUNDLES, since_ms=times[-1])
    owned = {b for b in leader.controller.image.owners if b.startswith("t/ns/")}
    assert owned and owned <= set(bundles.column("bundle").to_pylist())
    # every bundle row names the broker that reported it, in the same snapshot
    assert pc.all(pc.is_in(bundles.column("broker"), last.column("broker"))).as_py()
    assert read_table(tmp_path, BROKER_AVERAGES, since_ms=times[-1]).num_rows == 3
    assert read_table(tmp_path, BUNDLE_AVERAGES, since_ms=times[-1]).num_rows >= len(owned)
    await cluster.close()


async def test_a_failing_writer_never_stops_the_leader(clock: Clock) -> None:
    calls: list[int] = []

    def broken(load_data: LoadData, snapshot_ms: int) -> None:
        del load_data
        calls.append(snapshot_ms)
        raise OSError("disk full")

    cluster = await start_cluster(clock, HistorySink(write=broken, run_blocking=inline))
    await clock.sleep(2 * CYCLE_S + CYCLE_S / 2)
    leader = cluster.leader()
    assert leader is not None and leader.controller is not None
    assert leader.controller.running
    assert leader.controller.history is not None
    assert leader.controller.history.failed == len(calls) == 2
    await cluster.close()
