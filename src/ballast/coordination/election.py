"""Leader election with an epoch (Kafka's ``/controller`` + ``/controller_epoch``).

One ephemeral record, ``/loadbalance/leader``, names the leader; ``/loadbalance/leader-epoch``
counts leaderships. A candidate becomes leader with one atomic multi-operation: bump the epoch
(at the version it read) and create the leader record. Every later leader write goes through
:meth:`LeaderElection.fenced_multi`, which checks both the epoch's version and the leader
record, so a stale (zombie) leader's write fails once another leader was elected or its own
record is gone.

Connection rules (kazoo's): on SUSPENDED or LOST the leader resigns before anything else — the
listeners hear it synchronously — and campaigns again once connected, with a new epoch.

Concurrency contract: one event loop; listeners run on it and must not block.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import msgspec

from ballast.clock import Clock
from ballast.metadata import paths
from ballast.metadata.store import (
    BadVersionError,
    Check,
    ConnectionLossError,
    ConnectionState,
    Create,
    Delete,
    MetadataError,
    MetadataStore,
    MultiOpError,
    NodeExistsError,
    NoNodeError,
    Notification,
    Op,
    SessionExpiredError,
    SetValue,
    Stat,
    WatchHandle,
)
from ballast.tasks import cancel_and_wait, spawn

log = logging.getLogger(__name__)


class NotLeaderError(MetadataError):
    """This candidate is not (or no longer) the leader; the write did not happen."""

    def __init__(self, reason: str) -> None:
        super().__init__("", f"not the leader ({reason})")


class LeaderInfo(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The leader record: Pulsar's ``LeaderBroker`` (``serviceUrl``, ``brokerId``) plus the
    epoch of this leadership."""

    broker_id: str
    service_url: str
    epoch: int = 0

    def to_json(self) -> bytes:
        return msgspec.json.encode(self)

    @classmethod
    def from_json(cls, data: bytes) -> LeaderInfo:
        return msgspec.json.decode(data, type=cls)


@dataclass(frozen=True, slots=True)
class Leadership:
    """One term of leadership: the epoch, and the versions that fence its writes."""

    epoch: int
    epoch_version: int
    record_version: int
    session_id: int


LeadershipListener = Callable[[Leadership | None], None]


# How long a candidate waits before it tries again to remove a persistent leader record.
PERSISTENT_RECORD_RETRY_S = 1.0


async def read_leader(store: MetadataStore) -> LeaderInfo | None:
    """The current leader, or None while there is none. A persistent record is none: no
    session holds it (the election removes it, see ``_remove_stale_record``)."""
    record = await store.get(paths.LEADER)
    if record is None or record.stat.ephemeral_owner is None:
        return None
    try:
        return LeaderInfo.from_json(record.value)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


class LeaderElection:
    """Campaigns for leadership for one candidate and keeps it until it is lost or stopped."""

    def __init__(self, store: MetadataStore, candidate: LeaderInfo, clock: Clock) -> None:
        self._store = store
        self._candidate = candidate
        self._clock = clock
        self._leadership: Leadership | None = None
        self._listeners: list[LeadershipListener] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._watch: WatchHandle | None = None
        self._stopped = False
        self._campaign_after = 0.0  # clock.monotonic() time; later after stepping down
        self._led_under: int | None = None  # the session of our last leadership

    # -- public -----------------------------------------------------------------------------

    @property
    def leadership(self) -> Leadership | None:
        return self._leadership

    @property
    def is_leader(self) -> bool:
        return self._leadership is not None

    def add_listener(self, listener: LeadershipListener) -> None:
        """``listener(Leadership)`` when elected, ``listener(None)`` when resigning."""
        self._listeners.append(listener)

    async def start(self) -> None:
        """Begin campaigning (returns at once; watch :attr:`leadership` or the listeners)."""
        self._store.add_state_listener(self._on_state)
        self._watch = await self._store.watch(paths.LEADER, self._on_leader_change)
        self._task = spawn(f"election-{self._candidate.broker_id}", self._campaign())

    async def stop(self) -> None:
        """Stop campaigning; a leader resigns and deletes its record so others take over."""
        self._stopped = True
        leadership = self._leadership
        self._resign("stopped")
        await cancel_and_wait(self._task)
        if self._watch is not None:
            self._watch.cancel()
        if leadership is not None:
            await self._remove_record(leadership)

    async def step_down(self, reason: str, *, pause_s: float) -> None:
        """Give up a leadership this candidate cannot serve (its controller failed to start):
        resign, remove the record so that another candidate takes over, and campaign again
        only after ``pause_s``, so that a failure that persists does not churn elections."""
        leadership = self._leadership
        if leadership is None or self._stopped:
            return
        self._campaign_after = self._clock.monotonic() + pause_s
        self._resign(reason)
        await self._remove_record(leadership)
        self._wake.set()

    async def _remove_record(self, leadership: Leadership) -> None:
        """Delete the leader record of ``leadership`` so that others take over at once,
        rather than when the session ends."""
        if self._store.state is not ConnectionState.CONNECTED:
            return
        try:
            await self._store.delete(paths.LEADER, leadership.record_version)
        except MetadataError:
            pass  # already gone, or replaced: nothing of ours to remove

    async def abandon(self) -> None:
        """Stop campaigning without touching the store (the process is dying)."""
        self._stopped = True
        self._leadership = None
        await cancel_and_wait(self._task)
        if self._watch is not None:
            self._watch.cancel()

    async def fenced_multi(self, term: Leadership, ops: Sequence[Op]) -> list[Stat | None]:
        """Apply ``ops`` atomically only while the leadership ``term`` (the one the caller
        acts for) is current: a later term of this same candidate does not count, and the
        multi checks the epoch version and the leader record first. Raises
        :class:`NotLeaderError` (and resigns, if the store moved on from the current term)."""
        leadership = self._leadership
        if leadership is None:
            raise NotLeaderError("no current leadership")
        if leadership != term:  # an abandoned term's controller, still finishing an event
            raise NotLeaderError(f"the term of epoch {term.epoch} is over")
        fence: list[Op] = [
            Check(paths.LEADER_EPOCH, leadership.epoch_version),
            Check(paths.LEADER, leadership.record_version),
        ]
        try:
            results = await self._store.multi([*fence, *ops])
        except MultiOpError as exc:
            if exc.index < len(fence):
                self._resign(f"fenced: {exc.cause}")
                raise NotLeaderError(f"epoch {leadership.epoch} was superseded") from None
            raise
        return results[len(fence) :]

    # -- the campaign -----------------------------------------------------------------------

    async def _campaign(self) -> None:
        while not self._stopped:
            self._wake.clear()
            if self._leadership is not None or self._store.state is not ConnectionState.CONNECTED:
                await self._wake.wait()
                continue
            pause_s = self._campaign_after - self._clock.monotonic()
            if pause_s > 0:
                await self._clock.sleep(pause_s)
                continue
            try:
                await self._try_once()
            except (ConnectionLossError, SessionExpiredError):
                continue  # the state listener wakes us when connected again
            if self._leadership is None and not self._stopped:
                await self._wait_for_vacancy()

    async def _try_once(self) -> None:
        await self._remove_stale_record()
        epoch_record = await self._store.get(paths.LEADER_EPOCH)
        if epoch_record is None:
            try:
                await self._store.put(paths.LEADER_EPOCH, b"0", -1)
            except NodeExistsError:
                pass
            return  # read it again on the next round
        epoch = int(epoch_record.value or b"0") + 1
        record = msgspec.structs.replace(self._candidate, epoch=epoch)
        try:
            results = await self._store.multi(
                [
                    SetValue(paths.LEADER_EPOCH, str(epoch).encode(), epoch_record.stat.version),
                    Create(paths.LEADER, record.to_json(), ephemeral=True),
                ]
            )
        except MultiOpError as exc:
            if isinstance(exc.cause, BadVersionError | NodeExistsError | NoNodeError):
                return  # another candidate won this round
            raise
        epoch_stat, leader_stat = results
        assert epoch_stat is not None and leader_stat is not None
        if self._store.state is not ConnectionState.CONNECTED or self._stopped:
            return  # lost the connection meanwhile: the record goes with the session
        self._leadership = Leadership(
            epoch, epoch_stat.version, leader_stat.version, self._store.session_id
        )
        self._led_under = self._store.session_id
        log.info("%s elected leader, epoch %d", self._candidate.broker_id, epoch)
        for listener in list(self._listeners):
            listener(self._leadership)

    async def _remove_stale_record(self) -> None:
        """Remove a leader record that blocks everyone without being a leader's:

        - one of our own session that outlived our leadership (we resigned on SUSPENDED and
          came back on the same session), or of the session we led under and lost (a
          ZooKeeper restarted after an outage longer than the session keeps its records one
          more timeout; we resigned when it was lost, and nothing writes under it again);
        - a persistent one, which no session holds: every leader writes its record
          ephemeral, so it came from elsewhere (a dump loaded with ``--keep-ephemeral``) and
          names a broker that is not this cluster's. It goes only together with a check of
          the epoch read before it: a candidate that won meanwhile bumped the epoch, and its
          own record (of the same version) stays."""
        epoch = await self._store.exists(paths.LEADER_EPOCH)
        record = await self._store.get(paths.LEADER)
        if record is None:
            return
        ours = {self._store.session_id, self._led_under} - {None}
        if record.stat.ephemeral_owner in ours:
            try:
                await self._store.delete(paths.LEADER, record.stat.version)
            except (NoNodeError, BadVersionError):
                pass
        elif record.stat.ephemeral_owner is None and epoch is not None:
            log.warning(
                "removing a persistent leader record no session holds: %r", record.value[:200]
            )
            try:
                await self._store.multi(
                    [
                        Check(paths.LEADER_EPOCH, epoch.version),
                        Delete(paths.LEADER, record.stat.version),
                    ]
                )
            except MultiOpError:
                pass  # an election won meanwhile, or another candidate removed it

    async def _wait_for_vacancy(self) -> None:
        stat = await self._store.exists(paths.LEADER)
        if stat is None:
            return
        if stat.ephemeral_owner is None:  # no leader's: the next round removes it
            await self._clock.sleep(PERSISTENT_RECORD_RETRY_S)  # not at once, if that failed
            return
        await self._wake.wait()

    # -- events -----------------------------------------------------------------------------

    def _on_leader_change(self, notification: Notification) -> None:
        self._wake.set()

    def _on_state(self, state: ConnectionState) -> None:
        if state is not ConnectionState.CONNECTED:
            self._resign(f"connection {state.value}")
        self._wake.set()

    def _resign(self, reason: str) -> None:
        if self._leadership is None:
            return
        # Stopping on purpose is routine; losing the session or the fence is worth a warning.
        level = logging.INFO if self._stopped else logging.WARNING
        log.log(level, "%s resigns leadership (%s)", self._candidate.broker_id, reason)
        self._leadership = None
        for listener in list(self._listeners):
            listener(None)
        self._wake.set()
