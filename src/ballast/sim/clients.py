"""The workload's clients (producers and consumers) as the brokers see them: a topic's traffic
flows only while its clients are connected to the broker serving it.

- A client looks its topic up (through a random running broker, following redirects as
  Pulsar clients do) and opens the topic on the broker that answers; the broker serves it only
  if it owns the topic's bundle.
- When a broker stops serving a bundle (unload, transfer, drain, split with unload) its clients
  are disconnected at once; when a broker dies, every client connected to it is. Disconnected
  clients look up again after a backoff: 100 ms doubling up to 60 s, ±10% jitter (Pulsar's
  client defaults), from the simulation's seeded random generator.
- Clients that lost their broker at the same moment retry together, one lookup per bundle they
  now fall in (the topics of one bundle share a lookup's answer, as a client's concurrent
  lookups of one bundle do); the lookup counts once for the group.

Measured: lookups issued and failed, and disconnects (the traffic source integrates the
topic-seconds without an owner).

Concurrency contract: one event loop; listeners run synchronously inside the brokers' updates.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ballast.broker.cluster import LocalCluster
from ballast.broker.lookup import AnswerKind
from ballast.broker.node import BrokerNode
from ballast.broker.topics import ServedChange
from ballast.clock import Clock
from ballast.model.naming import NamespaceName
from ballast.sim.traffic import SimTraffic
from ballast.sim.workload import Workload
from ballast.tasks import spawn

Ints = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Backoff:
    """A client's reconnect delays: ``initial_s`` doubling up to ``max_s``, ± ``jitter``."""

    initial_s: float = 0.1
    max_s: float = 60.0
    jitter: float = 0.1

    def delay(self, attempt: int, rng: random.Random) -> float:
        base = min(self.initial_s * 2.0 ** min(attempt, 30), self.max_s)
        return base * (1.0 + self.jitter * (2.0 * rng.random() - 1.0))


@dataclass(slots=True)
class ClientStats:
    lookups: int = 0
    failed_lookups: int = 0
    disconnects: int = 0


class SimClients:
    """Every topic's clients. ``broker_index(broker_id)`` numbers brokers for the traffic
    arrays."""

    def __init__(
        self,
        cluster: LocalCluster,
        workload: Workload,
        traffic: SimTraffic,
        clock: Clock,
        rng: random.Random,
        broker_index: Callable[[str], int],
        backoff: Backoff = Backoff(),
    ) -> None:
        self._cluster = cluster
        self._workload = workload
        self._traffic = traffic
        self._clock = clock
        self._rng = rng
        self._broker_index = broker_index
        self._backoff = backoff
        self._tasks: set[asyncio.Task[None]] = set()
        self._timers: set[asyncio.TimerHandle | object] = set()
        self.stats = ClientStats()
        self._stopped = False

    # -- what brokers tell us -------------------------------------------------------------------

    def attach(self, node: BrokerNode) -> None:
        """Listen to ``node``'s served topics (call before it starts)."""
        broker_id = node.broker_id
        node.served.add_listener(lambda change: self._on_served(broker_id, change))

    def _indexes(self, change: ServedChange) -> Ints:
        index = self._workload.index
        found = [index[t] for t in change.topics if t in index]
        return np.array(found, dtype=np.int64)

    def _on_served(self, broker_id: str, change: ServedChange) -> None:
        topics = self._indexes(change)
        if change.added:
            self._traffic.serve(topics, change.bundle)
            return
        self._traffic.unserve(topics)
        if not change.split:
            broker = self._broker_index(broker_id)
            self._disconnect(topics[self._traffic.connected_to[topics] == broker])

    def broker_died(self, node: BrokerNode) -> None:
        """``node`` was killed: its connections reset and it serves nothing any more."""
        for bundle in list(node.served.bundles_unordered()):
            topics = self._indexes(ServedChange(bundle, tuple(node.served.topics(bundle)), False))
            self._traffic.unserve(topics)
        broker = self._broker_index(node.broker_id)
        self._disconnect(np.flatnonzero(self._traffic.connected_to == broker).astype(np.int64))

    def _disconnect(self, topics: Ints) -> None:
        if topics.size == 0:
            return
        self.stats.disconnects += int(topics.size)
        self._traffic.disconnect(topics)
        self._schedule(topics, 0)

    # -- connecting -----------------------------------------------------------------------------

    def connect_new(self, topics: Ints) -> None:
        """Clients of new topics start: they look their topics up now."""
        self._traffic.want(topics)
        self._schedule(topics, -1)

    def _schedule(self, topics: Ints, attempt: int) -> None:
        if self._stopped:
            return
        delay = 0.0 if attempt < 0 else self._backoff.delay(attempt, self._rng)
        next_attempt = max(attempt, 0)

        def fire() -> None:
            self._timers.discard(handle)
            task = spawn("sim-clients-connect", self._attempt(topics, next_attempt))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        handle = self._clock.call_later(delay, fire)
        self._timers.add(handle)

    async def _attempt(self, topics: Ints, attempt: int) -> None:
        waiting = topics[self._traffic.connected_to[topics] < 0]
        if waiting.size == 0 or self._stopped:
            return
        nodes = self._cluster.running()
        if not nodes:
            self._schedule(waiting, attempt + 1)
            return
        groups = await self._by_bundle(waiting, nodes[0])
        for group in groups:
            await self._connect_group(group, attempt)

    async def _by_bundle(self, topics: Ints, node: BrokerNode) -> list[Ints]:
        """``topics`` grouped by the bundle each falls in now (the namespace's boundaries as a
        broker reads them)."""
        workload = self._workload
        names = workload.namespace_names()
        groups: list[Ints] = []
        namespaces = workload.namespace_of[topics]
        for position in np.unique(namespaces).tolist():
            members = topics[namespaces == position]
            namespace = NamespaceName.parse(names[position])
            try:
                bundles = await node.bundles.bundles(namespace)
            except Exception:  # the namespace is not readable yet: retry later
                self._schedule(members, 1)
                continue
            bounds = np.array(bundles.boundaries, dtype=np.int64)
            slots = np.searchsorted(bounds, workload.hashes[members], side="right") - 1
            slots = np.minimum(slots, bundles.count - 1)
            order = np.argsort(slots, kind="stable")
            members, slots = members[order], slots[order]
            cuts = np.flatnonzero(np.diff(slots)) + 1
            groups.extend(np.split(members, cuts))
        return groups

    async def _connect_group(self, topics: Ints, attempt: int) -> None:
        cluster = self._cluster
        running = cluster.running()
        if not running or self._stopped:
            self._schedule(topics, attempt + 1)
            return
        via = running[self._rng.randrange(len(running))].broker_id
        names = self._workload.names
        self.stats.lookups += 1
        answer = await cluster.lookup(names[int(topics[0])], via=via)
        node = cluster.nodes.get(answer.broker_id or "")
        if answer.kind is not AnswerKind.CONNECT or node is None or node.stopped:
            self.stats.failed_lookups += 1
            self._schedule(topics, attempt + 1)
            return
        opened = [int(i) for i in topics.tolist() if await node.open_topic(names[int(i)])]
        # Re-check after the awaits: the bundle may have moved while topics were opened.
        served = node.served
        connected = np.array(
            [i for i in opened if served.bundle_of(names[i]) is not None and not node.stopped],
            dtype=np.int64,
        )
        if connected.size:
            self._traffic.connect(connected, self._broker_index(node.broker_id))
        left = np.setdiff1d(topics, connected)
        if left.size:
            self._schedule(left, attempt + 1)

    async def stop(self) -> None:
        self._stopped = True
        for handle in list(self._timers):
            cancel = getattr(handle, "cancel", None)
            if cancel is not None:
                cancel()
        self._timers.clear()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
