"""Pulsar's partitioned-topic endpoints (``/admin/v2/{domain}/{tenant}/{namespace}/...``):
the metadata clients read before a lookup, create, update and delete, and a namespace's list.

Any broker answers reads from the store; changes go to the leader's controller. What only the
brokers know — whether a partition's non-persistent topic is loaded somewhere — is checked
here before a change is forwarded, as namespace deletion does."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from ballast.broker.binary.peers import PeerError, PeerTopics
from ballast.broker.http.admin_api import (
    done,
    forced,
    loaded_topics,
    namespace_of,
    namespace_topics,
)
from ballast.broker.http.bodies import json_body
from ballast.broker.http.errors import ApiError, reason
from ballast.broker.http.lookup_api import admin_topic, topic_from_parts
from ballast.broker.leader_calls import to_leader
from ballast.broker.lookup import partitions_of
from ballast.controller.partitioned_topics import partitioned_topic_name
from ballast.controller.requests import (
    CreatePartitionedTopic,
    DeletePartitionedTopic,
    RequestReply,
    UpdatePartitionedTopic,
)
from ballast.metadata import paths
from ballast.model.naming import (
    InvalidNameError,
    NamespaceName,
    TopicDomain,
    TopicName,
    java_parse_int,
    java_url_decode,
)
from ballast.model.partitioned import PartitionedTopicMetadata, read_partitioned
from ballast.tasks import gather_or_cancel

if TYPE_CHECKING:
    from ballast.broker.node import BrokerNode

_JAVA_INT = range(-(2**31), 2**31)


METADATA_TYPE = "application/vnd.partitioned-topic-metadata+json"
"""The body type of a create that gives the topic's properties too: Pulsar's
``PartitionedTopicMetadata`` (``{"partitions": 4, "properties": {"k": "v"}}``), which its
admin clients send when there are properties."""


async def partition_count(request: web.Request) -> int:
    """The body of a create or update: the number of partitions as a JSON number (Jackson
    also takes a numeric string and a whole float); no body is 0, as JAX-RS reads it."""
    return _count(await json_body(request))


async def partitioned_metadata(request: web.Request) -> PartitionedTopicMetadata:
    """The body of a create: the count (:func:`partition_count`), or with the
    :data:`METADATA_TYPE` the count and the topic's properties (string to string)."""
    value = await json_body(request)
    if request.content_type != METADATA_TYPE or not isinstance(value, dict):
        return PartitionedTopicMetadata(partitions=_count(value))
    properties = value.get("properties")
    if properties is not None and (
        not isinstance(properties, dict) or not all(isinstance(v, str) for v in properties.values())
    ):
        raise ApiError(400, "properties are a JSON object of strings")
    return PartitionedTopicMetadata(
        partitions=_count(value.get("partitions")), properties=properties or None
    )


def _count(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, str):
        value = java_parse_int(value)  # Jackson reads a number in a string as Java does
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value not in _JAVA_INT:
        raise ApiError(
            400,
            "the body is the number of partitions, a JSON integer up to 2147483647 (e.g. 4)",
        )
    return value


class TopicsApi:
    def __init__(self, node: BrokerNode) -> None:
        self.node = node

    def _partitioned(self, request: web.Request) -> TopicName:
        topic = partitioned_topic_name(str(admin_topic(request)))
        if isinstance(topic, RequestReply):
            raise ApiError(topic.status, topic.message)
        return topic

    async def partitions(self, request: web.Request) -> web.StreamResponse:
        """``GET .../{topic}/partitions``: the partitioned topic's metadata, asked by clients
        before a lookup."""
        return await self._partitions_of(admin_topic(request), request)

    async def partitions_v1(self, request: web.Request) -> web.StreamResponse:
        """``GET /admin/{domain}/{tenant}/{cluster}/{namespace}/{topic}/partitions``: the same
        for a v1 topic (clients with an ``http://`` URL ask so for one)."""
        raw = request.rel_url.raw_parts  # ('/', 'admin', domain, tenant, cluster, ns, topic, ..)
        return await self._partitions_of(topic_from_parts(raw[2], list(raw[3:-1])), request)

    async def _partitions_of(self, topic: TopicName, request: web.Request) -> web.StreamResponse:
        """The metadata (``{"partitions": N}``, with the topic's properties if it has any):
        0 partitions for a plain topic. 404 for a topic of a namespace that does not exist
        (Pulsar checks the namespace's policies before it reads the metadata), and, unless
        ``checkAllowAutoCreation=true`` (what clients ask before they create a topic by
        using it: Ballast always lets them), for a plain topic that does not exist, as
        Pulsar answers an admin tool."""
        record = await self.node.store.get(paths.partitioned_topic(topic))
        metadata = read_partitioned(record.value) if record is not None else None
        if metadata is None or metadata.partitions == 0:
            namespace = paths.namespace_policies(topic.namespace)
            if await self.node.store.exists(namespace) is None:
                return reason(404, f"namespace {topic.namespace} does not exist")
            creating = request.query.get("checkAllowAutoCreation", "").lower() == "true"
            if not creating:
                found = await self._topic_exists(topic)
                if isinstance(found, web.StreamResponse):
                    return found
                if not found:
                    return reason(404, f"Topic {topic} not found")
            metadata = PartitionedTopicMetadata()
        answer: dict[str, object] = {"partitions": metadata.partitions}
        if metadata.properties:
            answer["properties"] = metadata.properties
        return web.json_response(answer)

    async def _topic_exists(self, topic: TopicName) -> bool | web.StreamResponse:
        """Whether a plain topic of a namespace that exists is there: a partition of a
        partitioned topic that has it, a persistent one recorded in the store, a
        non-persistent one loaded on a broker (503 when one cannot be asked)."""
        if topic.is_partition:  # as Pulsar's checkTopicExists: by its parent's metadata
            parent = await partitions_of(self.node.store, topic.partitioned_parent)
            if topic.partition_index < parent:
                return True
        if topic.is_persistent:
            return await self.node.store.exists(paths.managed_ledger(topic)) is not None
        # The namespace exists (checked by the caller): ask its brokers without reading it again.
        loaded = await loaded_topics(self.node, topic.namespace)
        if isinstance(loaded, web.StreamResponse):
            return loaded
        return str(topic) in loaded

    async def create(self, request: web.Request) -> web.StreamResponse:
        """``PUT .../{topic}/partitions`` with the count as the body (or, with the
        :data:`METADATA_TYPE`, the count and the topic's properties)."""
        topic = self._partitioned(request)
        metadata = await partitioned_metadata(request)
        count = metadata.partitions
        if not topic.is_persistent and count > 0:
            loaded = await self._loaded(topic.namespace)
            if isinstance(loaded, web.StreamResponse):
                return loaded
            if str(topic) in loaded:  # a non-partitioned topic of that name is in use
                return reason(409, "This topic already exists")
        return done(
            await to_leader(
                self.node,
                CreatePartitionedTopic(
                    topic=str(topic), partitions=count, properties=metadata.properties
                ),
            )
        )

    async def update(self, request: web.Request) -> web.StreamResponse:
        """``POST .../{topic}/partitions``: raise the partition count to the body's."""
        topic = self._partitioned(request)
        count = await partition_count(request)
        return done(
            await to_leader(self.node, UpdatePartitionedTopic(topic=str(topic), partitions=count))
        )

    async def delete(self, request: web.Request) -> web.StreamResponse:
        """``DELETE .../{topic}/partitions[?force=true]``. Without ``force``, each loaded
        partition is deleted where it is served first, and the delete is refused (412) while
        one has producers or subscriptions, as Pulsar deletes the partitions one by one and
        refuses those in use; an idle loaded partition is no reason to refuse."""
        topic = self._partitioned(request)
        if not forced(request):
            loaded = await self._loaded_partitions(topic)
            if isinstance(loaded, web.StreamResponse):
                return loaded
            peers = PeerTopics(self.node)
            try:
                answers = await gather_or_cancel(
                    peers.delete(TopicName.parse(name)) for name in loaded
                )
            except PeerError as exc:
                return reason(503, str(exc))
            finally:
                await peers.close()
            in_use = answers.count(412)
            if in_use:
                return reason(
                    412,
                    f"Topic has active producers/subscriptions: {in_use} of its partitions "
                    "have clients; close them, or delete with force",
                )
            if any(status not in (204, 404) for status in answers):
                return reason(503, f"a partition of {topic} could not be deleted; retry")
        return done(await to_leader(self.node, DeletePartitionedTopic(topic=str(topic))))

    async def list_partitioned(self, request: web.Request) -> web.StreamResponse:
        """``GET /admin/v2/{persistent|non-persistent}/{tenant}/{namespace}/partitioned``: the
        namespace's partitioned topics of that domain."""
        domain = TopicDomain.parse(request.rel_url.raw_parts[3])  # a literal of the route
        namespace = namespace_of(request)
        if await self.node.store.exists(paths.namespace_policies(namespace)) is None:
            return reason(404, f"namespace {namespace} does not exist")
        listing = paths.namespace_partitioned_topics(namespace, domain)
        names = [
            str(TopicName.of(domain, namespace, java_url_decode(encoded)))
            for encoded in await self.node.store.children(listing)
        ]
        return web.json_response(sorted(names))

    async def list_topics(self, request: web.Request) -> web.StreamResponse:
        """``GET /admin/v2/{persistent|non-persistent}/{tenant}/{namespace}[?bundle=RANGE]``:
        the namespace's topics of that domain (pulsar-admin's ``topics list``), or those of
        one bundle."""
        domain = TopicDomain.parse(request.rel_url.raw_parts[3])  # a literal of the route
        bundle = request.query.get("bundle") or None
        return await namespace_topics(self.node, namespace_of(request), [domain], bundle)

    async def _loaded_partitions(self, topic: TopicName) -> list[str] | web.StreamResponse:
        """The partitions of ``topic`` loaded on some broker (only non-persistent topics are
        served), or a 503 when a broker cannot be asked."""
        if topic.is_persistent or await partitions_of(self.node.store, topic) <= 0:
            return []
        loaded = await self._loaded(topic.namespace)
        if isinstance(loaded, web.StreamResponse):
            return loaded
        return sorted(name for name in loaded if _partition_of(name, topic))

    async def _loaded(self, namespace: NamespaceName) -> list[str] | web.StreamResponse:
        """The namespace's non-persistent topics loaded on any broker (none when the namespace
        does not exist: the leader answers that), or a 503 when a broker serving one of its
        bundles cannot be asked."""
        if await self.node.store.exists(paths.namespace_policies(namespace)) is None:
            return []
        return await loaded_topics(self.node, namespace)


def _partition_of(name: str, topic: TopicName) -> bool:
    """Whether the topic ``name`` (as a broker listed it) is a partition of ``topic``; a plain
    topic of the same name is not."""
    try:
        loaded = TopicName.parse(name)
    except InvalidNameError:
        return False
    return loaded.is_partition and loaded.partitioned_parent == topic
