"""The broker's binary-protocol listener (asyncio streams) on ``brokerServicePort`` — the port
in the broker's lookup data as ``pulsarServiceUrl`` — serving Pulsar's clients: lookups,
producers and consumers of non-persistent topics.

Started before the broker registers (clients may be sent to it at once) and stopped after it
has left (a graceful stop first moves its bundles, closing their clients with the
destination's URL). Output of all connections is flushed once per loop iteration.

Concurrency contract: one event loop; one task per connection, plus one per pending request,
plus one that deletes inactive topics every ``brokerDeleteInactiveTopicsFrequencySeconds``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from ballast.broker.binary.connection import ServerConnection
from ballast.broker.binary.peers import PeerTopics
from ballast.broker.binary.topics import TRANSFER_WAIT_S, TopicService
from ballast.broker.traffic import MeasuredTraffic
from ballast.model.config import Settings
from ballast.protocol.versions import DEFAULT_MAX_MESSAGE_SIZE, max_frame_size
from ballast.tasks import cancel_and_wait, spawn

if TYPE_CHECKING:
    from ballast.broker.node import BrokerNode

log = logging.getLogger(__name__)


class BinaryServer:
    """Serves Pulsar's binary protocol for ``node`` on ``host:port``."""

    def __init__(
        self,
        node: BrokerNode,
        host: str,
        port: int,
        traffic: MeasuredTraffic,
        *,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        keep_alive_s: float = 30.0,
        transfer_wait_s: float = TRANSFER_WAIT_S,
        inactive_topics_s: float | None = None,
        pattern_max_length: int = 50,
    ) -> None:
        """``inactive_topics_s``: the period of the inactive-topic sweep, and how long a topic
        must be inactive to go (None: topics are never deleted). ``pattern_max_length``: the
        longest topics pattern matched here (``subscriptionPatternMaxLength``)."""
        self.node = node
        self.clock = node.clock
        self.host = host
        self.port = port
        self.max_message_size = max_message_size
        self.max_frame_size = max_frame_size(max_message_size)
        self.keep_alive_s = keep_alive_s
        self.pattern_max_length = pattern_max_length
        self.topics = TopicService(node, traffic, node.clock, transfer_wait_s=transfer_wait_s)
        self.peers = PeerTopics(node)
        self.connections: set[ServerConnection] = set()
        self.accepted = 0
        self.refused = 0  # connections closed for breaking the protocol
        self._dirty: set[ServerConnection] = set()
        self._flush_scheduled = False
        self._server: asyncio.Server | None = None
        self.inactive_topics_s = inactive_topics_s
        self._sweeper: asyncio.Task[None] | None = None

    @classmethod
    def for_node(
        cls, node: BrokerNode, host: str, port: int, traffic: MeasuredTraffic
    ) -> BinaryServer:
        """A server configured from the node's settings (``maxMessageSize``,
        ``keepAliveIntervalSeconds``, ``brokerDeleteInactiveTopics*``,
        ``subscriptionPatternMaxLength``)."""
        settings: Settings = node.settings
        return cls(
            node,
            host,
            port,
            traffic,
            max_message_size=settings.get_int("maxMessageSize"),
            keep_alive_s=settings.get_int("keepAliveIntervalSeconds"),
            inactive_topics_s=(
                settings.get_int("brokerDeleteInactiveTopicsFrequencySeconds")
                if settings.get_bool("brokerDeleteInactiveTopicsEnabled")
                else None
            ),
            pattern_max_length=settings.get_int("subscriptionPatternMaxLength"),
        )

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._accept, self.host, self.port, reuse_address=True
        )
        if self.port == 0:
            self.port = int(self._server.sockets[0].getsockname()[1])
        if self.inactive_topics_s is not None:
            self._sweeper = spawn("inactive-topics", self._sweep(self.inactive_topics_s))

    async def _sweep(self, period_s: float) -> None:
        # Pulsar's inactivity monitor: a fixed-rate check whose period is also the inactive
        # time allowed (brokerDeleteInactiveTopicsMaxInactiveDurationSeconds unset).
        while True:
            await self.clock.sleep(period_s)
            self.topics.delete_inactive(period_s)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = ServerConnection(self, reader, writer)
        self.connections.add(connection)
        self.accepted += 1
        await connection.serve()

    def schedule_flush(self, connection: ServerConnection) -> None:
        """Write ``connection``'s output at the end of this loop iteration (with everyone
        else's)."""
        self._dirty.add(connection)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        dirty, self._dirty = self._dirty, set()
        for connection in dirty:
            connection.flush()

    def forget(self, connection: ServerConnection) -> None:
        self.connections.discard(connection)
        self._dirty.discard(connection)

    async def stop(self) -> None:
        """Stop listening and close every connection."""
        await cancel_and_wait(self._sweeper)
        if self._server is not None:
            self._server.close()
        for connection in list(self.connections):
            connection.close()
        self.topics.close_all()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
        await self.peers.close()
