"""Bundle ownership: the lifecycle table, acquisition, transfers, and session loss."""

from __future__ import annotations

import itertools

import msgspec
import pytest

from ballast.clock import Clock
from ballast.coordination.ownership import (
    ALLOWED_TRANSITIONS,
    BundleOwnership,
    InvalidTransitionError,
    OwnershipData,
    OwnershipError,
    OwnershipState,
    check_transition,
    read_owner,
)
from ballast.metadata import paths
from ballast.model.bundles import BundleName
from tests.support.harness import Harness
from tests.support.waiting import eventually

BUNDLE = BundleName.parse("public/default/0x00000000_0x40000000")
S = OwnershipState


def template(name: str) -> OwnershipData:
    return OwnershipData(native_url=f"pulsar://{name}:6650", http_url=f"http://{name}:8080")


@pytest.mark.parametrize(("current", "wanted"), list(itertools.product(S, S)))
def test_every_pair_of_states(current: OwnershipState, wanted: OwnershipState) -> None:
    expected = {
        (S.FREE, S.ASSIGNING), (S.FREE, S.OWNED),
        (S.ASSIGNING, S.OWNED), (S.ASSIGNING, S.FREE),
        (S.OWNED, S.RELEASING), (S.OWNED, S.SPLITTING), (S.OWNED, S.FREE),
        (S.RELEASING, S.FREE), (S.RELEASING, S.OWNED),
        (S.SPLITTING, S.FREE), (S.SPLITTING, S.OWNED),
    }  # fmt: skip
    assert (wanted in ALLOWED_TRANSITIONS[current]) == ((current, wanted) in expected)
    if (current, wanted) in expected:
        check_transition(BUNDLE, current, wanted)
    else:
        with pytest.raises(InvalidTransitionError):
            check_transition(BUNDLE, current, wanted)


def test_record_json_is_pulsars_plus_state() -> None:
    data = template("b1").in_state(S.RELEASING, transfer_to="b2:8080")
    body = data.to_json()
    assert b'"nativeUrl":"pulsar://b1:6650"' in body and b'"disabled":true' in body
    assert b'"state":"releasing"' in body and b'"transferTo":"b2:8080"' in body
    pulsar_written = b'{"nativeUrl":"pulsar://x:6650","httpUrl":"http://x:8080","disabled":false}'
    assert OwnershipData.from_json(pulsar_written).state is S.OWNED


@pytest.mark.integration
async def test_acquire_and_contend(harness: Harness, clock: Clock) -> None:
    a = BundleOwnership(await harness.open(), "a:8080", template("a"))
    b = BundleOwnership(await harness.open(), "b:8080", template("b"))
    mine = await a.acquire(BUNDLE)
    assert mine.broker_id == "a:8080" and mine.state is S.OWNED and not mine.data.disabled
    theirs = await b.acquire(BUNDLE)
    assert theirs.broker_id == "a:8080"  # b learns the owner instead
    assert a.owned() == {BUNDLE: S.OWNED} and b.owned() == {}
    assert a.count_owned() == 1 and a.count_owned(excluding=BUNDLE) == 0 and b.count_owned() == 0
    again = await a.acquire(BUNDLE)  # idempotent for the owner
    assert again.broker_id == "a:8080"


@pytest.mark.integration
async def test_unload_lifecycle(harness: Harness, clock: Clock) -> None:
    store = await harness.open()
    a = BundleOwnership(store, "a:8080", template("a"))
    await a.acquire(BUNDLE)
    releasing = await a.transition(BUNDLE, S.RELEASING)
    assert releasing is not None and releasing.data.disabled
    with pytest.raises(InvalidTransitionError):
        await a.transition(BUNDLE, S.SPLITTING)
    await a.release(BUNDLE)
    assert await read_owner(store, BUNDLE) is None
    assert a.owned() == {}
    with pytest.raises(OwnershipError):
        await a.release(BUNDLE)


@pytest.mark.integration
async def test_transfer_hands_over_without_a_gap(harness: Harness, clock: Clock) -> None:
    store_a, store_b, observer = await harness.open(), await harness.open(), await harness.open()
    a = BundleOwnership(store_a, "a:8080", template("a"))
    b = BundleOwnership(store_b, "b:8080", template("b"))
    await a.acquire(BUNDLE)
    with pytest.raises(OwnershipError, match="not being transferred"):
        await b.take_over(await read_owner(observer, BUNDLE))  # type: ignore[arg-type]
    await a.transition(BUNDLE, S.RELEASING, transfer_to="b:8080")
    handed = await read_owner(observer, BUNDLE)
    assert handed is not None and handed.data.transfer_to == "b:8080"
    taken = await b.take_over(handed)
    assert taken.broker_id == "b:8080"
    now = await read_owner(observer, BUNDLE)
    assert now is not None and now.broker_id == "b:8080" and now.session == store_b.session_id
    # The source's claim is stale now: its next move fails and drops the claim.
    with pytest.raises(OwnershipError, match="no longer owns"):
        await a.release(BUNDLE)
    assert a.owned() == {} and b.owned() == {BUNDLE: S.OWNED}
    with pytest.raises(OwnershipError):
        await b.take_over(handed)  # a second hand-off of the same record fails


@pytest.mark.integration
async def test_a_move_whose_answer_was_lost_keeps_the_claim(harness: Harness, clock: Clock) -> None:
    """ZooKeeper may apply a write after the client gave up on it (a stalled server): the
    record, still this session's, is a version past the claim. The next move dropped the
    claim ("no longer owns it") while the record stayed ours, as RELEASING here."""
    store = await harness.open()
    a = BundleOwnership(store, "a:8080", template("a"))
    owned = await a.acquire(BUNDLE)
    path = paths.ownership(BUNDLE)
    mine = msgspec.structs.replace(template("a"), broker_id="a:8080")
    lost = mine.in_state(S.RELEASING, transfer_to="b:8080")
    await store.put(path, lost.to_json(), owned.version)  # the move whose answer was lost
    again = await a.transition(BUNDLE, S.RELEASING, transfer_to="b:8080")  # tried again
    assert again is not None and again.data == lost and a.owned() == {BUNDLE: S.RELEASING}
    back = await a.transition(BUNDLE, S.OWNED)  # then taken back: at the record's version
    assert back is not None and a.owned() == {BUNDLE: S.OWNED}
    now = await read_owner(store, BUNDLE)
    assert now is not None and now.state is S.OWNED and now.version == back.version
    # another move is checked from the state the record holds: RELEASING -> SPLITTING is none
    await store.put(path, lost.to_json(), back.version)
    with pytest.raises(InvalidTransitionError):
        await a.transition(BUNDLE, S.SPLITTING)
    assert a.owned() == {BUNDLE: S.RELEASING}
    await store.put(path, mine.to_json(), (await read_owner(store, BUNDLE)).version)  # type: ignore[union-attr]
    await a.release(BUNDLE)  # a lost write before a delete
    assert await read_owner(store, BUNDLE) is None
    # (a record another session took over is not adopted: the transfer test above)
    # A record of this session with no claim at all (a take-over whose answer was lost): the
    # broker could neither unload nor transfer it ("does not own it") while it lived.
    await store.put(path, mine.to_json(), -1, ephemeral=True)
    assert a.owned() == {}
    moved = await a.transition(BUNDLE, S.RELEASING, transfer_to="b:8080")
    assert moved is not None and a.owned() == {BUNDLE: S.RELEASING}
    await a.release(BUNDLE)
    assert await read_owner(store, BUNDLE) is None
    with pytest.raises(OwnershipError, match="does not own it"):
        await a.release(BUNDLE)  # nothing there: still refused


@pytest.mark.integration
async def test_suspended_owner_claims_nothing(harness: Harness, clock: Clock) -> None:
    store = await harness.open()
    a = BundleOwnership(store, "a:8080", template("a"))
    await a.acquire(BUNDLE)
    await harness.partition(store)
    await eventually(lambda: a.owned() == {}, clock, what="claims hidden", timeout_s=5)
    assert a.state_of(BUNDLE) is S.FREE and a.count_owned() == 0
    await harness.heal(store)
    await eventually(lambda: a.owned() == {BUNDLE: S.OWNED}, clock, what="claims back")


@pytest.mark.integration
async def test_session_loss_reacquires_or_reports_lost(harness: Harness, clock: Clock) -> None:
    store_a, store_b = await harness.open(), await harness.open()
    a = BundleOwnership(store_a, "a:8080", template("a"))
    b = BundleOwnership(store_b, "b:8080", template("b"))
    other = BundleName.parse("public/default/0x40000000_0x80000000")
    await a.acquire(BUNDLE)
    await a.acquire(other)
    lost: list[BundleName] = []
    a.add_lost_listener(lost.append)
    await harness.partition(store_a)
    # While a is cut off its session expires and b takes one of its bundles.
    await eventually(lambda: _free(store_b, other), clock, what="a's records expire", timeout_s=15)
    assert (await b.acquire(other)).broker_id == "b:8080"
    await harness.heal(store_a)
    await eventually(
        lambda: a.owned() == {BUNDLE: S.OWNED} and lost == [other],
        clock,
        what="a re-acquires one bundle and reports the other lost",
        timeout_s=10,
    )
    owner = await read_owner(store_b, BUNDLE)
    assert owner is not None and owner.session == store_a.session_id


async def _free(store: object, bundle: BundleName) -> bool:
    from ballast.metadata.store import MetadataStore

    assert isinstance(store, MetadataStore)
    return await store.exists(paths.ownership(bundle)) is None
