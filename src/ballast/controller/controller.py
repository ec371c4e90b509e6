"""The controller: what the elected leader runs (Pulsar's leader-only load-manager tasks, with
Kafka's controller structure).

One :class:`~ballast.controller.events.EventManager` serialises everything: reports arriving
(Pulsar's ``updateAll``, debounced), membership changes (a dead or bounced broker's bundles are
placed at once), ownership changes, placement of unowned bundles, the periodic shedding cycle,
split checks, the periodic writes of broker time averages and bundle data, and admin requests.
Handlers decide from the image; moves go to brokers through the command channel stamped with
the leader's epoch; every store write of the leader is fenced by that epoch.

A new leader rebuilds its image from the store (brokers, namespaces, policies, owners, bundle
data). When leadership is lost the node calls :meth:`Controller.abandon` first — the controller
stops acting at once — then :meth:`Controller.stop` cleans up.

Concurrency contract: one event loop; image changes happen only in the event task.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Sequence
from typing import Any

import msgspec

from ballast.balance.cycle import run_shedding_cycle
from ballast.balance.decisions import Transfer, Unload
from ballast.balance.placement.select import select_broker_for_assignment
from ballast.balance.placement.strategies import PlacementState
from ballast.balance.shedding.registry import shedding_strategy
from ballast.balance.split import run_split_cycle
from ballast.clock import Clock
from ballast.controller.admin import AdminHandlers
from ballast.controller.channel import ControllerChannel
from ballast.controller.decision_log import CycleListener, DecisionListener, DecisionLog
from ballast.controller.event_types import (
    AdoptOrphans,
    DrainingChanged,
    MembershipEvent,
    NoBrokerError,
    OwnershipChanged,
    PlaceBundle,
    RequestEvent,
    SheddingTick,
    UpdateAll,
    WriteLoadData,
)
from ballast.controller.events import EventManager, PreemptedError
from ballast.controller.failover import Failover
from ballast.controller.history import HistoryRecorder, HistorySink
from ballast.controller.image import ClusterImage
from ballast.controller.leftovers import drop_namespace_parent, left_owned, sweep_parents
from ballast.controller.loading import (
    SheddingMemory,
    list_namespaces,
    load_bundle_data,
    load_failure_domains,
    load_isolation,
    load_namespace,
    load_shedding_memory,
    scan_owners,
)
from ballast.controller.moves import MoveExecutor, MoveFinished, move_reply
from ballast.controller.requests import AnyRequest, ClusterTransport, RequestReply, failed
from ballast.coordination.election import LeaderElection, Leadership
from ballast.coordination.ownership import read_owner
from ballast.coordination.registry import BrokerRegistry, MembershipChange, read_draining
from ballast.metadata import paths
from ballast.metadata.store import (
    MetadataStore,
    NodeExistsError,
    Notification,
    Op,
    SetValue,
    Stat,
    WatchHandle,
)
from ballast.model.bundles import BundleName
from ballast.model.codec import ModelError
from ballast.model.config import (
    NamespaceConfig,
    PlacementConfig,
    Settings,
    SheddingConfig,
    SplitConfig,
)
from ballast.model.loaddata import LocalBrokerData
from ballast.model.naming import NamespaceName

log = logging.getLogger(__name__)

UPDATE_DEBOUNCE_S = 0.1


class Controller:
    """The leader's cluster manager, for one leadership term."""

    def __init__(
        self,
        *,
        leadership: Leadership,
        election: LeaderElection,
        store: MetadataStore,
        settings: Settings,
        clock: Clock,
        transport: ClusterTransport,
        rng: random.Random,
        leader_id: str,
        registry: BrokerRegistry,
        decision_listeners: Sequence[DecisionListener] = (),
        history: HistorySink | None = None,
        cycle_listeners: Sequence[CycleListener] = (),
    ) -> None:
        """``decision_listeners`` hear every decision (:attr:`log_decision`), ``cycle_listeners``
        every shedding cycle's outcome; ``history`` (``loadBalancerHistoryPath``) receives
        the leader's view of the cluster every shedding cycle."""
        self.leadership = leadership
        self.epoch = leadership.epoch
        self.election = election
        self.store = store
        self.settings = settings
        self.clock = clock
        self.rng = rng
        self.leader_id = leader_id
        # The broker's own view of the registry (started and stopped by the broker): it has
        # seen every broker's last report, so it knows what a broker that died held.
        self.registry = registry
        self.cluster = settings.get_str("clusterName")
        self.shedding_config = SheddingConfig.from_settings(settings)
        self.placement_config = PlacementConfig.from_settings(settings)
        self.split_config = SplitConfig.from_settings(settings)
        self.namespace_config = NamespaceConfig.from_settings(settings)
        self.shedder = shedding_strategy(self.shedding_config.strategy)
        self.strategy_config = self.shedder.config_from_settings(settings)
        self.strategy_state: Any = self.shedder.initial_state()
        self.placement_state = PlacementState()
        self.image = ClusterImage()
        self.events = EventManager(clock, on_lost_leadership=self._lost, name="controller")
        self.channel = ControllerChannel(transport, clock)
        self.moves = MoveExecutor(self.channel, self.epoch, self._move_finished)
        self.admin = AdminHandlers(self)
        self.failover = Failover(self)
        self._ownership_watches: dict[NamespaceName, WatchHandle] = {}
        self._draining_watch: WatchHandle | None = None
        # broker -> the session of its draining record (read_draining)
        self._draining_records: dict[str, int | None] = {}
        self._waiters: dict[int, asyncio.Future[RequestReply]] = {}
        self.running = False
        self._abandoned = False
        self.last_shedding: dict[str, Any] = {}
        self._parsed_reports: dict[str, tuple[int, int | None, LocalBrokerData]] = {}
        self._remembered = b""
        self.decisions = DecisionLog(clock, decision_listeners, cycle_listeners)
        self.decisions_log = self.decisions.entries  # the recent ones, oldest first
        self.log_decision = self.decisions.record
        self.history = HistoryRecorder(history) if history is not None else None

    # -- life cycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Rebuild the image from the store and start deciding."""
        self._register_handlers()
        await self._rebuild()
        if self._abandoned:  # leadership was lost while the image was rebuilt: never start
            return
        self.registry.add_listener(self._on_membership)
        self.events.start()
        self.running = True
        self.events.put(UpdateAll())
        self.events.put(DrainingChanged())  # before any placement: who is shutting down
        self.events.put(AdoptOrphans())
        self._schedule_shedding()
        self.events.defer(
            "write-load-data",
            self.settings.get_int("loadBalancerResourceQuotaUpdateIntervalMinutes") * 60,
            WriteLoadData,
        )
        log.info("controller of epoch %d started on %s", self.epoch, self.leader_id)

    def abandon(self) -> None:
        """Leadership is gone: stop acting now. Nothing more is decided (the event being
        handled is cancelled at its next await, the queued ones dropped) or sent (the channel
        is halted), and admin requests waiting on a move are told the leader is gone."""
        self._abandoned = True
        self.running = False
        self.events.halt()
        self.channel.halt()
        self._fail_waiters()

    def _fail_waiters(self) -> None:
        lost = f"leadership of epoch {self.epoch} was lost before the move finished; it may "
        reply = RequestReply(
            ok=False, status=503, message=lost + "or may not have happened: check and retry"
        )
        waiters, self._waiters = self._waiters, {}
        for waiter in (w for w in waiters.values() if not w.done()):
            waiter.set_result(reply)

    async def stop(self) -> None:
        self.abandon()
        await self.events.stop()
        await self.moves.stop()
        await self.channel.stop()
        self.registry.remove_listener(self._on_membership)
        for watch in self._ownership_watches.values():
            watch.cancel()
        self._ownership_watches.clear()
        if self._draining_watch is not None:
            self._draining_watch.cancel()
        if self.history is not None:
            await self.history.close()

    def _lost(self, reason: str) -> None:
        log.warning("controller of epoch %d lost leadership: %s", self.epoch, reason)
        self.abandon()

    def _register_handlers(self) -> None:
        self.events.register(UpdateAll, self._update_all)
        self.events.register(MembershipEvent, self._membership)
        self.events.register(DrainingChanged, self._draining_changed)
        self.events.register(AdoptOrphans, self.failover.adopt_orphans)
        self.events.register(OwnershipChanged, self.failover.ownership_changed)
        self.events.register(SheddingTick, self._shedding)
        self.events.register(WriteLoadData, self._write_load_data)
        self.events.register(PlaceBundle, self._place)
        self.events.register(MoveFinished, self._apply_move)
        self.events.register(RequestEvent, self._request)

    async def _rebuild(self) -> None:
        """A new leader's image, from the store (Kafka's replay of the metadata)."""
        image = self.image
        for namespace in await list_namespaces(self.store):
            await self.track_namespace(namespace)
        await sweep_parents(self.store, image.namespaces)  # a deletion the last leader left
        image.isolation = await load_isolation(self.store, self.cluster)
        image.failure_domains = await load_failure_domains(self.store, self.cluster)
        image.bundle_data = await load_bundle_data(self.store)
        memory = await load_shedding_memory(self.store)
        if memory is not None:
            self._restore_shedding(memory)
        # Armed before the DrainingChanged that start() queues reads the records: a broker
        # that begins to drain after that read is told by the watch.
        self._draining_watch = await self.store.watch(paths.DRAINING, self._on_draining)
        for broker in self.registry.brokers():
            self.channel.add_broker(broker)

    def _restore_shedding(self, memory: SheddingMemory) -> None:
        """Carry on from the last leader: the grace period of its recent moves always; its
        strategy's state when it ran the same strategy."""
        self.image.recently_unloaded_bundles.update(memory.recently_unloaded_bundles)
        self.image.recently_unloaded_brokers.update(memory.recently_unloaded_brokers)
        state = memory.state_of(self.shedder.name, self.shedder.state_type)
        if state is not None:
            self.strategy_state = state
        self._remembered = memory.to_json()

    async def _remember_shedding(self) -> None:
        """Store the shedding memory (fenced) when it changed since it was last stored."""
        memory = SheddingMemory(
            strategy=self.shedder.name,
            state=msgspec.to_builtins(self.strategy_state),
            recently_unloaded_bundles=dict(self.image.recently_unloaded_bundles),
            recently_unloaded_brokers=dict(self.image.recently_unloaded_brokers),
        ).to_json()
        if memory != self._remembered:
            await self._fenced_put_all([SetValue(paths.SHEDDING_STATE, memory)])
            self._remembered = memory

    async def track_namespace(self, namespace: NamespaceName) -> None:
        """Load a namespace into the image and watch its bundles' owners."""
        state = await load_namespace(self.store, namespace)
        if state is None:
            return
        self.image.namespaces[namespace] = state.bundles
        if state.anti_affinity_group:
            self.image.anti_affinity[str(namespace)] = state.anti_affinity_group
        if namespace not in self._ownership_watches:
            self._ownership_watches[namespace] = await self.store.watch(
                paths.namespace_ownership(namespace), self._on_ownership(namespace)
            )
        self.image.set_owners(namespace, await scan_owners(self.store, namespace))

    def untrack_namespace(self, namespace: NamespaceName) -> None:
        watch = self._ownership_watches.pop(namespace, None)
        if watch is not None:
            watch.cancel()
        self.image.namespaces.pop(namespace, None)
        self.image.anti_affinity.pop(str(namespace), None)
        self.image.set_owners(namespace, {})
        self.image.forget_namespace(namespace)

    # -- entry points for the broker ----------------------------------------------------------

    async def place(self, bundle: BundleName) -> str:
        """Choose the broker for an unowned bundle (a lookup at the leader)."""
        result: str = await self.events.put(PlaceBundle(bundle)).result
        return result

    async def request(self, request: AnyRequest) -> RequestReply:
        """Carry out an admin (or drain) request, serialised with every other decision; a
        request that starts a move returns when the move has finished."""
        if not self.running:
            return RequestReply(ok=False, status=503, message="not the leader")
        try:
            reply = await self.events.put(RequestEvent(request)).result
        except PreemptedError:
            return RequestReply(ok=False, status=503, message="leadership was lost; retry")
        if isinstance(reply, asyncio.Future):
            reply = await reply
        assert isinstance(reply, RequestReply)
        return reply

    def completion(self, move_id: int) -> asyncio.Future[RequestReply]:
        """A future resolved when move ``move_id`` finishes."""
        future: asyncio.Future[RequestReply] = asyncio.get_running_loop().create_future()
        self._waiters[move_id] = future
        return future

    def choose(self, bundle: BundleName) -> tuple[str, str] | None:
        """Placement for ``bundle`` (recording the preallocation): the broker and why, or
        None when no broker can take it."""
        return self._choose(bundle)

    # -- event sources ----------------------------------------------------------------------

    def _on_membership(self, change: MembershipChange) -> None:
        if self.running:
            self.events.put(MembershipEvent(change))

    def _on_ownership(self, namespace: NamespaceName) -> Any:
        def changed(_notification: Notification) -> None:
            if self.running:
                self.events.defer(
                    f"owners-{namespace}", UPDATE_DEBOUNCE_S, lambda: OwnershipChanged(namespace)
                )

        return changed

    def _on_draining(self, _notification: Notification) -> None:
        if self.running:
            self.events.put(DrainingChanged())

    def _move_finished(self, event: MoveFinished) -> None:
        if self.running:
            self.events.put(event)

    def _schedule_shedding(self) -> None:
        self.events.defer("shedding", self.shedding_config.interval_ms / 1000, SheddingTick)

    # -- handlers ---------------------------------------------------------------------------

    async def _update_all(self, _event: UpdateAll) -> None:
        """Pulsar's ``updateAll``: take every broker's report, update bundle data and time
        averages, then check for bundles to split."""
        reports: dict[str, tuple[LocalBrokerData, int | None]] = {}
        parsed: dict[str, tuple[int, int | None, LocalBrokerData]] = {}
        for broker, entry in self.registry.brokers().items():
            known = self._parsed_reports.get(broker)
            if known is not None and known[:2] == (entry.version, entry.session):
                report = known[2]  # the record did not change: the same report
            else:
                try:
                    report = LocalBrokerData.from_json(entry.data)
                except ModelError:
                    log.warning("report of %s is unreadable; broker ignored", broker)
                    continue
            parsed[broker] = (entry.version, entry.session, report)
            reports[broker] = (report, entry.session)
        self._parsed_reports = parsed
        self.image.update_all(reports)
        self._apply_draining()
        self._check_splits()

    async def _draining_changed(self, _event: DrainingChanged) -> None:
        self._draining_records = await read_draining(self.store)
        self._apply_draining()

    def _apply_draining(self) -> None:
        """Mark the brokers that recorded they are shutting down: placement and shedding
        leave them out, whichever leader the drain request reaches first."""
        for broker, session in self._draining_records.items():
            view = self.image.brokers.get(broker)
            if view is not None and view.session == session and not view.draining:
                view.draining = True
                log.info("%s is shutting down: nothing more is placed on it", broker)

    def _check_splits(self) -> None:
        if not self.running or not self.split_config.enabled or len(self.image.brokers) <= 1:
            return
        result = run_split_cycle(self.image.snapshot(), self.split_config)
        for split in result.decisions:
            bundle = str(split.bundle)
            owner = self.image.owners.get(bundle) or split.broker
            if bundle in self.image.moving or not self.image.bundle_exists(split.bundle):
                continue
            self.image.moving.add(bundle)
            self.log_decision("split", bundle, owner, None, str(split.reason), origin="split")
            self.moves.split(
                bundle,
                owner,
                self.split_config.default_algorithm,
                (),
                self.split_config.unload_after_split,
            )

    async def _membership(self, event: MembershipEvent) -> None:
        """Joins, leaves and bounces update the image at once (placement must know who is
        alive); a dead or bounced broker's bundles are placed right away. Report updates
        alone are debounced into one UpdateAll."""
        change = event.change
        for broker in change.joined:
            self.channel.add_broker(broker)
        for broker in change.left:
            await self.channel.remove_broker(broker)
        if change.membership_changed:
            await self._update_all(UpdateAll())
        for broker in (*change.left, *change.bounced):
            self.failover.broker_gone(broker, left=broker in change.left)
        if change.left:  # its ownership records went with its session
            await sweep_parents(self.store, self.image.namespaces)
        if change.joined:
            self.failover.broker_joined()
        if change.updated and not change.membership_changed:
            self.events.defer("update-all", UPDATE_DEBOUNCE_S, UpdateAll)

    async def _place(self, event: PlaceBundle) -> str:
        bundle = event.bundle
        owner = self.image.owners.get(str(bundle))
        if owner is not None and owner in self.image.brokers:
            return owner
        started = self.start_assign(bundle, "", origin="lookup")
        if started is None:
            raise NoBrokerError(f"no broker can take bundle {bundle}")
        return started[0]

    def _choose(self, bundle: BundleName) -> tuple[str, str] | None:
        """Placement with preallocation bookkeeping (Pulsar's ``selectBrokerForAssignment``)."""
        if bundle.namespace.is_heartbeat:
            return None  # only its own broker may own a heartbeat bundle
        snapshot = self.image.snapshot()
        if not snapshot.brokers:
            return None
        result = select_broker_for_assignment(
            snapshot, str(bundle), self.placement_config, self.placement_state, self.rng
        )
        self.placement_state = result.state
        if result.decision is None:
            return None
        if result.preallocation is not None:
            p = result.preallocation
            self.image.preallocate(p.bundle, p.broker, p.data, p.new_bundle_data)
        return result.decision.broker, str(result.decision.reason)

    def start_assign(self, bundle: BundleName, why: str, origin: str) -> tuple[str, int] | None:
        """Place the unowned ``bundle`` and start its assignment: the chosen broker and the
        move's id, or None when no broker can take it. ``why`` (when given) is logged before
        placement's own reason."""
        choice = self._choose(bundle)
        if choice is None:
            return None
        broker, placed = choice
        reason = f"{why}; {placed}" if why else placed
        self.log_decision("assign", str(bundle), None, broker, reason, origin=origin)
        self.image.moving.add(str(bundle))
        return broker, self.moves.assign(str(bundle), broker)

    async def _shedding(self, _event: SheddingTick) -> None:
        """Every ``loadBalancerSheddingIntervalMinutes``: the shedding cycle, its moves issued
        as transfers (or unloads) and recorded as recently unloaded."""
        self._schedule_shedding()
        if not self.running:
            return
        now_ms = self.clock.wall_ms()
        snapshot = self.image.snapshot()
        if self.history is not None:
            self.history.record(self.image.load_data(), now_ms)
        result = run_shedding_cycle(
            snapshot,
            self.shedder,
            self.strategy_state,
            self.strategy_config,
            shedding=self.shedding_config,
            placement=self.placement_config,
            placement_state=self.placement_state,
            rng=self.rng,
            now_ms=now_ms,
        )
        self.strategy_state = result.strategy_state
        self.placement_state = result.placement_state
        self.last_shedding = dict(result.stats)
        self.decisions.cycle(self.leader_id, len(result.decisions), result.stats)
        for bundle in result.expired_unloaded_bundles:
            self.image.recently_unloaded_bundles.pop(bundle, None)
        for broker in result.expired_unloaded_brokers:
            self.image.recently_unloaded_brokers.pop(broker, None)
        for move in result.decisions:
            bundle = str(move.bundle)
            if bundle in self.image.moving:
                continue
            self.image.moving.add(bundle)
            self.image.recently_unloaded_bundles[bundle] = now_ms
            if isinstance(move, Transfer):
                self.image.recently_unloaded_brokers[move.source] = now_ms
                self.image.recently_unloaded_brokers[move.destination] = now_ms
                self.log_decision(
                    "transfer",
                    bundle,
                    move.source,
                    move.destination,
                    str(move.reason),
                    origin="shedding",
                )
                self.moves.transfer(bundle, move.source, move.destination)
            elif isinstance(move, Unload):
                self.image.recently_unloaded_brokers[move.broker] = now_ms
                self.log_decision(
                    "unload", bundle, move.broker, None, str(move.reason), origin="shedding"
                )
                self.moves.unload(bundle, move.broker)
        await self._remember_shedding()

    async def _apply_move(self, event: MoveFinished) -> None:
        """The one place a finished move changes the image."""
        self.image.moving.discard(event.bundle)
        owner, placing = event.owner, None
        parsed = BundleName.parse(event.bundle)
        if event.kind == "split" and event.ok and event.children:
            self.image.forget_bundle(event.bundle)
            await self.track_namespace(parsed.namespace)
        elif not event.ok:
            # A move that failed part way (a broker left, a command refused) may have left
            # the bundle anywhere: the image takes the owner the store has (a failed split
            # has changed no owner).
            found = await read_owner(self.store, parsed)
            owner = None if found is None else found.broker_id
            if event.kind != "split":
                self.image.record_owner(event.bundle, owner)
            gone = event.source is not None and event.source not in self.image.brokers
            if owner is None and gone and self.image.bundle_exists(parsed):
                # Its broker left mid-move: placed now, as that broker's other bundles were.
                why = f"its broker {event.source} left during its {event.kind}"
                placing = self.failover.assign(parsed, why)
        else:
            self.image.record_owner(event.bundle, event.owner)
        reply = move_reply(event, owner, placing)
        if parsed.namespace not in self.image.namespaces:  # deleted meanwhile (its unloads)
            for bundle, broker in left_owned(event, owner):  # nothing may own its bundles
                self.image.moving.add(bundle)
                self.moves.unload(bundle, broker)
            await drop_namespace_parent(self.store, parsed.namespace)
            if not event.ok:
                reply = failed(404, f"namespace {parsed.namespace} does not exist")
        waiter = self._waiters.pop(event.move_id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(reply)

    async def _write_load_data(self, _event: WriteLoadData) -> None:
        """Every ``loadBalancerResourceQuotaUpdateIntervalMinutes``: broker time averages and
        the top bundle data, fenced by the epoch (Pulsar's ``writeBundleDataOnZooKeeper``)."""
        self.events.defer(
            "write-load-data",
            self.settings.get_int("loadBalancerResourceQuotaUpdateIntervalMinutes") * 60,
            WriteLoadData,
        )
        top = self.settings.get_int("loadBalancerMaxNumberOfBundlesInBundleLoadReport")
        excluded = self.shedding_config.excluded_namespaces
        await self._fenced_put_all(self.image.load_data_records(top, excluded))

    async def _fenced_put_all(self, ops: list[SetValue]) -> None:
        """Write records under the epoch fence (missing ones are first created empty: a
        structural step, the fenced write sets the value)."""
        for op in ops:
            if await self.store.exists(op.path) is None:
                try:
                    await self.store.put(op.path, b"", -1)
                except NodeExistsError:
                    pass
        for start in range(0, len(ops), 100):
            await self.fenced(ops[start : start + 100])

    async def fenced(self, ops: Sequence[Op]) -> list[Stat | None]:
        """Write ``ops`` atomically under this controller's own term's fence."""
        return await self.election.fenced_multi(self.leadership, ops)

    async def _request(self, event: RequestEvent) -> Any:
        """A RequestReply, or a future of one (requests that start a move)."""
        return await self.admin.handle(event.request)
