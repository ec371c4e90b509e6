"""Creating and deleting a non-partitioned non-persistent topic:
``PUT`` and ``DELETE /admin/v2/non-persistent/{tenant}/{namespace}/{topic}`` (what
``pulsar-admin topics create`` and ``delete`` send), answered by the broker that serves the
topic's bundle, as Pulsar's ``NonPersistentTopics`` does.

A non-persistent topic has no record of its own: creating one loads it on the broker that
owns its bundle (the bundle is placed first if no broker owns it), where it stays, idle,
until the inactivity sweep deletes it as it would any topic whose clients left. Deleting one
unloads it there; Pulsar refuses it (412) while it has producers or subscriptions, unless
``force=true``, which closes them. Another broker redirects (307) to the owner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from ballast.broker.binary.topics import TopicInUseError, TopicRefused
from ballast.broker.http.errors import ApiError, reason
from ballast.broker.http.lookup_api import admin_topic, serve_topic_here
from ballast.broker.lookup import AnswerKind, LookupErrorKind, LookupOptions, partitions_of
from ballast.model.naming import TopicName
from ballast.protocol.commands import ServerError

if TYPE_CHECKING:
    from ballast.broker.binary.topics import TopicService
    from ballast.broker.node import BrokerNode

# How a refusal to open the topic reads over HTTP. Not found is a partition its partitioned
# topic does not have (Pulsar's create answers 412 for a "-partition-" name it refuses).
_REFUSED_STATUS = {
    ServerError.NOT_ALLOWED_ERROR: 405,
    ServerError.TOPIC_NOT_FOUND: 412,
    ServerError.SERVICE_NOT_READY: 503,
    ServerError.METADATA_ERROR: 503,
}


class TopicAdminApi:
    """Create and delete on one broker; ``clients`` is its binary listener's topics (None for
    a broker without one: it serves no topic, so it only redirects)."""

    def __init__(self, node: BrokerNode, clients: TopicService | None) -> None:
        self.node = node
        self.clients = clients
        self._creating: set[TopicName] = set()  # a create of each waits for its bundle

    async def create(self, request: web.Request) -> web.StreamResponse:
        topic = admin_topic(request, endpoint=False)
        if await partitions_of(self.node.store, topic) > 0:
            return reason(409, "This topic already exists")  # as a partitioned topic
        # Places the bundle if no broker owns it. The broker the leader chose is sent the
        # create with ``authoritative`` (Pulsar's redirect): it takes the bundle rather than
        # asking around, whose answers could send the create back and forth meanwhile.
        chosen = request.query.get("authoritative", "false").lower() == "true"
        answer = await self.node.lookup(topic, LookupOptions(authoritative=chosen))
        if answer.kind is AnswerKind.ERROR:
            status = 404 if answer.error is LookupErrorKind.NAMESPACE_NOT_FOUND else 503
            return reason(status, answer.message)
        if answer.broker_id != self.node.broker_id:
            if not answer.http_url:
                raise ApiError(503, f"the broker serving {topic} has no web service URL; retry")
            there = request.rel_url.without_query_params("authoritative")
            if answer.authoritative:
                there = there.update_query(authoritative="true")
            raise web.HTTPTemporaryRedirect(f"{answer.http_url}{there}")
        clients = self._clients()
        if topic in clients.topics or topic in self._creating:
            return reason(409, "This topic already exists")
        self._creating.add(topic)  # the same create asked again meanwhile: one of them makes it
        try:
            opened = await clients.open(topic)
        except TopicRefused as exc:
            return reason(_REFUSED_STATUS.get(exc.error, 503), str(exc))
        finally:
            self._creating.discard(topic)
        clients.release(opened)  # loaded without clients: idle from now
        return web.Response(status=204)

    async def delete(self, request: web.Request) -> web.StreamResponse:
        topic = admin_topic(request, endpoint=False)
        force = request.query.get("force", "false").lower() == "true"
        await serve_topic_here(self.node, topic, request)
        try:
            deleted = self._clients().delete(topic, force=force)
        except TopicInUseError as exc:
            return reason(412, f"{exc} (force=true closes them)")
        return web.Response(status=204) if deleted else reason(404, "Topic not found")

    def _clients(self) -> TopicService:
        if self.clients is None:
            raise ApiError(503, f"{self.node.broker_id} serves no topics (no binary listener)")
        return self.clients
