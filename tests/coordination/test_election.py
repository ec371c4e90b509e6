"""Leader election with epochs, on every backend."""

from __future__ import annotations

import pytest

from ballast.clock import Clock
from ballast.coordination.election import (
    LeaderElection,
    LeaderInfo,
    Leadership,
    NotLeaderError,
    read_leader,
)
from ballast.metadata import paths
from ballast.metadata.store import Check, ConnectionState, Create, MetadataStore, MultiOpError
from tests.support.harness import Harness
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


async def candidate(
    harness: Harness, clock: Clock, name: str
) -> tuple[LeaderElection, MetadataStore, list[Leadership | None]]:
    store = await harness.open()
    election = LeaderElection(
        store, LeaderInfo(broker_id=name, service_url=f"http://{name}"), clock
    )
    events: list[Leadership | None] = []
    election.add_listener(events.append)
    await election.start()
    return election, store, events


async def test_one_leader_then_handover_with_a_new_epoch(harness: Harness, clock: Clock) -> None:
    a, store_a, events_a = await candidate(harness, clock, "a:8080")
    await eventually(lambda: a.is_leader, clock, what="a elected")
    b, store_b, _ = await candidate(harness, clock, "b:8080")
    leader = await read_leader(store_b)
    assert leader is not None and leader.broker_id == "a:8080" and leader.epoch == 1
    assert not b.is_leader
    first = a.leadership
    assert first is not None and first.epoch == 1
    await a.stop()
    await eventually(lambda: b.is_leader, clock, what="b takes over")
    assert events_a == [first, None]
    second = b.leadership
    assert second is not None and second.epoch == 2
    assert (await read_leader(store_a)).epoch == 2  # type: ignore[union-attr]
    await b.stop()


async def test_expired_leader_resigns_and_its_writes_are_fenced(
    harness: Harness, clock: Clock
) -> None:
    a, store_a, events_a = await candidate(harness, clock, "a:8080")
    await eventually(lambda: a.is_leader, clock, what="a elected")
    b, store_b, _ = await candidate(harness, clock, "b:8080")
    assert a.leadership is not None
    written = await a.fenced_multi(a.leadership, [Create("/decisions", b"by a")])
    assert written[0] is not None
    old = a.leadership
    assert old is not None
    await harness.expire(store_a)
    await eventually(lambda: events_a[-1] is None, clock, what="a resigns")
    await eventually(lambda: b.is_leader or a.is_leader, clock, what="a new leader", timeout_s=15)
    new = b.leadership or a.leadership
    assert new is not None and new.epoch > old.epoch
    # A zombie still holding the old term's versions cannot write.
    await eventually(lambda: store_a.state is ConnectionState.CONNECTED, clock, what="reconnect")
    with pytest.raises(MultiOpError):
        await store_a.multi(
            [Check(paths.LEADER_EPOCH, old.epoch_version), Create("/decisions/zombie", b"")]
        )
    assert await store_b.exists("/decisions/zombie") is None
    if not a.is_leader:
        with pytest.raises(NotLeaderError):
            await a.fenced_multi(old, [Create("/decisions/stale", b"")])
    await a.stop()
    await b.stop()


async def test_suspended_leader_stops_acting_first(harness: Harness, clock: Clock) -> None:
    a, store_a, events_a = await candidate(harness, clock, "a:8080")
    await eventually(lambda: a.is_leader, clock, what="a elected")
    b, _, _ = await candidate(harness, clock, "b:8080")
    await harness.partition(store_a)
    await eventually(
        lambda: events_a[-1] is None, clock, what="a resigns on SUSPENDED", timeout_s=5
    )
    assert not a.is_leader
    await eventually(lambda: b.is_leader, clock, what="b elected after a expires", timeout_s=15)
    await harness.heal(store_a)
    await eventually(lambda: store_a.state is ConnectionState.CONNECTED, clock, what="reconnect")
    assert not a.is_leader  # b holds it; a campaigns again as a follower
    assert b.leadership is not None and b.leadership.epoch == 2
    await a.stop()
    await b.stop()


async def test_short_suspension_comes_back_with_a_new_epoch(harness: Harness, clock: Clock) -> None:
    a, store_a, _ = await candidate(harness, clock, "a:8080")
    await eventually(lambda: a.is_leader, clock, what="a elected")
    await harness.partition(store_a)
    await eventually(lambda: not a.is_leader, clock, what="a resigns", timeout_s=5)
    await harness.heal(store_a)
    # Its old record is still there under the same session: it removes it and runs again.
    await eventually(lambda: a.is_leader, clock, what="a re-elected")
    assert a.leadership is not None and a.leadership.epoch == 2
    await a.stop()


async def test_a_term_that_is_over_cannot_write_though_its_candidate_leads_again(
    harness: Harness, clock: Clock
) -> None:
    a, store_a, _ = await candidate(harness, clock, "a:8080")
    await eventually(lambda: a.is_leader, clock, what="a elected")
    first = a.leadership
    assert first is not None
    await harness.partition(store_a)
    await eventually(lambda: not a.is_leader, clock, what="a resigns", timeout_s=5)
    await harness.heal(store_a)
    await eventually(lambda: a.is_leader, clock, what="a re-elected")
    second = a.leadership
    assert second is not None and second.epoch == first.epoch + 1
    # the first term's controller, still finishing an event, is refused...
    with pytest.raises(NotLeaderError, match="the term of epoch 1 is over"):
        await a.fenced_multi(first, [Create("/stale-term-write", b"")])
    assert await store_a.exists("/stale-term-write") is None
    # ...without costing the second term its leadership
    assert a.is_leader and a.leadership == second
    assert (await a.fenced_multi(second, [Create("/current-term-write", b"")]))[0] is not None
    await a.stop()


async def test_a_persistent_leader_record_is_no_leader_and_is_removed(
    harness: Harness, clock: Clock
) -> None:
    """Every leader writes its record ephemeral; a persistent one (another cluster's, loaded
    from a dump with --keep-ephemeral) named a broker elsewhere, and requests were forwarded
    there, while no broker here could ever be elected."""
    store = await harness.open()
    stale = LeaderInfo(broker_id="elsewhere:8080", service_url="http://elsewhere:8080", epoch=7)
    await store.put(paths.LEADER, stale.to_json())
    assert await read_leader(store) is None
    a, _, _ = await candidate(harness, clock, "a:8080")
    await eventually(lambda: a.is_leader, clock, what="a elected over the stale record")
    leader = await read_leader(store)
    assert leader is not None and leader.broker_id == "a:8080"
    await a.stop()
