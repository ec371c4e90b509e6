"""The commands of Pulsar's binary protocol that Ballast speaks, and ``BaseCommand``: the
envelope every frame carries — field 1 is the command's type and the command itself is the
field whose number equals that type (``connect`` = 2 ... ``topicMigrated`` = 68).

A command here is a :class:`Command` subclass with its ``TYPE``; :func:`encode_command` and
:func:`decode_command` convert between commands and ``BaseCommand`` bytes. A type Ballast does
not model (or one sent the wrong way, such as a broker-bound ``SEND_RECEIPT``) decodes to
:class:`UnknownCommandError`, which the listener answers by closing the connection as Pulsar's
decoder does.
"""

from __future__ import annotations

import enum
from typing import ClassVar

from ballast.protocol import wire
from ballast.protocol.messages import (
    FeatureFlags,
    KeyLongValue,
    KeySharedMeta,
    KeyValue,
    MessageIdData,
)
from ballast.protocol.schema import (
    BOOL,
    BYTES,
    DOUBLE,
    ENUM,
    INT32,
    INT64,
    MESSAGE,
    STRING,
    UINT32,
    UINT64,
    F,
    ProtoMessage,
    decode,
    encode,
)
from ballast.protocol.wire import Buffer, DecodeError


class CommandType(enum.IntEnum):
    """``BaseCommand.Type`` (all of Pulsar's, so logs can name what arrived)."""

    CONNECT = 2
    CONNECTED = 3
    SUBSCRIBE = 4
    PRODUCER = 5
    SEND = 6
    SEND_RECEIPT = 7
    SEND_ERROR = 8
    MESSAGE = 9
    ACK = 10
    FLOW = 11
    UNSUBSCRIBE = 12
    SUCCESS = 13
    ERROR = 14
    CLOSE_PRODUCER = 15
    CLOSE_CONSUMER = 16
    PRODUCER_SUCCESS = 17
    PING = 18
    PONG = 19
    REDELIVER_UNACKNOWLEDGED_MESSAGES = 20
    PARTITIONED_METADATA = 21
    PARTITIONED_METADATA_RESPONSE = 22
    LOOKUP = 23
    LOOKUP_RESPONSE = 24
    CONSUMER_STATS = 25
    CONSUMER_STATS_RESPONSE = 26
    REACHED_END_OF_TOPIC = 27
    SEEK = 28
    GET_LAST_MESSAGE_ID = 29
    GET_LAST_MESSAGE_ID_RESPONSE = 30
    ACTIVE_CONSUMER_CHANGE = 31
    GET_TOPICS_OF_NAMESPACE = 32
    GET_TOPICS_OF_NAMESPACE_RESPONSE = 33
    GET_SCHEMA = 34
    GET_SCHEMA_RESPONSE = 35
    AUTH_CHALLENGE = 36
    AUTH_RESPONSE = 37
    ACK_RESPONSE = 38
    GET_OR_CREATE_SCHEMA = 39
    GET_OR_CREATE_SCHEMA_RESPONSE = 40
    NEW_TXN = 50
    NEW_TXN_RESPONSE = 51
    ADD_PARTITION_TO_TXN = 52
    ADD_PARTITION_TO_TXN_RESPONSE = 53
    ADD_SUBSCRIPTION_TO_TXN = 54
    ADD_SUBSCRIPTION_TO_TXN_RESPONSE = 55
    END_TXN = 56
    END_TXN_RESPONSE = 57
    END_TXN_ON_PARTITION = 58
    END_TXN_ON_PARTITION_RESPONSE = 59
    END_TXN_ON_SUBSCRIPTION = 60
    END_TXN_ON_SUBSCRIPTION_RESPONSE = 61
    TC_CLIENT_CONNECT_REQUEST = 62
    TC_CLIENT_CONNECT_RESPONSE = 63
    WATCH_TOPIC_LIST = 64
    WATCH_TOPIC_LIST_SUCCESS = 65
    WATCH_TOPIC_UPDATE = 66
    WATCH_TOPIC_LIST_CLOSE = 67
    TOPIC_MIGRATED = 68


class ServerError(enum.IntEnum):
    """``ServerError``: what an ERROR, SEND_ERROR or failed lookup carries. Clients retry
    ``SERVICE_NOT_READY`` with a fresh lookup (unless the message mentions
    ``PulsarServerException``); most others fail the operation."""

    UNKNOWN_ERROR = 0
    METADATA_ERROR = 1
    PERSISTENCE_ERROR = 2
    AUTHENTICATION_ERROR = 3
    AUTHORIZATION_ERROR = 4
    CONSUMER_BUSY = 5
    SERVICE_NOT_READY = 6
    PRODUCER_BLOCKED_QUOTA_EXCEEDED_ERROR = 7
    PRODUCER_BLOCKED_QUOTA_EXCEEDED_EXCEPTION = 8
    CHECKSUM_ERROR = 9
    UNSUPPORTED_VERSION_ERROR = 10
    TOPIC_NOT_FOUND = 11
    SUBSCRIPTION_NOT_FOUND = 12
    CONSUMER_NOT_FOUND = 13
    TOO_MANY_REQUESTS = 14
    TOPIC_TERMINATED_ERROR = 15
    PRODUCER_BUSY = 16
    INVALID_TOPIC_NAME = 17
    INCOMPATIBLE_SCHEMA = 18
    CONSUMER_ASSIGN_ERROR = 19
    TRANSACTION_COORDINATOR_NOT_FOUND = 20
    INVALID_TXN_STATUS = 21
    NOT_ALLOWED_ERROR = 22
    TRANSACTION_CONFLICT = 23
    TRANSACTION_NOT_FOUND = 24
    PRODUCER_FENCED = 25


class SubType(enum.IntEnum):
    EXCLUSIVE = 0
    SHARED = 1
    FAILOVER = 2
    KEY_SHARED = 3


class LookupType(enum.IntEnum):
    REDIRECT = 0
    CONNECT = 1
    FAILED = 2


class MetadataLookupType(enum.IntEnum):
    SUCCESS = 0
    FAILED = 1


class ProducerAccessMode(enum.IntEnum):
    SHARED = 0
    EXCLUSIVE = 1
    WAIT_FOR_EXCLUSIVE = 2
    EXCLUSIVE_WITH_FENCING = 3


class TopicsMode(enum.IntEnum):
    PERSISTENT = 0
    NON_PERSISTENT = 1
    ALL = 2


class AckType(enum.IntEnum):
    INDIVIDUAL = 0
    CUMULATIVE = 1


class Command(ProtoMessage, frozen=True, kw_only=True):
    """A command: a message with its ``BaseCommand`` type."""

    TYPE: ClassVar[CommandType]


# -- connection --------------------------------------------------------------------------------


class Connect(Command, frozen=True, kw_only=True):
    TYPE = CommandType.CONNECT
    client_version: str
    auth_method: int | None = None
    auth_data: bytes | None = None
    protocol_version: int = 0
    auth_method_name: str | None = None
    proxy_to_broker_url: str | None = None
    original_principal: str | None = None
    original_auth_data: str | None = None
    original_auth_method: str | None = None
    feature_flags: FeatureFlags | None = None
    FIELDS = (
        F(1, "client_version", STRING, required=True),
        F(2, "auth_method", ENUM),
        F(3, "auth_data", BYTES),
        F(4, "protocol_version", INT32),
        F(5, "auth_method_name", STRING),
        F(6, "proxy_to_broker_url", STRING),
        F(7, "original_principal", STRING),
        F(8, "original_auth_data", STRING),
        F(9, "original_auth_method", STRING),
        F(10, "feature_flags", MESSAGE, FeatureFlags),
    )


class Connected(Command, frozen=True, kw_only=True):
    TYPE = CommandType.CONNECTED
    server_version: str
    protocol_version: int = 0
    max_message_size: int | None = None
    feature_flags: FeatureFlags | None = None
    FIELDS = (
        F(1, "server_version", STRING, required=True),
        F(2, "protocol_version", INT32),
        F(3, "max_message_size", INT32),
        F(4, "feature_flags", MESSAGE, FeatureFlags),
    )


class Ping(Command, frozen=True, kw_only=True):
    TYPE = CommandType.PING


class Pong(Command, frozen=True, kw_only=True):
    TYPE = CommandType.PONG


class Success(Command, frozen=True, kw_only=True):
    TYPE = CommandType.SUCCESS
    request_id: int
    FIELDS = (F(1, "request_id", UINT64, required=True),)


class Error(Command, frozen=True, kw_only=True):
    TYPE = CommandType.ERROR
    request_id: int
    error: int
    message: str
    FIELDS = (
        F(1, "request_id", UINT64, required=True),
        F(2, "error", ENUM, required=True),
        F(3, "message", STRING, required=True),
    )


# -- lookup ------------------------------------------------------------------------------------


class PartitionedMetadata(Command, frozen=True, kw_only=True):
    TYPE = CommandType.PARTITIONED_METADATA
    topic: str
    request_id: int
    FIELDS = (F(1, "topic", STRING, required=True), F(2, "request_id", UINT64, required=True))


class PartitionedMetadataResponse(Command, frozen=True, kw_only=True):
    TYPE = CommandType.PARTITIONED_METADATA_RESPONSE
    request_id: int
    partitions: int | None = None
    response: int | None = None
    error: int | None = None
    message: str | None = None
    FIELDS = (
        F(1, "partitions", UINT32),
        F(2, "request_id", UINT64, required=True),
        F(3, "response", ENUM),
        F(4, "error", ENUM),
        F(5, "message", STRING),
    )


class LookupTopic(Command, frozen=True, kw_only=True):
    TYPE = CommandType.LOOKUP
    topic: str
    request_id: int
    authoritative: bool = False
    advertised_listener_name: str | None = None
    FIELDS = (
        F(1, "topic", STRING, required=True),
        F(2, "request_id", UINT64, required=True),
        F(3, "authoritative", BOOL),
        F(7, "advertised_listener_name", STRING),
    )


class LookupTopicResponse(Command, frozen=True, kw_only=True):
    TYPE = CommandType.LOOKUP_RESPONSE
    request_id: int
    broker_service_url: str | None = None
    broker_service_url_tls: str | None = None
    response: int | None = None
    authoritative: bool = False
    error: int | None = None
    message: str | None = None
    proxy_through_service_url: bool = False
    FIELDS = (
        F(1, "broker_service_url", STRING),
        F(2, "broker_service_url_tls", STRING),
        F(3, "response", ENUM),
        F(4, "request_id", UINT64, required=True),
        F(5, "authoritative", BOOL),
        F(6, "error", ENUM),
        F(7, "message", STRING),
        F(8, "proxy_through_service_url", BOOL),
    )


class GetTopicsOfNamespace(Command, frozen=True, kw_only=True):
    TYPE = CommandType.GET_TOPICS_OF_NAMESPACE
    request_id: int
    namespace: str
    mode: int = TopicsMode.PERSISTENT
    topics_pattern: str | None = None
    topics_hash: str | None = None
    FIELDS = (
        F(1, "request_id", UINT64, required=True),
        F(2, "namespace", STRING, required=True),
        F(3, "mode", ENUM),
        F(4, "topics_pattern", STRING),
        F(5, "topics_hash", STRING),
    )


class GetTopicsOfNamespaceResponse(Command, frozen=True, kw_only=True):
    TYPE = CommandType.GET_TOPICS_OF_NAMESPACE_RESPONSE
    request_id: int
    topics: tuple[str, ...] = ()
    filtered: bool = False
    topics_hash: str | None = None
    changed: bool = True
    FIELDS = (
        F(1, "request_id", UINT64, required=True),
        F(2, "topics", STRING, repeated=True),
        F(3, "filtered", BOOL),
        F(4, "topics_hash", STRING),
        F(5, "changed", BOOL),
    )


# -- producers ---------------------------------------------------------------------------------


class Producer(Command, frozen=True, kw_only=True):
    TYPE = CommandType.PRODUCER
    topic: str
    producer_id: int
    request_id: int
    producer_name: str | None = None
    encrypted: bool = False
    metadata: tuple[KeyValue, ...] = ()
    epoch: int = 0
    user_provided_producer_name: bool = True
    producer_access_mode: int = ProducerAccessMode.SHARED
    topic_epoch: int | None = None
    txn_enabled: bool = False
    initial_subscription_name: str | None = None
    FIELDS = (
        F(1, "topic", STRING, required=True),
        F(2, "producer_id", UINT64, required=True),
        F(3, "request_id", UINT64, required=True),
        F(4, "producer_name", STRING),
        F(5, "encrypted", BOOL),
        F(6, "metadata", MESSAGE, KeyValue, repeated=True),
        F(8, "epoch", UINT64),
        F(9, "user_provided_producer_name", BOOL),
        F(10, "producer_access_mode", ENUM),
        F(11, "topic_epoch", UINT64),
        F(12, "txn_enabled", BOOL),
        F(13, "initial_subscription_name", STRING),
    )


class ProducerSuccess(Command, frozen=True, kw_only=True):
    TYPE = CommandType.PRODUCER_SUCCESS
    request_id: int
    producer_name: str
    last_sequence_id: int = -1
    schema_version: bytes | None = None
    topic_epoch: int | None = None
    producer_ready: bool = True
    FIELDS = (
        F(1, "request_id", UINT64, required=True),
        F(2, "producer_name", STRING, required=True),
        F(3, "last_sequence_id", INT64),
        F(4, "schema_version", BYTES),
        F(5, "topic_epoch", UINT64),
        F(6, "producer_ready", BOOL),
    )


class Send(Command, frozen=True, kw_only=True):
    TYPE = CommandType.SEND
    producer_id: int
    sequence_id: int
    num_messages: int = 1
    txnid_least_bits: int = 0
    txnid_most_bits: int = 0
    highest_sequence_id: int = 0
    is_chunk: bool = False
    marker: bool = False
    FIELDS = (
        F(1, "producer_id", UINT64, required=True),
        F(2, "sequence_id", UINT64, required=True),
        F(3, "num_messages", INT32),
        F(4, "txnid_least_bits", UINT64),
        F(5, "txnid_most_bits", UINT64),
        F(6, "highest_sequence_id", UINT64),
        F(7, "is_chunk", BOOL),
        F(8, "marker", BOOL),
    )


class SendReceipt(Command, frozen=True, kw_only=True):
    TYPE = CommandType.SEND_RECEIPT
    producer_id: int
    sequence_id: int
    message_id: MessageIdData | None = None
    highest_sequence_id: int = 0
    FIELDS = (
        F(1, "producer_id", UINT64, required=True),
        F(2, "sequence_id", UINT64, required=True),
        F(3, "message_id", MESSAGE, MessageIdData),
        F(4, "highest_sequence_id", UINT64),
    )


class SendError(Command, frozen=True, kw_only=True):
    TYPE = CommandType.SEND_ERROR
    producer_id: int
    sequence_id: int
    error: int
    message: str
    FIELDS = (
        F(1, "producer_id", UINT64, required=True),
        F(2, "sequence_id", UINT64, required=True),
        F(3, "error", ENUM, required=True),
        F(4, "message", STRING, required=True),
    )


class CloseProducer(Command, frozen=True, kw_only=True):
    """Either way: a client closing its producer, or the broker telling the client to
    reconnect it (``request_id`` -1; the assigned broker's URL when the topic moved)."""

    TYPE = CommandType.CLOSE_PRODUCER
    producer_id: int
    request_id: int
    assigned_broker_service_url: str | None = None
    assigned_broker_service_url_tls: str | None = None
    FIELDS = (
        F(1, "producer_id", UINT64, required=True),
        F(2, "request_id", UINT64, required=True),
        F(3, "assigned_broker_service_url", STRING),
        F(4, "assigned_broker_service_url_tls", STRING),
    )


# -- consumers ---------------------------------------------------------------------------------


class Subscribe(Command, frozen=True, kw_only=True):
    TYPE = CommandType.SUBSCRIBE
    topic: str
    subscription: str
    sub_type: int
    consumer_id: int
    request_id: int
    consumer_name: str | None = None
    priority_level: int | None = None
    durable: bool = True
    start_message_id: MessageIdData | None = None
    metadata: tuple[KeyValue, ...] = ()
    read_compacted: bool | None = None
    initial_position: int = 0
    replicate_subscription_state: bool | None = None
    force_topic_creation: bool = True
    start_message_rollback_duration_sec: int = 0
    key_shared_meta: KeySharedMeta | None = None
    subscription_properties: tuple[KeyValue, ...] = ()
    consumer_epoch: int | None = None
    FIELDS = (
        F(1, "topic", STRING, required=True),
        F(2, "subscription", STRING, required=True),
        F(3, "sub_type", ENUM, required=True),
        F(4, "consumer_id", UINT64, required=True),
        F(5, "request_id", UINT64, required=True),
        F(6, "consumer_name", STRING),
        F(7, "priority_level", INT32),
        F(8, "durable", BOOL),
        F(9, "start_message_id", MESSAGE, MessageIdData),
        F(10, "metadata", MESSAGE, KeyValue, repeated=True),
        F(11, "read_compacted", BOOL),
        F(13, "initial_position", ENUM),
        F(14, "replicate_subscription_state", BOOL),
        F(15, "force_topic_creation", BOOL),
        F(16, "start_message_rollback_duration_sec", UINT64),
        F(17, "key_shared_meta", MESSAGE, KeySharedMeta),
        F(18, "subscription_properties", MESSAGE, KeyValue, repeated=True),
        F(19, "consumer_epoch", UINT64),
    )


class Flow(Command, frozen=True, kw_only=True):
    TYPE = CommandType.FLOW
    consumer_id: int
    message_permits: int
    FIELDS = (
        F(1, "consumer_id", UINT64, required=True),
        F(2, "message_permits", UINT32, required=True),
    )


class Message(Command, frozen=True, kw_only=True):
    TYPE = CommandType.MESSAGE
    consumer_id: int
    message_id: MessageIdData
    redelivery_count: int = 0
    ack_set: tuple[int, ...] = ()
    consumer_epoch: int | None = None
    FIELDS = (
        F(1, "consumer_id", UINT64, required=True),
        F(2, "message_id", MESSAGE, MessageIdData, required=True),
        F(3, "redelivery_count", UINT32),
        F(4, "ack_set", INT64, repeated=True),
        F(5, "consumer_epoch", UINT64),
    )


class Ack(Command, frozen=True, kw_only=True):
    TYPE = CommandType.ACK
    consumer_id: int
    ack_type: int
    message_id: tuple[MessageIdData, ...] = ()
    validation_error: int | None = None
    properties: tuple[KeyLongValue, ...] = ()
    txnid_least_bits: int = 0
    txnid_most_bits: int = 0
    request_id: int | None = None
    FIELDS = (
        F(1, "consumer_id", UINT64, required=True),
        F(2, "ack_type", ENUM, required=True),
        F(3, "message_id", MESSAGE, MessageIdData, repeated=True),
        F(4, "validation_error", ENUM),
        F(5, "properties", MESSAGE, KeyLongValue, repeated=True),
        F(6, "txnid_least_bits", UINT64),
        F(7, "txnid_most_bits", UINT64),
        F(8, "request_id", UINT64),
    )


class AckResponse(Command, frozen=True, kw_only=True):
    TYPE = CommandType.ACK_RESPONSE
    consumer_id: int
    error: int | None = None
    message: str | None = None
    request_id: int | None = None
    FIELDS = (
        F(1, "consumer_id", UINT64, required=True),
        F(4, "error", ENUM),
        F(5, "message", STRING),
        F(6, "request_id", UINT64),
    )


class ActiveConsumerChange(Command, frozen=True, kw_only=True):
    TYPE = CommandType.ACTIVE_CONSUMER_CHANGE
    consumer_id: int
    is_active: bool = False
    FIELDS = (F(1, "consumer_id", UINT64, required=True), F(2, "is_active", BOOL))


class Unsubscribe(Command, frozen=True, kw_only=True):
    TYPE = CommandType.UNSUBSCRIBE
    consumer_id: int
    request_id: int
    force: bool = False
    FIELDS = (
        F(1, "consumer_id", UINT64, required=True),
        F(2, "request_id", UINT64, required=True),
        F(3, "force", BOOL),
    )


class CloseConsumer(Command, frozen=True, kw_only=True):
    """Either way, as :class:`CloseProducer`."""

    TYPE = CommandType.CLOSE_CONSUMER
    consumer_id: int
    request_id: int
    assigned_broker_service_url: str | None = None
    assigned_broker_service_url_tls: str | None = None
    FIELDS = (
        F(1, "consumer_id", UINT64, required=True),
        F(2, "request_id", UINT64, required=True),
        F(3, "assigned_broker_service_url", STRING),
        F(4, "assigned_broker_service_url_tls", STRING),
    )


class RedeliverUnacknowledgedMessages(Command, frozen=True, kw_only=True):
    TYPE = CommandType.REDELIVER_UNACKNOWLEDGED_MESSAGES
    consumer_id: int
    message_ids: tuple[MessageIdData, ...] = ()
    consumer_epoch: int | None = None
    FIELDS = (
        F(1, "consumer_id", UINT64, required=True),
        F(2, "message_ids", MESSAGE, MessageIdData, repeated=True),
        F(3, "consumer_epoch", UINT64),
    )


class ConsumerStats(Command, frozen=True, kw_only=True):
    TYPE = CommandType.CONSUMER_STATS
    request_id: int
    consumer_id: int
    FIELDS = (F(1, "request_id", UINT64, required=True), F(4, "consumer_id", UINT64, required=True))


class ConsumerStatsResponse(Command, frozen=True, kw_only=True):
    TYPE = CommandType.CONSUMER_STATS_RESPONSE
    request_id: int
    error_code: int | None = None
    error_message: str | None = None
    msg_rate_out: float | None = None
    msg_throughput_out: float | None = None
    msg_rate_redeliver: float | None = None
    consumer_name: str | None = None
    available_permits: int | None = None
    unacked_messages: int | None = None
    blocked_consumer_on_unacked_msgs: bool | None = None
    address: str | None = None
    connected_since: str | None = None
    type: str | None = None
    msg_rate_expired: float | None = None
    msg_backlog: int | None = None
    FIELDS = (
        F(1, "request_id", UINT64, required=True),
        F(2, "error_code", ENUM),
        F(3, "error_message", STRING),
        F(4, "msg_rate_out", DOUBLE),
        F(5, "msg_throughput_out", DOUBLE),
        F(6, "msg_rate_redeliver", DOUBLE),
        F(7, "consumer_name", STRING),
        F(8, "available_permits", UINT64),
        F(9, "unacked_messages", UINT64),
        F(10, "blocked_consumer_on_unacked_msgs", BOOL),
        F(11, "address", STRING),
        F(12, "connected_since", STRING),
        F(13, "type", STRING),
        F(14, "msg_rate_expired", DOUBLE),
        F(15, "msg_backlog", UINT64),
    )


# -- requests Ballast refuses (no storage layer, no schema registry) ---------------------------


class Seek(Command, frozen=True, kw_only=True):
    TYPE = CommandType.SEEK
    consumer_id: int
    request_id: int
    FIELDS = (F(1, "consumer_id", UINT64, required=True), F(2, "request_id", UINT64, required=True))


class GetLastMessageId(Command, frozen=True, kw_only=True):
    TYPE = CommandType.GET_LAST_MESSAGE_ID
    consumer_id: int
    request_id: int
    FIELDS = (F(1, "consumer_id", UINT64, required=True), F(2, "request_id", UINT64, required=True))


class GetSchema(Command, frozen=True, kw_only=True):
    TYPE = CommandType.GET_SCHEMA
    request_id: int
    topic: str
    FIELDS = (F(1, "request_id", UINT64, required=True), F(2, "topic", STRING, required=True))


class GetSchemaResponse(Command, frozen=True, kw_only=True):
    TYPE = CommandType.GET_SCHEMA_RESPONSE
    request_id: int
    error_code: int | None = None
    error_message: str | None = None
    FIELDS = (
        F(1, "request_id", UINT64, required=True),
        F(2, "error_code", ENUM),
        F(3, "error_message", STRING),
    )


class GetOrCreateSchema(Command, frozen=True, kw_only=True):
    TYPE = CommandType.GET_OR_CREATE_SCHEMA
    request_id: int
    topic: str
    FIELDS = (F(1, "request_id", UINT64, required=True), F(2, "topic", STRING, required=True))


class GetOrCreateSchemaResponse(Command, frozen=True, kw_only=True):
    TYPE = CommandType.GET_OR_CREATE_SCHEMA_RESPONSE
    request_id: int
    error_code: int | None = None
    error_message: str | None = None
    schema_version: bytes | None = None
    FIELDS = (
        F(1, "request_id", UINT64, required=True),
        F(2, "error_code", ENUM),
        F(3, "error_message", STRING),
        F(4, "schema_version", BYTES),
    )


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
