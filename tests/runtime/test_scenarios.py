"""Cluster scenarios on virtual time with the memory store and 3–5 brokers, no sleeps: lookups
converge, load is shed, hot bundles split, leaders and brokers fail and the cluster carries on.
The invariant checker runs after every step."""

from __future__ import annotations

import asyncio

import pytest

from ballast.broker.cluster import LocalCluster
from ballast.broker.identity import BrokerIdentity
from ballast.broker.lookup import AnswerKind
from ballast.broker.traffic import TopicStats, WorkloadTraffic
from ballast.clock import Clock
from ballast.controller.commands import AssignBundle
from ballast.controller.requests import CreateNamespace, CreateTenant, SplitRequest, UnloadRequest
from ballast.coordination.election import NotLeaderError
from ballast.coordination.ownership import read_owner
from ballast.metadata.chunking import ChunkingStore
from ballast.metadata.memory import MemoryMetadataStore
from ballast.metadata.store import Create, MetadataStore
from ballast.model.bundles import BundleName
from ballast.model.config import load_settings
from ballast.model.naming import NamespaceName, TopicName
from tests.support.invariants import ownership_records, settle_and_check
from tests.support.waiting import eventually

SESSION_S = 10.0
MIB = 1024 * 1024


def broker(i: int) -> BrokerIdentity:
    return BrokerIdentity("10.0.0.1", 8080 + i, 6650 + i)


def bid(i: int) -> str:
    return broker(i).broker_id


async def start_cluster(
    clock: Clock, brokers: int = 3, *overrides: str, traffic: WorkloadTraffic | None = None
) -> tuple[LocalCluster, MetadataStore]:
    settings = load_settings(
        overrides=[f"metadataStoreSessionTimeoutMillis={int(SESSION_S * 1000)}", *overrides]
    ).settings
    cluster = LocalCluster(clock, settings=settings, traffic=traffic)
    for i in range(brokers):
        await cluster.add_broker(broker(i))
    await eventually(lambda: cluster.leader() is not None, clock, what="a leader")
    observer = await cluster.connect()
    assert (await cluster.request(CreateTenant(tenant="t"))).ok
    return cluster, observer


async def create_topics(
    cluster: LocalCluster,
    namespace: str,
    count: int,
    traffic: WorkloadTraffic | None = None,
    stats: TopicStats | None = None,
) -> list[TopicName]:
    store = await cluster.connect()
    topics = [TopicName.parse(f"persistent://{namespace}/topic-{i}") for i in range(count)]
    for topic in topics:
        await cluster.running()[0].topic_index.create(topic)
        if traffic is not None and stats is not None:
            traffic.set(topic, stats)
    await store.close()
    return topics


async def lookup_all(
    cluster: LocalCluster, topics: list[TopicName], via: str | None = None
) -> dict[str, str]:
    owners: dict[str, str] = {}
    for topic in topics:
        answer = await cluster.lookup(topic, via=via)
        assert answer.kind is AnswerKind.CONNECT, (topic, answer)
        assert answer.broker_id is not None
        owners[str(topic)] = answer.broker_id
    return owners


async def test_every_lookup_converges_to_one_owner(clock: Clock) -> None:
    cluster, observer = await start_cluster(clock, 4)
    assert (await cluster.request(CreateNamespace(namespace="t/ns", bundles=16))).ok
    topics = await create_topics(cluster, "t/ns", 60)
    await settle_and_check(cluster, observer, clock)
    first = await lookup_all(cluster, topics, via=bid(3))
    await settle_and_check(cluster, observer, clock)
    for i in range(4):  # the same answer through every broker
        assert await lookup_all(cluster, topics, via=bid(i)) == first
    assert len(set(first.values())) == 4  # spread over every broker
    records = await ownership_records(observer)
    bundles = {
        str(b) for b in (await cluster.running()[0].bundles.bundles(topics[0].namespace)).bundles
    }
    assert set(records) >= {b for b in bundles if any(first)} - set()  # records exist
    # Every topic's bundle has exactly one record, and the lookups named its owner.
    for topic in topics:
        bundle = await cluster.running()[0].lookups.bundle_of(topic)
        assert records[str(bundle)][0] == first[str(topic)]
    # Each owner serves the topic: it is in its served-topic map.
    for topic, owner in first.items():
        assert cluster.nodes[owner].served.bundle_of(TopicName.parse(topic)) is not None
    await settle_and_check(cluster, observer, clock)
    await cluster.close()


async def test_concurrent_lookups_of_one_bundle_agree(clock: Clock) -> None:
    cluster, observer = await start_cluster(clock, 3)
    assert (await cluster.request(CreateNamespace(namespace="t/ns", bundles=1))).ok
    topics = await create_topics(cluster, "t/ns", 20)
    answers = await asyncio.gather(
        *(cluster.lookup(t, via=bid(i % 3)) for i, t in enumerate(topics))
    )
    assert {a.broker_id for a in answers} == {answers[0].broker_id}
    await settle_and_check(cluster, observer, clock)
    await cluster.close()


async def test_overloaded_broker_sheds_and_the_bundle_lands_elsewhere(clock: Clock) -> None:
    traffic = WorkloadTraffic()
    # Splits stay out of the way: this scenario is about shedding.
    cluster, observer = await start_cluster(
        clock, 3, "loadBalancerAutoBundleSplitEnabled=false", traffic=traffic
    )
    assert (await cluster.request(CreateNamespace(namespace="t/hot", bundles=8))).ok
    topics = await create_topics(cluster, "t/hot", 40)
    owners = await lookup_all(cluster, topics)
    victim = max(set(owners.values()), key=list(owners.values()).count)
    hot = [TopicName.parse(t) for t, o in owners.items() if o == victim]
    for topic in hot:  # every topic of the victim carries 20 MiB/s each way
        traffic.set(topic, TopicStats.of(2000, 10 * 1024, producers=1, consumers=1))
    bundles_before = {str(b) for b in cluster.nodes[victim].ownership.owned()}
    await settle_and_check(cluster, observer, clock, 5 * 60)
    leader = cluster.leader()
    assert leader is not None and leader.controller is not None
    moved = [d for d in leader.controller.decisions_log if d["action"] in ("transfer", "unload")]
    assert moved, leader.controller.last_shedding
    assert all(d["broker"] == victim for d in moved)
    after = await lookup_all(cluster, topics)
    assert sum(1 for o in after.values() if o != victim) > sum(
        1 for o in owners.values() if o != victim
    )
    bundles_after = {str(b) for b in cluster.nodes[victim].ownership.owned()}
    assert bundles_after < bundles_before
    await settle_and_check(cluster, observer, clock)
    await cluster.close()


async def test_hot_bundle_splits_and_both_halves_are_served(clock: Clock) -> None:
    cluster, observer = await start_cluster(clock, 3, "loadBalancerNamespaceBundleMaxTopics=10")
    assert (await cluster.request(CreateNamespace(namespace="t/split", bundles=1))).ok
    topics = await create_topics(cluster, "t/split", 30)
    owners = await lookup_all(cluster, topics)
    assert len(set(owners.values())) == 1
    # Reports carry 30 topics > 10: the leader splits the bundle at its next update.
    await eventually(
        lambda: _bundle_count(cluster, "t/split") > 1, clock, what="split", timeout_s=20 * 60
    )
    await settle_and_check(cluster, observer, clock)
    after = await lookup_all(cluster, topics)  # children were unloaded: lookups place them
    namespace_bundles = await cluster.running()[0].bundles.bundles(topics[0].namespace)
    assert namespace_bundles.count >= 2
    served = {str(await cluster.running()[0].lookups.bundle_of(t)) for t in topics}
    assert len(served) >= 2
    records = await ownership_records(observer)
    assert served <= set(records)
    assert set(after.values()) <= {n.broker_id for n in cluster.running()}
    await settle_and_check(cluster, observer, clock)
    await cluster.close()


def _bundle_count(cluster: LocalCluster, namespace: str) -> int:
    leader = cluster.leader()
    if leader is None or leader.controller is None:
        return 0
    for name, bundles in leader.controller.image.namespaces.items():
        if str(name) == namespace:
            return bundles.count
    return 0


async def test_a_split_counts_the_persistent_topics_the_store_records(clock: Clock) -> None:
    """Pulsar's split counts the bundle's topics in the store (getOwnedTopicListForNamespace
    Bundle); a broker serves no persistent topic, so topics recorded after it took the bundle
    (partitions an admin created) were none to it: topic_count_equally_divide never split."""
    cluster, observer = await start_cluster(clock, 2)
    assert (await cluster.request(CreateNamespace(namespace="t/rec", bundles=1))).ok
    [first] = await create_topics(cluster, "t/rec", 1)
    await lookup_all(cluster, [first])  # the bundle owned, its one topic loaded
    await create_topics(cluster, "t/rec", 12)  # recorded since, never looked up
    await settle_and_check(cluster, observer, clock)
    bundle = str(await cluster.running()[0].lookups.bundle_of(first))
    split = await cluster.request(
        SplitRequest(bundle=bundle, algorithm="topic_count_equally_divide")
    )
    assert split.ok, split.message
    children = split.result["children"]
    assert isinstance(children, list) and len(children) == 2, split.result
    await cluster.close()


async def test_admin_split_and_unload(clock: Clock) -> None:
    cluster, observer = await start_cluster(clock, 3)
    assert (await cluster.request(CreateNamespace(namespace="t/admin", bundles=2))).ok
    topics = await create_topics(cluster, "t/admin", 20)
    await lookup_all(cluster, topics)
    bundle = str(await cluster.running()[0].lookups.bundle_of(topics[0]))
    split = await cluster.request(
        SplitRequest(bundle=bundle, algorithm="topic_count_equally_divide")
    )
    assert split.ok, split.message
    children = split.result["children"]
    assert isinstance(children, list) and len(children) == 2
    records = await ownership_records(observer)
    assert all(c in records for c in children)  # owned, not unloaded
    assert bundle not in records
    unload = await cluster.request(UnloadRequest(bundle=children[0]))
    assert unload.ok
    assert children[0] not in await ownership_records(observer)
    # As in Pulsar, splitting a bundle nobody owns places it first, then splits it.
    again = await cluster.request(SplitRequest(bundle=children[0]))
    assert again.ok, again.message
    grandchildren = again.result["children"]
    assert isinstance(grandchildren, list) and len(grandchildren) == 2
    records = await ownership_records(observer)
    assert all(c in records for c in grandchildren) and children[0] not in records
    leader = cluster.leader()
    assert leader is not None and leader.controller is not None
    actions = [
        (d["action"], d["origin"])
        for d in leader.controller.decisions_log
        if d["bundle"] == children[0]
    ]
    assert actions[-2:] == [("assign", "admin"), ("split", "admin")]
    # No cut point: nothing changes, and the reply says why (Pulsar answers it as done).
    kept = grandchildren[0]
    nothing = await cluster.request(
        SplitRequest(bundle=kept, algorithm="specified_positions_divide", boundaries=(1,))
    )
    assert nothing.ok and nothing.message.startswith(f"{kept} not split: "), nothing
    assert nothing.result["children"] == []
    assert leader.controller.image.owners.get(kept) == records[kept][0]
    assert kept in await ownership_records(observer)
    bad = await cluster.request(UnloadRequest(bundle="t/admin/0x00000000_0x00000010"))
    assert not bad.ok and bad.status == 412
    missing = await cluster.request(UnloadRequest(bundle="t/none/0x00000000_0xffffffff"))
    assert missing.status == 404
    await settle_and_check(cluster, observer, clock)
    await lookup_all(cluster, topics)
    await settle_and_check(cluster, observer, clock)
    await cluster.close()


async def test_admin_split_of_the_largest_and_the_hot_bundle(clock: Clock) -> None:
    traffic = WorkloadTraffic()
    cluster, observer = await start_cluster(
        clock,
        3,
        "loadBalancerAutoBundleSplitEnabled=false",
        "loadBalancerSheddingEnabled=false",
        traffic=traffic,
    )
    assert (await cluster.request(CreateNamespace(namespace="t/pick", bundles=4))).ok
    for which in ("LARGEST", "HOT"):  # no topics yet: Pulsar answers 404
        none = await cluster.request(SplitRequest(bundle=f"t/pick/{which}"))
        assert none.status == 404 and none.message.startswith(f"Bundle range {which} not found: ")
    # what LARGEST counts is said: a namespace of non-persistent topics has none of them
    largest = await cluster.request(SplitRequest(bundle="t/pick/LARGEST"))
    assert "no bundle of the namespace holds a persistent topic" in largest.message
    # Topics chosen by bundle: 5 in the first one, 2 in the second, 1 (the hot one) in the third.
    layout = await cluster.running()[0].bundles.bundles(NamespaceName.parse("t/pick"))
    wanted = dict(zip(layout.bundles[:3], (5, 2, 1), strict=True))
    chosen: dict[BundleName, list[TopicName]] = {b: [] for b in wanted}
    for i in range(1000):
        topic = TopicName.parse(f"persistent://t/pick/topic-{i}")
        home = layout.find(topic)
        if home in chosen and len(chosen[home]) < wanted[home]:
            chosen[home].append(topic)
    largest, _, hot = layout.bundles[:3]
    assert [len(chosen[b]) for b in layout.bundles[:3]] == [5, 2, 1]
    for topic in chosen[hot]:
        traffic.set(topic, TopicStats.of(500, 10 * 1024, producers=1, consumers=1))
    for topic in chosen[largest][:2]:
        traffic.set(topic, TopicStats.of(50, 1024, producers=1, consumers=1))
    for topics in chosen.values():
        for topic in topics:
            await cluster.running()[0].topic_index.create(topic)
        await lookup_all(cluster, topics)
    leader = cluster.leader()
    assert leader is not None and leader.controller is not None
    controller = leader.controller

    def hot_is_hottest() -> bool:
        data = controller.image.bundle_data
        throughput = {
            b: data[str(b)].long_term_data.total_msg_throughput
            for b in (largest, hot)
            if str(b) in data and data[str(b)].topics > 0
        }
        return len(throughput) == 2 and throughput[hot] > throughput[largest] > 0

    await eventually(hot_is_hottest, clock, what="the bundles' load reported", timeout_s=5 * 60)
    split = await cluster.request(SplitRequest(bundle="t/pick/LARGEST"))
    assert split.ok, split.message
    assert [d["bundle"] for d in controller.decisions_log if d["action"] == "split"] == [
        str(largest)
    ]
    split = await cluster.request(SplitRequest(bundle="t/pick/HOT"))
    assert split.ok, split.message
    assert [d["bundle"] for d in controller.decisions_log if d["action"] == "split"] == [
        str(largest),
        str(hot),
    ]
    after = await cluster.running()[0].bundles.bundles(NamespaceName.parse("t/pick"))
    assert after.count == 6
    await settle_and_check(cluster, observer, clock)
    await cluster.close()


async def test_the_pulsar_system_namespace_is_placed_like_any_other(clock: Clock) -> None:
    # It is a system namespace (kept out of shedding) but not a broker's heartbeat one.
    cluster, observer = await start_cluster(clock, 3)
    assert (await cluster.request(CreateTenant(tenant="pulsar"))).ok
    assert (await cluster.request(CreateNamespace(namespace="pulsar/system", bundles=2))).ok
    topics = await create_topics(cluster, "pulsar/system", 6)
    owners = await lookup_all(cluster, topics)
    assert set(owners.values()) <= {n.broker_id for n in cluster.running()}
    await settle_and_check(cluster, observer, clock)
    await cluster.close()


async def test_killing_the_leader_elects_one_that_carries_on(clock: Clock) -> None:
    cluster, observer = await start_cluster(clock, 3)
    assert (await cluster.request(CreateNamespace(namespace="t/ha", bundles=8))).ok
    topics = await create_topics(cluster, "t/ha", 30)
    await lookup_all(cluster, topics)
    old = cluster.leader()
    assert old is not None and old.controller is not None
    old_epoch = old.controller.epoch
    held_now = {str(b) for b in old.ownership.owned()}
    await eventually(  # its load report carries the bundles it holds (within seconds)
        lambda: held_now <= set(old.reporter.last_written.bundles), clock, what="reported"
    )
    await cluster.crash_broker(old.broker_id)
    await eventually(
        lambda: cluster.leader() is not None, clock, what="a new leader", timeout_s=SESSION_S * 3
    )
    new = cluster.leader()
    assert new is not None and new.controller is not None and new.broker_id != old.broker_id
    assert new.controller.epoch > old_epoch
    # The dead leader's bundles are owned again without waiting for a client's lookup: the
    # new leader learned them from the last report every broker saw.
    held = {str(b) for b in old.ownership.owned()} - {str(old.heartbeat_bundle)}

    async def all_owned() -> bool:
        records = await ownership_records(observer)
        return all(b in records and records[b][0] != old.broker_id for b in held)

    await eventually(all_owned, clock, what="the dead leader's bundles placed", timeout_s=5)
    await settle_and_check(cluster, observer, clock)
    # It rebuilt the namespaces from the store and keeps serving: lookups, admin requests.
    assert any(str(ns) == "t/ha" for ns in new.controller.image.namespaces)
    owners = await lookup_all(cluster, topics)
    assert old.broker_id not in owners.values()
    assert (await cluster.request(CreateNamespace(namespace="t/after", bundles=2))).ok
    await settle_and_check(cluster, observer, clock)
    await cluster.close()


async def test_crashed_broker_bundles_are_owned_elsewhere_in_time(clock: Clock) -> None:
    cluster, observer = await start_cluster(clock, 4, "loadBalancerSheddingIntervalMinutes=1")
    assert (await cluster.request(CreateNamespace(namespace="t/crash", bundles=12))).ok
    topics = await create_topics(cluster, "t/crash", 40)
    owners = await lookup_all(cluster, topics)
    leader = cluster.leader()
    assert leader is not None
    victim = next(o for o in sorted(set(owners.values())) if o != leader.broker_id)
    lost = {str(b) for b in cluster.nodes[victim].ownership.owned()} - {
        str(cluster.nodes[victim].heartbeat_bundle)
    }
    assert lost
    crashed_at = clock.monotonic()
    await cluster.crash_broker(victim)

    async def all_owned_elsewhere() -> bool:
        records = await ownership_records(observer)
        return all(b in records and records[b][0] != victim for b in lost)

    await eventually(all_owned_elsewhere, clock, what="orphans placed", timeout_s=SESSION_S + 60)
    assert clock.monotonic() - crashed_at <= SESSION_S + 60
    await settle_and_check(cluster, observer, clock)
    await cluster.close()


async def test_zombie_leader_commands_and_writes_are_rejected(clock: Clock) -> None:
    cluster, observer = await start_cluster(clock, 3)
    assert (await cluster.request(CreateNamespace(namespace="t/z", bundles=4))).ok
    topics = await create_topics(cluster, "t/z", 10)
    await lookup_all(cluster, topics)
    zombie = cluster.leader()
    assert zombie is not None and zombie.controller is not None
    old_controller = zombie.controller
    old_epoch = old_controller.epoch
    inner = zombie.store.inner if isinstance(zombie.store, ChunkingStore) else zombie.store
    assert isinstance(inner, MemoryMetadataStore)
    inner.partition()
    await eventually(
        lambda: any(
            n.controller is not None and n.controller.epoch > old_epoch
            for n in cluster.running()
            if n is not zombie
        ),
        clock,
        what="a new leader",
        timeout_s=SESSION_S * 3,
    )
    assert not old_controller.running  # it stopped acting when it saw SUSPENDED
    # A command it might still send carries the old epoch: brokers that saw the new one refuse.
    new_leader = next(n for n in cluster.running() if n.controller and n is not zombie)
    bystander = next(n for n in cluster.running() if n not in (zombie, new_leader))
    await cluster.lookup(TopicName.parse("persistent://t/z/fresh"))  # new leader commands
    bystander._highest_epoch = max(bystander._highest_epoch, new_leader.controller.epoch)  # type: ignore[union-attr]
    reply = await bystander.handle_command(
        AssignBundle(epoch=old_epoch, bundle="t/z/0x00000000_0x40000000")
    )
    assert not reply.ok and reply.stale_epoch
    # Its writes are fenced: the epoch moved on and its leader record is gone.
    inner.heal()
    await eventually(lambda: inner.state.value == "connected", clock, what="zombie reconnects")
    with pytest.raises(NotLeaderError):
        await old_controller.fenced([Create("/zombie-write", b"")])
    leadership = old_controller.leadership
    from ballast.metadata import paths
    from ballast.metadata.store import Check, MultiOpError

    with pytest.raises(MultiOpError):
        await zombie.store.multi(
            [Check(paths.LEADER_EPOCH, leadership.epoch_version), Create("/zombie-write", b"")]
        )
    assert await observer.exists("/zombie-write") is None
    await settle_and_check(cluster, observer, clock, 5)
    await cluster.close()


async def test_transfer_leaves_no_gap_in_ownership(clock: Clock) -> None:
    cluster, observer = await start_cluster(clock, 3)
    assert (await cluster.request(CreateNamespace(namespace="t/x", bundles=2))).ok
    topics = await create_topics(cluster, "t/x", 10)
    owners = await lookup_all(cluster, topics)
    bundle = await cluster.running()[0].lookups.bundle_of(topics[0])
    source = owners[str(topics[0])]
    destination = next(n.broker_id for n in cluster.running() if n.broker_id != source)
    gaps: list[float] = []
    seen: list[str | None] = []
    done = asyncio.Event()

    async def watch_record() -> None:
        while not done.is_set():
            owner = await read_owner(observer, bundle)
            if owner is None:
                gaps.append(clock.monotonic())
            seen.append(None if owner is None else owner.broker_id)
            await clock.sleep(0.001)

    poller = asyncio.get_running_loop().create_task(watch_record())
    reply = await cluster.request(UnloadRequest(bundle=str(bundle), destination=destination))
    done.set()
    await poller
    final = await read_owner(observer, bundle)
    assert reply.ok, reply.message
    assert gaps == []
    assert seen[0] == source and final is not None and final.broker_id == destination
    assert set(seen) <= {source, destination}
    answer = await cluster.lookup(topics[0])
    assert answer.broker_id == destination
    assert cluster.nodes[destination].served.bundle_of(topics[0]) == bundle
    assert cluster.nodes[source].served.bundle_of(topics[0]) is None
    await settle_and_check(cluster, observer, clock)
    await cluster.close()


async def test_graceful_stop_moves_bundles_before_leaving(clock: Clock) -> None:
    cluster, observer = await start_cluster(clock, 3)
    assert (await cluster.request(CreateNamespace(namespace="t/g", bundles=9))).ok
    topics = await create_topics(cluster, "t/g", 40)
    owners = await lookup_all(cluster, topics)
    leaving = next(o for o in sorted(set(owners.values())))
    bundles = {str(b) for b in cluster.nodes[leaving].ownership.owned()} - {
        str(cluster.nodes[leaving].heartbeat_bundle)
    }
    assert bundles
    snapshots: list[dict[str, tuple[str | None, int | None]]] = []

    original_close = cluster.nodes[leaving].store.close

    async def close_after_snapshot() -> None:
        snapshots.append(await ownership_records(observer))  # the moment before it leaves
        await original_close()

    cluster.nodes[leaving].store.close = close_after_snapshot  # type: ignore[method-assign]
    await cluster.stop_broker(leaving, graceful=True)
    (before_leaving,) = snapshots
    for bundle in bundles:
        assert bundle in before_leaving, f"{bundle} unowned when {leaving} left"
        assert before_leaving[bundle][0] != leaving
    await settle_and_check(cluster, observer, clock)
    await cluster.close()


async def test_the_last_broker_leaves_without_waiting_for_a_drain(clock: Clock) -> None:
    """No other broker can take its bundles: it closes them at once instead of holding its
    shutdown for brokerShutdownTimeoutMs (a minute, with Ctrl-C on the last broker)."""
    cluster, observer = await start_cluster(clock, 1)
    assert (await cluster.request(CreateNamespace(namespace="t/last", bundles=4))).ok
    await lookup_all(cluster, await create_topics(cluster, "t/last", 12))
    assert len(cluster.nodes[bid(0)].ownership.owned()) > 1  # its heartbeat and some bundles
    started = clock.monotonic()
    await cluster.stop_broker(bid(0), graceful=True)
    assert clock.monotonic() - started < 5.0
    assert await ownership_records(observer) == {}
    await cluster.close()


async def test_invariants_hold_through_a_rolling_restart(clock: Clock) -> None:
    cluster, observer = await start_cluster(clock, 3)
    assert (await cluster.request(CreateNamespace(namespace="t/roll", bundles=6))).ok
    topics = await create_topics(cluster, "t/roll", 30)
    await lookup_all(cluster, topics)
    for i in range(3):
        await cluster.stop_broker(bid(i), graceful=True)
        await settle_and_check(cluster, observer, clock, 2)
        await cluster.add_broker(broker(i))
        await settle_and_check(cluster, observer, clock, 2)
        owners = await lookup_all(cluster, topics)
        assert set(owners.values()) <= {n.broker_id for n in cluster.running()}
    await cluster.close()


async def test_cached_lookups_follow_unloads_and_splits(clock: Clock) -> None:
    cluster, observer = await start_cluster(clock, 2)
    assert (await cluster.request(CreateNamespace(namespace="t/fast", bundles=2))).ok
    topics = await create_topics(cluster, "t/fast", 10)
    await lookup_all(cluster, topics)
    node = cluster.running()[0]
    topic = topics[0]
    cached = node.lookups.cached_answer(topic)
    assert cached is not None and cached.kind is AnswerKind.CONNECT
    bundle = await node.lookups.bundle_of(topic)
    assert (await cluster.request(UnloadRequest(bundle=str(bundle)))).ok
    await clock.sleep(0.01)  # the ownership watch invalidates the cache
    assert node.lookups.cached_answer(topic) is None
    await lookup_all(cluster, topics)
    owner = node.lookups.cached_answer(topic)
    assert owner is not None
    split = await cluster.request(
        SplitRequest(bundle=str(bundle), algorithm="range_equally_divide")
    )
    assert split.ok
    await clock.sleep(0.01)
    after = await lookup_all(cluster, [topic])
    child = await node.lookups.bundle_of(topic)
    assert child != bundle and bundle.range.lower <= child.range.lower
    cached_after = node.lookups.cached_answer(topic)
    assert cached_after is not None and cached_after.broker_id == after[str(topic)]
    await settle_and_check(cluster, observer, clock)
    await cluster.close()


async def test_answers_of_gone_bundles_are_not_kept(clock: Clock) -> None:
    cluster, observer = await start_cluster(clock, 2)
    assert (await cluster.request(CreateNamespace(namespace="t/gone", bundles=4))).ok
    topics = await create_topics(cluster, "t/gone", 40)
    node = cluster.running()[0]
    await lookup_all(cluster, topics)
    assert all(node.lookups.cached_answer(topic) is not None for topic in topics)
    assert node.lookups.answers_kept == 4
    bundle = await node.lookups.bundle_of(topics[0])
    split = await cluster.request(
        SplitRequest(bundle=str(bundle), algorithm="range_equally_divide")
    )
    assert split.ok
    await settle_and_check(cluster, observer, clock)
    # the split parent's answer went with its ownership record
    assert node.lookups.answers_kept == 3
    await lookup_all(cluster, topics)
    assert all(node.lookups.cached_answer(topic) is not None for topic in topics)
    assert node.lookups.answers_kept == 5
    for each in (await node.bundles.bundles(topics[0].namespace)).bundles:
        assert (await cluster.request(UnloadRequest(bundle=str(each)))).ok
    await clock.sleep(0.01)
    assert node.lookups.answers_kept == 0
    await settle_and_check(cluster, observer, clock)
    await cluster.close()
