"""Several brokers in one process on one metadata store: the driver of scenario tests,
``ballast standalone`` and the simulator. Commands and leader requests travel through an
in-process transport; each broker keeps its own store session, so sessions, ephemeral records,
elections and crashes behave as they do across processes.

Concurrency contract: one event loop.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable

from ballast.broker.binary.server import BinaryServer
from ballast.broker.host_usage import BrokerCapacity, HostUsageProvider, ModelledHostUsage
from ballast.broker.http.server import ApiServer
from ballast.broker.http.transport import HttpTransport
from ballast.broker.identity import BrokerIdentity
from ballast.broker.lookup import AnswerKind, LookupAnswer, LookupOptions
from ballast.broker.node import BrokerNode
from ballast.broker.traffic import MeasuredTraffic, TrafficSource, WorkloadTraffic
from ballast.clock import Clock
from ballast.controller.commands import AnyCommand, CommandReply, TransportError
from ballast.controller.history import HistorySink
from ballast.controller.requests import AnyRequest, ClusterTransport, RequestReply, not_the_leader
from ballast.coordination.election import read_leader
from ballast.metadata.chunking import ChunkingStore
from ballast.metadata.factory import MetadataStores
from ballast.metadata.memory import MemoryMetadataStore
from ballast.metadata.store import MetadataStore
from ballast.model.config import Settings, defaults
from ballast.model.naming import TopicName

log = logging.getLogger(__name__)

MAX_REDIRECTS = 10


class InProcessTransport:
    """Delivers commands and leader requests by direct call to the brokers of this process."""

    def __init__(self) -> None:
        self.nodes: dict[str, BrokerNode] = {}

    async def send(self, broker_id: str, command: AnyCommand) -> CommandReply:
        node = self.nodes.get(broker_id)
        if node is None or node.closed:
            raise TransportError(f"broker {broker_id} is not reachable", unreachable=True)
        return await node.handle_command(command)

    async def call_leader(self, leader_id: str, request: AnyRequest) -> RequestReply:
        node = self.nodes.get(leader_id)
        if node is None or node.stopped:
            raise TransportError(f"broker {leader_id} is not reachable", unreachable=True)
        controller = node.controller
        if controller is None or not controller.running:
            return not_the_leader(leader_id)
        return await controller.request(request)


HostUsageFactory = Callable[[BrokerIdentity], HostUsageProvider]


DEFAULT_CAPACITY = BrokerCapacity()


def modelled_usage(capacity: BrokerCapacity = DEFAULT_CAPACITY) -> HostUsageFactory:
    return lambda _identity: ModelledHostUsage(capacity)


class LocalCluster:
    """Brokers sharing one store URL and one process. With ``serve_http`` every broker also
    serves the HTTP API on its web port and the brokers talk to each other over HTTP (the
    standalone cluster); without it they call each other directly (tests, the simulator).
    ``serve_binary`` (default: as ``serve_http``) adds Pulsar's binary protocol on each
    broker's ``broker_port``; each broker then reports the traffic its clients make, and the
    shared ``traffic`` source only for topics without clients."""

    def __init__(
        self,
        clock: Clock,
        *,
        settings: Settings | None = None,
        store_url: str = "memory:",
        traffic: TrafficSource | None = None,
        host_usage: HostUsageFactory | None = None,
        seed: int = 0,
        serve_http: bool = False,
        serve_binary: bool | None = None,
        on_node: Callable[[BrokerNode], None] | None = None,
        history: HistorySink | None = None,
    ) -> None:
        """``on_node(node)`` is called for every broker created, before it starts (to attach
        listeners that must not miss its first bundles). ``history``: where the leader
        records the load history (setting ``loadBalancerHistoryPath``)."""
        self.clock = clock
        self.settings = settings or defaults()
        self.store_url = store_url
        self.stores = MetadataStores(clock)
        self.in_process = InProcessTransport()
        self.http = HttpTransport() if serve_http else None
        self.transport: ClusterTransport = self.http if self.http is not None else self.in_process
        self.traffic: TrafficSource = traffic if traffic is not None else WorkloadTraffic()
        self.host_usage = host_usage or modelled_usage()
        self.rng = random.Random(seed)
        self.nodes: dict[str, BrokerNode] = {}
        self.servers: dict[str, ApiServer] = {}
        self.serve_binary = serve_http if serve_binary is None else serve_binary
        self.binary: dict[str, BinaryServer] = {}
        self._on_node = on_node
        self.history = history

    async def connect(self) -> MetadataStore:
        """A client of the cluster's store (an observer, a test, an admin tool)."""
        return await self.stores.connect(
            self.store_url,
            session_timeout_s=self.settings.get_int("metadataStoreSessionTimeoutMillis") / 1000,
        )

    async def add_broker(self, identity: BrokerIdentity) -> BrokerNode:
        """Start a broker (registers, campaigns, begins reporting)."""
        if identity.broker_id in self.nodes and not self.nodes[identity.broker_id].stopped:
            raise ValueError(f"broker {identity.broker_id} is already running")
        measured = (
            MeasuredTraffic(
                self.clock,
                self.settings.get_int("statsUpdateFrequencyInSecs"),
                fallback=self.traffic,
            )
            if self.serve_binary
            else None
        )
        node = BrokerNode(
            identity,
            await self.connect(),
            self.settings,
            self.clock,
            self.transport,
            measured if measured is not None else self.traffic,
            self.host_usage(identity),
            random.Random(self.rng.random()),
            history=self.history,
        )
        self.nodes[identity.broker_id] = node
        self.in_process.nodes[identity.broker_id] = node
        binary = None
        if measured is not None:
            binary = BinaryServer.for_node(node, identity.host, identity.broker_port, measured)
        if self.http is not None:  # serving before registering: commands may come at once
            clients = None if binary is None else binary.topics
            server = ApiServer(node, identity.host, identity.web_port, clients=clients)
            await server.start()
            self.servers[identity.broker_id] = server
        if binary is not None:  # and clients may be sent to its binary port at once
            await binary.start()
            self.binary[identity.broker_id] = binary
        if self._on_node is not None:
            self._on_node(node)
        await node.start()
        return node

    async def stop_broker(self, broker_id: str, *, graceful: bool = True) -> None:
        node = self.nodes[broker_id]
        await node.stop(graceful=graceful)
        del self.nodes[broker_id]
        self.in_process.nodes.pop(broker_id, None)
        server = self.servers.pop(broker_id, None)
        if server is not None:
            await server.stop()
        binary = self.binary.pop(broker_id, None)
        if binary is not None:
            await binary.stop()

    async def crash_broker(self, broker_id: str) -> None:
        """``kill -9``: the broker stops at once; its session (and with it its registration,
        ownerships and any leadership) expires after the session timeout."""
        node = self.nodes.pop(broker_id)
        self.in_process.nodes.pop(broker_id, None)
        server = self.servers.pop(broker_id, None)
        if server is not None:
            await server.stop()
        binary = self.binary.pop(broker_id, None)
        if binary is not None:
            await binary.stop()
        await node.kill()
        inner = node.store.inner if isinstance(node.store, ChunkingStore) else node.store
        if isinstance(inner, MemoryMetadataStore):
            inner.crash()

    def running(self) -> list[BrokerNode]:
        return [n for n in self.nodes.values() if not n.stopped]

    def leader(self) -> BrokerNode | None:
        for node in self.running():
            if node.controller is not None and node.controller.running:
                return node
        return None

    async def leader_id(self) -> str | None:
        for node in self.running():
            leader = await read_leader(node.store)
            return None if leader is None else leader.broker_id
        return None

    async def request(self, request: AnyRequest) -> RequestReply:
        """An admin request, delivered to the current leader."""
        leader = await self.leader_id()
        if leader is None:
            return RequestReply(ok=False, status=503, message="no leader")
        try:
            return await self.in_process.call_leader(leader, request)
        except TransportError as exc:
            return RequestReply(ok=False, status=503, message=str(exc))

    async def lookup(
        self, topic: TopicName | str, *, via: str | None = None, read_only: bool = False
    ) -> LookupAnswer:
        """Look a topic up as a client does: ask a broker, follow redirects (carrying
        ``authoritative``) until a broker answers Connect or an error."""
        name = topic if isinstance(topic, TopicName) else TopicName.parse(topic)
        nodes = self.running()
        if not nodes:
            raise RuntimeError("no broker is running")
        target = self.nodes[via] if via is not None else nodes[0]
        options = LookupOptions(read_only=read_only)
        answer = await target.lookup(name, options)
        for _ in range(MAX_REDIRECTS):
            if answer.kind is not AnswerKind.REDIRECT or answer.broker_id is None:
                return answer
            next_node = self.nodes.get(answer.broker_id)
            if next_node is None or next_node.stopped:
                return answer
            options = LookupOptions(authoritative=answer.authoritative, read_only=read_only)
            answer = await next_node.lookup(name, options)
        return answer

    async def close(self) -> None:
        for broker_id in list(self.nodes):
            await self.stop_broker(broker_id, graceful=False)
        if self.http is not None:
            await self.http.close()
        self.stores.close()

    async def abandon(self) -> None:
        """Kill every broker at once and release the stores: a teardown that, unlike
        :meth:`close`, does not hand leadership from broker to broker on the way out (each
        hand-over rebuilds a leader's image)."""
        for broker_id in list(self.nodes):
            await self.crash_broker(broker_id)
        self.stores.close()
