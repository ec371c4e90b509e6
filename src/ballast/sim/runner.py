"""Running a scenario through the real runtime on virtual time: real brokers and controller
(:class:`~ballast.broker.cluster.LocalCluster` on the memory store), the workload's traffic
(:class:`~ballast.sim.traffic.SimTraffic`) and clients (:class:`~ballast.sim.clients.SimClients`),
the scenario's events, and a record of every step.

At each step boundary ``t``: the state is measured (each running broker's load from the
traffic flowing through it, the cluster figures, topics without an owner, decisions since the
last step), the invariants are checked if asked, the events due before the next step are
applied at their times (stops, drains and restarts run in the background, as they take time),
and the topics' rates are set for the coming step. The same scenario, strategy and seed give
the same record, to the byte.

Concurrency contract: one virtual-time event loop (:func:`ballast.clock.run_virtual`).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import math
import random
from collections.abc import Coroutine, Iterator, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from ballast.broker.cluster import LocalCluster
from ballast.broker.host_usage import BrokerCapacity, HostUsageProvider, ModelledHostUsage
from ballast.broker.identity import BrokerIdentity
from ballast.broker.node import BrokerNode
from ballast.broker.topics import NamespaceTopicIndex
from ballast.clock import Clock, run_virtual
from ballast.controller.requests import CreateNamespace as CreateNamespaceRequest
from ballast.controller.requests import CreateTenant, SetAntiAffinityGroup
from ballast.metadata.store import MetadataStore
from ballast.model.config import resource_weights
from ballast.model.loaddata.usage import ResourceWeights
from ballast.model.naming import TopicName
from ballast.sim import metrics
from ballast.sim.clients import SimClients
from ballast.sim.events import (
    AddBrokers,
    BrokerSelection,
    CrashBrokers,
    CreateNamespace,
    CreateTopics,
    Event,
    RestartBrokers,
    ScaleRates,
    StopBrokers,
)
from ballast.sim.invariants import check_settled
from ballast.sim.metrics import Capacities, Decision
from ballast.sim.namespace_spec import NamespaceSpec
from ballast.sim.run_records import (
    BrokerRecord,
    CycleRecord,
    Progress,
    RunOptions,
    RunResult,
    SimulationError,
    StepRecord,
)
from ballast.sim.run_settings import effective_settings, history_sink
from ballast.sim.scenario import Scenario
from ballast.sim.traffic import SimTraffic
from ballast.sim.workload import Workload
from ballast.tasks import spawn

__all__ = [
    "BrokerRecord",
    "CycleRecord",
    "Progress",
    "RunOptions",
    "RunResult",
    "Simulation",
    "SimulationError",
    "StepRecord",
    "simulate",
]


def broker_identity(index: int) -> BrokerIdentity:
    """The ``index``-th broker of a simulation (``broker-000:8080``, ...)."""
    return BrokerIdentity(f"broker-{index:03d}", 8080, 6650)


class Simulation:
    """One run of one scenario."""

    def __init__(self, scenario: Scenario, options: RunOptions, clock: Clock) -> None:
        self.scenario = scenario
        self.options = options
        self.clock = clock
        self.settings, strategy = effective_settings(scenario, options)
        self.seed = scenario.seed if options.seed is None else options.seed
        self.result = RunResult(scenario, strategy, self.seed, self.settings)
        self.weights: ResourceWeights = resource_weights(self.settings)
        self.workload = Workload(_reseeded(scenario, self.seed))
        self.traffic = SimTraffic(self.workload, clock.monotonic)
        self.rng = random.Random(f"sim-{self.seed}")
        self.ids: list[str] = []
        self.capacities: list[BrokerCapacity] = []
        self.index_of: dict[str, int] = {}
        self.cluster = LocalCluster(
            clock,
            settings=self.settings,
            traffic=self.traffic,
            host_usage=self._host_usage,
            seed=self.seed,
            on_node=self._attach,
            history=history_sink(self.settings, options.history_subdir),
        )
        self.clients = SimClients(
            self.cluster,
            self.workload,
            self.traffic,
            clock,
            random.Random(f"clients-{self.seed}"),
            self._broker_index,
        )
        self._start_wall_ms = clock.wall_ms()
        self._background: set[asyncio.Task[None]] = set()
        # Brokers stopped for good (stop_brokers, or crash_brokers without restart_after): no
        # restart brings them back. Brokers down to come back (restarting, or crashed with
        # restart_after), and brokers whose start is under way (one start at a time each).
        self._retired: set[str] = set()
        self._returning: set[str] = set()
        self._starting: set[str] = set()
        self._seen_decisions = 0
        self._last_unowned = 0.0
        self._last_lookups = 0
        self._topic_index: NamespaceTopicIndex | None = None
        self._observer: MetadataStore | None = None
        self._checking: asyncio.Task[None] | None = None
        self._all_nodes: list[BrokerNode] = []

    # -- brokers --------------------------------------------------------------------------------

    def _broker_index(self, broker_id: str) -> int:
        return self.index_of[broker_id]

    def _host_usage(self, identity: BrokerIdentity) -> HostUsageProvider:
        return ModelledHostUsage(self.capacities[self.index_of[identity.broker_id]])

    def _attach(self, node: BrokerNode) -> None:
        self._all_nodes.append(node)
        self.clients.attach(node)
        node.decision_listeners.append(self._on_decision)
        node.cycle_listeners.append(self._on_cycle)

    def _since_start(self, entry: Mapping[str, Any]) -> float:
        """Seconds from the run's start to a leader's entry (its ``at``, wall ms)."""
        return (int(entry["at"]) - self._start_wall_ms) / 1000

    def _on_decision(self, entry: Mapping[str, Any]) -> None:
        self.result.decisions.append(
            Decision(
                t_s=self._since_start(entry),
                action=str(entry["action"]),
                bundle=str(entry["bundle"]),
                source=entry.get("broker"),
                destination=entry.get("destination"),
                origin=str(entry.get("origin", "")),
                reason=str(entry["reason"]),
            )
        )

    def _on_cycle(self, entry: Mapping[str, Any]) -> None:
        self.result.cycles.append(
            CycleRecord(
                t_s=self._since_start(entry),
                leader=str(entry["leader"]),
                moves=int(entry["moves"]),
                outcome=str(entry["outcome"]),
                reason=str(entry["reason"]),
                detail=str(entry["detail"]),
            )
        )

    def _new_broker(self, capacity: BrokerCapacity) -> str:
        index = len(self.ids)
        broker_id = broker_identity(index).broker_id
        self.ids.append(broker_id)
        self.capacities.append(capacity)
        self.index_of[broker_id] = index
        return broker_id

    async def _start_broker(self, broker_id: str) -> None:
        self.result.broker_starts.setdefault(broker_id, []).append(self.clock.monotonic())
        await self.cluster.add_broker(broker_identity(self.index_of[broker_id]))

    def running_ids(self) -> list[str]:
        return [n.broker_id for n in self.cluster.running()]

    def _select(self, selection: BrokerSelection, *, returning: bool = False) -> list[str]:
        """The running brokers a selection names; with ``returning`` (a stop or a crash, which
        then keeps them down), also those down to come back, as the scenario check counts
        them running: by index, among ``all``, and among those a count picks from."""
        running = sorted(self.running_ids(), key=self._broker_index)
        if returning:
            running = sorted(set(running) | self._returning, key=self._broker_index)
        if selection.indexes:
            wanted = [self.ids[i] for i in selection.indexes if i < len(self.ids)]
            return [b for b in wanted if b in running]
        if selection.everyone:
            return running
        count = min(selection.count, len(running))
        if selection.pick == "first":
            return running[:count]
        if selection.pick == "last":
            return running[-count:]
        if selection.pick == "random":
            return sorted(self.rng.sample(running, count), key=self._broker_index)
        current = self._broker_loads(running)
        ranked = sorted(running, key=lambda b: (-current[b], self._broker_index(b)))
        return sorted(ranked[:count], key=self._broker_index)

    # -- setup ----------------------------------------------------------------------------------

    async def setup(self) -> None:
        scenario = self.scenario
        for index in range(scenario.brokers):
            await self._start_broker(self._new_broker(scenario.capacity_of(index)))
        for _ in range(200):
            if self.cluster.leader() is not None:
                break
            await self.clock.sleep(0.05)
        else:
            raise SimulationError("no leader was elected")
        self._observer = await self.cluster.connect()
        self._topic_index = NamespaceTopicIndex(self._observer)
        await self._request(CreateTenant(tenant=scenario.tenant))
        for spec in scenario.namespaces:
            await self._create_namespace_records(spec)
        await self._create_topics(list(self.workload.names))
        self._follow_workload(0.0)
        self.clients.connect_new(np.arange(self.workload.count, dtype=np.int64))

    async def _request(self, request: Any) -> None:
        reply = await self.cluster.request(request)
        if not reply.ok:
            raise SimulationError(f"{type(request).__name__} refused: {reply.message}")

    async def _create_namespace_records(self, spec: NamespaceSpec) -> None:
        await self._request(CreateNamespaceRequest(namespace=spec.name, bundles=spec.bundles))
        if spec.anti_affinity_group:
            await self._request(
                SetAntiAffinityGroup(namespace=spec.name, group=spec.anti_affinity_group)
            )

    async def _create_topics(self, topics: list[TopicName]) -> None:
        assert self._topic_index is not None
        for topic in topics:
            await self._topic_index.create(topic)

    # -- events ---------------------------------------------------------------------------------

    def _background_task(self, name: str, coro: Coroutine[Any, Any, None]) -> None:
        task = spawn(name, coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def apply(self, event: Event) -> None:
        action = event.action
        self.result.event_times.append((self.clock.monotonic(), event.kind))
        if isinstance(action, AddBrokers):
            for _ in range(action.count):
                broker = self._new_broker(action.capacity or self.scenario.capacity)
                await self._start_broker(broker)
        elif isinstance(action, StopBrokers):
            for broker in self._select(action.brokers, returning=True):
                self._retired.add(broker)
                self._background_task(f"stop-{broker}", self._stop(broker, action.graceful))
        elif isinstance(action, CrashBrokers):
            for broker in self._select(action.brokers, returning=True):
                await self._crash(broker)
                if action.restart_after_s is None:
                    self._retired.add(broker)
                else:
                    self._returning.add(broker)
                    self._background_task(
                        f"restart-{broker}", self._later(action.restart_after_s, broker)
                    )
        elif isinstance(action, RestartBrokers):
            chosen = self._select(action.brokers)
            self._background_task("restarts", self._restart_all(chosen, action))
        elif isinstance(action, CreateNamespace):
            spec = action.namespace
            await self._create_namespace_records(spec)
            await self._new_topics(self.workload.add_namespace(spec))
        elif isinstance(action, CreateTopics):
            added = self.workload.add_topics(action.namespace, action.count, idle=action.idle)
            await self._new_topics(added)
        elif isinstance(action, ScaleRates):
            self._scale(action)

    async def _new_topics(self, topics: list[TopicName]) -> None:
        await self._create_topics(topics)
        self.traffic.grow()
        self._follow_workload(self.clock.monotonic())
        first = self.workload.count - len(topics)
        self.clients.connect_new(np.arange(first, self.workload.count, dtype=np.int64))

    def _follow_workload(self, t_s: float) -> None:
        """The traffic's rates (and message sizes, where they follow a series) at ``t_s``."""
        self.workload.follow_sizes(t_s)
        self.traffic.set_rates(self.workload.rates(t_s))

    def _scale(self, action: ScaleRates) -> None:
        if action.brokers is not None:
            chosen = {self._broker_index(b) for b in self._select(action.brokers)}
            topics = np.flatnonzero(np.isin(self.traffic.connected_to, list(chosen)))
            if action.namespace is not None:
                ours = self.workload.topics_of(action.namespace)
                topics = np.intersect1d(topics, ours)
        else:
            topics = self.workload.most_popular(action.namespace, action.share)
        self.workload.scale_rates(topics.astype(np.int64), action.factor)
        if action.size_factor != 1.0:
            self.workload.scale_sizes(topics.astype(np.int64), action.size_factor)
        self._follow_workload(self.clock.monotonic())

    async def _stop(self, broker: str, graceful: bool) -> None:
        node = self.cluster.nodes.get(broker)
        if node is None or node.stopped:
            return
        if not graceful:
            self.clients.broker_died(node)
        await self.cluster.stop_broker(broker, graceful=graceful)

    async def _crash(self, broker: str) -> None:
        node = self.cluster.nodes.get(broker)
        if node is None or node.stopped:
            return
        self.clients.broker_died(node)
        await self.cluster.crash_broker(broker)

    async def _later(self, delay_s: float, broker: str) -> None:
        await self.clock.sleep(delay_s)
        await self._bring_back(broker)

    async def _bring_back(self, broker: str) -> None:
        """Start a broker that went down to come back, unless it was since stopped for good,
        is running again or is being started by another restart."""
        self._returning.discard(broker)
        if broker in self._retired or broker in self._starting:
            return
        if broker in self.running_ids():
            return
        self._starting.add(broker)
        try:
            await self._start_broker(broker)
        finally:
            self._starting.discard(broker)

    async def _restart_all(self, brokers: list[str], action: RestartBrokers) -> None:
        for position, broker in enumerate(brokers):
            if position > 0 and action.interval_s > 0:
                await self.clock.sleep(action.interval_s)
            if broker in self._retired:
                continue  # stopped for good since the restart began: it stays down
            self._background_task(f"restart-{broker}", self._restart(broker, action))

    async def _restart(self, broker: str, action: RestartBrokers) -> None:
        if broker in self._returning or broker in self._starting:
            return  # already down to come back, or coming back: one restart at a time
        self._returning.add(broker)
        if action.graceful:
            await self._stop(broker, graceful=True)
        else:
            await self._crash(broker)
        await self.clock.sleep(action.down_s)
        await self._bring_back(broker)

    # -- measuring ------------------------------------------------------------------------------

    def _usage(self, indexes: list[int], sums: Any) -> metrics.Usage:
        capacity = Capacities.of([self.capacities[i] for i in indexes])
        pick = np.array(indexes, dtype=np.int64)
        return metrics.usage_of(
            sums.rate_in[pick],
            sums.rate_out[pick],
            sums.tput_in[pick],
            sums.tput_out[pick],
            sums.topics[pick],
            capacity,
        )

    def _broker_loads(self, brokers: list[str]) -> dict[str, float]:
        sums = self.traffic.sums_by(self.traffic.connected_to, len(self.ids))
        indexes = [self._broker_index(b) for b in brokers]
        values = metrics.loads(self._usage(indexes, sums), self.weights)
        return {b: float(v) for b, v in zip(brokers, values, strict=True)}

    def _largest_bundle(self) -> float:
        size = len(self.traffic.bundle_names)
        if size == 0 or not self.capacities:
            return 0.0
        sums = self.traffic.sums_by(self.traffic.served_in, size, only_flowing=False)
        biggest = max(self.capacities, key=lambda c: (c.cores, c.nic_bytes_per_s))
        capacity = Capacities.repeated(biggest, size)
        usage = metrics.usage_of(
            sums.rate_in, sums.rate_out, sums.tput_in, sums.tput_out, sums.topics, capacity
        )
        served = sums.topics > 0
        values = metrics.loads(usage, self.weights)
        return float(np.max(values[served])) if np.any(served) else 0.0

    def record(self, now: float) -> None:
        """The figures of the step at ``now`` (its nominal time: the virtual clock reaches it
        give or take the rounding of many short sleeps, and the first step waits for the
        cluster's setup)."""
        nodes = sorted(self.cluster.running(), key=lambda n: self._broker_index(n.broker_id))
        brokers = [n.broker_id for n in nodes]
        indexes = [self._broker_index(b) for b in brokers]
        sums = self.traffic.sums_by(self.traffic.connected_to, len(self.ids))
        with np.errstate(over="ignore", invalid="ignore"):  # refused below, with the cause
            usage = self._usage(indexes, sums)
            values = metrics.loads(usage, self.weights)
            figures = metrics.load_figures(
                values, metrics.mean_load(usage, self.weights), self._largest_bundle()
            )
        measured = (figures.mean, figures.std, figures.maximum, figures.ratio)
        if not math.isfinite(figures.bound) or (
            figures.brokers and not all(math.isfinite(v) for v in measured)
        ):
            raise SimulationError(
                f"the brokers' loads at {now:g} s are not finite numbers: the scenario's rates, "
                "sizes or factors are too large for the simulated hardware"
            )
        fresh = self.result.decisions[self._seen_decisions :]
        self._seen_decisions = len(self.result.decisions)
        unowned = self.traffic.unowned_topic_seconds()
        lookups = self.clients.stats.lookups
        self.result.steps.append(
            StepRecord(
                t_s=now,
                brokers=figures.brokers,
                mean=figures.mean,
                std=figures.std,
                minimum=figures.minimum,
                maximum=figures.maximum,
                bound=figures.bound,
                ratio=figures.ratio,
                unowned_topics=self.traffic.not_flowing(),
                unowned_topic_seconds=unowned - self._last_unowned,
                transfers=sum(1 for d in fresh if d.action == "transfer"),
                unloads=sum(1 for d in fresh if d.action == "unload"),
                splits=sum(1 for d in fresh if d.action == "split"),
                assigns=sum(1 for d in fresh if d.action == "assign"),
                shedding_moves=metrics.shedding_moves(fresh),
                client_lookups=lookups - self._last_lookups,
            )
        )
        self._last_unowned = unowned
        self._last_lookups = lookups
        for node, index, value in zip(nodes, indexes, values, strict=True):
            report = node.reporter.last_written
            self.result.brokers.append(
                BrokerRecord(
                    t_s=now,
                    broker=node.broker_id,
                    load=float(value),
                    reported_load=report.max_resource_usage_with_weight(self.weights),
                    bundles=node.ownership.count_owned(excluding=node.heartbeat_bundle),
                    topics=int(sums.topics[index]),
                    msg_rate=float(sums.rate_in[index] + sums.rate_out[index]),
                    throughput=float(sums.tput_in[index] + sums.tput_out[index]),
                    leader=node.controller is not None,
                )
            )

    # -- the run --------------------------------------------------------------------------------

    async def _sleep_until(self, t_s: float) -> None:
        delay = t_s - self.clock.monotonic()
        if delay > 0:
            await self.clock.sleep(delay)

    async def run(self) -> RunResult:
        scenario = self.scenario
        step = scenario.step_s
        await self.setup()
        # The cluster built so far lives for the whole run; the cyclic collector need not
        # walk it again (see batch_collection). Unfrozen when the run ends, however it ends.
        gc.freeze()
        events = list(scenario.events)
        steps = round(scenario.duration_s / step)
        try:
            for k in range(steps + 1):
                now = k * step
                await self._sleep_until(now)
                self.record(now)
                if self.options.check_invariants:
                    self._check_invariants()
                if self.options.progress is not None:
                    self.options.progress(now, scenario.duration_s)
                if k == steps:
                    break
                while events and events[0].at_s < now + step:
                    event = events.pop(0)
                    await self._sleep_until(event.at_s)
                    await self.apply(event)
                self._follow_workload(max(now, self.clock.monotonic()))
            self._take_totals()
            checking, self._checking = self._checking, None
            if checking is not None:  # the last step's check, once the totals are taken
                await checking
        finally:
            try:
                await self._finish()
            finally:
                gc.unfreeze()
        return self.result

    def _check_invariants(self) -> None:
        """Check the invariants of this step (a violation found by the step before's check
        is raised here). The check runs beside the run, only reading: its retries, while the
        store catches up, wait on timers of their own, and the run does not wait for them.
        When the run waited, its events and rates came late, and a run with checks was not
        the run without them."""
        checking = self._checking
        if checking is not None:
            if not checking.done():
                return  # still retrying the last step's check: this step's waits for it
            self._checking = None
            checking.result()  # raises the violation it found
        assert self._observer is not None
        self._checking = spawn(
            "sim-invariants", check_settled(self.cluster, self._observer, self.clock)
        )
        self.result.invariant_checks += 1

    def _take_totals(self) -> None:
        result = self.result
        result.unowned_topic_seconds = self.traffic.unowned_topic_seconds()
        result.client_lookups = self.clients.stats.lookups
        result.failed_lookups = self.clients.stats.failed_lookups
        for node in self._all_nodes:  # stopped brokers answered lookups too
            result.lookups += node.lookups.stats.lookups
            result.redirects += node.lookups.stats.redirects

    async def _finish(self) -> None:
        if self._checking is not None:  # the run failed: its check no longer matters
            self._checking.cancel()
            await asyncio.gather(self._checking, return_exceptions=True)
        await self.clients.stop()
        for task in list(self._background):
            task.cancel()
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        if self._topic_index is not None:
            self._topic_index.close()
        if self._observer is not None:
            await self._observer.close()
        await self.cluster.abandon()


def _reseeded(scenario: Scenario, seed: int) -> Scenario:
    return scenario if seed == scenario.seed else replace(scenario, seed=seed)


# Young-generation threshold of the cyclic collector during a run (CPython's default: 700).
BATCH_GC_THRESHOLD = 50_000


@contextlib.contextmanager
def batch_collection() -> Iterator[None]:
    """The cyclic garbage collector tuned for a simulation, then restored. A large cluster
    keeps millions of long-lived objects and replaces tens of thousands each cycle (reports,
    time averages), so CPython's defaults collect often and walk the whole heap each time;
    a run then spends a fifth of its time collecting. Reference counting frees all but
    cycles either way."""
    thresholds = gc.get_threshold()
    gc.set_threshold(BATCH_GC_THRESHOLD, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


def simulate(scenario: Scenario, options: RunOptions | None = None) -> RunResult:
    """Run ``scenario`` to its end on a fresh virtual-time loop (default options when None)."""
    chosen = options if options is not None else RunOptions()

    async def main(clock: Clock) -> RunResult:
        return await Simulation(scenario, chosen, clock).run()

    with batch_collection():
        return run_virtual(main)
