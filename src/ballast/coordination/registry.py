"""The broker registry: each broker keeps one ephemeral record under ``/loadbalance/brokers``
holding its lookup data and load report (Pulsar's LocalBrokerData); anyone can watch the
membership.

- :class:`BrokerRegistration` is a broker's own record: created at start (waiting out a stale
  record of an earlier incarnation, as Pulsar does), rewritten with each load report, and
  re-created after a session loss.
- :class:`BrokerRegistry` watches the records and reports joins, leaves and bounces — a bounced
  broker is one whose record now belongs to another session (it restarted, or lost and
  re-created its session) even if no one saw it missing.

Concurrency contract: one event loop; listeners run on it and must not block.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

from ballast.clock import Clock
from ballast.metadata import paths
from ballast.metadata.store import (
    BadVersionError,
    ConnectionLossError,
    ConnectionState,
    MetadataError,
    MetadataStore,
    NodeExistsError,
    NoNodeError,
    Notification,
    Record,
    SessionExpiredError,
    Stat,
    WatchHandle,
)
from ballast.tasks import cancel_and_wait, spawn

log = logging.getLogger(__name__)


class RegistrationError(MetadataError):
    def __init__(self, broker_id: str, reason: str) -> None:
        super().__init__(paths.broker(broker_id), f"cannot register broker {broker_id}: {reason}")


class BrokerRegistration:
    """One broker's own registration record."""

    def __init__(self, store: MetadataStore, broker_id: str, clock: Clock) -> None:
        self._store = store
        self.broker_id = broker_id
        self._clock = clock
        self._path = paths.broker(broker_id)
        self._data = b""
        self._registered = False
        self._draining = False
        self._version = -1
        self._session: int | None = None  # the session of our last registration
        self._repair: asyncio.Task[None] | None = None
        store.add_state_listener(self._on_state)

    @property
    def registered(self) -> bool:
        return self._registered

    async def register(self, data: bytes) -> None:
        """Create the record. Our own record of a session this process lost is replaced; one
        of another session with our id (a previous run of this broker, not yet expired) is
        waited out for up to one session timeout; after that the id is taken by a live
        broker and registration fails."""
        self._data = data
        wait_s = self._store.session_timeout_s * 1.5
        deadline = self._clock.monotonic() + wait_s
        told = False
        while True:
            try:
                stat = await self._store.put(self._path, data, -1, ephemeral=True)
                self._version, self._session = stat.version, stat.ephemeral_owner
                self._registered = True
                return
            except NodeExistsError:
                record = await self._store.get(self._path)
                rewritten = await self._rewrite_own(record, data)
                if rewritten is not None:
                    self._version = rewritten.version
                    self._registered = True
                    return
                if (
                    record is not None
                    and self._session is not None
                    and record.stat.ephemeral_owner == self._session
                ):
                    # Ours, of the session this process lost (a restarted ZooKeeper keeps
                    # it one more timeout): replaced now rather than waited out.
                    with contextlib.suppress(NoNodeError, BadVersionError):
                        await self._store.delete(self._path, record.stat.version)
                    continue
            if self._clock.monotonic() >= deadline:
                raise RegistrationError(
                    self.broker_id,
                    "the id is held by another live session: another broker advertises the "
                    "same address and port (give each its own advertisedAddress or "
                    "webServicePort)",
                )
            if not told:
                told = True
                log.warning(
                    "broker %s is registered by another session (this broker's previous run, "
                    "or another broker with the same id): waiting up to %.0f s for it to expire",
                    self.broker_id,
                    wait_s,
                )
            await self._clock.sleep(min(1.0, self._store.session_timeout_s / 4))

    async def update(self, data: bytes) -> None:
        """Rewrite the record (the broker's new load report) at the version this session
        wrote last. A record gone with the session is not made again here, where it would be
        persistent: the registration after the session loss writes the latest data."""
        self._data = data
        if not self._registered:
            return
        try:
            stat = await self._store.put(self._path, data, self._version)
        except NoNodeError:
            self._registered = False
            log.info("broker %s: registration gone with its session", self.broker_id)
            return
        except BadVersionError:
            # A write of ours whose answer was lost (ZooKeeper stalled past the client's
            # timeout, then applied it) moved the version on; the session survived, so no
            # re-registration corrects it. Kept, every later report failed on the old
            # version.
            rewritten = await self._rewrite_own(await self._store.get(self._path), data)
            if rewritten is None:
                raise
            stat = rewritten
        self._version = stat.version

    async def _rewrite_own(self, record: Record | None, data: bytes) -> Stat | None:
        """Write ``data`` over ``record`` at its version when it is this session's own (None
        when it is not: another session's, or gone)."""
        if record is None or record.stat.ephemeral_owner != self._store.session_id:
            return None
        return await self._store.put(self._path, data, record.stat.version)

    async def mark_draining(self) -> None:
        """Record that this broker is shutting down (ephemeral, bound to this session), so
        that every leader, one elected while it drains included, places nothing on it. A
        record of an earlier incarnation with our id is replaced."""
        self._draining = True
        path = paths.draining(self.broker_id)
        try:
            await self._store.put(path, b"", -1, ephemeral=True)
        except NodeExistsError:
            record = await self._store.get(path)
            if record is None or record.stat.ephemeral_owner != self._store.session_id:
                with contextlib.suppress(NoNodeError):
                    await self._store.delete(path)
                await self._store.put(path, b"", -1, ephemeral=True)

    async def unregister(self) -> None:
        self._registered = False
        self._data = b""
        await cancel_and_wait(self._repair)
        try:
            await self._store.delete(self._path)
        except NoNodeError:
            pass

    async def abandon(self) -> None:
        """Stop repairing the registration, touching nothing in the store."""
        self._data = b""
        await cancel_and_wait(self._repair)

    def _on_state(self, state: ConnectionState) -> None:
        if state is ConnectionState.LOST:
            self._registered = False
        elif (
            state is ConnectionState.CONNECTED
            and not self._registered
            and self._data
            and (self._repair is None or self._repair.done())
        ):
            self._repair = spawn(f"reregister-{self.broker_id}", self._reregister())

    async def _reregister(self) -> None:
        try:
            await self.register(self._data)
            log.info("broker %s registered again after a session loss", self.broker_id)
            if self._draining:  # its draining record went with the old session too
                await self.mark_draining()
        except (ConnectionLossError, SessionExpiredError):
            pass  # the next CONNECTED tries again


@dataclass(frozen=True, slots=True)
class BrokerEntry:
    """A registered broker as last read: its data and the session that owns the record."""

    broker_id: str
    data: bytes
    session: int | None
    version: int


@dataclass(frozen=True, slots=True)
class MembershipChange:
    joined: tuple[str, ...] = ()
    left: tuple[str, ...] = ()
    bounced: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()

    @property
    def membership_changed(self) -> bool:
        return bool(self.joined or self.left or self.bounced)


MembershipListener = Callable[[MembershipChange], None]


@dataclass(slots=True)
class _Tracked:
    entry: BrokerEntry
    watch: WatchHandle | None = None
    stale: bool = False


class BrokerRegistry:
    """A live image of ``/loadbalance/brokers``: who is registered, with what data."""

    def __init__(self, store: MetadataStore) -> None:
        self.store = store
        self._brokers: dict[str, _Tracked] = {}
        self._listeners: list[MembershipListener] = []
        self._dirty = asyncio.Event()
        self._changed_data: set[str] = set()
        self._children_dirty = True
        self._task: asyncio.Task[None] | None = None
        self._watch: WatchHandle | None = None
        # The last record of brokers that left: a new leader learns from it which bundles a
        # dead leader held (their ownership records vanished with its session).
        self.departed: dict[str, BrokerEntry] = {}

    def add_listener(self, listener: MembershipListener) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: MembershipListener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def brokers(self) -> dict[str, BrokerEntry]:
        """The registered brokers by id, as last read."""
        return {broker_id: tracked.entry for broker_id, tracked in self._brokers.items()}

    def entry(self, broker_id: str) -> BrokerEntry | None:
        """``brokers().get(broker_id)`` without copying the others."""
        tracked = self._brokers.get(broker_id)
        return None if tracked is None else tracked.entry

    async def start(self) -> None:
        """Read the current members (no listener call for them) and start watching."""
        self._watch = await self.store.watch(paths.BROKERS, self._on_children)
        self.store.add_state_listener(self._on_state)
        await self._refresh(notify=False)
        self._task = spawn("broker-registry", self._run())

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
        for tracked in self._brokers.values():
            if tracked.watch is not None:
                tracked.watch.cancel()
        if self._watch is not None:
            self._watch.cancel()

    async def refresh(self) -> MembershipChange:
        """Re-read everything now and report what changed."""
        self._children_dirty = True
        return await self._refresh(notify=True)

    # -- internals --------------------------------------------------------------------------

    def _on_children(self, _notification: Notification) -> None:
        self._children_dirty = True
        self._dirty.set()

    def _on_data(self, broker_id: str) -> Callable[[Notification], None]:
        def changed(_notification: Notification) -> None:
            self._changed_data.add(broker_id)
            self._dirty.set()

        return changed

    def _on_state(self, state: ConnectionState) -> None:
        if state is ConnectionState.CONNECTED:
            self._children_dirty = True  # re-read what we may have missed
            self._dirty.set()

    async def _run(self) -> None:
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            try:
                await self._refresh(notify=True)
            except (ConnectionLossError, SessionExpiredError):
                continue  # re-read on CONNECTED

    async def _refresh(self, *, notify: bool) -> MembershipChange:
        # Read everything first, then apply and notify in one step: what ``brokers()`` shows and
        # what listeners have been told never differ across an await.
        changed_data, self._changed_data = self._changed_data, set()
        names: set[str] | None = None
        if self._children_dirty:
            self._children_dirty = False
            names = set(await self.store.children(paths.BROKERS))
            to_read = sorted(names | changed_data)
        else:
            to_read = sorted(changed_data)
        records = {
            broker_id: await self.store.get(paths.broker(broker_id)) for broker_id in to_read
        }
        staying = set(self._brokers) if names is None else set(self._brokers) & names
        watches: dict[str, WatchHandle] = {}
        for broker_id, record in records.items():
            if record is not None and broker_id not in staying:
                watches[broker_id] = await self.store.watch(
                    paths.broker(broker_id), self._on_data(broker_id)
                )
        joined: list[str] = []
        left: list[str] = []
        bounced: list[str] = []
        updated: list[str] = []
        if names is not None:
            for broker_id in sorted(set(self._brokers) - names):
                self._forget(broker_id)
                left.append(broker_id)
        for broker_id, record in records.items():
            known = self._brokers.get(broker_id)
            if record is None:
                if known is not None:
                    self._forget(broker_id)
                    left.append(broker_id)
                continue
            entry = _entry(broker_id, record)
            self.departed.pop(broker_id, None)
            if known is None:
                tracked = _Tracked(entry)
                tracked.watch = watches.pop(broker_id, None)
                self._brokers[broker_id] = tracked
                joined.append(broker_id)
            elif known.entry.session != entry.session:
                known.entry = entry
                bounced.append(broker_id)
            elif known.entry.version != entry.version:
                known.entry = entry
                updated.append(broker_id)
        for unused in watches.values():
            unused.cancel()
        change = MembershipChange(tuple(joined), tuple(left), tuple(bounced), tuple(updated))
        if notify and (change.membership_changed or change.updated):
            for listener in list(self._listeners):
                listener(change)
        return change

    def _forget(self, broker_id: str) -> None:
        tracked = self._brokers.pop(broker_id)
        if tracked.watch is not None:
            tracked.watch.cancel()
        self.departed[broker_id] = tracked.entry
        while len(self.departed) > 256:
            del self.departed[next(iter(self.departed))]


def _entry(broker_id: str, record: Record) -> BrokerEntry:
    return BrokerEntry(broker_id, record.value, record.stat.ephemeral_owner, record.stat.version)


async def read_draining(store: MetadataStore) -> dict[str, int | None]:
    """The brokers shutting down (:meth:`BrokerRegistration.mark_draining`), each with the
    session its record belongs to: a record of an earlier incarnation of a broker id does not
    make the broker registered under that id now draining."""
    draining: dict[str, int | None] = {}
    for name in await store.children(paths.DRAINING):
        record = await store.get(paths.draining(name))
        if record is not None:
            draining[name] = record.stat.ephemeral_owner
    return draining
