"""The binary protocol's requests that wait on the metadata store or on ownership, each run as a
task of its connection and answered by request id (Pulsar's ``ServerCnx.handle*``):

- PARTITIONED_METADATA: the partition count from the partitioned-topic record (0: a plain
  topic).
- LOOKUP: the runtime's lookup (seed 003): Connect to the owner (``authoritative`` set, as
  Pulsar answers), Redirect to the broker that must answer (``authoritative`` when the leader
  chose it), or Failed — ServiceNotReady, which clients retry, while a bundle moves or nothing
  can take it; TopicNotFound for an unknown namespace.
- GET_TOPICS_OF_NAMESPACE: persistent topics from the namespace's topic index, non-persistent
  ones from the brokers serving its bundles (asked over HTTP), filtered by the client's
  pattern, with Pulsar's topics hash (an unchanged list is answered ``changed=false``).
- PRODUCER and SUBSCRIBE: the topic opened on this broker (or refused: ServiceNotReady when
  another broker owns it, so the client looks up again), then the producer or consumer
  attached, with Pulsar's checks (producer names unique per topic, subscription types, Key_Shared
  modes and ranges).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ballast.broker.binary.peers import PeerError
from ballast.broker.binary.subscriptions import Consumer, SubscribeRefused
from ballast.broker.binary.topics import ProducerHandle, TopicRefused
from ballast.broker.caches import NamespaceNotFoundError
from ballast.broker.lookup import AnswerKind, LookupErrorKind, LookupOptions, partitions_of
from ballast.broker.traffic import WindowedRates
from ballast.metadata import paths
from ballast.metadata.store import MetadataError
from ballast.model.codec import ModelError
from ballast.model.linear_regex import linear_fullmatch
from ballast.model.naming import InvalidNameError, NamespaceName, TopicName, UnservableTopicName
from ballast.protocol.checksum import crc32c
from ballast.protocol.commands import (
    Error,
    GetTopicsOfNamespace,
    GetTopicsOfNamespaceResponse,
    LookupTopic,
    LookupTopicResponse,
    LookupType,
    MetadataLookupType,
    PartitionedMetadata,
    PartitionedMetadataResponse,
    Producer,
    ProducerAccessMode,
    ProducerSuccess,
    ServerError,
    Subscribe,
    SubType,
    Success,
    TopicsMode,
)
from ballast.protocol.messages import KeySharedMode

if TYPE_CHECKING:
    from ballast.broker.binary.connection import ServerConnection

_SCHEME = re.compile(r"^(persistent|non-persistent)://")


def name_refusal(exc: InvalidNameError) -> ServerError:
    """The error for a topic name refused: InvalidTopicName as Pulsar answers, but
    NotAllowedError for a name Pulsar accepts and Ballast cannot serve — the official clients
    retry InvalidTopicName until their operation timeout, then fail with a bare Timeout."""
    if isinstance(exc, UnservableTopicName):
        return ServerError.NOT_ALLOWED_ERROR
    return ServerError.INVALID_TOPIC_NAME


async def partitioned_metadata(connection: ServerConnection, command: PartitionedMetadata) -> None:
    def failed(error: ServerError, message: str) -> PartitionedMetadataResponse:
        return PartitionedMetadataResponse(
            request_id=command.request_id,
            response=MetadataLookupType.FAILED,
            error=error,
            message=message,
        )

    try:
        topic = TopicName.parse(command.topic)
    except InvalidNameError as exc:
        connection.send_command(failed(name_refusal(exc), str(exc)))
        return
    store = connection.server.node.store
    try:
        partitions = await partitions_of(store, topic)
        # a topic of a namespace that does not exist: TopicNotFound, as the HTTP API's 404
        # and this protocol's LOOKUP answer it (Pulsar finds no namespace policies)
        missing = partitions == 0 and (
            await store.exists(paths.namespace_policies(topic.namespace)) is None
        )
    except MetadataError as exc:  # Pulsar's clients retry it, and keep the connection
        connection.send_command(failed(ServerError.METADATA_ERROR, str(exc)))
        return
    if missing:
        connection.send_command(
            failed(ServerError.TOPIC_NOT_FOUND, f"namespace {topic.namespace} does not exist")
        )
        return
    connection.send_command(
        PartitionedMetadataResponse(
            request_id=command.request_id,
            partitions=partitions,
            response=MetadataLookupType.SUCCESS,
        )
    )


# How a failed lookup is told. Pulsar's C++ client closes the whole connection (every producer
# and consumer on it) on ServiceNotReady, unless its message is one of Pulsar's own for a bundle
# in transition; a store failure is MetadataError, which it retries on the same connection.
_LOOKUP_ERRORS: dict[LookupErrorKind | None, ServerError] = {
    LookupErrorKind.NAMESPACE_NOT_FOUND: ServerError.TOPIC_NOT_FOUND,
    LookupErrorKind.METADATA: ServerError.METADATA_ERROR,
}


async def lookup(connection: ServerConnection, command: LookupTopic) -> None:
    node = connection.server.node
    try:
        topic = TopicName.parse(command.topic)
    except InvalidNameError as exc:
        connection.send_command(
            LookupTopicResponse(
                request_id=command.request_id,
                response=LookupType.FAILED,
                error=name_refusal(exc),
                message=str(exc),
            )
        )
        return
    answer = node.lookups.cached_answer(topic)
    if answer is None:
        answer = await node.lookup(topic, LookupOptions(authoritative=command.authoritative))
    if answer.kind is AnswerKind.ERROR:
        error = _LOOKUP_ERRORS.get(answer.error, ServerError.SERVICE_NOT_READY)
        response = LookupTopicResponse(
            request_id=command.request_id,
            response=LookupType.FAILED,
            error=error,
            message=answer.message,
        )
    else:
        connect = answer.kind is AnswerKind.CONNECT
        response = LookupTopicResponse(
            request_id=command.request_id,
            broker_service_url=answer.broker_url,
            broker_service_url_tls=answer.broker_url_tls,
            response=LookupType.CONNECT if connect else LookupType.REDIRECT,
            authoritative=True if connect else answer.authoritative,
        )
    connection.send_command(response)


def topics_hash(topics: list[str]) -> str:
    """Pulsar's ``TopicList.calculateHash``: CRC32C of the sorted names joined by commas, as
    Guava prints a 32-bit hash (its bytes little-endian, in hex)."""
    value = crc32c(",".join(sorted(topics)).encode())
    return value.to_bytes(4, "little").hex()


def filter_topics(topics: list[str], pattern: str, max_length: int) -> list[str] | None:
    """The topics whose name (without ``persistent://``) fully matches ``pattern`` (also
    without a scheme), as Pulsar's ``TopicList.filterTopics``; None — the topics go
    unfiltered and the client filters them — for a pattern longer than ``max_length``
    (``subscriptionPatternMaxLength``, as Pulsar), one that is not valid, or one RE2 cannot
    take. RE2 matches in time linear in the name, as the RE2J of Pulsar's default
    ``topicsPatternRegexImplementation`` does (Python's ``re`` backtracks: ``(a+)+`` against
    a topic of 30 ``a`` and a ``!`` held the event loop 26 s). Pulsar falls back to Java's
    backtracking engine for what RE2J cannot take (backreferences, lookaround, possessive
    quantifiers); Ballast leaves those to the client."""
    if len(pattern) > max_length:
        return None
    matches = linear_fullmatch(_SCHEME.sub("", pattern))
    if matches is None:
        return None
    return [t for t in topics if matches(_SCHEME.sub("", t))]


async def topics_of_namespace(connection: ServerConnection, command: GetTopicsOfNamespace) -> None:
    server = connection.server
    node = server.node
    try:
        namespace = NamespaceName.parse(command.namespace)
        names: list[str] = []
        if command.mode in (TopicsMode.PERSISTENT, TopicsMode.ALL):
            names.extend(str(t) for t in await node.topic_index.topics_of(namespace))
        if command.mode in (TopicsMode.NON_PERSISTENT, TopicsMode.ALL):
            names.extend(await server.peers.non_persistent_topics(namespace))
    except (InvalidNameError, NamespaceNotFoundError, MetadataError, ModelError, PeerError) as exc:
        connection.send_command(
            Error(request_id=command.request_id, error=ServerError.METADATA_ERROR, message=str(exc))
        )
        return
    names = sorted(set(names))
    filtered = False
    if command.topics_pattern:
        matched = filter_topics(names, command.topics_pattern, server.pattern_max_length)
        if matched is not None:
            names, filtered = matched, True
    digest = topics_hash(names)
    unchanged = command.topics_hash is not None and command.topics_hash == digest
    connection.send_command(
        GetTopicsOfNamespaceResponse(
            request_id=command.request_id,
            topics=() if unchanged else tuple(names),
            filtered=filtered,
            topics_hash=digest,
            changed=not unchanged,
        )
    )


async def create_producer(connection: ServerConnection, command: Producer) -> None:
    topics = connection.topics
    existing = connection.producers.get(command.producer_id)
    if existing is not None:  # a retried request: Pulsar answers with the producer it has
        if existing.topic.name_text == command.topic:
            connection.send_command(
                ProducerSuccess(request_id=command.request_id, producer_name=existing.name)
            )
        else:
            _error(connection, command.request_id, ServerError.PRODUCER_BUSY, "producer id in use")
        return
    key = ("producer", command.producer_id)
    if key in connection.pending:
        _error(
            connection,
            command.request_id,
            ServerError.SERVICE_NOT_READY,
            "Producer is already being created on this connection",
        )
        return
    if command.producer_access_mode not in (
        ProducerAccessMode.SHARED,
        ProducerAccessMode.EXCLUSIVE,
    ):
        _error(
            connection,
            command.request_id,
            ServerError.NOT_ALLOWED_ERROR,
            f"producer access mode {ProducerAccessMode.name_of(command.producer_access_mode)} "
            "is not supported (Shared and Exclusive are)",
        )
        return
    try:
        name = TopicName.parse(command.topic)
    except InvalidNameError as exc:
        _error(connection, command.request_id, name_refusal(exc), str(exc))
        return
    connection.pending.add(key)
    try:
        topic = await topics.open(name)
    except TopicRefused as refused:
        connection.pending.discard(key)
        _error(connection, command.request_id, refused.error, refused.message)
        return
    except BaseException:  # a failure of its own: a retry must not meet "already being created"
        connection.pending.discard(key)
        raise
    # No await from here on: the bundle cannot leave between the check and the attach.
    if key not in connection.pending or connection.closed:
        topics.release(topic)  # the client closed it meanwhile
        return
    connection.pending.discard(key)
    producer_name = command.producer_name or topics.new_producer_name()
    other = topic.producers.get(producer_name)
    if other is not None and other.link.closed:
        topics.remove_producer(other)
        other = None
    exclusive = next(
        (p for p in topic.producers.values() if p.access_mode == ProducerAccessMode.EXCLUSIVE),
        None,
    )
    # Pulsar's AbstractTopic.incrementTopicEpochIfNeeded: an Exclusive producer that finds
    # others is fenced (ProducerFenced); a Shared one that finds an exclusive one is busy.
    wants_exclusive = command.producer_access_mode == ProducerAccessMode.EXCLUSIVE
    error, refusal = ServerError.PRODUCER_BUSY, ""
    if other is not None:
        refusal = f"Producer with name '{producer_name}' is already connected to topic"
    elif exclusive is not None:
        refusal = f"Topic has an existing exclusive producer: {exclusive.name}"
        error = ServerError.PRODUCER_FENCED if wants_exclusive else error
    elif wants_exclusive and topic.producers:
        error, refusal = ServerError.PRODUCER_FENCED, "Topic has existing shared producers"
    if refusal:
        topics.release(topic)
        _error(connection, command.request_id, error, refusal)
        return
    producer = ProducerHandle(
        command.producer_id,
        producer_name,
        connection,
        topic,
        command.epoch,
        command.producer_access_mode,
        connection.clock.wall_ms(),
        WindowedRates(connection.clock.monotonic(), topic.meter.window_s, 2),
    )
    connection.producers[command.producer_id] = producer
    connection.recently_closed_producers.discard(command.producer_id)
    topics.add_producer(producer)
    connection.send_command(
        ProducerSuccess(request_id=command.request_id, producer_name=producer_name)
    )


# Refusals of a topic that Pulsar's clients retry (the C++ client's retryable results).
_RETRIED = frozenset({ServerError.SERVICE_NOT_READY, ServerError.METADATA_ERROR})


async def subscribe(connection: ServerConnection, command: Subscribe) -> None:
    topics = connection.topics
    if command.consumer_id in connection.consumers:  # a retried request
        connection.send_command(Success(request_id=command.request_id))
        return
    key = ("consumer", command.consumer_id)
    if key in connection.pending:
        _error(
            connection,
            command.request_id,
            ServerError.SERVICE_NOT_READY,
            "Consumer is already being created on this connection",
        )
        return
    try:
        sub_type = SubType(command.sub_type)
        name = TopicName.parse(command.topic)
    except ValueError as exc:  # InvalidNameError is one
        error = (
            name_refusal(exc)
            if isinstance(exc, InvalidNameError)
            else ServerError.NOT_ALLOWED_ERROR
        )
        _error(connection, command.request_id, error, str(exc))
        return
    refusal = _subscribe_refusal(command)
    if refusal is not None:
        _error(connection, command.request_id, *refusal)
        return
    meta = command.key_shared_meta
    mode = meta.key_shared_mode if meta is not None else KeySharedMode.AUTO_SPLIT
    ranges = tuple((r.start, r.end) for r in meta.hash_ranges) if meta is not None else ()
    connection.pending.add(key)
    try:
        topic = await topics.open(name)
    except TopicRefused as refused:
        connection.pending.discard(key)
        _error(connection, command.request_id, refused.error, refused.message)
        if refused.error in _RETRIED:
            connection.subscribe_refused_for_now(command.consumer_id)
        return
    except BaseException:  # a failure of its own: a retry must not meet "already being created"
        connection.pending.discard(key)
        raise
    # No await from here on (see create_producer).
    if key not in connection.pending or connection.closed:
        topics.release(topic)
        return
    connection.pending.discard(key)
    consumer = Consumer(
        command.consumer_id,
        command.consumer_name or f"consumer-{command.consumer_id}",
        connection,
        topic.name_text,
        command.subscription,
        command.priority_level or 0,
        ranges,
        connection.clock.wall_ms(),
        WindowedRates(connection.clock.monotonic(), topic.meter.window_s, 2),
    )
    subscription = topic.subscription(
        command.subscription, sub_type, mode, connection.clock.monotonic()
    )
    try:
        subscription.check(sub_type, mode, consumer)
    except SubscribeRefused as refused:
        if not subscription.consumers:
            topic.drop_subscription(subscription.name)
        topics.release(topic)
        _error(connection, command.request_id, refused.error, refused.message)
        return
    connection.consumers[command.consumer_id] = (consumer, topic)
    connection.recently_closed_consumers.discard(command.consumer_id)
    topics.add_consumer(topic, subscription, consumer)
    connection.send_command(Success(request_id=command.request_id))


# Subscriptions whose names start so are the replicators' (Pulsar's ``replicatorPrefix``).
REPLICATOR_PREFIX = "pulsar.repl"


def _subscribe_refusal(command: Subscribe) -> tuple[ServerError, str] | None:
    """What Pulsar's ``NonPersistentTopic.subscribe`` refuses whatever the topic's state: a
    blank or reserved subscription name (a NamingException, which the broker answers as
    ProducerBusy: ``BrokerServiceException.getClientErrorCode``) and a compacted read, which
    only a persistent topic has."""
    if not command.subscription.strip():
        return ServerError.PRODUCER_BUSY, "Empty subscription name"
    if command.subscription.startswith(REPLICATOR_PREFIX):
        return ServerError.PRODUCER_BUSY, "Subscription with reserved subscription name attempted"
    if command.read_compacted:
        return ServerError.NOT_ALLOWED_ERROR, "readCompacted only valid on persistent topics"
    return None


def _error(connection: ServerConnection, request_id: int, error: ServerError, message: str) -> None:
    connection.send_command(Error(request_id=request_id, error=error, message=message))
