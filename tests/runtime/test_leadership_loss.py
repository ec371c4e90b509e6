"""A leader that loses its leadership stops at once: a request waiting on one of its moves is
answered, events queued behind a slow one are dropped instead of decided, and a controller
whose term ends while it rebuilds its image never starts (Kafka's controller resigns before
anything else; so must ours)."""

from __future__ import annotations

import asyncio
import re

from ballast.broker.leader_calls import to_leader
from ballast.broker.lookup import AnswerKind, LookupErrorKind
from ballast.clock import Clock
from ballast.controller.commands import TransferBundle, UnloadBundle
from ballast.controller.event_types import OwnershipChanged
from ballast.controller.requests import (
    AnyRequest,
    CreateNamespace,
    CreateTenant,
    RequestReply,
    SplitRequest,
    UnloadRequest,
    not_the_leader,
)
from ballast.metadata.chunking import ChunkingStore
from ballast.metadata.memory import MemoryMetadataStore
from ballast.metadata.store import MetadataStore
from ballast.model.naming import NamespaceName
from tests.runtime.test_scenarios import SESSION_S, broker, create_topics, start_cluster
from tests.support.invariants import ownership_records, settle_and_check
from tests.support.slow_reads import SlowReads, slow_cluster
from tests.support.transport_faults import delayed
from tests.support.waiting import eventually


def memory(store: MetadataStore) -> MemoryMetadataStore:
    inner = store.inner if isinstance(store, ChunkingStore) else store
    assert isinstance(inner, MemoryMetadataStore)
    return inner


async def test_a_request_waiting_on_a_move_is_answered_when_leadership_is_lost(
    clock: Clock,
) -> None:
    cluster, _ = await start_cluster(clock, 3)
    assert (await cluster.request(CreateNamespace(namespace="t/h", bundles=1))).ok
    topics = await create_topics(cluster, "t/h", 3)
    await cluster.lookup(topics[0])
    await clock.sleep(1.0)  # the owner has taken it
    leader = cluster.leader()
    assert leader is not None and leader.controller is not None
    bundle = await leader.lookups.bundle_of(topics[0])
    with delayed(cluster, clock, UnloadBundle, 2.0):
        unload = UnloadRequest(bundle=str(bundle))
        request = asyncio.ensure_future(leader.controller.request(unload))
        await clock.sleep(0.5)  # the unload is on its way to the owner
        memory(leader.store).partition()
        await clock.sleep(1.0)
        memory(leader.store).heal()
        await eventually(request.done, clock, timeout_s=5, what="an answer")
    reply = request.result()
    assert not reply.ok and reply.status == 503
    assert "leadership of epoch" in reply.message and "check and retry" in reply.message
    await cluster.close()


async def test_a_deposed_leader_decides_nothing_queued_behind_a_slow_event(
    clock: Clock,
) -> None:
    slow = SlowReads(clock, 0.05)
    cluster = await slow_cluster(clock, slow, [broker(i) for i in range(3)], SESSION_S)
    assert (await cluster.request(CreateTenant(tenant="t"))).ok
    assert (await cluster.request(CreateNamespace(namespace="t/p", bundles=16))).ok
    topics = await create_topics(cluster, "t/p", 40)
    leader = cluster.leader()
    assert leader is not None and leader.controller is not None
    unowned = await leader.lookups.bundle_of(topics[0])
    for topic in topics[1:]:  # every bundle owned but topics[0]'s
        if await leader.lookups.bundle_of(topic) != unowned:
            await cluster.lookup(topic)
    await clock.sleep(1.0)
    controller = leader.controller
    commands = {n.broker_id: n.commands for n in cluster.running() if n is not leader}
    slow.on = True
    controller.events.put(OwnershipChanged(NamespaceName.parse("t/p")))  # slow: 16 owners
    lookup = asyncio.ensure_future(leader.lookup(topics[0]))  # queued behind it
    await clock.sleep(0.1)
    decided = len(controller.decisions_log)
    controller.abandon()  # what losing the session does first
    answer = await lookup
    assert answer.kind is AnswerKind.ERROR and answer.error is LookupErrorKind.NOT_READY
    # The client looks it up again, on the same connection: the words are Pulsar's.
    assert answer.message == (
        f"Failed to acquire ownership for namespace bundle {unowned}: the leader changed; retry"
    )
    await clock.sleep(5.0)
    assert len(controller.decisions_log) == decided  # nothing decided after the loss
    assert {n.broker_id: n.commands for n in cluster.running() if n is not leader} == commands
    slow.on = False
    await cluster.close()


async def test_a_term_that_ends_while_its_image_is_rebuilt_never_starts(clock: Clock) -> None:
    slow = SlowReads(clock, 0.05)
    cluster = await slow_cluster(clock, slow, [broker(0)], SESSION_S)
    node = cluster.nodes[broker(0).broker_id]
    assert (await cluster.request(CreateTenant(tenant="t"))).ok
    for i in range(20):
        assert (await cluster.request(CreateNamespace(namespace=f"t/ns{i}", bundles=4))).ok
    slow.on = True
    first = node.controller
    memory(node.store).partition()  # a blip: resigns, then wins again on the same session
    await clock.sleep(0.01)
    memory(node.store).heal()
    await eventually(
        lambda: node.controller is not None and node.controller is not first,
        clock,
        timeout_s=30,
        what="a new term",
    )
    rebuilding = node.controller
    assert rebuilding is not None
    await clock.sleep(0.2)  # 20 namespaces read slowly: the image is still being rebuilt
    assert not rebuilding.running
    memory(node.store).partition()  # the term ends mid-rebuild
    await clock.sleep(0.01)
    memory(node.store).heal()
    await clock.sleep(30.0)
    assert not rebuilding.running
    current = node.controller
    assert current is not None and current is not rebuilding and current.running
    assert current.epoch > rebuilding.epoch
    slow.on = False
    await cluster.close()


async def test_a_bundle_split_while_its_owner_was_away_is_not_claimed_again(
    clock: Clock,
) -> None:
    cluster, observer = await start_cluster(
        clock, 3, "loadBalancerAutoBundleSplitEnabled=false", "loadBalancerSheddingEnabled=false"
    )
    assert (await cluster.request(CreateNamespace(namespace="t/s", bundles=1))).ok
    topics = await create_topics(cluster, "t/s", 10)
    leader = cluster.leader()
    assert leader is not None
    bundle = await leader.lookups.bundle_of(topics[0])
    answer = await cluster.lookup(topics[0])
    assert answer.broker_id is not None
    await clock.sleep(1.0)
    if answer.broker_id == leader.broker_id:  # a follower must hold it
        follower = next(n for n in cluster.running() if n is not leader)
        unloaded = UnloadRequest(bundle=str(bundle), destination=follower.broker_id)
        assert (await cluster.request(unloaded)).ok
        await clock.sleep(1.0)
    away = next(n for n in cluster.running() if bundle in n.ownership.owned())
    assert away is not leader
    memory(away.store).partition()
    await clock.sleep(SESSION_S + 4)  # its session expires; the bundle is placed elsewhere
    await cluster.lookup(topics[0], via=leader.broker_id)
    await clock.sleep(1.0)
    assert (await cluster.request(SplitRequest(bundle=str(bundle)))).ok
    memory(away.store).heal()  # a new session: it claims again what it held
    await clock.sleep(5.0)
    records = await ownership_records(observer)
    assert str(bundle) not in records  # the parent record did not come back
    assert bundle not in away.ownership.owned()
    heartbeat = [b for b in away.ownership.owned() if b.namespace.is_heartbeat]
    assert heartbeat  # its own heartbeat bundle it did claim again
    await settle_and_check(cluster, observer, clock)
    await cluster.close()


async def test_a_report_written_after_a_session_loss_does_not_make_a_lasting_record(
    clock: Clock,
) -> None:
    cluster, observer = await start_cluster(clock, 3)
    leader = cluster.leader()
    node = next(n for n in cluster.running() if n is not leader)
    path = f"/loadbalance/brokers/{node.broker_id}"
    cluster.stores.server(cluster.store_url).expire_session(node.store.session_id)
    await node.reporter.report(force=True)  # the reporter's tick comes before the repair
    await clock.sleep(5.0)
    record = await observer.get(path)  # registered again, under the new session
    assert record is not None and record.stat.ephemeral_owner == node.store.session_id
    await cluster.crash_broker(node.broker_id)
    await clock.sleep(SESSION_S * 2)
    assert await observer.get(path) is None  # it went with the session, as a crash should
    await cluster.close()


async def test_a_transfer_whose_destination_leaves_ends_and_the_image_follows_the_store(
    clock: Clock,
) -> None:
    cluster, observer = await start_cluster(clock, 3)
    assert (await cluster.request(CreateNamespace(namespace="t/x", bundles=2))).ok
    topics = await create_topics(cluster, "t/x", 6)
    answer = await cluster.lookup(topics[0])
    source = answer.broker_id
    await clock.sleep(1.0)
    leader = cluster.leader()
    assert leader is not None and leader.controller is not None
    bundle = await leader.lookups.bundle_of(topics[0])
    destination = next(
        n.broker_id for n in cluster.running() if n.broker_id not in (source, leader.broker_id)
    )
    moving = UnloadRequest(bundle=str(bundle), destination=destination)
    with delayed(cluster, clock, TransferBundle, SESSION_S * 2):  # the destination leaves
        request = asyncio.ensure_future(cluster.request(moving))
        await clock.sleep(0.5)
        await cluster.crash_broker(destination)
        await eventually(request.done, clock, timeout_s=SESSION_S * 4, what="the move's end")
    reply = request.result()
    assert not reply.ok and reply.status == 503  # the cluster changed under it: retry
    assert f"{destination} left the cluster" in reply.message
    # The admin is told where the bundle went: its source let it go when the move failed.
    assert re.search(r"; it (is owned by \S+|has no owner now, and the next lookup)", reply.message)
    controller = leader.controller
    assert controller.channel.brokers() == sorted(
        n.broker_id for n in cluster.running()
    )  # no lane re-made for the broker that left
    await settle_and_check(cluster, observer, clock)  # the image agrees with the store
    await cluster.close()


async def test_a_broker_cut_off_past_its_session_stops_serving_until_it_owns_again(
    clock: Clock,
) -> None:
    """Cut off from the store, a broker served its bundles' clients until it could reach the
    store again, though the others had taken them over at the session timeout: two brokers
    served one bundle. It stops at the timeout now, and serves what it makes its own again."""
    cluster, _ = await start_cluster(clock, 3)
    assert (await cluster.request(CreateNamespace(namespace="t/cut", bundles=4))).ok
    topics = await create_topics(cluster, "t/cut", 8)
    for topic in topics:
        await cluster.lookup(topic)
    await clock.sleep(1.0)
    away = next(
        node
        for node in cluster.running()
        if node is not cluster.leader() and any(node.served.bundle_of(t) for t in topics)
    )
    held = [t for t in topics if away.served.bundle_of(t) is not None]
    memory(away.store).partition()
    await clock.sleep(SESSION_S / 2)
    assert all(away.served.bundle_of(t) is not None for t in held)  # a blip: clients stay
    await eventually(
        lambda: all(away.served.bundle_of(t) is None for t in held),
        clock,
        what="the cut-off broker letting its bundles go",
        timeout_s=SESSION_S,
    )
    assert memory(away.store).state.value == "lost"  # before it could reach the store again
    memory(away.store).heal()
    for topic in held:  # every bundle is served again, by one broker
        answer = await cluster.lookup(topic)
        assert answer.kind is AnswerKind.CONNECT and answer.broker_id is not None
        await eventually(
            lambda t=topic, owner=answer.broker_id: (
                cluster.nodes[owner].served.bundle_of(t) is not None
            ),
            clock,
            what=f"{topic} served by its owner",
            timeout_s=SESSION_S,
        )
        servers = [n for n in cluster.running() if n.served.bundle_of(topic) is not None]
        assert [n.broker_id for n in servers] == [answer.broker_id]
    await cluster.close()


async def test_a_request_forwarded_to_a_leader_that_stops_answering_goes_to_the_next_one(
    clock: Clock,
) -> None:
    """A broker forwarding an admin change to a leader that went silent (paused) waited out
    the transport's timeout, though another broker was elected meanwhile. It follows the
    leadership now, and waits for the new leader to start (its controller starts a moment
    after its election, and until then it answers "not the leader")."""
    cluster, observer = await start_cluster(clock, 3)
    old = cluster.leader()
    assert old is not None
    # The last to register, so the last to campaign: another follower is elected, and the
    # request is forwarded to it.
    via = [n for n in cluster.running() if n is not old][-1]
    call_leader = cluster.in_process.call_leader
    starting = [2]  # the new leader's first answers: it has not started yet

    async def silent_old_leader(leader_id: str, request: AnyRequest) -> RequestReply:
        if leader_id == old.broker_id:
            await asyncio.get_running_loop().create_future()  # never answers
        if starting[0] > 0:
            starting[0] -= 1
            return not_the_leader(leader_id)
        return await call_leader(leader_id, request)

    cluster.in_process.call_leader = silent_old_leader  # type: ignore[method-assign]
    request = asyncio.ensure_future(to_leader(via, CreateNamespace(namespace="t/on", bundles=2)))
    await clock.sleep(1.0)
    assert not request.done()  # still with the silent leader
    await cluster.crash_broker(old.broker_id)
    await eventually(request.done, clock, timeout_s=SESSION_S * 4, what="an answer")
    reply = request.result()
    assert reply.ok, reply.message
    assert starting == [0]  # it was told "not the leader", and asked again
    new = cluster.leader()
    assert new is not None and new is not old and new is not via
    assert NamespaceName.parse("t/on") in new.controller.image.namespaces  # type: ignore[union-attr]
    cluster.in_process.call_leader = call_leader  # type: ignore[method-assign]
    await settle_and_check(cluster, observer, clock)
    await cluster.close()


async def test_a_request_to_a_killed_leader_waits_for_the_next_one(clock: Clock) -> None:
    """A leader killed keeps its record until its session expires: a change forwarded to it
    meanwhile was answered 503 at once ("cannot connect"), though nothing had been sent and
    the next leader would take it a few seconds later."""
    cluster, observer = await start_cluster(clock, 3)
    old = cluster.leader()
    assert old is not None
    via = [n for n in cluster.running() if n is not old][-1]
    await cluster.crash_broker(old.broker_id)
    started = clock.monotonic()
    reply = await to_leader(via, CreateNamespace(namespace="t/after", bundles=2))
    assert reply.ok, reply.message
    assert clock.monotonic() - started >= SESSION_S / 2  # it waited out the old session
    new = cluster.leader()
    assert new is not None and new is not old
    assert NamespaceName.parse("t/after") in new.controller.image.namespaces  # type: ignore[union-attr]
    await settle_and_check(cluster, observer, clock)
    await cluster.close()


async def test_a_request_to_a_killed_leader_waits_out_the_election_after_its_session(
    clock: Clock,
) -> None:
    """On ZooKeeper the next leader is elected a moment after the killed one's record
    expires. The wait for a leader to start was counted from the first failed connection, a
    whole session earlier, so the request gave up ("no leader is elected yet") as the next
    leader was being elected; so did a stopping broker's drain."""
    slow = SlowReads(clock, 0.3)  # an election's reads take a round trip, as on ZooKeeper
    cluster = await slow_cluster(clock, slow, [broker(i) for i in range(3)], SESSION_S)
    assert (await cluster.request(CreateTenant(tenant="t"))).ok
    old = cluster.leader()
    assert old is not None
    via = [n for n in cluster.running() if n is not old][-1]
    slow.on = True
    await cluster.crash_broker(old.broker_id)
    reply = await to_leader(via, CreateNamespace(namespace="t/later", bundles=2))
    assert reply.ok, reply.message
    new = cluster.leader()
    assert new is not None and new is not old
    assert NamespaceName.parse("t/later") in new.controller.image.namespaces  # type: ignore[union-attr]
    slow.on = False
    await cluster.close()


async def test_a_lookup_with_no_leader_to_place_its_bundle_answers_in_pulsars_words(
    clock: Clock,
) -> None:
    """Between leaders, a lookup cannot get a bundle an owner. Pulsar's C++ client closed the
    whole connection on the words it had (every producer and consumer on it); on Pulsar's own
    words for a failed acquisition it retries the lookup on the same connection."""
    cluster, _ = await start_cluster(clock, 2)
    assert (await cluster.request(CreateNamespace(namespace="t/between", bundles=1))).ok
    [topic] = await create_topics(cluster, "t/between", 1)
    follower = next(n for n in cluster.running() if n.controller is None)
    bundle = await follower.lookups.bundle_of(topic)

    async def no_leader() -> str | None:
        return None

    async def unregistered_leader() -> str | None:
        return "gone:8080"

    expected = f"Failed to acquire ownership for namespace bundle {bundle}: "

    async def itself() -> str | None:  # a record of a session it gave up, not yet expired
        return follower.broker_id

    for leader_id, why in (
        (no_leader, "no leader is elected yet to place it"),
        (unregistered_leader, "the leader gone:8080 is not registered yet"),
        (itself, "the leader's record names this broker, which is not leading now"),
    ):
        follower.lookups._leader_id = leader_id  # type: ignore[method-assign]
        answer = await follower.lookup(topic)
        assert answer.kind is AnswerKind.ERROR and answer.error is LookupErrorKind.NOT_READY
        assert answer.message == expected + why + "; retry"
    await cluster.close()
