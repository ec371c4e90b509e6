"""The ZooKeeper backend (``zk:host:port[,host:port...][/chroot]``), through kazoo.

kazoo runs its own threads; every kazoo callback is handed to the asyncio loop with
``call_soon_threadsafe``, so the interface's concurrency contract holds (one loop, callbacks in
order). kazoo's asynchronous calls are bridged to asyncio futures without blocking the loop;
only connecting and closing run in a worker thread.

Watches: kazoo 2.x has no ZooKeeper 3.6 persistent watches, so each watch is a pair of one-shot
watches (``exists`` and ``get_children``) re-armed after every event. The re-read compares
ZooKeeper's transaction ids (czxid, mzxid, pzxid) with the last observation and reports the
differences; one task processes re-reads in the order the events arrived, so notifications keep
the order of the changes. After a session loss every watch is re-armed the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Any

from kazoo import exceptions as kz
from kazoo.client import KazooClient, KazooState
from kazoo.protocol.states import WatchedEvent, ZnodeStat

from ballast.metadata.store import (
    BadVersionError,
    Check,
    ConnectionLossError,
    ConnectionState,
    Create,
    Delete,
    InvalidPathError,
    MetadataError,
    MetadataStore,
    MultiOpError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    Op,
    Record,
    SessionExpiredError,
    SetValue,
    Stat,
    StateListener,
    StoreClosedError,
    ValueTooLargeError,
    WatchCallback,
    WatchHandle,
    validate_path,
)
from ballast.metadata.values import MAX_STORED_BYTES
from ballast.metadata.watching import WatchSnapshot, notifications_between
from ballast.metadata.zk_client import (
    GrantedTimeout,
    LastHeard,
    drop_connection,
    new_client,
    note_connection,
    renew,
    settle_error,
    settle_value,
    start_client,
    stop_client,
    unwatch,
)

log = logging.getLogger(__name__)

_STATES = {
    KazooState.CONNECTED: ConnectionState.CONNECTED,
    KazooState.SUSPENDED: ConnectionState.SUSPENDED,
    KazooState.LOST: ConnectionState.LOST,
}


class NoChrootError(MetadataError):
    """The URL names a chroot that does not exist, and the caller only reads."""

    def __init__(self, hosts: str, chroot: str) -> None:
        super().__init__("", f"no store at zk:{hosts}: the chroot {chroot} does not exist")


def map_error(exc: BaseException, path: str, expected_version: int | None = None) -> MetadataError:
    """The interface's error for a kazoo error."""
    if isinstance(exc, MetadataError):
        return exc
    if isinstance(exc, kz.NoNodeError):
        return NoNodeError(path)
    if isinstance(exc, kz.NodeExistsError):
        return NodeExistsError(path)
    if isinstance(exc, kz.BadVersionError):
        return BadVersionError(path, -2 if expected_version is None else expected_version)
    if isinstance(exc, kz.NotEmptyError):
        return NotEmptyError(path)
    if isinstance(exc, kz.NoChildrenForEphemeralsError):
        return InvalidPathError(path, "an ephemeral record cannot have children")
    if isinstance(exc, kz.ConnectionClosedError):
        return StoreClosedError()
    if isinstance(exc, kz.SessionExpiredError):
        return SessionExpiredError(path)
    if isinstance(exc, kz.ConnectionLoss | kz.ConnectionDropped | kz.OperationTimeoutError):
        return ConnectionLossError(path)
    if isinstance(exc, kz.MarshallingError):
        return ValueTooLargeError(path, -1, MAX_STORED_BYTES)
    if isinstance(exc, kz.BadArgumentsError):
        return InvalidPathError(path, "rejected by ZooKeeper")
    return MetadataError(path, f"ZooKeeper error {type(exc).__name__}: {exc}")


def _stat(zstat: ZnodeStat) -> Stat:
    owner = zstat.ephemeralOwner
    return Stat(zstat.version, zstat.ctime, zstat.mtime, owner if owner else None)


def _snapshot(zstat: ZnodeStat | None) -> WatchSnapshot | None:
    if zstat is None:
        return None
    return WatchSnapshot(zstat.czxid, zstat.mzxid, zstat.pzxid)


class _ZkWatch(WatchHandle):
    def __init__(self, store: ZooKeeperMetadataStore, path: str, callback: WatchCallback) -> None:
        self.store = store
        self.path = path
        self.callback = callback
        self.active = True
        self.seen: WatchSnapshot | None = None
        self.queued = False

    def on_kazoo_event(self, _event: WatchedEvent) -> None:
        """Called in a kazoo thread when either one-shot watch fires."""
        self.store.loop.call_soon_threadsafe(self.store.mark_dirty, self)

    def cancel(self) -> None:
        self.active = False
        self.store.forget_watch(self)


class ZooKeeperMetadataStore(MetadataStore):
    """A kazoo client (one ZooKeeper session) behind the :class:`MetadataStore` interface."""

    def __init__(
        self,
        client: KazooClient,
        loop: asyncio.AbstractEventLoop,
        session_timeout_s: float,
        granted: GrantedTimeout | None = None,
        monotonic: Callable[[], float] | None = None,
        heard: LastHeard | None = None,
    ) -> None:
        """``monotonic``: the clock the session's age is measured by (the loop's by
        default; a test makes time pass with its own). ``heard``: when the client last read
        from its server (:func:`note_connection`)."""
        self._client = client
        self.loop = loop
        self._monotonic = loop.time if monotonic is None else monotonic
        self._timeout_s = session_timeout_s
        self._granted = GrantedTimeout() if granted is None else granted
        self._heard = LastHeard() if heard is None else heard
        self._state = ConnectionState.CONNECTED
        self._listeners: list[StateListener] = []
        self._watches: list[_ZkWatch] = []
        self._dirty: asyncio.Queue[_ZkWatch] = asyncio.Queue()
        self._closed = False
        # Disconnected for a whole session timeout: the session is taken as expired here,
        # without waiting for ZooKeeper to say so (kazoo reports LOST only once it reaches a
        # server again, and until then this broker would go on serving bundles others own).
        self._expiry: asyncio.TimerHandle | None = None
        self._renewal: asyncio.Future[None] | None = None
        # The last time this process saw the session connected, checked every ALIVE_TICK_S:
        # a session times out from there, not from when the loss is first heard of. A
        # process stopped for most of the session (SIGSTOP, a paused VM, swapping) hears of
        # it only after it runs again, and by then ZooKeeper may have expired the session and
        # another broker own its bundles; on waking it must not serve their clients first.
        self._alive_at = self._monotonic()
        self._alive_tick = loop.call_later(ALIVE_TICK_S, self._check_alive)
        self._pump = loop.create_task(self._pump_watches(), name="zookeeper-watch-pump")
        client.add_listener(self._on_kazoo_state)

    @classmethod
    async def connect(
        cls,
        hosts: str,
        *,
        session_timeout_s: float = 30.0,
        connect_timeout_s: float = 15.0,
        create: bool = True,
        monotonic: Callable[[], float] | None = None,
    ) -> ZooKeeperMetadataStore:
        """Connect to ``hosts`` (``host:port,...[/chroot]``), creating the chroot if needed,
        or, unless ``create``, refusing one that does not exist (:class:`NoChrootError`): a
        reader of a misspelt chroot must not make it and see an empty tree."""
        loop = asyncio.get_running_loop()
        servers, slash, chroot = hosts.partition("/")
        if slash and chroot:
            root_client = new_client(servers, session_timeout_s)
            await start_client(loop, root_client, hosts, connect_timeout_s)
            try:
                if create:
                    await loop.run_in_executor(None, root_client.ensure_path, "/" + chroot)
                elif await loop.run_in_executor(None, root_client.exists, "/" + chroot) is None:
                    raise NoChrootError(servers, "/" + chroot)
            finally:
                await loop.run_in_executor(None, stop_client, root_client)
        client = new_client(hosts, session_timeout_s)
        granted = GrantedTimeout()
        heard = LastHeard()
        note_connection(client, granted, heard, loop.time)
        await start_client(loop, client, hosts, connect_timeout_s)
        return cls(client, loop, session_timeout_s, granted, monotonic, heard)

    # -- bridging ---------------------------------------------------------------------------

    async def _call(
        self, path: str, start: Callable[[], Any], expected_version: int | None = None
    ) -> Any:
        """Run one kazoo async call and await its result on the loop."""
        if self._closed:
            raise StoreClosedError()
        if self._state is not ConnectionState.CONNECTED:
            # kazoo would queue the request until it reconnects; the interface fails fast.
            raise ConnectionLossError(path)
        future: asyncio.Future[Any] = self.loop.create_future()

        def settle(result: Any) -> None:
            try:
                value = result.get_nowait()
            except Exception as exc:  # kazoo raises its own types; mapped below
                self.loop.call_soon_threadsafe(settle_error, future, exc)
            else:
                self.loop.call_soon_threadsafe(settle_value, future, value)

        try:
            start().rawlink(settle)
        except Exception as exc:  # a call refused before it was sent (stopped client, ...)
            raise map_error(exc, path, expected_version) from None
        try:
            return await future
        except Exception as exc:
            raise map_error(exc, path, expected_version) from None

    # -- reads ------------------------------------------------------------------------------

    async def get(self, path: str) -> Record | None:
        validate_path(path)
        try:
            value, zstat = await self._call(path, lambda: self._client.get_async(path))
        except NoNodeError:
            return None
        return Record(value, _stat(zstat))

    async def exists(self, path: str) -> Stat | None:
        validate_path(path)
        zstat = await self._call(path, lambda: self._client.exists_async(path))
        return None if zstat is None else _stat(zstat)

    async def children(self, path: str) -> list[str]:
        validate_path(path)
        try:
            names = await self._call(path, lambda: self._client.get_children_async(path))
        except NoNodeError:
            return []
        return sorted(names)

    # -- writes -----------------------------------------------------------------------------

    async def put(
        self,
        path: str,
        value: bytes,
        expected_version: int | None = None,
        *,
        ephemeral: bool = False,
    ) -> Stat:
        validate_path(path)
        stored = _checked_size(path, value)
        if expected_version is not None and expected_version >= 0:
            zstat = await self._call(
                path,
                lambda: self._client.set_async(path, stored, expected_version),
                expected_version,
            )
            return _stat(zstat)
        try:
            _, zstat = await self._call(
                path,
                lambda: self._client.create_async(
                    path, stored, ephemeral=ephemeral, makepath=True, include_data=True
                ),
            )
            return _stat(zstat)
        except NodeExistsError:
            if expected_version == -1:
                raise
        zstat = await self._call(path, lambda: self._client.set_async(path, stored, -1))
        return _stat(zstat)

    async def delete(self, path: str, expected_version: int | None = None) -> None:
        validate_path(path)
        if path == "/":
            raise InvalidPathError(path, "the root cannot be deleted")
        version = -1 if expected_version is None else expected_version
        await self._call(path, lambda: self._client.delete_async(path, version), expected_version)

    async def multi(self, ops: Sequence[Op]) -> list[Stat | None]:
        if not ops:
            return []
        transaction = self._client.transaction()
        for op in ops:
            validate_path(op.path)
            if isinstance(op, Check):
                transaction.check(op.path, op.version)
            elif isinstance(op, Create):
                transaction.create(
                    op.path, _checked_size(op.path, op.value), ephemeral=op.ephemeral
                )
            elif isinstance(op, SetValue):
                version = -1 if op.version is None else op.version
                transaction.set_data(op.path, _checked_size(op.path, op.value), version)
            else:
                if op.path == "/":
                    raise InvalidPathError(op.path, "the root cannot be deleted")
                transaction.delete(op.path, -1 if op.version is None else op.version)
        results = await self._call("", transaction.commit_async)
        for index, (op, result) in enumerate(zip(ops, results, strict=True)):
            if isinstance(result, Exception) and not isinstance(result, kz.RolledBackError):
                expected = op.version if isinstance(op, Check | SetValue | Delete) else None
                raise MultiOpError(index, map_error(result, op.path, expected))
        if any(isinstance(result, Exception) for result in results):
            raise MultiOpError(0, MetadataError("", "transaction rolled back"))
        stats: list[Stat | None] = []
        for op, result in zip(ops, results, strict=True):
            if isinstance(op, SetValue):
                stats.append(_stat(result))
            elif isinstance(op, Create):
                stats.append(await self.exists(op.path))  # transactions return only the path
            else:
                stats.append(None)
        return stats

    # -- watches ----------------------------------------------------------------------------

    async def watch(self, path: str, callback: WatchCallback) -> WatchHandle:
        validate_path(path)
        if self._closed:
            raise StoreClosedError()
        watch = _ZkWatch(self, path, callback)
        self._watches.append(watch)
        try:
            watch.seen = await self._arm(watch)
        except BaseException:
            # Never handed out, so nobody could cancel it: kept, it would be armed again at
            # the reconnect and stay for good (a lookup of an unknown name while the
            # connection was down left one per name on every broker).
            watch.cancel()
            raise
        return watch

    def mark_dirty(self, watch: _ZkWatch) -> None:
        if watch.active and not watch.queued:
            watch.queued = True
            self._dirty.put_nowait(watch)

    def forget_watch(self, watch: _ZkWatch) -> None:
        if watch not in self._watches:
            return
        self._watches.remove(watch)
        # The server's watches of a path serve every watch of it here: taken back only with
        # the last. Disconnected, the server has dropped the connection's watches already,
        # and kazoo sets again only those still in its tables.
        last = not any(other.path == watch.path for other in self._watches)
        connected = self._state is ConnectionState.CONNECTED and not self._closed
        unwatch(self._client, watch.path, watch.on_kazoo_event, send=last and connected)

    async def _arm(self, watch: _ZkWatch) -> WatchSnapshot | None:
        """Set both one-shot watches and return what the record looks like now."""
        path = watch.path
        zstat = await self._call(
            path, lambda: self._client.exists_async(path, watch=watch.on_kazoo_event)
        )
        if zstat is None:
            return None
        try:
            _, zstat = await self._call(
                path,
                lambda: self._client.get_children_async(
                    path, watch=watch.on_kazoo_event, include_data=True
                ),
            )
        except NoNodeError:
            return None  # deleted between the two calls; the exists watch reports it
        return _snapshot(zstat)

    async def _pump_watches(self) -> None:
        """Re-arm fired watches one at a time, in the order their events came."""
        while True:
            watch = await self._dirty.get()
            watch.queued = False
            if not watch.active or self._closed:
                continue
            try:
                now = await self._arm(watch)
            except (ConnectionLossError, SessionExpiredError):
                continue  # re-armed when the connection is back
            except StoreClosedError:
                return
            except MetadataError:
                log.exception("re-arming the watch on %s failed", watch.path)
                continue
            notifications = notifications_between(watch.path, watch.seen, now)
            watch.seen = now
            for notification in notifications:
                if not watch.active:
                    break
                try:
                    watch.callback(notification)
                except Exception:  # a consumer bug must not stop every other watch
                    log.exception("watch callback for %s failed", watch.path)

    # -- sessions ---------------------------------------------------------------------------

    def _on_kazoo_state(self, kazoo_state: str) -> None:
        """Called in a kazoo thread; must not block."""
        self.loop.call_soon_threadsafe(self._set_state, _STATES[kazoo_state])

    def _set_state(self, state: ConnectionState, *, heard_at: float | None = None) -> None:
        """``heard_at``: for SUSPENDED, when the server was last heard from (on the loop's
        clock), if the connection fell silent (:meth:`_fell_silent`) rather than broke."""
        if self._closed or state is self._state:  # kazoo's LOST after one declared here
            return
        if state is ConnectionState.SUSPENDED and self._state is ConnectionState.LOST:
            return  # kazoo hearing late of a connection this side has already given up
        self._state = state
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        stalled = False
        if state is ConnectionState.SUSPENDED and heard_at is not None:
            left = heard_at + self.session_timeout_s - self.loop.time()
            self._expiry = self.loop.call_later(max(left, 0.0), self._expire_here)
        elif state is ConnectionState.SUSPENDED:
            now = self._monotonic()
            stalled = self._stalled(now)
            if stalled:
                log.warning(
                    "this process did not run for %.1f s: ZooKeeper may have expired its "
                    "session (%.0f s) meanwhile, having last heard from it up to %.1f s "
                    "before; the session is taken as expired, and a new one starts when a "
                    "server answers",
                    now - self._alive_at,
                    self.session_timeout_s,
                    self.session_timeout_s * (1 - STALL_FRACTION),
                )
            else:  # Pulsar's rule: a session timeout after it was last connected
                left = self._alive_at + self.session_timeout_s - now
                self._expiry = self.loop.call_later(max(left, 0.0), self._expire_here)
        elif state is ConnectionState.CONNECTED:
            self._alive_at = self._monotonic()
        for listener in list(self._listeners):
            listener(state)
        if state is ConnectionState.CONNECTED:
            for watch in list(self._watches):
                self.mark_dirty(watch)
        if stalled:
            self._expire_here(stalled=True)  # at once: not one more message served under it

    def _check_alive(self) -> None:
        """Every ALIVE_TICK_S: note that the session is still connected, or, when this
        process has not run for long enough that ZooKeeper may have expired the session
        (:meth:`_stalled`), take the session as expired before anything else runs: the
        callbacks of the sockets that were ready meanwhile (clients' messages) run only in
        the loop's next round."""
        if self._closed:
            return
        self._alive_tick = self.loop.call_later(ALIVE_TICK_S, self._check_alive)
        if self._state is not ConnectionState.CONNECTED:
            return
        now = self._monotonic()
        if self._stalled(now):
            self._set_state(ConnectionState.SUSPENDED)  # and at once LOST
            return
        self._alive_at = now
        heard = self._heard.at
        if (
            heard is not None
            and self.loop.time() - heard >= self.session_timeout_s * STALL_FRACTION
        ):
            self._fell_silent(heard)

    def _fell_silent(self, heard: float) -> None:
        """Nothing read from the server for two thirds of the session timeout while kazoo
        says connected: take the connection as lost and have kazoo make another. kazoo counts
        each request it sends as a ping, so a connection that went silent (a partition that
        drops packets, a hung server) was never found out while the broker kept asking
        (lookups, admin reads), and it served bundles others owned; ZooKeeper's Java client
        counts from the last packet it read, as here. The session is taken as expired a
        session timeout after the server was last heard from, unless a server answers first."""
        silent_s = self.loop.time() - heard
        log.warning(
            "no answer from ZooKeeper for %.1f s: the connection is taken as lost and made "
            "again; the session is taken as expired if no server answers within %.1f s",
            silent_s,
            max(self.session_timeout_s - silent_s, 0.0),
        )
        self._set_state(ConnectionState.SUSPENDED, heard_at=heard)
        drop_connection(self._client)

    def _stalled(self, now: float) -> bool:
        """Whether this process went without running (stopped, or its loop held) for two
        thirds of the session timeout since it last saw the session connected: ZooKeeper
        may have expired the session by then, since it last heard from the broker up to a
        third of the timeout before (kazoo pings after that long without an answer), and
        another broker may own its bundles."""
        return now - self._alive_at >= self.session_timeout_s * STALL_FRACTION

    def _expire_here(self, *, stalled: bool = False) -> None:
        """No server answered for a session timeout since the session was last seen
        connected (or, ``stalled``, this process did not run for long enough that it may
        have expired meanwhile: :meth:`_stalled`): ZooKeeper has expired it, or
        will as soon as it runs again without hearing from us, so act as if it had (as
        Pulsar's ``ZKSessionWatcher`` does) and start a new session once a server answers.
        The old one's ephemeral records, if a restarted ZooKeeper still holds them, go when
        it expires them; until then they are another session's (the broker's ownership and
        registration replace their own at once)."""
        self._expiry = None
        if self._closed or self._state is not ConnectionState.SUSPENDED:
            return
        if not stalled:  # a stall is told in its own words (_set_state)
            log.warning(
                "the session timeout (%.0f s) has passed since the session was last seen "
                "connected: it is taken as expired; a new one starts when a server answers",
                self.session_timeout_s,
            )
        self._set_state(ConnectionState.LOST)
        self._renewal = self.loop.run_in_executor(None, renew, self._client)

    def add_state_listener(self, listener: StateListener) -> None:
        self._listeners.append(listener)

    @property
    def state(self) -> ConnectionState:
        return self._state

    @property
    def session_id(self) -> int:
        client_id = self._client.client_id
        return int(client_id[0]) if client_id else 0

    @property
    def session_password(self) -> bytes:
        """The session's password (with :attr:`session_id`, lets a test expire the session)."""
        client_id = self._client.client_id
        return bytes(client_id[1]) if client_id else b""

    @property
    def session_timeout_s(self) -> float:
        """The timeout the server granted at the last connect (ZooKeeper bounds the one asked
        by its minSessionTimeout and maxSessionTimeout: a broker asking 90 s of a server
        that grants 60 s is expired at 60 s, and must stop serving by then), else the one
        asked."""
        granted = self._granted.seconds
        return self._timeout_s if granted is None else granted

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._alive_tick.cancel()
        if self._expiry is not None:
            self._expiry.cancel()
        if self._renewal is not None:
            with contextlib.suppress(Exception):
                await self._renewal
        for watch in self._watches:
            watch.active = False
        self._pump.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._pump
        await self.loop.run_in_executor(None, stop_client, self._client)


ALIVE_TICK_S = 0.5
"""How often the loop notes that its session is connected (see ``_check_alive``)."""

STALL_FRACTION = 2 / 3
"""A process that did not run for this part of its session timeout takes the session as
expired (see ``_stalled``)."""


def _checked_size(path: str, value: bytes) -> bytes:
    """ZooKeeper refuses packets over ``jute.maxbuffer``; say so before sending."""
    if len(value) > MAX_STORED_BYTES:
        raise ValueTooLargeError(path, len(value), MAX_STORED_BYTES)
    return value
