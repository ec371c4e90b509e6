"""Commands of producers: PRODUCER / PRODUCER_SUCCESS, SEND / SEND_RECEIPT / SEND_ERROR and
CLOSE_PRODUCER (either way)."""

from __future__ import annotations

from ballast.protocol.messages import KeyValue, MessageIdData
from ballast.protocol.schema import (
    BOOL,
    BYTES,
    ENUM,
    INT32,
    INT64,
    MESSAGE,
    STRING,
    UINT64,
    F,
)
from ballast.protocol.types import Command, CommandType, ProducerAccessMode


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
