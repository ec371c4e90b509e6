"""Broker registration and the membership watch, on every backend."""

from __future__ import annotations

import pytest

from ballast.clock import Clock
from ballast.coordination.registry import (
    BrokerRegistration,
    BrokerRegistry,
    MembershipChange,
    RegistrationError,
)
from ballast.metadata.store import ConnectionState
from tests.support.harness import Harness
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


def events_for(changes: list[MembershipChange], broker: str) -> list[str]:
    seen: list[str] = []
    for change in changes:
        for kind in ("joined", "left", "bounced", "updated"):
            if broker in getattr(change, kind):
                seen.append(kind)
    return seen


async def test_join_update_leave(harness: Harness, clock: Clock) -> None:
    watcher = await harness.open()
    registry = BrokerRegistry(watcher)
    await registry.start()
    changes: list[MembershipChange] = []
    registry.add_listener(changes.append)
    broker_store = await harness.open()
    me = BrokerRegistration(broker_store, "b1:8080", clock)
    await me.register(b'{"webServiceUrl":"http://b1:8080"}')
    await eventually(lambda: "b1:8080" in registry.brokers(), clock, what="join seen")
    entry = registry.brokers()["b1:8080"]
    assert entry.session == broker_store.session_id
    assert registry.entry("b1:8080") == entry and registry.entry("b9:8080") is None
    await me.update(b'{"webServiceUrl":"http://b1:8080","numBundles":3}')
    await eventually(
        lambda: b"numBundles" in registry.brokers()["b1:8080"].data, clock, what="update"
    )
    await me.unregister()
    await eventually(lambda: "b1:8080" not in registry.brokers(), clock, what="leave seen")
    assert registry.entry("b1:8080") is None
    assert events_for(changes, "b1:8080") == ["joined", "updated", "left"]
    await registry.stop()


async def test_crashed_broker_leaves_after_its_session(harness: Harness, clock: Clock) -> None:
    registry = BrokerRegistry(await harness.open())
    await registry.start()
    store = await harness.open()
    await BrokerRegistration(store, "b2:8080", clock).register(b"{}")
    await eventually(lambda: "b2:8080" in registry.brokers(), clock, what="joined")
    await harness.crash(store)
    await eventually(lambda: "b2:8080" not in registry.brokers(), clock, what="left", timeout_s=15)
    await registry.stop()


async def test_bounce_is_reported_and_registration_repaired(harness: Harness, clock: Clock) -> None:
    registry = BrokerRegistry(await harness.open())
    await registry.start()
    changes: list[MembershipChange] = []
    registry.add_listener(changes.append)
    store = await harness.open()
    me = BrokerRegistration(store, "b3:8080", clock)
    await me.register(b"{}")
    await eventually(lambda: "b3:8080" in registry.brokers(), clock, what="joined")
    first_session = registry.brokers()["b3:8080"].session
    await harness.expire(store)
    # The broker re-creates its record under its new session by itself.
    await eventually(
        lambda: (
            "b3:8080" in registry.brokers()
            and registry.brokers()["b3:8080"].session not in (None, first_session)
        ),
        clock,
        what="registered again",
        timeout_s=15,
    )
    assert store.state is ConnectionState.CONNECTED
    seen = events_for(changes, "b3:8080")
    assert seen in (["joined", "bounced"], ["joined", "left", "joined"])
    await registry.stop()


async def test_an_id_held_by_a_live_broker_cannot_be_taken(harness: Harness, clock: Clock) -> None:
    first = await harness.open()
    await BrokerRegistration(first, "dup:8080", clock).register(b"{}")
    second = await harness.open()
    taken = "another live session: another broker advertises the same address and port"
    with pytest.raises(RegistrationError, match=taken):
        await BrokerRegistration(second, "dup:8080", clock).register(b"{}")


async def test_a_restarted_broker_waits_out_its_old_session(harness: Harness, clock: Clock) -> None:
    old = await harness.open()
    await BrokerRegistration(old, "again:8080", clock).register(b"old")
    await harness.crash(old)  # kill -9: the record lingers until the session expires
    new = await harness.open()
    await BrokerRegistration(new, "again:8080", clock).register(b"new")
    record = await new.get("/loadbalance/brokers/again:8080")
    assert record is not None and record.value == b"new"
    assert record.stat.ephemeral_owner == new.session_id


async def test_an_update_whose_answer_was_lost_does_not_stop_later_ones(
    harness: Harness, clock: Clock
) -> None:
    """A write applied by ZooKeeper after the client gave up on it (a stalled server) moved
    the version on within the same session: every later update failed with BadVersionError
    and the stored report froze."""
    store = await harness.open()
    me = BrokerRegistration(store, "lost:8080", clock)
    await me.register(b"v1")
    path = "/loadbalance/brokers/lost:8080"
    record = await store.get(path)
    assert record is not None
    await store.put(path, b"v2", record.stat.version)  # the write whose answer never came
    await me.update(b"v3")
    await me.update(b"v4")
    record = await store.get(path)
    assert record is not None and record.value == b"v4"
    assert record.stat.ephemeral_owner == store.session_id
