"""The codes of Pulsar's binary protocol — ``BaseCommand.Type``, ``ServerError`` and the
small enums commands carry — and :class:`Command`, the base of every command: a protobuf message
with its ``BaseCommand`` type."""

from __future__ import annotations

import enum
from typing import ClassVar

from ballast.protocol.schema import ProtoMessage


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

    @staticmethod
    def name_of(mode: int) -> str:
        """Pulsar's name of an access mode (``WaitForExclusive``); the number if unknown."""
        try:
            return "".join(part.title() for part in ProducerAccessMode(mode).name.split("_"))
        except ValueError:
            return str(mode)


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
