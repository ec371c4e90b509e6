"""One client connection to the binary listener (Pulsar's ``ServerCnx``): the handshake, the
commands that need no I/O (SEND, FLOW, ACK, PING, closes ...), keep-alive, output batching, and
what happens to a connection that breaks the protocol.

- Until CONNECT only CONNECT is accepted; the answer is CONNECTED with the negotiated protocol
  version and the maximum message size.
- A malformed frame, an oversized one, an unknown command (or a client-bound one), a SEND for
  a producer never created here: the connection is answered with an ERROR and closed; the
  broker carries on with every other connection. A SEND whose checksum does not match is
  answered with SEND_ERROR ChecksumError and dropped, and the connection stays, as Pulsar's
  ``Producer.publishMessage`` does (the client fails or resends that message alone). A SEND
  for a producer the broker closed a moment ago is ignored (Pulsar's
  ``recentlyClosedProducers``): the client sends it again after reconnecting.
- Output is gathered and written once per read batch (and once per loop iteration for what
  other connections' traffic produces), so a burst of SENDs costs one write of receipts.
- Keep-alive: a connection silent for ``keepAliveIntervalSeconds`` is pinged; one still silent
  an interval later is closed, as is one that never sent CONNECT.

Requests that wait on the metadata store or on ownership (lookups, producers, subscriptions,
topic lists) run as tasks in :mod:`ballast.broker.binary.requests`; their answers may come in
any order, matched by request id, as Pulsar's do.

Concurrency contract: one event loop; a connection's state changes only on it.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from ballast import __version__
from ballast.broker.binary import requests
from ballast.broker.binary.subscriptions import Consumer
from ballast.broker.binary.topics import NonPersistentTopic, ProducerHandle
from ballast.protocol.commands import (
    Ack,
    AckResponse,
    CloseConsumer,
    CloseProducer,
    Command,
    CommandType,
    Connect,
    Connected,
    ConsumerStats,
    ConsumerStatsResponse,
    Error,
    Flow,
    GetLastMessageId,
    GetOrCreateSchema,
    GetOrCreateSchemaResponse,
    GetSchema,
    GetSchemaResponse,
    GetTopicsOfNamespace,
    LookupTopic,
    PartitionedMetadata,
    Ping,
    Pong,
    Producer,
    RedeliverUnacknowledgedMessages,
    Seek,
    Send,
    SendError,
    ServerError,
    Subscribe,
    Success,
    UnknownCommandError,
    Unsubscribe,
    decode_command,
)
from ballast.protocol.fast import SendFields, parse_send, receipt_frame
from ballast.protocol.frames import (
    ChecksumMismatchError,
    FrameError,
    FrameReader,
    FrameTooLargeError,
    MalformedFrameError,
    check_payload,
    encode_frame,
)
from ballast.protocol.versions import V_CLOSE_WITHOUT_DISCONNECT, V_KEEP_ALIVE, negotiate
from ballast.protocol.wire import DecodeError
from ballast.tasks import spawn

if TYPE_CHECKING:
    from ballast.broker.binary.server import BinaryServer

log = logging.getLogger(__name__)

NO_REQUEST = (1 << 64) - 1  # request id -1, as Pulsar sends in commands it starts itself
READ_SIZE = 256 * 1024
HIGH_WATER_BYTES = 1024 * 1024
RECENTLY_CLOSED_LIMIT = 10_000


class State(enum.Enum):
    START = "start"
    CONNECTED = "connected"
    CLOSED = "closed"


class ProtocolViolation(Exception):
    """The client broke the protocol: answer with an ERROR and close."""

    def __init__(self, error: ServerError, message: str) -> None:
        super().__init__(message)
        self.error = error


class ServerConnection:
    """A client's connection: its producers and consumers, its output, its life cycle."""

    def __init__(
        self, server: BinaryServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.server = server
        self.topics = server.topics
        self.clock = server.clock
        self._reader = reader
        self._writer = writer
        self._transport = writer.transport
        peer = writer.get_extra_info("peername")
        self.remote = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.state = State.START
        self.closed = False
        self.protocol_version = 0
        self.client_version = ""
        self.producers: dict[int, ProducerHandle] = {}
        self.consumers: dict[int, tuple[Consumer, NonPersistentTopic]] = {}
        self.pending: set[tuple[str, int]] = set()  # ("producer" | "consumer", id) being made
        self.recently_closed_producers: set[int] = set()
        self.recently_closed_consumers: set[int] = set()
        self._out: list[bytes] = []
        self._out_size = 0
        self._frames = FrameReader(server.max_frame_size)
        self._tasks: set[asyncio.Task[None]] = set()
        self.last_received = self.clock.monotonic()
        self._awaiting_pong = False

    # -- output ---------------------------------------------------------------------------------

    def send(self, data: bytes) -> None:
        if self.closed:
            return
        self._out.append(data)
        self._out_size += len(data)
        self.server.schedule_flush(self)

    def send_parts(self, header: bytes, body: bytes) -> None:
        if self.closed:
            return
        self._out.append(header)
        self._out.append(body)
        self._out_size += len(header) + len(body)
        self.server.schedule_flush(self)

    def send_command(self, command: Command) -> None:
        self.send(encode_frame(command))

    def unsent_bytes(self) -> int:
        """Bytes the socket has not taken (see :meth:`Link.unsent_bytes`)."""
        return self._transport.get_write_buffer_size()

    def flush(self) -> None:
        if not self._out:
            return
        data = b"".join(self._out)
        self._out = []
        self._out_size = 0
        if not self._transport.is_closing():
            self._writer.write(data)

    # -- life cycle ---------------------------------------------------------------------------

    async def serve(self) -> None:
        """Read and handle frames until the client leaves or the connection is closed."""
        keep_alive = spawn(f"keep-alive-{self.remote}", self._keep_alive())
        try:
            while not self.closed:
                data = await self._reader.read(READ_SIZE)
                if not data:
                    break
                self.last_received = self.clock.monotonic()
                self._awaiting_pong = False
                self._on_data(data)
                self.flush()
                if self._transport.get_write_buffer_size() > HIGH_WATER_BYTES:
                    await self._writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            keep_alive.cancel()
            self.close()

    def _on_data(self, data: bytes) -> None:
        try:
            for frame in self._frames.feed(data):
                self._on_frame(frame)
                if self.closed:
                    return
        except FrameTooLargeError as exc:
            self._refuse(ServerError.NOT_ALLOWED_ERROR, str(exc))
        except (FrameError, DecodeError) as exc:
            self._refuse(ServerError.UNKNOWN_ERROR, f"malformed frame: {exc}")
        except ProtocolViolation as exc:
            self._refuse(exc.error, str(exc))
        except Exception as exc:  # a bug here must cost this connection only
            log.exception("closing %s after an internal error", self.remote)
            self._refuse(ServerError.UNKNOWN_ERROR, f"internal error: {type(exc).__name__}")

    def _refuse(self, error: ServerError, message: str) -> None:
        log.warning("closing connection from %s: %s", self.remote, message)
        self.server.refused += 1
        self.send_command(Error(request_id=NO_REQUEST, error=error, message=message))
        self.close()

    def close(self) -> None:
        """Close the connection and detach its producers and consumers (idempotent)."""
        if self.closed:
            return
        self.closed = True
        self.state = State.CLOSED
        for producer in self.producers.values():
            self.topics.remove_producer(producer)
        for consumer, topic in self.consumers.values():
            self.topics.remove_consumer(topic, consumer)
        self.producers.clear()
        self.consumers.clear()
        for task in self._tasks:
            task.cancel()
        data = b"".join(self._out)
        self._out = []
        self._out_size = 0
        if not self._transport.is_closing():
            if data:
                self._writer.write(data)
            self._writer.close()
        self.server.forget(self)

    def spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = spawn(f"binary-request-{self.remote}", coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _keep_alive(self) -> None:
        interval = self.server.keep_alive_s
        while not self.closed:
            await self.clock.sleep(interval)
            if self.closed:
                return
            if self.state is State.START:
                self._refuse(ServerError.UNKNOWN_ERROR, "no CONNECT within the keep-alive interval")
                return
            if self.clock.monotonic() - self.last_received < interval:
                continue
            if self._awaiting_pong:
                log.warning("closing %s: no answer to PING", self.remote)
                self.close()
                return
            if self.protocol_version >= V_KEEP_ALIVE:
                self._awaiting_pong = True
                self.send_command(Ping())

    # -- frames ---------------------------------------------------------------------------------

    def _on_frame(self, frame: bytes) -> None:
        if len(frame) < 4:
            raise MalformedFrameError(f"frame of {len(frame)} bytes has no command size")
        command_end = 4 + int.from_bytes(frame[:4], "big")
        if command_end > len(frame):
            raise MalformedFrameError("command size exceeds the frame")
        if self.state is State.CONNECTED and len(frame) > 6 and frame[5] == CommandType.SEND:
            fields = parse_send(frame, command_end)
            if fields is not None:
                self._on_send(fields, frame[command_end:])
                return
        command = decode_command(frame, 4, command_end)
        if self.state is State.START:
            if not isinstance(command, Connect):
                raise ProtocolViolation(
                    ServerError.UNKNOWN_ERROR, f"{command.TYPE.name} before CONNECT"
                )
            self._on_connect(command)
            return
        if isinstance(command, Send):
            fields = SendFields(
                command.producer_id,
                command.sequence_id,
                command.num_messages,
                command.highest_sequence_id,
            )
            self._on_send(fields, frame[command_end:])
            return
        handler = _HANDLERS.get(type(command))
        if handler is None:
            raise UnknownCommandError(int(command.TYPE))
        handler(self, command)

    def _on_connect(self, command: Connect) -> None:
        self.protocol_version = negotiate(command.protocol_version)
        self.client_version = command.client_version
        self.state = State.CONNECTED
        self.send_command(
            Connected(
                server_version=f"Ballast {__version__}",
                protocol_version=self.protocol_version,
                max_message_size=self.server.max_message_size,
            )
        )

    def _on_send(self, fields: SendFields, section: bytes) -> None:
        producer = self.producers.get(fields.producer_id)
        if producer is None:
            if fields.producer_id in self.recently_closed_producers:
                return  # closed by the broker a moment ago: the client sends it again
            raise ProtocolViolation(
                ServerError.UNKNOWN_ERROR,
                f"message for producer {fields.producer_id}, which is not ready",
            )
        if not section:
            raise MalformedFrameError("SEND without a payload")
        try:
            check_payload(section)
        except ChecksumMismatchError:
            self.send_command(
                SendError(
                    producer_id=fields.producer_id,
                    sequence_id=fields.sequence_id,
                    error=ServerError.CHECKSUM_ERROR,
                    message="Checksum failed on the broker",
                )
            )
            return
        # A batch holds at least one message; a count below one must not hand out permits.
        producer.publish(section, max(1, fields.num_messages))
        self.send(receipt_frame(fields.producer_id, fields.sequence_id, fields.highest_sequence_id))

    # -- commands without I/O ------------------------------------------------------------------

    def _on_connect_again(self, command: Connect) -> None:
        raise ProtocolViolation(ServerError.UNKNOWN_ERROR, "CONNECT on a connected connection")

    def _on_ping(self, command: Ping) -> None:
        self.send_command(Pong())

    def _on_pong(self, command: Pong) -> None:
        pass  # any frame counts as a sign of life

    def _on_flow(self, command: Flow) -> None:
        found = self.consumers.get(command.consumer_id)
        if found is not None:
            found[0].permits += command.message_permits

    def _on_ack(self, command: Ack) -> None:
        # Non-persistent subscriptions keep nothing to acknowledge; answer ack receipts.
        if command.request_id is not None:
            self.send_command(
                AckResponse(consumer_id=command.consumer_id, request_id=command.request_id)
            )

    def _on_redeliver(self, command: RedeliverUnacknowledgedMessages) -> None:
        pass  # nothing is kept to redeliver

    def _on_close_producer(self, command: CloseProducer) -> None:
        producer = self.producers.pop(command.producer_id, None)
        if producer is not None:
            self.topics.remove_producer(producer)
        self.pending.discard(("producer", command.producer_id))
        self.send_command(Success(request_id=command.request_id))

    def _on_close_consumer(self, command: CloseConsumer) -> None:
        found = self.consumers.pop(command.consumer_id, None)
        if found is not None:
            self.topics.remove_consumer(found[1], found[0])
        self.pending.discard(("consumer", command.consumer_id))
        self.send_command(Success(request_id=command.request_id))

    def _on_unsubscribe(self, command: Unsubscribe) -> None:
        found = self.consumers.get(command.consumer_id)
        if found is None:
            self._error(command.request_id, ServerError.CONSUMER_NOT_FOUND, "Consumer not found")
            return
        consumer, topic = found
        subscription = topic.subscriptions.get(consumer.subscription)
        others = [c for c in subscription.consumers if c is not consumer] if subscription else []
        if others and not command.force:  # Pulsar: a ServerMetadataException, MetadataError
            self._error(
                command.request_id,
                ServerError.METADATA_ERROR,
                "Unconnected or shared consumer attempting to unsubscribe",
            )
            return
        for other in others:  # forced: the subscription goes, with all its consumers
            other.link.consumer_closed_by_broker(other.consumer_id, None)
            self.topics.remove_consumer(topic, other)
        del self.consumers[command.consumer_id]
        self.topics.remove_consumer(topic, consumer)
        self.send_command(Success(request_id=command.request_id))

    def _on_consumer_stats(self, command: ConsumerStats) -> None:
        found = self.consumers.get(command.consumer_id)
        if found is None:
            self.send_command(
                ConsumerStatsResponse(
                    request_id=command.request_id,
                    error_code=ServerError.CONSUMER_NOT_FOUND,
                    error_message="Consumer not found",
                )
            )
            return
        consumer, topic = found
        subscription = topic.subscriptions.get(consumer.subscription)
        elapsed_s = max(1e-3, (self.clock.wall_ms() - consumer.connected_since_ms) / 1000)
        self.send_command(
            ConsumerStatsResponse(
                request_id=command.request_id,
                msg_rate_out=consumer.msgs_out / elapsed_s,
                msg_throughput_out=consumer.bytes_out / elapsed_s,
                msg_rate_redeliver=0.0,
                consumer_name=consumer.name,
                available_permits=max(0, consumer.permits),
                unacked_messages=0,
                blocked_consumer_on_unacked_msgs=False,
                address=self.remote,
                connected_since=str(consumer.connected_since_ms),
                type=subscription.type_name if subscription else "",
                msg_rate_expired=0.0,
                msg_backlog=0,
            )
        )

    def _on_seek(self, command: Seek) -> None:
        """Success and nothing else: a non-persistent subscription has no cursor to reset
        (Pulsar's ``NonPersistentSubscription.resetCursor`` is a no-op)."""
        if command.message_id is None and command.message_publish_time is None:
            self._error(
                command.request_id,
                ServerError.METADATA_ERROR,
                "Message id and message publish time were not present",
            )
            return
        if command.consumer_id not in self.consumers:
            self._error(command.request_id, ServerError.METADATA_ERROR, "Consumer not found")
            return
        self.send_command(Success(request_id=command.request_id))

    def _on_get_last_message_id(self, command: GetLastMessageId) -> None:
        self._error(
            command.request_id,
            ServerError.NOT_ALLOWED_ERROR,
            "GetLastMessageId is not allowed on non-persistent topics",
        )

    def _on_get_schema(self, command: GetSchema) -> None:
        self.send_command(
            GetSchemaResponse(
                request_id=command.request_id,
                error_code=ServerError.TOPIC_NOT_FOUND,
                error_message="Ballast keeps no schemas",
            )
        )

    def _on_get_or_create_schema(self, command: GetOrCreateSchema) -> None:
        self.send_command(
            GetOrCreateSchemaResponse(
                request_id=command.request_id,
                error_code=ServerError.NOT_ALLOWED_ERROR,
                error_message="Ballast keeps no schemas",
            )
        )

    def _error(self, request_id: int, error: ServerError, message: str) -> None:
        self.send_command(Error(request_id=request_id, error=error, message=message))

    # -- closes started by the broker (the Link protocol) ----------------------------------------

    def producer_closed_by_broker(self, producer_id: int, assigned_url: str | None) -> None:
        if self.producers.pop(producer_id, None) is None:
            return
        self._remember(self.recently_closed_producers, producer_id)
        if self.protocol_version < V_CLOSE_WITHOUT_DISCONNECT:
            self.close()  # such a client only learns by losing the connection
            return
        self.send_command(
            CloseProducer(
                producer_id=producer_id,
                request_id=NO_REQUEST,
                assigned_broker_service_url=assigned_url,
            )
        )

    def consumer_closed_by_broker(self, consumer_id: int, assigned_url: str | None) -> None:
        if self.consumers.pop(consumer_id, None) is None:
            return
        self._remember(self.recently_closed_consumers, consumer_id)
        if self.protocol_version < V_CLOSE_WITHOUT_DISCONNECT:
            self.close()
            return
        self.send_command(
            CloseConsumer(
                consumer_id=consumer_id,
                request_id=NO_REQUEST,
                assigned_broker_service_url=assigned_url,
            )
        )

    def subscribe_refused_for_now(self, consumer_id: int) -> None:
        """After a SUBSCRIBE refused with an error the client retries (ServiceNotReady,
        MetadataError), close that consumer as the broker closes one whose bundle left, so that
        the client looks the topic up again. Pulsar's C++ client (``pulsar-client`` 3.13) keeps
        the connection it sent a consumer's first SUBSCRIBE on as the consumer's own when that
        SUBSCRIBE is refused, and then skips each retry as "already connected" until its
        operation timeout (30 s); the close makes it let go of the connection and retry at once.
        Clients that let go by themselves (Java's) no longer know the consumer and ignore it."""
        if self.protocol_version < V_CLOSE_WITHOUT_DISCONNECT:
            return  # such a client cannot be told, short of losing every client on the connection
        self.send_command(CloseConsumer(consumer_id=consumer_id, request_id=NO_REQUEST))

    @staticmethod
    def _remember(found: set[int], item: int) -> None:
        if len(found) >= RECENTLY_CLOSED_LIMIT:
            found.clear()
        found.add(item)


def _async(
    handler: Callable[[ServerConnection, Any], Coroutine[Any, Any, None]],
) -> Callable[[ServerConnection, Any], None]:
    def start(connection: ServerConnection, command: Any) -> None:
        connection.spawn(handler(connection, command))

    return start


_HANDLERS: dict[type[Command], Callable[[ServerConnection, Any], None]] = {
    Connect: ServerConnection._on_connect_again,
    Ping: ServerConnection._on_ping,
    Pong: ServerConnection._on_pong,
    Flow: ServerConnection._on_flow,
    Ack: ServerConnection._on_ack,
    RedeliverUnacknowledgedMessages: ServerConnection._on_redeliver,
    CloseProducer: ServerConnection._on_close_producer,
    CloseConsumer: ServerConnection._on_close_consumer,
    Unsubscribe: ServerConnection._on_unsubscribe,
    ConsumerStats: ServerConnection._on_consumer_stats,
    Seek: ServerConnection._on_seek,
    GetLastMessageId: ServerConnection._on_get_last_message_id,
    GetSchema: ServerConnection._on_get_schema,
    GetOrCreateSchema: ServerConnection._on_get_or_create_schema,
    PartitionedMetadata: _async(requests.partitioned_metadata),
    LookupTopic: _async(requests.lookup),
    GetTopicsOfNamespace: _async(requests.topics_of_namespace),
    Producer: _async(requests.create_producer),
    Subscribe: _async(requests.subscribe),
}
