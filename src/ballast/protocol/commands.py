"""``BaseCommand``: the envelope every frame carries — field 1 is the command's type and the
command itself is the field whose number equals that type (``connect`` = 2 ...
``topicMigrated`` = 68) — and the registry of the commands Ballast speaks.

The commands are :class:`Command` subclasses with their ``TYPE``, defined by concern in
:mod:`~ballast.protocol.session` (connection, lookups), :mod:`~ballast.protocol.publishing` and
:mod:`~ballast.protocol.consuming`, with the codes in :mod:`~ballast.protocol.types`; all are
re-exported here. :func:`encode_command` and :func:`decode_command` convert between commands and
``BaseCommand`` bytes; a type Ballast does not model decodes to :class:`UnknownCommandError`,
which the listener answers by closing the connection, as Pulsar's decoder does (so does a
command that only a broker sends, such as SEND_RECEIPT, arriving at the broker).
"""

from __future__ import annotations

from ballast.protocol import wire
from ballast.protocol.consuming import (
    Ack,
    AckResponse,
    ActiveConsumerChange,
    CloseConsumer,
    ConsumerStats,
    ConsumerStatsResponse,
    Flow,
    GetLastMessageId,
    GetOrCreateSchema,
    GetOrCreateSchemaResponse,
    GetSchema,
    GetSchemaResponse,
    Message,
    RedeliverUnacknowledgedMessages,
    Seek,
    Subscribe,
    Unsubscribe,
)
from ballast.protocol.publishing import (
    CloseProducer,
    Producer,
    ProducerSuccess,
    Send,
    SendError,
    SendReceipt,
)
from ballast.protocol.schema import (
    decode,
    encode,
)
from ballast.protocol.session import (
    Connect,
    Connected,
    Error,
    GetTopicsOfNamespace,
    GetTopicsOfNamespaceResponse,
    LookupTopic,
    LookupTopicResponse,
    PartitionedMetadata,
    PartitionedMetadataResponse,
    Ping,
    Pong,
    Success,
)
from ballast.protocol.types import (
    AckType,
    Command,
    CommandType,
    LookupType,
    MetadataLookupType,
    ProducerAccessMode,
    ServerError,
    SubType,
    TopicsMode,
)
from ballast.protocol.wire import Buffer, DecodeError

COMMAND_CLASSES: dict[int, type[Command]] = {
    cls.TYPE: cls
    for cls in (
        Connect,
        Connected,
        Ping,
        Pong,
        Success,
        Error,
        PartitionedMetadata,
        PartitionedMetadataResponse,
        LookupTopic,
        LookupTopicResponse,
        GetTopicsOfNamespace,
        GetTopicsOfNamespaceResponse,
        Producer,
        ProducerSuccess,
        Send,
        SendReceipt,
        SendError,
        CloseProducer,
        Subscribe,
        Flow,
        Message,
        Ack,
        AckResponse,
        ActiveConsumerChange,
        Unsubscribe,
        CloseConsumer,
        RedeliverUnacknowledgedMessages,
        ConsumerStats,
        ConsumerStatsResponse,
        Seek,
        GetLastMessageId,
        GetSchema,
        GetSchemaResponse,
        GetOrCreateSchema,
        GetOrCreateSchemaResponse,
    )
}


class UnknownCommandError(DecodeError):
    """A ``BaseCommand`` whose type Ballast does not speak."""

    def __init__(self, command_type: int) -> None:
        try:
            name = CommandType(command_type).name
        except ValueError:
            name = f"type {command_type}"
        super().__init__(f"unsupported command {name}")
        self.command_type = command_type


def encode_command(command: Command) -> bytes:
    """``BaseCommand{type, <command>}`` bytes."""
    number = int(command.TYPE)
    body = encode(command)
    return (
        wire.tag(1, wire.VARINT)
        + wire.encode_varint(number)
        + wire.encode_length_delimited(number, body)
    )


def decode_command(data: Buffer, start: int = 0, end: int | None = None) -> Command:
    """The command in the ``BaseCommand`` bytes ``data[start:end]``; DecodeError when
    malformed, UnknownCommandError for a type Ballast does not speak."""
    stop = len(data) if end is None else end
    command_type: int | None = None
    bodies: dict[int, tuple[int, int]] = {}
    pos = start
    while pos < stop:
        key, pos = wire.decode_varint(data, pos)
        number = key >> 3
        wire_type = key & 7
        if number == 1:
            if wire_type != wire.VARINT:
                raise DecodeError("BaseCommand.type has the wrong wire type")
            command_type, pos = wire.decode_varint(data, pos)
        elif wire_type == wire.LENGTH_DELIMITED:
            bodies[number] = wire.read_length_delimited(data, pos, stop)
            pos = bodies[number][1]
        else:
            pos = wire.skip_field(data, pos, wire_type, stop)
    if pos != stop:
        raise DecodeError("BaseCommand runs past its size")
    if command_type is None:
        raise DecodeError("BaseCommand has no type")
    cls = COMMAND_CLASSES.get(command_type)
    if cls is None:
        raise UnknownCommandError(command_type)
    body_start, body_end = bodies.get(command_type, (0, 0))  # no body: all fields absent
    return decode(cls, data, body_start, body_end)


__all__ = [
    "COMMAND_CLASSES",
    "Ack",
    "AckResponse",
    "AckType",
    "ActiveConsumerChange",
    "CloseConsumer",
    "CloseProducer",
    "Command",
    "CommandType",
    "Connect",
    "Connected",
    "ConsumerStats",
    "ConsumerStatsResponse",
    "Error",
    "Flow",
    "GetLastMessageId",
    "GetOrCreateSchema",
    "GetOrCreateSchemaResponse",
    "GetSchema",
    "GetSchemaResponse",
    "GetTopicsOfNamespace",
    "GetTopicsOfNamespaceResponse",
    "LookupTopic",
    "LookupTopicResponse",
    "LookupType",
    "Message",
    "MetadataLookupType",
    "PartitionedMetadata",
    "PartitionedMetadataResponse",
    "Ping",
    "Pong",
    "Producer",
    "ProducerAccessMode",
    "ProducerSuccess",
    "RedeliverUnacknowledgedMessages",
    "Seek",
    "Send",
    "SendError",
    "SendReceipt",
    "ServerError",
    "SubType",
    "Subscribe",
    "Success",
    "TopicsMode",
    "UnknownCommandError",
    "Unsubscribe",
    "decode_command",
    "encode_command",
]
