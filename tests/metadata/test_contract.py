"""The MetadataStore contract, run against every backend (memory, sqlite, a real ZooKeeper).

Memory and sqlite run on virtual time; ZooKeeper on real time with short sessions (2 s) so
expiry takes a couple of seconds."""

from __future__ import annotations

import os
import random
from collections.abc import Awaitable, Callable

import pytest

from ballast.clock import Clock
from ballast.metadata.store import (
    BadVersionError,
    Check,
    ConnectionLossError,
    ConnectionState,
    Create,
    Delete,
    EventType,
    InvalidPathError,
    MetadataStore,
    MultiOpError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    Notification,
    SetValue,
    StoreClosedError,
)
from ballast.metadata.values import COMPRESSED, MANIFEST
from ballast.model.loaddata import LocalBrokerData, NamespaceBundleStats, SystemResourceUsage
from tests.support.harness import Harness
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


def notes(log: list[Notification]) -> list[tuple[str, str]]:
    return [(n.type.value, n.path) for n in log]


def squeezed(items: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Consecutive duplicates dropped (a store may coalesce repeated notifications)."""
    result: list[tuple[str, str]] = []
    for item in items:
        if not result or result[-1] != item:
            result.append(item)
    return result


# -- reads and writes ---------------------------------------------------------------------------


async def test_missing_records(harness: Harness) -> None:
    store = await harness.open()
    assert await store.get("/nope") is None
    assert await store.exists("/nope") is None
    assert await store.children("/nope") == []


async def test_put_creates_then_overwrites(harness: Harness) -> None:
    store = await harness.open()
    first = await store.put("/a/b/c", b"one")
    assert first.version == 0 and not first.is_ephemeral
    assert first.created_ms <= first.modified_ms
    record = await store.get("/a/b/c")
    assert record is not None and record.value == b"one" and record.stat.version == 0
    second = await store.put("/a/b/c", b"two")
    assert second.version == 1
    assert (await store.get("/a/b/c")).value == b"two"  # type: ignore[union-attr]
    assert await store.children("/a") == ["b"]  # parents were created


async def test_expected_version_rules(harness: Harness) -> None:
    store = await harness.open()
    await store.put("/v", b"0", -1)
    with pytest.raises(NodeExistsError):
        await store.put("/v", b"x", -1)
    with pytest.raises(BadVersionError):
        await store.put("/v", b"x", 5)
    with pytest.raises(NoNodeError):
        await store.put("/missing", b"x", 0)
    stat = await store.put("/v", b"1", 0)
    assert stat.version == 1
    with pytest.raises(BadVersionError):
        await store.put("/v", b"2", 0)  # a stale writer loses
    assert (await store.get("/v")).value == b"1"  # type: ignore[union-attr]


async def test_compare_and_set_admits_one_of_two_writers(harness: Harness) -> None:
    a, b = await harness.open(), await harness.open()
    await a.put("/counter", b"0")
    version = (await a.exists("/counter")).version  # type: ignore[union-attr]
    await a.put("/counter", b"a", version)
    with pytest.raises(BadVersionError):
        await b.put("/counter", b"b", version)
    assert (await b.get("/counter")).value == b"a"  # type: ignore[union-attr]


async def test_children_are_sorted_names(harness: Harness) -> None:
    store = await harness.open()
    for name in ["zeta", "alpha", "mid", "0x40000000_0x80000000"]:
        await store.put(f"/kids/{name}", b"")
    assert await store.children("/kids") == sorted(
        ["zeta", "alpha", "mid", "0x40000000_0x80000000"]
    )
    assert await store.children("/kids/alpha") == []


async def test_delete_rules(harness: Harness) -> None:
    store = await harness.open()
    with pytest.raises(NoNodeError):
        await store.delete("/d")
    await store.put("/d/child", b"")
    with pytest.raises(NotEmptyError):
        await store.delete("/d")
    with pytest.raises(BadVersionError):
        await store.delete("/d/child", 3)
    await store.delete("/d/child", 0)
    await store.delete("/d")
    assert await store.exists("/d") is None
    await store.put("/tree/a/b", b"")
    await store.put("/tree/c", b"")
    await store.delete_recursive("/tree")
    assert await store.exists("/tree") is None


async def test_ensure_makes_a_parent_and_keeps_what_is_there(harness: Harness) -> None:
    store = await harness.open()
    await store.ensure("/e/f/g")
    assert (await store.get("/e/f/g")) is not None and await store.children("/e") == ["f"]
    await store.put("/e/f/g", b"kept")
    await store.ensure("/e/f/g")  # a second time: nothing changes
    record = await store.get("/e/f/g")
    assert record is not None and record.value == b"kept" and record.stat.version == 1


@pytest.mark.parametrize(
    "path", ["", "relative", "/trailing/", "//double", "/a//b", "/a/./b", "/a/../b", "/bad\x00"]
)
async def test_bad_paths_are_rejected_clearly(harness: Harness, path: str) -> None:
    store = await harness.open()
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: store.get(path),
        lambda: store.exists(path),
        lambda: store.children(path),
        lambda: store.put(path, b""),
        lambda: store.delete(path),
        lambda: store.multi([Create(path, b"")]),
    ]
    for call in calls:
        with pytest.raises(InvalidPathError) as caught:
            await call()
        assert "invalid path" in str(caught.value)
    with pytest.raises(InvalidPathError):
        await store.watch(path, lambda _: None)


async def test_values_are_returned_byte_for_byte(harness: Harness) -> None:
    store = await harness.open()
    odd = COMPRESSED + b"not really compressed"
    fake = MANIFEST + b"{}"
    await store.put("/fake", fake)
    assert (await store.get("/fake")).value == fake  # type: ignore[union-attr]
    await store.put("/odd", odd)
    assert (await store.get("/odd")).value == odd  # type: ignore[union-attr]
    empty = await store.put("/empty", b"")
    assert empty.version == 0 and (await store.get("/empty")).value == b""  # type: ignore[union-attr]


async def test_a_load_report_with_10000_bundles_fits(harness: Harness) -> None:
    rng = random.Random(7)
    stats = {
        f"tenant/namespace/0x{i * 400000:08x}_0x{(i + 1) * 400000:08x}": NamespaceBundleStats(
            msg_rate_in=rng.uniform(0, 5000),
            msg_throughput_in=rng.uniform(0, 5e6),
            msg_rate_out=rng.uniform(0, 5000),
            msg_throughput_out=rng.uniform(0, 5e6),
            consumer_count=rng.randrange(100),
            producer_count=rng.randrange(100),
            topics=rng.randrange(1, 1000),
        )
        for i in range(10_000)
    }
    report = LocalBrokerData(web_service_url="http://b1:8080").updated(SystemResourceUsage(), stats)
    raw = report.to_json()
    assert len(raw) > 1_048_576  # bigger than ZooKeeper's default packet limit as plain JSON
    store = await harness.open()
    await store.put("/loadbalance/brokers/b1:8080", raw, ephemeral=True)
    record = await store.get("/loadbalance/brokers/b1:8080")
    assert record is not None and record.value == raw
    assert LocalBrokerData.from_json(record.value) == report


async def test_incompressible_values_larger_than_a_record_round_trip(harness: Harness) -> None:
    store, other = await harness.open(), await harness.open()
    noise = os.urandom(2_500_000)
    stat = await store.put("/huge", noise)
    record = await other.get("/huge")
    assert record is not None and record.value == noise and record.stat == stat
    replacement = os.urandom(1_500_000)
    await store.put("/huge", replacement, stat.version)
    assert (await other.get("/huge")).value == replacement  # type: ignore[union-attr]
    with pytest.raises(BadVersionError):
        await store.put("/huge", noise, stat.version)  # CAS still guards large values
    assert (await other.get("/huge")).value == replacement  # type: ignore[union-attr]
    await store.delete("/huge")
    assert await other.get("/huge") is None
    assert await other.children("/ballast-chunks") == []  # no chunks left behind
    assert "ballast-chunks" not in await other.children("/")


async def test_large_ephemeral_values_vanish_with_the_session(
    harness: Harness, clock: Clock
) -> None:
    owner, other = await harness.open(), await harness.open()
    noise = os.urandom(1_200_000)
    await owner.put("/big-lease", noise, ephemeral=True)
    assert (await other.get("/big-lease")).value == noise  # type: ignore[union-attr]
    await owner.close()
    await eventually(lambda: _gone(other, "/big-lease"), clock, what="ephemeral removed")
    assert await other.get("/big-lease") is None


# -- ephemeral records and sessions -------------------------------------------------------------


async def test_ephemeral_records_belong_to_the_session(harness: Harness, clock: Clock) -> None:
    owner, other = await harness.open(), await harness.open()
    stat = await owner.put("/eph/lock", b"mine", ephemeral=True)
    assert stat.ephemeral_owner == owner.session_id
    seen = await other.get("/eph/lock")
    assert seen is not None and seen.stat.ephemeral_owner == owner.session_id
    with pytest.raises(InvalidPathError):
        await owner.put("/eph/lock/child", b"")
    await owner.close()
    await eventually(lambda: _gone(other, "/eph/lock"), clock, what="ephemeral removed on close")


async def _gone(store: MetadataStore, path: str) -> bool:
    return await store.exists(path) is None


async def test_another_session_may_delete_an_ephemeral_record(harness: Harness) -> None:
    owner, other = await harness.open(), await harness.open()
    await owner.put("/taken", b"", ephemeral=True)
    version = (await other.exists("/taken")).version  # type: ignore[union-attr]
    await other.multi([Delete("/taken", version), Create("/taken", b"now mine", ephemeral=True)])
    record = await owner.get("/taken")
    assert record is not None and record.stat.ephemeral_owner == other.session_id


async def test_expiry_removes_ephemerals_and_reconnects(harness: Harness, clock: Clock) -> None:
    store, observer = await harness.open(), await harness.open()
    states: list[ConnectionState] = []
    store.add_state_listener(states.append)
    old_session = store.session_id
    await store.put("/members/me", b"", ephemeral=True)
    await store.put("/members/data", b"persistent")
    await harness.expire(store)
    await eventually(lambda: _gone(observer, "/members/me"), clock, what="ephemeral expired")
    await eventually(
        lambda: ConnectionState.LOST in states and store.state is ConnectionState.CONNECTED,
        clock,
        what="LOST then CONNECTED",
    )
    assert store.session_id != old_session
    assert await store.exists("/members/data") is not None
    await store.put("/members/me", b"again", ephemeral=True)  # the new session works


async def test_short_partition_keeps_the_session(harness: Harness, clock: Clock) -> None:
    store, observer = await harness.open(), await harness.open()
    states: list[ConnectionState] = []
    store.add_state_listener(states.append)
    await store.put("/p/me", b"", ephemeral=True)
    session = store.session_id
    await harness.partition(store)
    await eventually(
        lambda: store.state is ConnectionState.SUSPENDED, clock, what="SUSPENDED", timeout_s=5
    )
    with pytest.raises(ConnectionLossError):
        await store.get("/p/me")
    await harness.heal(store)
    await eventually(lambda: store.state is ConnectionState.CONNECTED, clock, what="reconnect")
    assert store.session_id == session
    assert ConnectionState.LOST not in states
    assert await observer.exists("/p/me") is not None


async def test_long_partition_expires_the_session(harness: Harness, clock: Clock) -> None:
    store, observer = await harness.open(), await harness.open()
    states: list[ConnectionState] = []
    store.add_state_listener(states.append)
    await store.put("/q/me", b"", ephemeral=True)
    await harness.partition(store)
    await eventually(lambda: _gone(observer, "/q/me"), clock, what="expiry", timeout_s=15)
    # Still cut off, the client says so itself once its session timeout has passed: it must
    # not go on as the owner of what its session held (kazoo would say LOST only on reconnect).
    await eventually(
        lambda: store.state is ConnectionState.LOST, clock, what="LOST while cut off", timeout_s=10
    )
    await harness.heal(store)
    await eventually(
        lambda: ConnectionState.LOST in states and store.state is ConnectionState.CONNECTED,
        clock,
        what="LOST then CONNECTED",
    )
    assert states[0] is ConnectionState.SUSPENDED


async def test_crashed_client_ephemerals_vanish_after_timeout(
    harness: Harness, clock: Clock
) -> None:
    store, observer = await harness.open(), await harness.open()
    await store.put("/c/me", b"", ephemeral=True)
    start = clock.monotonic()
    await harness.crash(store)
    assert await observer.exists("/c/me") is not None
    await eventually(lambda: _gone(observer, "/c/me"), clock, what="crash expiry", timeout_s=15)
    assert clock.monotonic() - start >= store.session_timeout_s * 0.9


async def test_closed_store_refuses_work(harness: Harness) -> None:
    store = await harness.open()
    await store.close()
    await store.close()  # idempotent
    with pytest.raises(StoreClosedError):
        await store.get("/x")


# -- watches ------------------------------------------------------------------------------------


async def test_watch_reports_create_modify_delete(harness: Harness, clock: Clock) -> None:
    writer, reader = await harness.open(), await harness.open()
    log: list[Notification] = []
    await reader.watch("/w/node", log.append)
    await writer.put("/w/node", b"1")
    await eventually(lambda: len(log) >= 1, clock, what="created")
    await writer.put("/w/node", b"2")
    await eventually(lambda: len(log) >= 2, clock, what="modified")
    await writer.delete("/w/node")
    await eventually(lambda: len(log) >= 3, clock, what="deleted")
    assert notes(log) == [("created", "/w/node"), ("modified", "/w/node"), ("deleted", "/w/node")]


async def test_watch_reports_children(harness: Harness, clock: Clock) -> None:
    writer, reader = await harness.open(), await harness.open()
    await writer.put("/parent", b"")
    log: list[Notification] = []
    await reader.watch("/parent", log.append)
    await writer.put("/parent/a", b"", ephemeral=True)
    await eventually(lambda: len(log) >= 1, clock, what="child added")
    await writer.put("/parent/a", b"changed")  # a child's data is not the parent's business
    await writer.close()  # the ephemeral child goes
    await eventually(lambda: len(log) >= 2, clock, what="child removed")
    assert set(notes(log)) == {("children-changed", "/parent")}
    assert await reader.children("/parent") == []


async def test_notifications_keep_the_order_of_changes(harness: Harness, clock: Clock) -> None:
    writer, reader = await harness.open(), await harness.open()
    log: list[Notification] = []
    for path in ("/o/a", "/o/b", "/o/c"):
        await reader.watch(path, log.append)
    sequence = ["/o/a", "/o/b", "/o/c", "/o/b", "/o/a"]
    for step, path in enumerate(sequence):
        await writer.put(path, str(step).encode())
        await eventually(lambda n=step: len(log) > n, clock, what=f"notification {step}")
    assert [n.path for n in log] == sequence
    assert [n.type for n in log] == [EventType.CREATED] * 3 + [EventType.MODIFIED] * 2


async def test_burst_of_changes_ends_with_a_notification(harness: Harness, clock: Clock) -> None:
    writer, reader = await harness.open(), await harness.open()
    log: list[Notification] = []
    await reader.watch("/burst", log.append)
    for i in range(20):
        await writer.put("/burst", str(i).encode())
    # The burst may be reported as one CREATED or as CREATED then MODIFIED: never less.
    await eventually(lambda: bool(log), clock, what="a notification")
    squeezed_log = squeezed(notes(log))
    assert squeezed_log[0] == ("created", "/burst")
    assert set(squeezed_log[1:]) <= {("modified", "/burst")}
    assert (await reader.get("/burst")).value == b"19"  # type: ignore[union-attr]
    # After the burst the watch is still armed: a later change is reported.
    seen = len(log)
    await writer.delete("/burst")
    await eventually(lambda: len(log) > seen, clock, what="notification after the burst")
    assert log[-1].type is EventType.DELETED


async def test_cancelled_watch_is_silent(harness: Harness, clock: Clock) -> None:
    writer, reader = await harness.open(), await harness.open()
    log: list[Notification] = []
    handle = await reader.watch("/quiet", log.append)
    marker: list[Notification] = []
    await reader.watch("/marker", marker.append)
    handle.cancel()
    await writer.put("/quiet", b"")
    await writer.put("/marker", b"")
    await eventually(lambda: bool(marker), clock, what="marker notification")
    assert log == []


async def test_watch_reports_changes_missed_while_away(harness: Harness, clock: Clock) -> None:
    writer, reader = await harness.open(), await harness.open()
    await writer.put("/away", b"before")
    log: list[Notification] = []
    await reader.watch("/away", log.append)
    await harness.partition(reader)
    await eventually(lambda: reader.state is ConnectionState.SUSPENDED, clock, what="SUSPENDED")
    await writer.put("/away", b"during")
    await harness.heal(reader)
    await eventually(lambda: ("modified", "/away") in notes(log), clock, what="catch-up")


# -- multi --------------------------------------------------------------------------------------


async def test_multi_applies_all_or_nothing(harness: Harness) -> None:
    store = await harness.open()
    await store.put("/m/epoch", b"1")
    await store.put("/m/data", b"old")
    results = await store.multi(
        [Check("/m/epoch", 0), SetValue("/m/data", b"new"), Create("/m/log", b"x")]
    )
    assert results[0] is None
    assert results[1] is not None and results[1].version == 1
    assert results[2] is not None and results[2].version == 0
    assert await store.children("/m") == ["data", "epoch", "log"]
    with pytest.raises(MultiOpError) as caught:
        await store.multi(
            [SetValue("/m/data", b"stale"), Create("/m/other", b""), Check("/m/epoch", 7)]
        )
    assert caught.value.index == 2
    assert isinstance(caught.value.cause, BadVersionError)
    assert (await store.get("/m/data")).value == b"new"  # type: ignore[union-attr]
    assert await store.exists("/m/other") is None
    with pytest.raises(MultiOpError) as exists:
        await store.multi([Delete("/m/log"), Create("/m/data", b"")])
    assert exists.value.index == 1 and isinstance(exists.value.cause, NodeExistsError)
    assert await store.exists("/m/log") is not None
    assert await store.children("/m") == ["data", "epoch", "log"]  # no child of either attempt
    await store.multi([Delete("/m/log"), Create("/m/next", b"")])
    assert await store.children("/m") == ["data", "epoch", "next"]
    assert await store.multi([]) == []


async def test_multi_fences_a_stale_epoch(harness: Harness) -> None:
    leader_a, leader_b = await harness.open(), await harness.open()
    await leader_a.put("/fence/epoch", b"1")
    epoch_a = (await leader_a.exists("/fence/epoch")).version  # type: ignore[union-attr]
    await leader_b.put("/fence/epoch", b"2", epoch_a)  # a new leader bumps the epoch
    with pytest.raises(MultiOpError) as caught:
        await leader_a.multi([Check("/fence/epoch", epoch_a), Create("/fence/decision", b"a")])
    assert isinstance(caught.value.cause, BadVersionError)
    assert await leader_b.exists("/fence/decision") is None


async def test_multi_with_ephemeral_create(harness: Harness, clock: Clock) -> None:
    store, observer = await harness.open(), await harness.open()
    await store.put("/mx", b"")
    await store.multi([Create("/mx/lease", b"", ephemeral=True)])
    record = await observer.get("/mx/lease")
    assert record is not None and record.stat.ephemeral_owner == store.session_id
    await store.close()
    await eventually(lambda: _gone(observer, "/mx/lease"), clock, what="ephemeral removed")
