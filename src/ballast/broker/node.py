"""One broker (seeds 000 and 003): it registers with its lookup data and load report, owns
bundles through the ownership recipe, serves their topics, answers lookups, campaigns for
leadership (running the controller while it leads), and carries out the leader's commands —
assign, unload, transfer, take over, split — rejecting those from a stale epoch.

The same code runs on virtual time with the memory store (tests, simulator), several brokers in
one process (standalone) and one broker per process on ZooKeeper.

Concurrency contract: one event loop; commands and lookups may interleave at awaits, and every
ownership change goes through the versioned, transition-checked ownership recipe.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ballast.broker.caches import NamespaceBundlesCache, NamespaceNotFoundError, OwnershipCache
from ballast.broker.heartbeat import HeartbeatReclaim
from ballast.broker.host_usage import HostUsageProvider
from ballast.broker.identity import BrokerIdentity
from ballast.broker.leader_calls import to_leader
from ballast.broker.lookup import (
    DEFAULT_OPTIONS,
    LookupAnswer,
    LookupOptions,
    LookupService,
    Placer,
)
from ballast.broker.reporter import LoadReporter
from ballast.broker.splitting import execute_split
from ballast.broker.topics import NamespaceTopicIndex, ServedTopics
from ballast.broker.traffic import TrafficSource
from ballast.clock import Cancellable, Clock
from ballast.controller.commands import (
    AnyCommand,
    AssignBundle,
    CloseTopics,
    CommandReply,
    ForgetBundle,
    SplitBundle,
    TakeOverBundle,
    TransferBundle,
    UnloadBundle,
)
from ballast.controller.controller import Controller
from ballast.controller.decision_log import CycleListener, DecisionListener
from ballast.controller.history import HistorySink
from ballast.controller.requests import ClusterTransport, DrainBroker
from ballast.coordination.election import LeaderElection, LeaderInfo, Leadership, read_leader
from ballast.coordination.ownership import (
    BundleOwnership,
    Owner,
    OwnershipError,
    OwnershipState,
    read_owner,
)
from ballast.coordination.registry import BrokerRegistration, BrokerRegistry
from ballast.metadata.store import ConnectionState, MetadataError, MetadataStore
from ballast.model.bundles import BundleName, NamespaceBundles
from ballast.model.config import ReportConfig, Settings, SplitConfig
from ballast.model.loaddata import NamespaceBundleStats
from ballast.model.naming import TopicName, heartbeat_namespace
from ballast.tasks import spawn

log = logging.getLogger(__name__)

# A stopping broker waits this long for its bundles to move after asking the leader to drain
# it, and asks again this soon when the leader could not be reached.
DRAIN_WAIT_S = 5.0
DRAIN_RETRY_S = 0.5
# A leader whose controller failed to start campaigns again after this pause.
CONTROLLER_RETRY_S = 5.0


@dataclass(frozen=True, slots=True)
class NodeStats:
    commands: int = 0
    stale_commands: int = 0


class BrokerNode:
    """A broker of the cluster."""

    def __init__(
        self,
        identity: BrokerIdentity,
        store: MetadataStore,
        settings: Settings,
        clock: Clock,
        transport: ClusterTransport,
        traffic: TrafficSource,
        host_usage: HostUsageProvider,
        rng: random.Random,
        *,
        history: HistorySink | None = None,
    ) -> None:
        """``history``: where this broker's controllers record the load history each
        shedding cycle while it leads (None: no history)."""
        self.identity = identity
        self._history = history
        self.broker_id = identity.broker_id
        self.store = store
        self.settings = settings
        self.clock = clock
        self.transport = transport
        self.traffic = traffic
        self._rng = rng
        self._split_config = SplitConfig.from_settings(settings)
        self._release_timeout_s = settings.get_int("namespaceBundleUnloadingTimeoutMs") / 1000
        self.registration = BrokerRegistration(store, self.broker_id, clock)
        self.registry = BrokerRegistry(store)
        self.topic_index = NamespaceTopicIndex(store)
        self.bundles = NamespaceBundlesCache(store, on_deleted=self.topic_index.forget)
        self.ownership = BundleOwnership(
            store,
            self.broker_id,
            identity.ownership_template(),
            still_a_bundle=self.bundles.still_a_bundle,
        )
        self.owners = OwnershipCache(store, on_deleted=self._ownership_deleted)
        self.served = ServedTopics()
        # Bundles this broker is making its own: set once their topics are served.
        self._taking: dict[BundleName, asyncio.Future[None]] = {}
        self._settle_timers: dict[BundleName, Cancellable] = {}  # see _settle_later
        self._claimed_order: tuple[
            tuple[int, int], list[tuple[str, BundleName, set[TopicName]]]
        ] = ((-1, -1), [])
        self._last_stats: tuple[tuple[int, int, int] | None, Mapping[str, NamespaceBundleStats]] = (
            None,
            MappingProxyType({}),
        )
        self.reporter = LoadReporter(
            identity,
            self.registration,
            host_usage,
            self.bundle_stats,
            ReportConfig.from_settings(settings),
            clock,
        )
        self.election = LeaderElection(
            store, LeaderInfo(broker_id=self.broker_id, service_url=identity.web_service_url), clock
        )
        self.controller: Controller | None = None
        self.lookups = LookupService(
            identity,
            self.bundles,
            self.owners,
            self.registry,
            self.acquire,
            self.leader_id,
            self._placer,
        )
        self._highest_epoch = 0
        self.commands = 0
        self.stale_commands = 0
        self.heartbeat_bundle = NamespaceBundles.equal(
            heartbeat_namespace(self.broker_id), 1
        ).bundles[0]
        self.ownership.add_lost_listener(self._on_bundle_lost)
        self.ownership.add_regained_listener(self._on_bundle_regained)
        # Told of every decision of this broker's controllers (attach before start).
        self.decision_listeners: list[DecisionListener] = []
        self.cycle_listeners: list[CycleListener] = []  # and of every shedding cycle
        self.stopped = False  # stop() began: no longer a member to route clients to
        self.closed = False  # its session is gone: it takes no more commands
        self._heartbeat = HeartbeatReclaim(self, self.heartbeat_bundle)

    # -- life cycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Register, start reporting, campaign for leadership, own the heartbeat namespace."""
        self.store.add_state_listener(self._on_store_state)
        await self.registry.start()
        await self.reporter.register()
        self.election.add_listener(self._on_leadership)
        await self.election.start()
        await self.acquire(self.heartbeat_bundle, False)
        self.reporter.start()

    def _on_store_state(self, state: ConnectionState) -> None:
        """Say when the metadata store goes and comes back (an operator lines these up across
        brokers), and stop serving every bundle when the session is lost."""
        if state is ConnectionState.SUSPENDED:
            log.warning(
                "%s lost its connection to the metadata store: it takes no new client until "
                "the connection is back, and stops serving its bundles if that takes longer "
                "than its session, %.0f s",
                self.broker_id,
                self.store.session_timeout_s,
            )
        elif state is ConnectionState.LOST:
            # Others may own its bundles now: stop serving them at once (their clients look
            # them up again); those it makes its own again are served again then.
            served = list(self.served.bundles_unordered())
            for bundle in served:
                self._on_bundle_lost(bundle)
            log.warning(
                "%s: its metadata store session expired; it stopped serving its %d bundles",
                self.broker_id,
                len(served),
            )
        elif not self.stopped:
            log.info("%s is connected to the metadata store again", self.broker_id)

    async def stop(self, *, graceful: bool = True, timeout_s: float | None = None) -> None:
        """Leave the cluster. Graceful: step down as leader, ask the leader to move this
        broker's bundles elsewhere and wait until they are owned elsewhere (or the deadline
        passes) before unregistering — the controlled shutdown that makes rolling restarts
        cheap. Not graceful: just end the session."""
        if self.stopped:
            return
        self.stopped = True
        if timeout_s is None:
            timeout_s = self.settings.get_int("brokerShutdownTimeoutMs") / 1000
        deadline = self.clock.monotonic() + timeout_s
        if graceful:
            # Before resigning: the leader elected next reads it before it places anything.
            try:
                await self.registration.mark_draining()
            except MetadataError as exc:
                log.warning("%s could not record that it is draining: %s", self.broker_id, exc)
        await self.election.stop()  # resigns: another broker takes over the controller
        await self._stop_controller()
        if graceful:
            await self._drain(deadline)
        # What could not be moved stops being served: its clients are disconnected and look
        # their topics up again (as a Pulsar broker closes every topic when it shuts down).
        for bundle in list(self.served.bundles_unordered()):
            self.served.remove_bundle(bundle)
        await self._heartbeat.stop()
        await self.reporter.stop()
        await self.registry.stop()
        await self.ownership.close()
        self.bundles.close()
        self.owners.close()
        self.topic_index.close()
        self.closed = True
        await self.store.close()

    async def kill(self) -> None:
        """Stop every task at once, touching nothing in the store (``kill -9``): what the
        broker held lapses with its session."""
        if self.closed:
            return
        self.stopped = True
        self.closed = True
        await self.election.abandon()
        if self.controller is not None:
            controller, self.controller = self.controller, None
            controller.abandon()
            await controller.stop()
        await self._heartbeat.stop()
        await self.reporter.stop()
        await self.registry.stop()
        await self.ownership.close()
        await self.registration.abandon()

    async def _drain(self, deadline: float) -> None:
        """Have the leader move this broker's bundles elsewhere, until none is left or the
        deadline. It ends early where waiting could not help (waiting would only hold the
        shutdown for brokerShutdownTimeoutMs): no other broker, none that can take a bundle
        (all the others stopping too), or no leader at all (every broker stopping at once:
        none is a candidate) for the wait of :func:`to_leader`."""
        while self.clock.monotonic() < deadline:
            await self._settle_releases()
            if not self._movable_bundles():
                break
            if not any(b != self.broker_id for b in self.registry.brokers()):
                log.info("%s is the only broker: nowhere to move its bundles", self.broker_id)
                break
            # The request follows the leadership (a new leader learns of the drain at once)
            # and gives up at the deadline.
            reply = await to_leader(self, DrainBroker(broker=self.broker_id), until=deadline)
            if reply.not_leader:
                log.info("%s: no leader to move its bundles", self.broker_id)
                break
            if reply.ok and not reply.result.get("moving") and reply.result.get("unplaced"):
                log.info("%s: no broker can take its bundles", self.broker_id)
                break
            if not reply.ok and reply.status != 503:
                log.warning("drain of %s refused: %s", self.broker_id, reply.message)
            wait_s = DRAIN_WAIT_S if reply.ok else DRAIN_RETRY_S
            await self._wait_for_empty(min(deadline, self.clock.monotonic() + wait_s))
        left = self._movable_bundles()
        if left:
            log.warning("%s leaves with %d bundles not moved", self.broker_id, len(left))

    async def _wait_for_empty(self, until: float) -> None:
        while self.clock.monotonic() < until and self._movable_bundles():
            await self.clock.sleep(0.1)

    def _movable_bundles(self) -> list[BundleName]:
        return [b for b in self.ownership.owned() if b != self.heartbeat_bundle]

    async def _settle_releases(self) -> None:
        for bundle, state in list(self.ownership.owned().items()):
            if state is OwnershipState.RELEASING:
                await self.settle_release(bundle)

    async def settle_release(self, bundle: BundleName) -> None:
        """End a transfer this broker is the source of when the leader's last command will
        not come (the leader stopped or lost its leadership mid-move): if the destination
        took the record over, forget the claim; if nobody did, release the bundle (the next
        lookup places it). Nothing happens to a bundle that is not releasing."""
        if self.ownership.state_of(bundle) is not OwnershipState.RELEASING:
            return
        try:
            current = await read_owner(self.store, bundle)
            if current is None or current.session != self.store.session_id:
                await self.ownership.forget(bundle)
            else:
                log.info("%s releases %s: its transfer was never completed", self.broker_id, bundle)
                await self.unload(bundle)
        except (OwnershipError, MetadataError) as exc:
            log.warning("settling the release of %s failed: %s", bundle, exc)

    def _settle_later(self, bundle: BundleName) -> None:
        """Settle this transfer of ``bundle`` if it is still releasing after the timeout. One
        timer a bundle, the latest transfer's: an earlier one's, firing while a later transfer
        was mid-hand-off, released the bundle under it."""

        def fire() -> None:
            self._settle_timers.pop(bundle, None)
            if not self.closed and self.ownership.state_of(bundle) is OwnershipState.RELEASING:
                spawn(f"settle-{self.broker_id}-{bundle}", self.settle_release(bundle))

        self._cancel_settle(bundle)
        self._settle_timers[bundle] = self.clock.call_later(self._release_timeout_s, fire)

    def _cancel_settle(self, bundle: BundleName) -> None:
        timer = self._settle_timers.pop(bundle, None)
        if timer is not None:
            timer.cancel()

    # -- leadership -------------------------------------------------------------------------

    def _on_leadership(self, leadership: Leadership | None) -> None:
        if leadership is None:
            if self.controller is not None:
                controller, self.controller = self.controller, None
                controller.abandon()  # stop acting now; clean up in the background
                spawn(f"controller-stop-{self.broker_id}", controller.stop())
            return
        self.controller = Controller(
            leadership=leadership,
            election=self.election,
            store=self.store,
            settings=self.settings,
            clock=self.clock,
            transport=self.transport,
            rng=random.Random(self._rng.random()),
            leader_id=self.broker_id,
            registry=self.registry,
            decision_listeners=self.decision_listeners,
            cycle_listeners=self.cycle_listeners,
            history=self._history,
        )
        spawn(
            f"controller-start-{self.broker_id}",
            self.controller.start(),
            on_death=self._controller_failed,
        )

    def _controller_failed(self, _name: str, exc: BaseException) -> None:
        """A leader whose controller could not start (a store failure while it rebuilt its
        image, a record it cannot read) steps down, rather than stay a leader that decides
        nothing: another broker takes over, or this one tries again after a pause."""
        reason = f"its controller failed to start: {exc}"
        spawn(
            f"step-down-{self.broker_id}",
            self.election.step_down(reason, pause_s=CONTROLLER_RETRY_S),
        )

    async def _stop_controller(self) -> None:
        if self.controller is not None:
            controller, self.controller = self.controller, None
            await controller.stop()

    def _placer(self) -> Placer | None:
        controller = self.controller
        return None if controller is None or not controller.running else controller.place

    async def leader_id(self) -> str | None:
        if self.controller is not None and self.controller.running:
            return self.broker_id
        leader = await read_leader(self.store)
        return None if leader is None else leader.broker_id

    # -- ownership and topics ---------------------------------------------------------------

    def _ownership_deleted(self, bundle: BundleName) -> None:
        self.lookups.forget(bundle)  # a bundle's kept answer goes with its record

    async def acquire(self, bundle: BundleName, load_topics: bool = True) -> Owner:
        """Own ``bundle`` (or learn who does) and, if ours, load its topics."""
        with self._taking_over(bundle):
            owner = await self.ownership.acquire(bundle)
            if owner.session == self.store.session_id and bundle not in self.served:
                await self._serve(bundle, load_topics=load_topics)
        self.owners.invalidate(bundle)
        return owner

    @contextlib.contextmanager
    def _taking_over(self, bundle: BundleName) -> Iterator[None]:
        """Mark ``bundle`` as being made this broker's own: its record says so before its topics
        are loaded, and a lookup reading the record sends clients here. A client opening one
        of its topics meanwhile waits (:meth:`open_topic`), as in Pulsar, where a bundle is
        served from the moment its ownership is acquired."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._taking[bundle] = done
        try:
            yield
        finally:
            if self._taking.get(bundle) is done:
                del self._taking[bundle]
            done.set_result(None)

    def _on_bundle_lost(self, bundle: BundleName) -> None:
        self.served.remove_bundle(bundle)
        self.owners.invalidate(bundle)
        if bundle == self.heartbeat_bundle and not self.stopped:
            self._heartbeat.start()  # no leader places it: the broker takes it back itself

    async def _on_bundle_regained(self, bundle: BundleName) -> None:
        """A bundle held before a session loss is this broker's again: serve it (its topics
        were let go at the loss)."""
        if self.stopped or bundle in self.served:
            return
        with self._taking_over(bundle):
            try:
                await self._serve(bundle)
            except MetadataError:  # its topics then join as clients open them
                await self._serve(bundle, load_topics=False)
        self.owners.invalidate(bundle)

    async def _serve(self, bundle: BundleName, *, load_topics: bool = True) -> None:
        """Serve ``bundle``, with its topics listed in the store (``load_topics``) or none
        yet: a topic joins its bundle when a client opens it."""
        topics = await self.topic_index.topics_in(bundle) if load_topics else []
        self.served.add_bundle(bundle, topics)

    def bundle_stats(self) -> Mapping[str, NamespaceBundleStats]:
        """Stats of every bundle this broker serves (the ``lastStats`` of its report), in
        bundle-name order. Read-only, and the same object until something in it may have
        changed: callers may skip what they derived from the previous one."""
        # Reports are rebuilt every minute while traffic and ownership mostly stay put: the
        # result is reused until the served map, the claims or the traffic change.
        revision = self.traffic.revision
        key = None if revision is None else (self.served.changes, self.ownership.changes, revision)
        cached_key, cached = self._last_stats
        if key is not None and key == cached_key:
            return cached
        changes = (self.served.changes, self.ownership.changes)
        claimed_changes, claimed = self._claimed_order
        if changes != claimed_changes:
            # the served bundles we hold, in name order: kept while the served map and the
            # claims stay the same (the traffic alone changes far more often)
            state_of = self.ownership.state_of
            owned = OwnershipState.OWNED
            claimed = [
                (name, bundle, topics)
                for name, bundle, topics in sorted(
                    (str(b), b, topics) for b, topics in self.served.bundle_topics()
                )
                if state_of(bundle) is owned
            ]
            self._claimed_order = (changes, claimed)
        traffic = self.traffic
        stats = MappingProxyType(
            {name: traffic.bundle_stats(bundle, topics) for name, bundle, topics in claimed}
        )
        self._last_stats = (key, stats)
        return stats

    async def open_topic(self, topic: TopicName) -> bool:
        """A client opens ``topic`` here (a producer or consumer connecting: Pulsar's
        ``getOrCreateTopic``). Served only if this broker owns the topic's bundle; False tells
        the client to look the topic up again."""
        if self.stopped:
            return False
        bundle = await self.lookups.bundle_of(topic)
        taking = self._taking.get(bundle)
        if taking is not None:  # owned by its record already, its topics not yet served
            await asyncio.shield(taking)
        if (
            self.ownership.state_of(bundle) is OwnershipState.FREE
            and (cached := self.owners.peek(bundle)) is not None
            and cached.session == self.store.session_id  # ours, by its record: adopt it
            and await self.ownership.adopt(bundle)
        ):
            with self._taking_over(bundle):
                await self._serve(bundle)
        if self.ownership.state_of(bundle) is not OwnershipState.OWNED or bundle not in self.served:
            return False
        if self.served.bundle_of(topic) != bundle:
            self.served.add_topic(topic, bundle)
        return True

    async def lookup(
        self, topic: TopicName, options: LookupOptions = DEFAULT_OPTIONS
    ) -> LookupAnswer:
        return await self.lookups.lookup(topic, options)

    # -- commands from the leader -----------------------------------------------------------

    async def handle_command(self, command: AnyCommand) -> CommandReply:
        """Carry out a leader's command; commands from an epoch older than the newest seen are
        rejected (a deposed leader cannot move bundles)."""
        self.commands += 1
        if command.epoch < self._highest_epoch:
            self.stale_commands += 1
            return CommandReply(
                ok=False,
                stale_epoch=True,
                message=f"epoch {command.epoch} < {self._highest_epoch}: not the current leader",
            )
        self._highest_epoch = command.epoch
        try:
            bundle = BundleName.parse(command.bundle)
            return await self._dispatch(bundle, command)
        # NamespaceNotFoundError: deleted while the command was on its way
        except (OwnershipError, MetadataError, ValueError, NamespaceNotFoundError) as exc:
            return CommandReply(ok=False, message=str(exc))
        except Exception as exc:
            # Answered, not raised: an error answer (500) is taken for a command that did not
            # arrive, and the leader's channel to this broker would send it again for ever,
            # every later command waiting behind it.
            log.exception("command %s failed", type(command).__name__)
            return CommandReply(ok=False, message=f"internal error: {type(exc).__name__}: {exc}")

    async def _dispatch(self, bundle: BundleName, command: AnyCommand) -> CommandReply:
        if isinstance(command, AssignBundle):
            owner = await self.acquire(bundle)
            if owner.broker_id != self.broker_id:
                return CommandReply(ok=False, message=f"{bundle} is owned by {owner.broker_id}")
            return CommandReply(ok=True)
        if isinstance(command, UnloadBundle):
            await self.unload(bundle)
            return CommandReply(ok=True)
        if isinstance(command, TransferBundle):
            await self.ownership.transition(
                bundle, OwnershipState.RELEASING, transfer_to=command.destination
            )
            # Stop serving: clients are sent to the destination (or look up again).
            self.served.remove_bundle(bundle, transfer_to=command.destination)
            self.owners.invalidate(bundle)
            # Should the leader never finish the move (it stopped mid-way), settle it here.
            self._settle_later(bundle)
            return CommandReply(ok=True)
        if isinstance(command, TakeOverBundle):
            current = await read_owner(self.store, bundle)
            if current is None:
                owner = await self.acquire(bundle)  # the source gave up: just own it
            else:
                with self._taking_over(bundle):
                    owner = await self.ownership.take_over(current)
                    await self._serve(bundle)
                self.owners.invalidate(bundle)
            ok = owner.broker_id == self.broker_id
            return CommandReply(ok=ok, message="" if ok else f"owned by {owner.broker_id}")
        if isinstance(command, ForgetBundle):
            self._cancel_settle(bundle)  # the transfer ended
            await self.ownership.forget(bundle)
            self.served.remove_bundle(bundle)
            self.owners.invalidate(bundle)
            return CommandReply(ok=True)
        if isinstance(command, SplitBundle):
            outcome = await execute_split(self, bundle, command, self._split_config)
            # No cut point is not a failure: like Pulsar, the bundle is left as it was.
            return CommandReply(
                ok=True,
                children=tuple(str(c) for c in outcome.children),
                message=f"{bundle} not split: {outcome.why_not}" if outcome.why_not else "",
            )
        if isinstance(command, CloseTopics):
            closed = 0
            for name in command.topics:
                topic = TopicName.parse(name)
                if self.served.bundle_of(topic) == bundle:
                    self.served.remove_topic(topic)  # its clients are disconnected
                    closed += 1
            return CommandReply(ok=True, message=f"closed {closed} of {len(command.topics)}")
        raise ValueError(f"unknown command {type(command).__name__}")

    async def unload(self, bundle: BundleName) -> None:
        """Pulsar's unload: mark the bundle disabled, close its topics, release ownership."""
        if self.ownership.state_of(bundle) is OwnershipState.OWNED:
            await self.ownership.transition(bundle, OwnershipState.RELEASING)
        self.served.remove_bundle(bundle)
        await self.ownership.release(bundle)
        self.owners.invalidate(bundle)


NodeFactory = Callable[[BrokerIdentity], BrokerNode]
