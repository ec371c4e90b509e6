"""Properties of the coordination recipes under random interleavings of operations and faults
(memory backend, virtual time, derandomized hypothesis)."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from ballast.clock import VirtualClock, run_virtual
from ballast.coordination.election import LeaderElection, LeaderInfo, Leadership
from ballast.coordination.ownership import (
    BundleOwnership,
    InvalidTransitionError,
    OwnershipData,
    OwnershipError,
    OwnershipState,
    read_owner,
)
from ballast.metadata import paths
from ballast.metadata.factory import MetadataStores
from ballast.metadata.memory import MemoryServer
from ballast.metadata.store import (
    Check,
    ConnectionState,
    Create,
    MetadataError,
    MetadataStore,
    MultiOpError,
)
from ballast.model.bundles import BundleName
from tests.support.harness import memory

BROKERS = 3
BUNDLES = [BundleName.parse(f"t/ns/0x{i:08x}_0x{i + 1:08x}") for i in range(3)]

broker = st.integers(0, BROKERS - 1)
bundle = st.integers(0, len(BUNDLES) - 1)
ownership_actions = st.lists(
    st.one_of(
        st.tuples(st.just("acquire"), broker, bundle),
        st.tuples(st.just("release"), broker, bundle),
        st.tuples(st.just("unload"), broker, bundle),
        st.tuples(st.just("transfer"), broker, bundle, broker),
        st.tuples(st.just("partition"), broker),
        st.tuples(st.just("heal"), broker),
        st.tuples(st.just("expire"), broker),
        st.tuples(st.just("wait"), st.sampled_from([0.5, 1.0, 3.0])),
    ),
    max_size=40,
)


async def settle(clock: VirtualClock) -> None:
    await clock.sleep(0.01)  # let queued callbacks and repair tasks run


def check_single_owner(
    server: MemoryServer, stores: list[MetadataStore], owners: list[BundleOwnership]
) -> None:
    for target in BUNDLES:
        serving = [
            i for i, owner in enumerate(owners) if owner.owned().get(target) is OwnershipState.OWNED
        ]
        assert len(serving) <= 1, f"{target} served by brokers {serving}"
        if serving:
            node = server.nodes.get(paths.ownership(target))
            assert node is not None, f"{target} served without a record"
            assert node.ephemeral_owner == stores[serving[0]].session_id


@given(ownership_actions)
@settings(max_examples=150)
def test_never_two_owners(actions: list[tuple[object, ...]]) -> None:
    async def scenario(clock: VirtualClock) -> None:
        stores_factory = MetadataStores(clock)
        server = stores_factory.server("memory:")
        stores = [
            await stores_factory.connect("memory:", session_timeout_s=2.0) for _ in range(BROKERS)
        ]
        owners = [
            BundleOwnership(store, f"b{i}:8080", OwnershipData(native_url=f"pulsar://b{i}:6650"))
            for i, store in enumerate(stores)
        ]
        for action in actions:
            kind = action[0]
            try:
                if kind == "acquire":
                    await owners[action[1]].acquire(BUNDLES[action[2]])  # type: ignore[index]
                elif kind == "release":
                    await owners[action[1]].release(BUNDLES[action[2]])  # type: ignore[index]
                elif kind == "unload":
                    await owners[action[1]].transition(  # type: ignore[index]
                        BUNDLES[action[2]],
                        OwnershipState.RELEASING,  # type: ignore[index]
                    )
                elif kind == "transfer":
                    source, target, dest = action[1], BUNDLES[action[2]], action[3]  # type: ignore[index]
                    await owners[source].transition(  # type: ignore[index]
                        target, OwnershipState.RELEASING, transfer_to=f"b{dest}:8080"
                    )
                    current = await read_owner(stores[dest], target)  # type: ignore[index]
                    if current is not None:
                        await owners[dest].take_over(current)  # type: ignore[index]
                elif kind == "partition":
                    memory(stores[action[1]]).partition()  # type: ignore[index]
                elif kind == "heal":
                    memory(stores[action[1]]).heal()  # type: ignore[index]
                elif kind == "expire":
                    server.expire_session(stores[action[1]].session_id)  # type: ignore[index]
                else:
                    await clock.sleep(float(action[1]))  # type: ignore[arg-type]
            except (OwnershipError, InvalidTransitionError, MetadataError):
                pass  # refused moves are fine; what matters is the invariant below
            await settle(clock)
            check_single_owner(server, stores, owners)

    run_virtual(scenario)


@dataclass
class Candidate:
    election: LeaderElection
    store: MetadataStore
    terms: list[Leadership]


election_actions = st.lists(
    st.one_of(
        st.tuples(st.just("partition"), broker),
        st.tuples(st.just("heal"), broker),
        st.tuples(st.just("expire"), broker),
        st.tuples(st.just("write"), broker),
        st.tuples(st.just("stale-write"), broker),
        st.tuples(st.just("wait"), st.sampled_from([0.5, 1.0, 3.0])),
    ),
    max_size=30,
)


@given(election_actions)
@settings(max_examples=100)
def test_one_leader_and_stale_epochs_never_write(actions: list[tuple[object, ...]]) -> None:
    async def scenario(clock: VirtualClock) -> None:
        factory = MetadataStores(clock)
        server = factory.server("memory:")
        candidates: list[Candidate] = []
        for i in range(BROKERS):
            store = await factory.connect("memory:", session_timeout_s=2.0)
            election = LeaderElection(store, LeaderInfo(broker_id=f"b{i}", service_url=""), clock)
            candidate = Candidate(election, store, [])
            election.add_listener(
                lambda term, c=candidate: c.terms.append(term) if term is not None else None
            )
            await election.start()
            candidates.append(candidate)
        writes = 0
        for action in actions:
            kind, who = action[0], action[1]
            if kind == "wait":
                await clock.sleep(float(who))  # type: ignore[arg-type]
            elif kind in ("partition", "heal"):
                store = memory(candidates[who].store)  # type: ignore[index]
                store.partition() if kind == "partition" else store.heal()
            elif kind == "expire":
                server.expire_session(candidates[who].store.session_id)  # type: ignore[index]
            else:
                candidate = candidates[who]  # type: ignore[index]
                if not candidate.terms or candidate.store.state is not ConnectionState.CONNECTED:
                    continue
                term = candidate.terms[-1]  # possibly stale on purpose
                writes += 1
                path = f"/writes/{writes}"
                try:
                    current = candidate.election.leadership
                    if kind == "write" and current is not None:
                        await candidate.election.fenced_multi(current, [Create(path, b"")])
                    else:
                        await candidate.store.multi(
                            [
                                Check(paths.LEADER_EPOCH, term.epoch_version),
                                Check(paths.LEADER, term.record_version),
                                Create(path, b""),
                            ]
                        )
                except (MultiOpError, MetadataError):
                    continue
                # It landed: it must have been written in the current term, by its leader.
                epoch = server.get(paths.LEADER_EPOCH)
                leader = server.get(paths.LEADER)
                assert epoch is not None and int(epoch.value) == term.epoch
                assert (
                    leader is not None and leader.stat.ephemeral_owner == candidate.store.session_id
                )
            await clock.sleep(0.01)
            leaders = [
                c
                for c in candidates
                if c.election.is_leader and c.store.state is ConnectionState.CONNECTED
            ]
            assert len(leaders) <= 1
        # Heal everything; the election converges to exactly one leader.
        for candidate in candidates:
            memory(candidate.store).heal()
        await clock.sleep(10.0)
        leaders = [c for c in candidates if c.election.is_leader]
        assert len(leaders) == 1
        record = server.get(paths.LEADER)
        assert record is not None and record.stat.ephemeral_owner == leaders[0].store.session_id
        terms = sorted(t.epoch for c in candidates for t in c.terms)
        assert len(terms) == len(set(terms)), "two leaderships shared an epoch"
        for candidate in candidates:
            await candidate.election.stop()

    run_virtual(scenario)
