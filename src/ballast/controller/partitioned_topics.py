"""Partitioned topics, as the leader's controller serves them: create, raise the partition
count, delete. A partitioned topic is only its metadata record,
``/admin/partitioned-topics/<tenant>/<ns>/<domain>/<topic>`` holding ``{"partitions": N}``
(Pulsar's ``PartitionedTopicMetadata``); clients read the count before a lookup and then use
the topics ``<topic>-partition-0`` … ``-partition-N-1``, each hashed into a bundle of its own.

Status codes and reasons follow Pulsar's ``internalCreatePartitionedTopic``,
``internalUpdatePartitionedTopicAsync`` and ``internalDeletePartitionedTopic``. Whether a
partition's non-persistent topic is loaded on some broker is known to the brokers, not to the
store: the HTTP shell checks that before it forwards a request here.

Concurrency contract: handlers run in the controller's event task.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

import msgspec

from ballast.controller.commands import CloseTopics, CommandReply
from ballast.controller.requests import (
    CreatePartitionedTopic,
    DeletePartitionedTopic,
    RequestReply,
    UpdatePartitionedTopic,
    failed,
    ok,
)
from ballast.metadata import paths
from ballast.metadata.store import Create, Delete, NoNodeError, SetValue, parent_of
from ballast.model.naming import (
    PARTITIONED_TOPIC_SUFFIX,
    InvalidNameError,
    TopicDomain,
    TopicName,
    java_url_decode,
)
from ballast.model.partitioned import PartitionedTopicMetadata, read_partitioned

if TYPE_CHECKING:
    from ballast.controller.controller import Controller

log = logging.getLogger(__name__)

MAX_PARTITIONS_SETTING = "maxNumPartitionsPerPartitionedTopic"
# Ballast's own ceiling, below any limit set: a persistent topic's partitions are recorded one
# by one in the leader's queue, and 2^31 of them held it (and its memory) for good.
PARTITIONS_CEILING = 10_000


def partitioned_topic_name(text: str) -> TopicName | RequestReply:
    """The topic a partitioned-topic request names, or the refusal: 400 for a bad name, 412
    for a name with ``-partition-`` in it (Pulsar's ``validatePartitionedTopicName``)."""
    try:
        topic = TopicName.parse(text)
    except InvalidNameError as exc:
        return failed(400, str(exc))
    if PARTITIONED_TOPIC_SUFFIX in topic.local_name:
        return failed(412, "Partitioned Topic Name should not contain '-partition-'")
    return topic


class PartitionedTopicHandlers:
    def __init__(self, controller: Controller) -> None:
        self.c = controller

    def _count_refused(self, partitions: int, *, update: bool = False) -> RequestReply | None:
        """A count of 0 or above ``maxNumPartitionsPerPartitionedTopic`` (0: no limit but
        :data:`PARTITIONS_CEILING`): 406 for a create, and 422 for an update past the limit,
        as Pulsar answers each."""
        if partitions <= 0:
            return failed(406, "Number of partitions should be more than 0")
        limit = self.c.settings.get_int(MAX_PARTITIONS_SETTING)
        limit = min(limit, PARTITIONS_CEILING) if limit > 0 else PARTITIONS_CEILING
        if limit < partitions:
            if update:
                return failed(
                    422,
                    f"Expect partitions {partitions} greater than maximum partitions per "
                    f"topic {limit}",
                )
            return failed(406, f"Number of partitions should be less than or equal to {limit}")
        return None

    async def _CreatePartitionedTopic(  # noqa: N802
        self, request: CreatePartitionedTopic
    ) -> RequestReply:
        topic = partitioned_topic_name(request.topic)
        if isinstance(topic, RequestReply):
            return topic
        refused = self._count_refused(request.partitions)
        if refused is not None:
            return refused
        if topic.namespace not in self.c.image.namespaces:
            return failed(404, f"namespace {topic.namespace} does not exist")
        path = paths.partitioned_topic(topic)
        if await self.c.store.exists(path) is not None:
            return failed(409, "This topic already exists")
        whole, highest = await self._stored(topic)
        if whole:
            return failed(409, "This topic already exists")
        if highest >= request.partitions:
            # Pulsar's check against recreating a topic with fewer partitions than it had.
            return failed(
                409,
                f"The topic has a max partition index of {highest}, the number of partitions "
                f"must be at least {highest + 1}",
            )
        await self.c.store.ensure(parent_of(path))
        body = PartitionedTopicMetadata(
            partitions=request.partitions, properties=request.properties
        ).encode()
        await self.c.fenced([Create(path, body)])
        await self._store_partitions(topic, request.partitions)
        return ok(
            f"partitioned topic {topic} created with {request.partitions} partitions",
            partitions=request.partitions,
        )

    async def _UpdatePartitionedTopic(  # noqa: N802
        self, request: UpdatePartitionedTopic
    ) -> RequestReply:
        topic = partitioned_topic_name(request.topic)
        if isinstance(topic, RequestReply):
            return topic
        refused = self._count_refused(request.partitions, update=True)
        if refused is not None:
            return refused
        path = paths.partitioned_topic(topic)
        record = await self.c.store.get(path)
        stored = read_partitioned(record.value if record is not None else b"")
        current = stored.partitions
        if record is None or current <= 0:
            return failed(409, f"Topic {topic} is not the partitioned topic.")
        if request.partitions < current:
            return failed(
                422,
                f"Expect partitions {request.partitions} can't less than current partitions "
                f"{current}.",
            )
        if request.partitions == current:
            return ok(f"{topic} already has {current} partitions", partitions=current)
        updated = msgspec.structs.replace(stored, partitions=request.partitions)
        await self.c.fenced([SetValue(path, updated.encode(), record.stat.version)])
        await self._store_partitions(topic, request.partitions)
        return ok(
            f"partitioned topic {topic} now has {request.partitions} partitions",
            partitions=request.partitions,
        )

    async def _DeletePartitionedTopic(  # noqa: N802
        self, request: DeletePartitionedTopic
    ) -> RequestReply:
        topic = partitioned_topic_name(request.topic)
        if isinstance(topic, RequestReply):
            return topic
        path = paths.partitioned_topic(topic)
        record = await self.c.store.get(path)
        if record is None:
            return failed(404, "Partitioned topic does not exist")
        count = read_partitioned(record.value).partitions
        if topic.is_persistent:
            # The partitions first, as Pulsar deletes them: a delete that stops part-way
            # leaves a partitioned topic to delete again, not partitions without one.
            for index in range(count):
                with contextlib.suppress(NoNodeError):
                    await self.c.store.delete(paths.managed_ledger(topic.partition(index)))
        await self.c.fenced([Delete(path, record.stat.version)])
        if not topic.is_persistent:
            self._close_partitions(topic, count)
        return ok(f"partitioned topic {topic} deleted")

    def _close_partitions(self, topic: TopicName, count: int) -> None:
        """Tell the owner of each bundle holding a partition of the deleted ``topic`` to
        disconnect its clients, as Pulsar's delete closes every partition's producers and
        consumers. After the metadata is gone, so that a client reconnecting finds no
        partition to open. Not awaited: the channel delivers each command however long its
        broker takes, and the leader's queue does not wait for it."""
        bundles = self.c.image.namespaces.get(topic.namespace)
        if bundles is None:
            return
        by_bundle: dict[str, list[str]] = {}
        for index in range(count):
            partition = topic.partition(index)
            by_bundle.setdefault(str(bundles.find(partition)), []).append(str(partition))
        for bundle, names in sorted(by_bundle.items()):
            owner = self.c.image.owners.get(bundle)
            if owner is not None:
                command = CloseTopics(epoch=self.c.epoch, bundle=bundle, topics=tuple(names))
                self.c.channel.send(owner, command).add_done_callback(_log_closed)

    async def _store_partitions(self, topic: TopicName, count: int) -> None:
        """Record the persistent partitions that are missing, as Pulsar creates their managed
        ledgers (``tryCreatePartitionsAsync``): they are then listed with the namespace's
        topics and loaded with their bundles. Non-persistent topics are never stored."""
        if topic.is_persistent:
            for index in range(count):
                await self.c.store.ensure(paths.managed_ledger(topic.partition(index)))

    async def _stored(self, topic: TopicName) -> tuple[bool, int]:
        """Whether ``topic`` is stored as a topic of its own (a non-partitioned topic of that
        name), and the highest index of its partitions that are stored, -1 for none (Pulsar's
        ``getMaxPartitionIndex``). Only persistent topics are ever stored."""
        whole, highest = False, -1
        if topic.domain is not TopicDomain.PERSISTENT:
            return whole, highest
        listing = paths.namespace_topics(topic.namespace, TopicDomain.PERSISTENT)
        for encoded in await self.c.store.children(listing):
            try:
                name = java_url_decode(encoded)
                stored = TopicName.of(TopicDomain.PERSISTENT, topic.namespace, name)
            except InvalidNameError:
                continue
            if stored == topic:
                whole = True
            elif stored.is_partition and stored.partitioned_parent == topic:
                highest = max(highest, stored.partition_index)
        return whole, highest


def _log_closed(reply: asyncio.Future[CommandReply]) -> None:
    """The outcome of a :class:`CloseTopics`: logged, as nobody waits for it."""
    if reply.cancelled():
        return
    failure = reply.exception()
    if failure is not None:
        log.info("closing a deleted topic's partitions: %s", failure)
    elif not reply.result().ok:
        log.info("closing a deleted topic's partitions failed: %s", reply.result().message)
