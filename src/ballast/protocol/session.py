"""Commands of a connection's life and of lookups: CONNECT / CONNECTED, PING / PONG, SUCCESS,
ERROR, PARTITIONED_METADATA, LOOKUP and GET_TOPICS_OF_NAMESPACE with their responses."""

from __future__ import annotations

from ballast.protocol.messages import FeatureFlags
from ballast.protocol.schema import (
    BOOL,
    BYTES,
    ENUM,
    INT32,
    MESSAGE,
    STRING,
    UINT32,
    UINT64,
    F,
)
from ballast.protocol.types import Command, CommandType, TopicsMode


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
