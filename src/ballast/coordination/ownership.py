"""Bundle ownership through ephemeral records (seed 003): ``/namespace/<tenant>/<ns>/<range>``
holds the owner's URLs (Pulsar's ownership JSON) and, in Ballast's added fields, the state of
the bundle's lifecycle.

The lifecycle is an enum with a table of allowed transitions, checked beside every versioned
write (STYLE 7). A broker acquires a bundle by creating the record (on NodeExists it learns the
current owner); a transfer's destination takes over a record in RELEASING-to-it state with one
atomic delete-and-create, so the bundle is never without an owner record in between.

Session rules: while SUSPENDED a broker claims nothing (``owned()`` is empty) — it cannot know
whether its records still exist; on LOST its records are gone, so it drops its claims and tries
to re-create each one: those another broker took meanwhile are lost for good and reported. A
record still held by the lost session (ZooKeeper, restarted after an outage longer than the
session, keeps it one more timeout) is replaced by one of the new session.

Concurrency contract: one event loop; listeners run on it and must not block.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import msgspec

from ballast.metadata import paths
from ballast.metadata.store import (
    BadVersionError,
    ConnectionLossError,
    ConnectionState,
    Create,
    Delete,
    MetadataError,
    MetadataStore,
    MultiOpError,
    NodeExistsError,
    NoNodeError,
    Record,
    SessionExpiredError,
)
from ballast.model.bundles import BundleName
from ballast.model.loaddata import AdvertisedListener
from ballast.tasks import cancel_and_wait, spawn

log = logging.getLogger(__name__)


class OwnershipState(enum.Enum):
    FREE = "free"  # no record
    ASSIGNING = "assigning"  # a broker was chosen and is loading the bundle
    OWNED = "owned"  # serving
    RELEASING = "releasing"  # being unloaded or transferred: lookups retry or follow
    SPLITTING = "splitting"  # being split: lookups retry


_S = OwnershipState
ALLOWED_TRANSITIONS: dict[OwnershipState, frozenset[OwnershipState]] = {
    _S.FREE: frozenset({_S.ASSIGNING, _S.OWNED}),
    _S.ASSIGNING: frozenset({_S.OWNED, _S.FREE}),
    _S.OWNED: frozenset({_S.RELEASING, _S.SPLITTING, _S.FREE}),
    _S.RELEASING: frozenset({_S.FREE, _S.OWNED}),  # OWNED: an unload called off
    _S.SPLITTING: frozenset({_S.FREE, _S.OWNED}),  # FREE: children own the range; OWNED: failed
}


class OwnershipError(MetadataError):
    """An ownership operation that is not allowed or no longer possible."""

    def __init__(self, bundle: BundleName | str, reason: str) -> None:
        super().__init__(f"{paths.OWNERSHIP}/{bundle}", reason)


class InvalidTransitionError(OwnershipError):
    def __init__(
        self, bundle: BundleName | str, current: OwnershipState, wanted: OwnershipState
    ) -> None:
        super().__init__(bundle, f"cannot go from {current.value} to {wanted.value}")
        self.current = current
        self.wanted = wanted


def check_transition(
    bundle: BundleName | str, current: OwnershipState, wanted: OwnershipState
) -> None:
    if wanted not in ALLOWED_TRANSITIONS[current]:
        raise InvalidTransitionError(bundle, current, wanted)


class OwnershipData(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Pulsar's ownership record (``nativeUrl``, ``nativeUrlTls``, ``httpUrl``, ``httpUrlTls``,
    ``disabled``, ``advertisedListeners``) plus Ballast's ``brokerId``, ``state`` and
    ``transferTo`` (ignored by Pulsar readers). ``disabled`` is true in every state but owned,
    as Pulsar marks a bundle being unloaded."""

    native_url: str | None = None
    native_url_tls: str | None = None
    http_url: str | None = None
    http_url_tls: str | None = None
    disabled: bool = False
    advertised_listeners: dict[str, AdvertisedListener] = {}
    broker_id: str | None = None
    state: OwnershipState = OwnershipState.OWNED
    transfer_to: str | None = None

    def to_json(self) -> bytes:
        return msgspec.json.encode(self)

    @classmethod
    def from_json(cls, data: bytes) -> OwnershipData:
        return msgspec.json.decode(data, type=cls)

    def in_state(self, state: OwnershipState, transfer_to: str | None = None) -> OwnershipData:
        return msgspec.structs.replace(
            self, state=state, disabled=state is not OwnershipState.OWNED, transfer_to=transfer_to
        )


@dataclass(frozen=True, slots=True)
class Owner:
    """A bundle's ownership record as read: who, in what state, at which version."""

    bundle: BundleName
    data: OwnershipData
    version: int
    session: int | None

    @property
    def broker_id(self) -> str | None:
        return self.data.broker_id

    @property
    def state(self) -> OwnershipState:
        return self.data.state


@dataclass(slots=True)
class _Claim:
    state: OwnershipState
    version: int
    session: int | None = None  # the session whose ephemeral record it is


LostListener = Callable[[BundleName], None]
RegainedListener = Callable[[BundleName], Awaitable[None]]


def parse_owner(bundle: BundleName, record: Record) -> Owner:
    try:
        data = OwnershipData.from_json(record.value)
    except (msgspec.DecodeError, msgspec.ValidationError):
        # A record written by something else (a Pulsar broker): treat it as owned, unknown id.
        data = OwnershipData()
    return Owner(bundle, data, record.stat.version, record.stat.ephemeral_owner)


async def read_owner(store: MetadataStore, bundle: BundleName) -> Owner | None:
    """The current owner of ``bundle``, or None if it has none."""
    record = await store.get(paths.ownership(bundle))
    return None if record is None else parse_owner(bundle, record)


class BundleOwnership:
    """One broker's side of bundle ownership: what it holds, and the moves of each bundle."""

    def __init__(
        self,
        store: MetadataStore,
        broker_id: str,
        template: OwnershipData,
        *,
        still_a_bundle: Callable[[BundleName], Awaitable[bool]] | None = None,
    ) -> None:
        """``still_a_bundle`` tells whether a bundle is still one of its namespace's (not
        split or deleted meanwhile): after a session loss only those are claimed again."""
        self._store = store
        self._still_a_bundle = still_a_bundle
        self.broker_id = broker_id
        self._template = msgspec.structs.replace(template, broker_id=broker_id)
        self._claims: dict[BundleName, _Claim] = {}
        # Counts changes of the claims and of the connection (which hides them), so that
        # readers may cache what they derive from them.
        self.changes = 0
        self._lost_listeners: list[LostListener] = []
        self._regained_listeners: list[RegainedListener] = []
        self._repair: asyncio.Task[None] | None = None
        self._connected = asyncio.Event()
        if store.state is ConnectionState.CONNECTED:
            self._connected.set()
        store.add_state_listener(self._on_state)

    def add_regained_listener(self, listener: RegainedListener) -> None:
        """``await listener(bundle)`` when, after a session loss, this broker made a bundle it
        held its own again (with the new session)."""
        self._regained_listeners.append(listener)

    def add_lost_listener(self, listener: LostListener) -> None:
        """``listener(bundle)`` when a session loss cost this broker a bundle."""
        self._lost_listeners.append(listener)

    def owned(self) -> dict[BundleName, OwnershipState]:
        """Bundles this broker holds and their states; empty unless connected."""
        if self._store.state is not ConnectionState.CONNECTED:
            return {}
        return {bundle: claim.state for bundle, claim in self._claims.items()}

    def count_owned(self, *, excluding: BundleName | None = None) -> int:
        """How many bundles :meth:`owned` would list, ``excluding`` left out, without
        building the mapping."""
        if self._store.state is not ConnectionState.CONNECTED:
            return 0
        claims = self._claims
        return len(claims) - (1 if excluding is not None and excluding in claims else 0)

    def state_of(self, bundle: BundleName) -> OwnershipState:
        claim = self._claims.get(bundle)
        if claim is None or self._store.state is not ConnectionState.CONNECTED:
            return OwnershipState.FREE
        return claim.state

    async def acquire(
        self, bundle: BundleName, state: OwnershipState = OwnershipState.OWNED
    ) -> Owner:
        """Create our record for ``bundle`` in ``state`` (OWNED or ASSIGNING). If someone else
        holds it, return that owner instead (check ``owner.broker_id``)."""
        check_transition(bundle, OwnershipState.FREE, state)
        path = paths.ownership(bundle)
        data = self._template.in_state(state)
        while True:
            try:
                stat = await self._store.put(path, data.to_json(), -1, ephemeral=True)
            except NodeExistsError:
                current = await read_owner(self._store, bundle)
                if current is None:
                    continue  # it vanished meanwhile: try again
                if self._ours(current):  # our own record (a retried acquire): adopt it
                    self._claim(bundle, current)
                return current
            self._claims[bundle] = _Claim(state, stat.version, stat.ephemeral_owner)
            self.changes += 1
            return Owner(bundle, data, stat.version, stat.ephemeral_owner)

    async def transition(
        self, bundle: BundleName, state: OwnershipState, *, transfer_to: str | None = None
    ) -> Owner | None:
        """Move our record of ``bundle`` to ``state`` (FREE deletes it), checked against the
        transition table and the record's version. Raises :class:`OwnershipError` if we do
        not hold it or it changed under us (then the claim is dropped)."""
        claim = self._claims.get(bundle)
        adopted = False
        if claim is None:
            if not await self.adopt(bundle):
                raise OwnershipError(bundle, f"{self.broker_id} does not own it")
            claim, adopted = self._claims[bundle], True
        check_transition(bundle, claim.state, state)
        path = paths.ownership(bundle)
        data = self._template.in_state(state, transfer_to)
        while True:
            try:
                if state is OwnershipState.FREE:
                    await self._store.delete(path, claim.version)
                    self._claims.pop(bundle, None)  # a concurrent release may have dropped it
                    self.changes += 1
                    return None
                stat = await self._store.put(path, data.to_json(), claim.version)
                break
            except BadVersionError:
                # Only this broker writes its record, so a version past the claim's while it
                # is still this session's is a write of ours whose answer was lost (ZooKeeper
                # stalled past the client's timeout, then applied it): the claim takes the
                # record's state and version. Kept, the claim was dropped while the record
                # stayed ours.
                current = None if adopted else await read_owner(self._store, bundle)
                if current is not None and self._ours(current):
                    claim, adopted = self._claim(bundle, current), True
                    if current.data == data:  # the lost write was this very move
                        return current
                    check_transition(bundle, claim.state, state)  # from the state it holds
                    continue
                self._drop_claim(bundle)
            except NoNodeError:
                self._drop_claim(bundle)
            raise OwnershipError(bundle, f"{self.broker_id} no longer owns it")
        claim.state, claim.version = state, stat.version
        self.changes += 1
        return Owner(bundle, data, stat.version, stat.ephemeral_owner)

    async def adopt(self, bundle: BundleName) -> bool:
        """Claim ``bundle`` when the store holds a record of this session for it that this
        broker holds no claim for: one whose answer was lost (a take-over ZooKeeper applied
        after the client gave up on it), which nothing would release while the session
        lives. Whether it did (reads the store unless a claim exists)."""
        if bundle in self._claims:
            return False
        current = await read_owner(self._store, bundle)
        if current is None or not self._ours(current):
            return False
        self._claim(bundle, current)
        return True

    def _ours(self, record: Owner) -> bool:
        """Whether ``record`` is this broker's, of its current session."""
        return record.session == self._store.session_id and record.broker_id == self.broker_id

    def _claim(self, bundle: BundleName, record: Owner) -> _Claim:
        """Hold ``record`` (our own) as the claim of ``bundle``, at its state and version."""
        claim = self._claims[bundle] = _Claim(record.state, record.version, record.session)
        self.changes += 1
        return claim

    def _drop_claim(self, bundle: BundleName) -> None:
        self._claims.pop(bundle, None)
        self.changes += 1

    async def release(self, bundle: BundleName) -> None:
        """Give the bundle up: delete our record (from any state that may go to FREE)."""
        await self.transition(bundle, OwnershipState.FREE)

    async def take_over(self, previous: Owner) -> Owner:
        """Complete a transfer to us: atomically delete the source's RELEASING record (at the
        version we read) and create ours, OWNED. The bundle always has a record."""
        bundle = previous.bundle
        if previous.state is not OwnershipState.RELEASING or previous.data.transfer_to != (
            self.broker_id
        ):
            raise OwnershipError(bundle, f"not being transferred to {self.broker_id}")
        path = paths.ownership(bundle)
        data = self._template.in_state(OwnershipState.OWNED)
        try:
            _, stat = await self._store.multi(
                [Delete(path, previous.version), Create(path, data.to_json(), ephemeral=True)]
            )
        except MultiOpError as exc:
            raise OwnershipError(bundle, f"transfer hand-off failed ({exc.cause})") from None
        assert stat is not None
        self._claims[bundle] = _Claim(OwnershipState.OWNED, stat.version, stat.ephemeral_owner)
        self.changes += 1
        return Owner(bundle, data, stat.version, stat.ephemeral_owner)

    async def forget(self, bundle: BundleName) -> None:
        """Drop a claim without touching the store (the record is someone else's now)."""
        self._claims.pop(bundle, None)
        self.changes += 1

    async def close(self) -> None:
        await cancel_and_wait(self._repair)

    async def _replace_left_behind(self, previous: Owner, state: OwnershipState) -> Owner:
        """Our record of the session we lost, still held (a ZooKeeper restarted after an
        outage longer than the session keeps the old sessions' records for one more
        timeout): replaced by one of the new session at once, rather than left to expire
        while lookups send clients here and find the bundle unserved."""
        path = paths.ownership(previous.bundle)
        data = self._template.in_state(state)
        try:
            _, stat = await self._store.multi(
                [Delete(path, previous.version), Create(path, data.to_json(), ephemeral=True)]
            )
        except MultiOpError:  # it changed meanwhile: whoever holds it now keeps it
            return previous
        assert stat is not None
        self._claims[previous.bundle] = _Claim(state, stat.version, stat.ephemeral_owner)
        self.changes += 1
        return Owner(previous.bundle, data, stat.version, stat.ephemeral_owner)

    # -- sessions ---------------------------------------------------------------------------

    def _on_state(self, state: ConnectionState) -> None:
        self.changes += 1
        if state is ConnectionState.CONNECTED:
            self._connected.set()
        else:
            self._connected.clear()
        if state is ConnectionState.LOST and self._claims:
            lost = dict(self._claims)
            self._claims.clear()
            if self._repair is None or self._repair.done():
                self._repair = spawn(f"reacquire-{self.broker_id}", self._reestablish(lost))

    async def _reestablish(self, lost: dict[BundleName, _Claim]) -> None:
        """After a session loss: re-create our records; report the bundles others took."""
        await self._connected.wait()
        for bundle, claim in sorted(lost.items()):
            # An unload or split in flight was cut short; the leader will ask again.
            state = claim.state if claim.state is OwnershipState.ASSIGNING else OwnershipState.OWNED
            try:
                # A bundle split (or its namespace deleted) while we were away is gone: its
                # record must not come back beside its children's.
                gone = self._still_a_bundle is not None and not await self._still_a_bundle(bundle)
                owner = None if gone else await self.acquire(bundle, state)
                if owner is not None and _left_behind(owner, claim, self._store.session_id):
                    owner = await self._replace_left_behind(owner, state)
            except (ConnectionLossError, SessionExpiredError):
                self._claims.pop(bundle, None)
                self.changes += 1
                owner = None
            if owner is None or owner.session != self._store.session_id:
                log.warning("%s lost bundle %s with its session", self.broker_id, bundle)
                for listener in list(self._lost_listeners):
                    listener(bundle)
            else:
                for regained in list(self._regained_listeners):
                    await regained(bundle)


def _left_behind(owner: Owner, claim: _Claim, session: int) -> bool:
    """Whether ``owner`` is the record this broker held under the session it lost."""
    return (
        owner.session != session and claim.session is not None and (owner.session == claim.session)
    )
