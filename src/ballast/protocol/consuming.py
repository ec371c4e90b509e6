"""Commands of consumers: SUBSCRIBE, FLOW, MESSAGE, ACK, ACTIVE_CONSUMER_CHANGE, UNSUBSCRIBE,
CLOSE_CONSUMER (either way), redelivery and stats — and the requests Ballast answers with a
refusal (SEEK, GET_LAST_MESSAGE_ID, schemas: there is no storage layer or schema registry)."""

from __future__ import annotations

from ballast.protocol.messages import KeyLongValue, KeySharedMeta, KeyValue, MessageIdData
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
)
from ballast.protocol.types import Command, CommandType


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
    """A consumer's reset to a message or a publish time (one of the two must be given)."""

    TYPE = CommandType.SEEK
    consumer_id: int
    request_id: int
    message_id: MessageIdData | None = None
    message_publish_time: int | None = None
    FIELDS = (
        F(1, "consumer_id", UINT64, required=True),
        F(2, "request_id", UINT64, required=True),
        F(3, "message_id", MESSAGE, MessageIdData),
        F(4, "message_publish_time", UINT64),
    )


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
