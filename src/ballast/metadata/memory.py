"""The in-process backend (``memory:``): one :class:`MemoryServer` holds the tree, the sessions
and the watches; every broker of the process connects to it with its own
:class:`MemoryMetadataStore` (one session each). Sessions expire on the injected clock, so tests
and the simulator run them on virtual time.

Fault injection for tests and the simulator (not part of the interface):
``store.partition()`` cuts a client off (SUSPENDED; its session expires after the timeout unless
``heal()`` comes first), ``store.crash()`` is a ``kill -9`` (the session expires after the
timeout, the client is dead), ``server.expire_session(id)`` expires a session at once.

Concurrency contract: one event loop. Every operation is applied atomically between two awaits;
notifications are queued with ``call_soon`` in the order of the changes.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ballast.clock import Cancellable, Clock
from ballast.metadata.store import (
    BadVersionError,
    Check,
    ConnectionLossError,
    ConnectionState,
    Create,
    Delete,
    EventType,
    InvalidPathError,
    MetadataError,
    MetadataStore,
    MultiOpError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    Notification,
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
    parent_of,
    validate_path,
)
from ballast.metadata.stored_node import Change, StoredNode
from ballast.metadata.values import MAX_STORED_BYTES
from ballast.metadata.watching import WatchSnapshot, notifications_between


@dataclass(slots=True)
class _Session:
    id: int
    timeout_s: float
    client: MemoryMetadataStore | None
    ephemerals: set[str] = field(default_factory=set)
    expiry: Cancellable | None = None
    ended: bool = False


class _MemoryWatch(WatchHandle):
    def __init__(
        self, server: MemoryServer, path: str, client: MemoryMetadataStore, callback: WatchCallback
    ) -> None:
        self.server = server
        self.path = path
        self.client = client
        self.callback = callback
        self.active = True
        self.seen: WatchSnapshot | None = None  # the state when the client last looked

    def cancel(self) -> None:
        if self.active:
            self.active = False
            self.server.remove_watch(self)
            self.client.forget_watch(self)

    def deliver(self, notification: Notification) -> None:
        if self.active and self.client.state is ConnectionState.CONNECTED:
            self.seen = self.server.snapshot(self.path)
            self.callback(notification)

    def catch_up(self) -> None:
        """After a reconnect: report what changed while the client was away."""
        now = self.server.snapshot(self.path)
        for notification in notifications_between(self.path, self.seen, now):
            self.callback(notification)
        self.seen = now


class MemoryServer:
    """The shared state of the ``memory:`` backend: the record tree, sessions and watches."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        now = clock.wall_ms()
        self.nodes: dict[str, StoredNode] = {"/": StoredNode(b"", 0, now, now, None)}
        self._sessions: dict[int, _Session] = {}
        self._session_ids = itertools.count(0x1000)
        self._watches: dict[str, list[_MemoryWatch]] = {}
        self._zxid = 0

    # -- sessions ---------------------------------------------------------------------------

    def open_session(self, timeout_s: float, client: MemoryMetadataStore) -> int:
        session = _Session(next(self._session_ids), timeout_s, client)
        self._sessions[session.id] = session
        return session.id

    def session_alive(self, session_id: int) -> bool:
        session = self._sessions.get(session_id)
        return session is not None and not session.ended

    def start_expiry_timer(self, session_id: int) -> None:
        """The client went silent: expire the session after its timeout."""
        session = self._sessions[session_id]
        if session.expiry is None and not session.ended:
            session.expiry = self.clock.call_later(
                session.timeout_s, lambda: self.expire_session(session_id)
            )

    def stop_expiry_timer(self, session_id: int) -> None:
        session = self._sessions[session_id]
        if session.expiry is not None:
            session.expiry.cancel()
            session.expiry = None

    def expire_session(self, session_id: int) -> None:
        """End a session as ZooKeeper does on timeout: its ephemeral records are deleted and a
        connected client learns it lost the session."""
        session = self._sessions.get(session_id)
        if session is None or session.ended:
            return
        self._end_session(session)
        if session.client is not None:
            session.client.on_session_expired(session_id)

    def close_session(self, session_id: int) -> None:
        session = self._sessions.get(session_id)
        if session is not None and not session.ended:
            self._end_session(session)

    def _end_session(self, session: _Session) -> None:
        session.ended = True
        if session.expiry is not None:
            session.expiry.cancel()
            session.expiry = None
        # Deepest first (ephemerals have no children, but be safe), then by name: deterministic.
        for path in sorted(session.ephemerals, key=lambda p: (-p.count("/"), p)):
            node = self.nodes.get(path)
            if node is not None and node.ephemeral_owner == session.id:
                self.apply([Delete(path)], session_id=None, create_parents=False)
        session.ephemerals.clear()
        del self._sessions[session.id]

    # -- watches ----------------------------------------------------------------------------

    def add_watch(
        self, path: str, client: MemoryMetadataStore, callback: WatchCallback
    ) -> _MemoryWatch:
        watch = _MemoryWatch(self, path, client, callback)
        watch.seen = self.snapshot(path)
        self._watches.setdefault(path, []).append(watch)
        return watch

    def snapshot(self, path: str) -> WatchSnapshot | None:
        node = self.nodes.get(path)
        return None if node is None else node.snapshot()

    def remove_watch(self, watch: _MemoryWatch) -> None:
        watches = self._watches.get(watch.path, [])
        if watch in watches:
            watches.remove(watch)
            if not watches:
                del self._watches[watch.path]

    def _notify(self, notifications: list[Notification]) -> None:
        if not notifications or not self._watches:
            return
        loop = asyncio.get_running_loop()
        for notification in notifications:
            for watch in self._watches.get(notification.path, ()):
                loop.call_soon(watch.deliver, notification)

    # -- reads ------------------------------------------------------------------------------

    def get(self, path: str) -> Record | None:
        node = self.nodes.get(path)
        return None if node is None else Record(node.value, node.stat())

    def exists(self, path: str) -> Stat | None:
        node = self.nodes.get(path)
        return None if node is None else node.stat()

    def children(self, path: str) -> list[str]:
        node = self.nodes.get(path)
        return [] if node is None else node.sorted_children()

    # -- writes -----------------------------------------------------------------------------

    def apply(
        self, ops: Sequence[Op], *, session_id: int | None, create_parents: bool
    ) -> list[Stat | None]:
        """Apply ``ops`` atomically: on the first failure everything is undone and
        MultiOpError (or, for a single op, its own error) is raised."""
        undo: list[Callable[[], None]] = []
        notifications: list[Notification] = []
        changes: list[Change] = []
        results: list[Stat | None] = []
        for index, op in enumerate(ops):
            try:
                if create_parents and isinstance(op, Create):
                    self._create_parents(op.path, undo, notifications, changes)
                results.append(self._apply_one(op, session_id, undo, notifications, changes))
            except MetadataError as exc:
                for step in reversed(undo):
                    step()
                if len(ops) == 1:
                    raise
                raise MultiOpError(index, exc) from None
        try:
            self.on_commit(changes)
        except BaseException:
            # not written durably (a SQLite file that cannot be written): not applied either,
            # so the tree never holds what a restart would not find
            for step in reversed(undo):
                step()
            raise
        self._notify(notifications)
        return results

    def _next_zxid(self) -> int:
        self._zxid += 1
        return self._zxid

    def on_commit(self, changes: list[Change]) -> None:
        """Hook for durable subclasses: ``changes`` (persistent and ephemeral) just committed."""

    def _create_parents(
        self,
        path: str,
        undo: list[Callable[[], None]],
        notifications: list[Notification],
        changes: list[Change],
    ) -> None:
        missing: list[str] = []
        parent = parent_of(path)
        while parent not in self.nodes:
            missing.append(parent)
            parent = parent_of(parent)
        for ancestor in reversed(missing):
            self._apply_one(Create(ancestor, b""), None, undo, notifications, changes)

    def _apply_one(
        self,
        op: Op,
        session_id: int | None,
        undo: list[Callable[[], None]],
        notifications: list[Notification],
        changes: list[Change],
    ) -> Stat | None:
        path = op.path
        validate_path(path)
        node = self.nodes.get(path)
        if isinstance(op, Check):
            if node is None:
                raise NoNodeError(path)
            if node.version != op.version:
                raise BadVersionError(path, op.version, node.version)
            return None
        if isinstance(op, Create):
            return self._create(op, session_id, undo, notifications, changes)
        if node is None:
            raise NoNodeError(path)
        if op.version is not None and node.version != op.version:
            raise BadVersionError(path, op.version, node.version)
        if isinstance(op, SetValue):
            stored = _checked_size(path, op.value)
            old = (node.value, node.version, node.modified_ms, node.mzxid)

            def restore_value() -> None:
                node.value, node.version, node.modified_ms, node.mzxid = old

            node.value = stored
            node.version += 1
            node.modified_ms = self.clock.wall_ms()
            node.mzxid = self._next_zxid()
            undo.append(restore_value)
            notifications.append(Notification(EventType.MODIFIED, path))
            changes.append((path, node))
            return node.stat()
        # Delete
        if path == "/":
            raise InvalidPathError(path, "the root cannot be deleted")
        if node.children:
            raise NotEmptyError(path)
        parent = self.nodes[parent_of(path)]
        name = path.rsplit("/", 1)[1]
        del self.nodes[path]
        parent.children.discard(name)
        parent_pzxid = parent.pzxid
        parent.pzxid = self._next_zxid()
        owner = self._sessions.get(node.ephemeral_owner) if node.ephemeral_owner else None
        if owner is not None:
            owner.ephemerals.discard(path)

        def restore_node() -> None:
            self.nodes[path] = node
            parent.children.add(name)
            parent.pzxid = parent_pzxid
            if owner is not None:
                owner.ephemerals.add(path)

        undo.append(restore_node)
        notifications.append(Notification(EventType.DELETED, path))
        notifications.append(Notification(EventType.CHILDREN_CHANGED, parent_of(path)))
        changes.append((path, None))
        return None

    def _create(
        self,
        op: Create,
        session_id: int | None,
        undo: list[Callable[[], None]],
        notifications: list[Notification],
        changes: list[Change],
    ) -> Stat:
        path = op.path
        if path in self.nodes:
            raise NodeExistsError(path)
        parent_path = parent_of(path)
        parent = self.nodes.get(parent_path)
        if parent is None:
            raise NoNodeError(parent_path)
        if parent.ephemeral_owner is not None:
            raise InvalidPathError(path, "an ephemeral record cannot have children")
        owner: _Session | None = None
        if op.ephemeral:
            owner = self._sessions.get(session_id) if session_id is not None else None
            if owner is None or owner.ended:
                raise SessionExpiredError(path)
        now = self.clock.wall_ms()
        zxid = self._next_zxid()
        node = StoredNode(
            _checked_size(path, op.value),
            0,
            now,
            now,
            owner.id if owner is not None else None,
            set(),
            zxid,
            zxid,
            zxid,
        )
        name = path.rsplit("/", 1)[1]
        self.nodes[path] = node
        parent.children.add(name)
        parent_pzxid = parent.pzxid
        parent.pzxid = zxid
        if owner is not None:
            owner.ephemerals.add(path)

        def remove_node() -> None:
            del self.nodes[path]
            parent.children.discard(name)
            parent.pzxid = parent_pzxid
            if owner is not None:
                owner.ephemerals.discard(path)

        undo.append(remove_node)
        notifications.append(Notification(EventType.CREATED, path))
        notifications.append(Notification(EventType.CHILDREN_CHANGED, parent_path))
        changes.append((path, node))
        return node.stat()


def _checked_size(path: str, value: bytes) -> bytes:
    """Records are limited as ZooKeeper's are (bigger values are chunked above this layer)."""
    if len(value) > MAX_STORED_BYTES:
        raise ValueTooLargeError(path, len(value), MAX_STORED_BYTES)
    return value


class MemoryMetadataStore(MetadataStore):
    """One client (one session) of a :class:`MemoryServer`."""

    def __init__(self, server: MemoryServer, session_timeout_s: float = 30.0) -> None:
        self._server = server
        self._timeout_s = session_timeout_s
        self._session_id = server.open_session(session_timeout_s, self)
        self._state = ConnectionState.CONNECTED
        self._listeners: list[StateListener] = []
        # The client's live watches, in the order they were set (by identity; a cancelled one
        # leaves, or every watch ever set would stay here).
        self._watches: dict[int, _MemoryWatch] = {}
        self._closed = False
        self._crashed = False

    # -- interface --------------------------------------------------------------------------

    async def get(self, path: str) -> Record | None:
        self._check_usable(path)
        return self._server.get(path)

    async def exists(self, path: str) -> Stat | None:
        self._check_usable(path)
        return self._server.exists(path)

    async def children(self, path: str) -> list[str]:
        self._check_usable(path)
        return self._server.children(path)

    async def put(
        self,
        path: str,
        value: bytes,
        expected_version: int | None = None,
        *,
        ephemeral: bool = False,
    ) -> Stat:
        self._check_usable(path)
        if expected_version == -1 or (
            expected_version is None and self._server.exists(path) is None
        ):
            op: Op = Create(path, value, ephemeral)
        else:
            op = SetValue(path, value, expected_version)
        stat = self._server.apply([op], session_id=self._session_id, create_parents=True)[0]
        assert stat is not None
        return stat

    async def delete(self, path: str, expected_version: int | None = None) -> None:
        self._check_usable(path)
        self._server.apply(
            [Delete(path, expected_version)], session_id=self._session_id, create_parents=False
        )

    async def multi(self, ops: Sequence[Op]) -> list[Stat | None]:
        self._check_usable(None)
        for op in ops:
            validate_path(op.path)
        if not ops:
            return []
        try:
            return self._server.apply(list(ops), session_id=self._session_id, create_parents=False)
        except MultiOpError:
            raise
        except MetadataError as exc:  # a one-op multi still reports as a multi failure
            raise MultiOpError(0, exc) from None

    async def watch(self, path: str, callback: WatchCallback) -> WatchHandle:
        validate_path(path)
        if self._closed:
            raise StoreClosedError()
        watch = self._server.add_watch(path, self, callback)
        self._watches[id(watch)] = watch
        return watch

    def forget_watch(self, watch: _MemoryWatch) -> None:
        """A cancelled watch leaves the client's list."""
        self._watches.pop(id(watch), None)

    def add_state_listener(self, listener: StateListener) -> None:
        self._listeners.append(listener)

    @property
    def state(self) -> ConnectionState:
        return self._state

    @property
    def session_id(self) -> int:
        return self._session_id

    @property
    def session_timeout_s(self) -> float:
        return self._timeout_s

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for watch in list(self._watches.values()):
            watch.cancel()
        if not self._crashed:
            self._server.close_session(self._session_id)

    # -- fault injection --------------------------------------------------------------------

    def partition(self) -> None:
        """Lose the connection: SUSPENDED now; the session expires after its timeout (LOST
        then, while still cut off) unless :meth:`heal` reconnects first."""
        if self._closed or self._state is not ConnectionState.CONNECTED:
            return
        self._set_state(ConnectionState.SUSPENDED)
        self._server.start_expiry_timer(self._session_id)

    def heal(self) -> None:
        """Reconnect: CONNECTED on the same session if it is still alive; else LOST, then
        CONNECTED on a new session (as kazoo reconnects after an expiry)."""
        if self._closed or self._state is ConnectionState.CONNECTED:
            return
        if self._server.session_alive(self._session_id):
            self._server.stop_expiry_timer(self._session_id)
            self._set_state(ConnectionState.CONNECTED)
        else:
            self._new_session()

    def crash(self) -> None:
        """Die without closing (``kill -9``): the session expires after its timeout; this
        client is unusable."""
        if self._closed:
            return
        self._crashed = True
        self._closed = True
        for watch in list(self._watches.values()):
            watch.cancel()
        self._server.start_expiry_timer(self._session_id)

    def on_session_expired(self, session_id: int) -> None:
        """Called by the server when it expires this client's session."""
        if self._closed or session_id != self._session_id:
            return
        if self._state is ConnectionState.CONNECTED:
            self._new_session()
        elif self._state is ConnectionState.SUSPENDED:
            # Cut off for the whole timeout: the client takes its session as expired now, as
            # the ZooKeeper backend does (its own timer), and starts a new one when it heals.
            self._set_state(ConnectionState.LOST)

    # -- internals --------------------------------------------------------------------------

    def _new_session(self) -> None:
        if self._state is not ConnectionState.LOST:  # said already, at the timeout
            self._set_state(ConnectionState.LOST)
        self._session_id = self._server.open_session(self._timeout_s, self)
        self._set_state(ConnectionState.CONNECTED)

    def _set_state(self, state: ConnectionState) -> None:
        self._state = state
        loop = asyncio.get_running_loop()
        for listener in list(self._listeners):
            loop.call_soon(listener, state)
        if state is ConnectionState.CONNECTED:
            for watch in self._watches.values():
                if watch.active:
                    loop.call_soon(watch.catch_up)

    def _check_usable(self, path: str | None) -> None:
        """Closed → StoreClosedError; disconnected → ConnectionLossError; then the path."""
        if self._closed:
            raise StoreClosedError()
        if self._state is not ConnectionState.CONNECTED:
            raise ConnectionLossError(path or "")
        if path is not None:
            validate_path(path)
