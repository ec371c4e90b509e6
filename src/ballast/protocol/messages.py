"""The data messages of ``PulsarApi.proto`` that commands carry (message ids, key/values,
feature flags, Key_Shared metadata) and the metadata of a published message
(``MessageMetadata``, and ``SingleMessageMetadata`` for each message of a batch).

Field numbers are Pulsar's; attribute names are snake_case. Only fields Ballast reads or
writes are modelled; others are skipped on decoding (the broker forwards a message's metadata
bytes verbatim, so nothing a client sets is lost).
"""

from __future__ import annotations

import enum

from ballast.protocol.schema import (
    BOOL,
    BYTES,
    ENUM,
    INT32,
    INT64,
    MESSAGE,
    STRING,
    UINT32,
    UINT64,
    F,
    ProtoMessage,
)


class CompressionType(enum.IntEnum):
    NONE = 0
    LZ4 = 1
    ZLIB = 2
    ZSTD = 3
    SNAPPY = 4


class KeySharedMode(enum.IntEnum):
    AUTO_SPLIT = 0
    STICKY = 1


class MessageIdData(ProtoMessage, frozen=True, kw_only=True):
    ledger_id: int
    entry_id: int
    partition: int = -1
    batch_index: int = -1
    ack_set: tuple[int, ...] = ()
    batch_size: int | None = None
    FIELDS = (
        F(1, "ledger_id", UINT64, required=True),
        F(2, "entry_id", UINT64, required=True),
        F(3, "partition", INT32),
        F(4, "batch_index", INT32),
        F(5, "ack_set", INT64, repeated=True),
        F(6, "batch_size", INT32),
    )


class KeyValue(ProtoMessage, frozen=True, kw_only=True):
    key: str
    value: str
    FIELDS = (F(1, "key", STRING, required=True), F(2, "value", STRING, required=True))


class KeyLongValue(ProtoMessage, frozen=True, kw_only=True):
    key: str
    value: int
    FIELDS = (F(1, "key", STRING, required=True), F(2, "value", UINT64, required=True))


class IntRange(ProtoMessage, frozen=True, kw_only=True):
    """An inclusive range of Key_Shared hash slots (``start``..``end``)."""

    start: int
    end: int
    FIELDS = (F(1, "start", INT32, required=True), F(2, "end", INT32, required=True))


class FeatureFlags(ProtoMessage, frozen=True, kw_only=True):
    supports_auth_refresh: bool = False
    supports_broker_entry_metadata: bool = False
    supports_partial_producer: bool = False
    supports_topic_watchers: bool = False
    FIELDS = (
        F(1, "supports_auth_refresh", BOOL),
        F(2, "supports_broker_entry_metadata", BOOL),
        F(3, "supports_partial_producer", BOOL),
        F(4, "supports_topic_watchers", BOOL),
    )


class KeySharedMeta(ProtoMessage, frozen=True, kw_only=True):
    key_shared_mode: int
    hash_ranges: tuple[IntRange, ...] = ()
    allow_out_of_order_delivery: bool = False
    FIELDS = (
        F(1, "key_shared_mode", ENUM, required=True),
        F(3, "hash_ranges", MESSAGE, IntRange, repeated=True),
        F(4, "allow_out_of_order_delivery", BOOL),
    )


class MessageMetadata(ProtoMessage, frozen=True, kw_only=True):
    """A published message's metadata (for a batch: the batch's, with
    ``num_messages_in_batch`` set — its presence is what marks a batch)."""

    producer_name: str
    sequence_id: int
    publish_time: int
    properties: tuple[KeyValue, ...] = ()
    replicated_from: str | None = None
    partition_key: str | None = None
    replicate_to: tuple[str, ...] = ()
    compression: int | None = None
    uncompressed_size: int | None = None
    num_messages_in_batch: int | None = None
    event_time: int | None = None
    schema_version: bytes | None = None
    partition_key_b64_encoded: bool | None = None
    ordering_key: bytes | None = None
    deliver_at_time: int | None = None
    marker_type: int | None = None
    highest_sequence_id: int | None = None
    null_value: bool | None = None
    uuid: str | None = None
    num_chunks_from_msg: int | None = None
    total_chunk_msg_size: int | None = None
    chunk_id: int | None = None
    null_partition_key: bool | None = None
    FIELDS = (
        F(1, "producer_name", STRING, required=True),
        F(2, "sequence_id", UINT64, required=True),
        F(3, "publish_time", UINT64, required=True),
        F(4, "properties", MESSAGE, KeyValue, repeated=True),
        F(5, "replicated_from", STRING),
        F(6, "partition_key", STRING),
        F(7, "replicate_to", STRING, repeated=True),
        F(8, "compression", ENUM),
        F(9, "uncompressed_size", UINT32),
        F(11, "num_messages_in_batch", INT32),
        F(12, "event_time", UINT64),
        F(16, "schema_version", BYTES),
        F(17, "partition_key_b64_encoded", BOOL),
        F(18, "ordering_key", BYTES),
        F(19, "deliver_at_time", INT64),
        F(20, "marker_type", INT32),
        F(24, "highest_sequence_id", UINT64),
        F(25, "null_value", BOOL),
        F(26, "uuid", STRING),
        F(27, "num_chunks_from_msg", INT32),
        F(28, "total_chunk_msg_size", INT32),
        F(29, "chunk_id", INT32),
        F(30, "null_partition_key", BOOL),
    )

    @property
    def sticky_key(self) -> bytes | None:
        """The key Key_Shared dispatch orders by: the ordering key, else the partition key
        (Pulsar's ``peekStickyKey``); None when the message has neither."""
        if self.ordering_key is not None:
            return self.ordering_key
        if self.partition_key is not None:
            return self.partition_key.encode()
        return None


class SingleMessageMetadata(ProtoMessage, frozen=True, kw_only=True):
    """The metadata before each message inside a batch's payload."""

    payload_size: int
    properties: tuple[KeyValue, ...] = ()
    partition_key: str | None = None
    compacted_out: bool | None = None
    event_time: int | None = None
    partition_key_b64_encoded: bool | None = None
    ordering_key: bytes | None = None
    sequence_id: int | None = None
    null_value: bool | None = None
    null_partition_key: bool | None = None
    FIELDS = (
        F(1, "properties", MESSAGE, KeyValue, repeated=True),
        F(2, "partition_key", STRING),
        F(3, "payload_size", INT32, required=True),
        F(4, "compacted_out", BOOL),
        F(5, "event_time", UINT64),
        F(6, "partition_key_b64_encoded", BOOL),
        F(7, "ordering_key", BYTES),
        F(8, "sequence_id", UINT64),
        F(9, "null_value", BOOL),
        F(10, "null_partition_key", BOOL),
    )
