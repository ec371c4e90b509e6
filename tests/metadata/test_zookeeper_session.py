"""The session a ZooKeeper store works by: its timeout is the one the server granted
(ZooKeeper bounds the timeout asked by its minSessionTimeout and maxSessionTimeout, and
expires the session by what it granted, so a broker that asked for more must stop serving
sooner), and it runs from when the store last saw it connected, even if the process was
stopped since."""

from __future__ import annotations

import asyncio

import pytest
from kazoo.client import KazooState

from ballast.clock import Clock
from ballast.metadata.store import ConnectionState
from ballast.metadata.zkserver import LocalZooKeeper
from ballast.metadata.zookeeper import ALIVE_TICK_S, ZooKeeperMetadataStore
from tests.support.tcp_proxy import FreezableProxy
from tests.support.waiting import eventually

pytestmark = [pytest.mark.real_time, pytest.mark.integration]


@pytest.mark.parametrize(
    ("asked_s", "granted_s"),
    [
        (90.0, 60.0),  # the server's maxSessionTimeout (ballast zookeeper's, 60 s)
        (0.2, 1.0),  # its minSessionTimeout, two ticks of 500 ms
        (7.5, 7.5),  # within the bounds: as asked
    ],
)
async def test_the_session_timeout_is_the_one_granted(
    zookeeper_server: LocalZooKeeper, asked_s: float, granted_s: float
) -> None:
    store = await ZooKeeperMetadataStore.connect(
        f"{zookeeper_server.hosts}/granted", session_timeout_s=asked_s
    )
    try:
        assert store.session_timeout_s == granted_s
    finally:
        await store.close()


class _Stoppable:
    """The loop's clock, plus the time a process spent stopped (SIGSTOP, a paused VM): the
    loop sees the time jump when it runs again."""

    def __init__(self) -> None:
        self.stopped_s = 0.0

    def __call__(self) -> float:
        return asyncio.get_running_loop().time() + self.stopped_s


async def test_a_process_stopped_for_its_session_takes_it_as_expired_on_waking(
    zookeeper_server: LocalZooKeeper, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """ZooKeeper expires a session it has not heard from for its timeout, however long the
    client was stopped, and a broker hears of it only after it runs again: before, it went
    on serving (its clients' messages, queued in its sockets while it was stopped, first)
    until its own timer ran out a whole session later. A stop of two thirds of the timeout
    is enough: ZooKeeper may have last heard from it a third of the timeout before it."""
    stoppable = _Stoppable()
    store = await ZooKeeperMetadataStore.connect(
        f"{zookeeper_server.hosts}/stopped", session_timeout_s=4.0, monotonic=stoppable
    )
    observer = await ZooKeeperMetadataStore.connect(f"{zookeeper_server.hosts}/stopped")
    try:
        states: list[ConnectionState] = []
        store.add_state_listener(states.append)
        await store.put("/me", b"", ephemeral=True)
        session = store.session_id
        await clock.sleep(1.0)
        assert states == []  # running, it keeps its session
        stoppable.stopped_s = 1.9  # under two thirds of 4 s, with the check's half second
        await clock.sleep(2 * ALIVE_TICK_S)
        assert states == [] and store.session_id == session  # a short stop keeps it
        stoppable.stopped_s += 2.7
        await clock.sleep(ALIVE_TICK_S + 0.2)  # its first check after waking
        assert states[:2] == [ConnectionState.SUSPENDED, ConnectionState.LOST]
        assert "this process did not run for " in caplog.text
        await eventually(
            lambda: store.state is ConnectionState.CONNECTED, clock, what="a new session"
        )
        assert store.session_id != session  # a new session, and the old one's records gone
        assert await observer.exists("/me") is None
    finally:
        await store.close()
        await observer.close()


async def test_a_disconnection_heard_of_after_a_stop_expires_the_session_at_once(
    zookeeper_server: LocalZooKeeper, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """The disconnection may be heard of (kazoo's thread runs first) before the store's own
    check: its session then counts from when it was last seen connected, not from now."""
    stoppable = _Stoppable()
    store = await ZooKeeperMetadataStore.connect(
        f"{zookeeper_server.hosts}/stopped", session_timeout_s=4.0, monotonic=stoppable
    )
    try:
        states: list[ConnectionState] = []
        store.add_state_listener(states.append)
        stoppable.stopped_s = 4.0
        store._on_kazoo_state(KazooState.SUSPENDED)  # as kazoo's thread reports it
        await clock.sleep(0)  # the report's callback: the check has not run yet
        assert states == [ConnectionState.SUSPENDED, ConnectionState.LOST]
        assert "this process did not run for 4" in caplog.text  # said on this path too
        await eventually(
            lambda: store.state is ConnectionState.CONNECTED, clock, what="a new session"
        )
        assert states == [
            ConnectionState.SUSPENDED,
            ConnectionState.LOST,
            ConnectionState.CONNECTED,
        ]
    finally:
        await store.close()


async def test_a_connection_that_falls_silent_under_requests_is_found_out(
    zookeeper_server: LocalZooKeeper, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    """kazoo counts each request it sends as a ping: a broker asked something (lookups,
    admin reads) more often than a third of its session never learnt that its connection
    had gone silent, and served bundles that other brokers owned once its session expired.
    Nothing read for two thirds of the session is a lost connection, as in ZooKeeper's Java
    client; the session is taken as expired a session after the server was last heard."""
    session_s = 4.0
    proxy = FreezableProxy(("127.0.0.1", zookeeper_server.config.port))
    store = await ZooKeeperMetadataStore.connect(
        f"{proxy.hosts}/silent", session_timeout_s=session_s
    )
    states: list[tuple[ConnectionState, float]] = []
    store.add_state_listener(lambda state: states.append((state, clock.monotonic())))
    asked: set[asyncio.Task[object]] = set()

    async def ask_often() -> None:
        while True:
            task = asyncio.ensure_future(store.get("/"))  # not awaited: they pile up unanswered
            asked.add(task)
            task.add_done_callback(lambda done: (asked.discard(done), done.exception()))
            await clock.sleep(0.2)

    asking = asyncio.ensure_future(ask_often())
    try:
        await clock.sleep(session_s * 2)
        assert states == []  # answered requests keep a healthy connection as it is
        proxy.freeze()
        frozen = clock.monotonic()
        await eventually(
            lambda: bool(states), clock, what="the silence noticed", timeout_s=session_s * 3
        )
        assert states[0][0] is ConnectionState.SUSPENDED
        assert states[0][1] - frozen < session_s * 2 / 3 + ALIVE_TICK_S + 1.0
        assert "no answer from ZooKeeper for" in caplog.text
        await eventually(
            lambda: ConnectionState.LOST in [state for state, _ in states],
            clock,
            what="the session taken as expired",
            timeout_s=session_s * 3,
        )
        lost_at = next(at for state, at in states if state is ConnectionState.LOST)
        assert lost_at - frozen < session_s + ALIVE_TICK_S + 1.0
        proxy.thaw()
        await eventually(
            lambda: store.state is ConnectionState.CONNECTED,
            clock,
            what="a new session",
            timeout_s=30,
        )
    finally:
        asking.cancel()
        await asyncio.gather(asking, *asked, return_exceptions=True)
        await store.close()
        proxy.close()
