"""Lookup and broker endpoints (Pulsar's ``/lookup/v2/topic/...`` and ``/admin/v2/brokers``),
plus the internal endpoints the controller and the brokers use between themselves.

A lookup answered by this broker's namespace service becomes: 200 with the owner's
``LookupData``; 307 to the same path on the broker that must answer, with ``authoritative``
(Pulsar's ``validateTopicOwnership``); 404 for an unknown namespace; 503 for a bundle on the
move (the client retries).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING
from urllib.parse import urlencode

import msgspec
from aiohttp import web

from ballast.broker.caches import NamespaceNotFoundError
from ballast.broker.http.bodies import read_body
from ballast.broker.http.errors import ApiError, reason, this_cluster
from ballast.broker.lookup import (
    AnswerKind,
    LookupAnswer,
    LookupErrorKind,
    LookupOptions,
)
from ballast.controller.commands import decode_command
from ballast.controller.requests import decode_request, not_the_leader
from ballast.coordination.election import read_leader
from ballast.coordination.ownership import OwnershipState
from ballast.metadata import paths
from ballast.metadata.store import ConnectionState
from ballast.model.bundles import BundleName, BundleRange, InvalidBundle
from ballast.model.naming import (
    InvalidNameError,
    NamespaceName,
    TopicDomain,
    TopicName,
    java_url_decode,
    name_memo,
)

if TYPE_CHECKING:
    from ballast.broker.node import BrokerNode
    from ballast.coordination.ownership import Owner


def _true(value: str | None) -> bool:
    return value is not None and value.lower() == "true"


@name_memo(maxsize=100_000)
def topic_from_path(domain: str, parts: tuple[str, ...]) -> TopicName:
    """:func:`topic_from_parts`, memoised: the same topics are looked up again and again
    (names up to ``MEMOISED_NAME_LENGTH`` long: the cache counts entries)."""
    return topic_from_parts(domain, list(parts))


def topic_from_parts(domain: str, parts: list[str]) -> TopicName:
    """A topic from REST path segments (encoded as Pulsar's ``Codec.encode``): v2
    ``tenant/namespace/topic`` or v1 ``tenant/cluster/namespace/topic``."""
    try:
        kind = TopicDomain.parse(domain)
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None
    decoded = [java_url_decode(p) for p in parts]
    try:
        if len(decoded) == 3:
            namespace = NamespaceName.of(decoded[0], decoded[1])
        elif len(decoded) == 4:
            namespace = NamespaceName.of(decoded[0], decoded[2], cluster=decoded[1])
        else:
            raise ApiError(400, "expected /{tenant}/{namespace}/{topic}")
        return TopicName.of(kind, namespace, decoded[-1])
    except InvalidNameError as exc:
        raise ApiError(400, str(exc)) from None


def admin_topic(request: web.Request, *, endpoint: bool = True) -> TopicName:
    """The topic of an ``/admin/v2/{domain}/{tenant}/{namespace}/{topic}/...`` request; with
    ``endpoint`` the last segment is the endpoint's (``partitions``, ``stats``), else the path
    ends with the topic."""
    raw = request.rel_url.raw_parts  # ('/', 'admin', 'v2', domain, tenant, ns, topic, ...)
    return topic_from_parts(raw[3], list(raw[4:-1] if endpoint else raw[4:]))


async def redirect_to_owner(
    node: BrokerNode, bundle: BundleName, request: web.Request
) -> Owner | None:
    """Send ``request`` on to the broker that owns ``bundle`` (a 307 to the same path there)
    when that is another broker, as Pulsar's ``validateBundleOwnership`` does; else the
    owner, this broker or None."""
    owner = await node.owners.owner(bundle)
    if owner is not None and owner.broker_id != node.broker_id and owner.data.http_url:
        raise web.HTTPTemporaryRedirect(f"{owner.data.http_url}{request.rel_url}")
    return owner


async def serve_topic_here(node: BrokerNode, topic: TopicName, request: web.Request) -> None:
    """Return when this broker serves ``topic``'s bundle, where its loaded topics are. Else
    the request goes on to the bundle's owner (307); with no owner no broker has the topic
    loaded (404 "Topic not found", as Pulsar answers); and a bundle between owners is 503."""
    try:
        bundle = await node.lookups.bundle_of(topic)
    except NamespaceNotFoundError:
        raise ApiError(404, f"namespace {topic.namespace} does not exist") from None
    if bundle in node.served:
        return
    if await redirect_to_owner(node, bundle, request) is None:
        raise ApiError(404, "Topic not found")
    raise ApiError(503, f"bundle {bundle} is moving; retry")


@functools.lru_cache(maxsize=4096)
def _lookup_data(answer: LookupAnswer) -> bytes:
    """Pulsar's ``LookupData`` JSON of a Connect answer (answers are reused while the owner
    record is unchanged, so this is computed once per owner)."""
    return msgspec.json.encode(
        {
            "brokerUrl": answer.broker_url,
            "brokerUrlTls": answer.broker_url_tls,
            "httpUrl": answer.http_url,
            "httpUrlTls": answer.http_url_tls,
            "nativeUrl": answer.broker_url,
        }
    )


class LookupApi:
    def __init__(self, node: BrokerNode) -> None:
        self.node = node

    async def lookup(self, request: web.Request) -> web.StreamResponse:
        # ('/', 'lookup', 'v2', 'topic', domain, ...), or 'destination' for a v1 name
        raw = request.rel_url.raw_parts
        topic = topic_from_path(raw[4], raw[5:])
        answer = self.node.lookups.cached_answer(topic)
        if answer is None:
            options = LookupOptions(
                authoritative=_true(request.query.get("authoritative")),
                read_only=_true(request.query.get("readOnly")),
            )
            answer = await self.node.lookup(topic, options)
        if answer.kind is AnswerKind.CONNECT:
            return web.Response(body=_lookup_data(answer), content_type="application/json")
        if answer.kind is AnswerKind.REDIRECT:
            target = answer.http_url or ""
            query = {"authoritative": "true" if answer.authoritative else "false"}
            listener = request.query.get("listenerName")
            if listener:  # encoded: an "&" or "#" in it must not become a parameter or fragment
                query["listenerName"] = listener
            path = "topic" if topic.namespace.is_v2 else "destination"
            raise web.HTTPTemporaryRedirect(
                f"{target}/lookup/v2/{path}/{topic.lookup_name}?{urlencode(query)}"
            )
        status = 404 if answer.error is LookupErrorKind.NAMESPACE_NOT_FOUND else 503
        return reason(status, answer.message)

    async def non_persistent_in_bundle(self, request: web.Request) -> web.StreamResponse:
        """``GET /admin/v2/non-persistent/{tenant}/{namespace}/{bundle}``: the
        non-persistent topics loaded in a bundle this broker serves (Pulsar's
        ``getListFromBundle``); a 307 to the owner when another broker serves it, and 204
        (no body) when no broker owns it, as Pulsar answers (its own listing of a namespace
        asks every bundle so); 412 for a range that is not one of the namespace's bundles."""
        try:
            namespace = NamespaceName.of(
                request.match_info["tenant"], request.match_info["namespace"]
            )
            bundle = BundleName(namespace, BundleRange.parse(request.match_info["bundle"]))
        except InvalidNameError as exc:
            raise ApiError(400, str(exc)) from None
        except InvalidBundle as exc:
            raise ApiError(412, str(exc)) from None
        served = self.node.served
        if bundle not in served:
            if await redirect_to_owner(self.node, bundle, request) is None:
                try:
                    current = await self.node.bundles.bundles(namespace)
                except NamespaceNotFoundError:
                    return reason(404, f"namespace {namespace} does not exist")
                if bundle not in current.bundles:
                    return reason(412, f"{bundle.range} is not a bundle of {namespace}")
                return web.Response(status=204)
            return reason(404, f"bundle {bundle} is not served by {self.node.broker_id}")
        names = sorted(str(t) for t in served.topics(bundle) if not t.is_persistent)
        return web.json_response(names)

    async def leader_broker(self, _request: web.Request) -> web.StreamResponse:
        leader = await read_leader(self.node.store)
        if leader is None:
            return reason(404, "no leader is elected")
        return web.json_response({"serviceUrl": leader.service_url, "brokerId": leader.broker_id})

    async def brokers(self, request: web.Request) -> web.StreamResponse:
        """``GET /admin/v2/brokers/{cluster}``, or ``/admin/v2/brokers`` for this cluster."""
        if "cluster" in request.match_info:
            this_cluster(request, self.node.settings.get_str("clusterName"))
        return web.json_response(sorted(await self.node.store.children(paths.BROKERS)))

    async def health(self, _request: web.Request) -> web.StreamResponse:
        """``GET /admin/v2/brokers/health``: ``ok`` while this broker serves as a member —
        not stopping, connected to the metadata store, registered, and serving its heartbeat
        bundle, which no other broker may own — else 500 with what is wrong, as Pulsar
        answers a failed health check. (Pulsar's check also sends a message through a
        heartbeat topic; this one checks the control plane only.)"""
        node = self.node
        problems = []
        if node.stopped:
            problems.append("it is stopping")
        if node.store.state is not ConnectionState.CONNECTED:
            problems.append(f"its metadata store connection is {node.store.state.name.lower()}")
        if not node.registration.registered:
            problems.append("it is not registered")
        if node.heartbeat_bundle not in node.served:
            problems.append(f"it does not serve its heartbeat bundle {node.heartbeat_bundle}")
        if problems:
            return reason(500, f"broker {node.broker_id} is not healthy: {'; '.join(problems)}")
        return web.Response(text="ok")

    async def owned_namespaces(self, request: web.Request) -> web.StreamResponse:
        """``GET /admin/v2/brokers/{cluster}/{broker}/ownedNamespaces``: the bundles this broker
        owns, by namespace (Pulsar's ``NamespaceOwnershipStatus`` per bundle). Another broker's
        is a redirect to its registered web service URL, as Pulsar's ``maybeRedirectToBroker``
        answers; a broker that is not registered is 404, and so is another cluster."""
        this_cluster(request, self.node.settings.get_str("clusterName"))
        broker = request.match_info["broker"]
        if broker != self.node.broker_id:
            urls = self.node.lookups.known_urls(broker)
            if urls is None or not urls.http_url:
                return reason(404, f"Broker id '{broker}' not found in available brokers.")
            raise web.HTTPTemporaryRedirect(f"{urls.http_url}{request.rel_url}")
        if self.node.store.state is not ConnectionState.CONNECTED:
            # What it owns is unknown until the session is back (it may still serve): an
            # empty answer would say it owns nothing.
            connection = self.node.store.state.name.lower()
            return reason(503, f"the metadata store connection is {connection}; retry")
        owned: dict[str, dict[str, object]] = {}
        for bundle, state in sorted(self.node.ownership.owned().items()):
            owned[str(bundle)] = {
                "broker_assignment": "shared",
                "is_controlled": False,
                "is_active": state is OwnershipState.OWNED,
                "state": state.value,
            }
        return web.json_response(owned)

    async def load_report(self, _request: web.Request) -> web.StreamResponse:
        return web.Response(
            body=self.node.reporter.current.to_json(), content_type="application/json"
        )

    async def clusters(self, _request: web.Request) -> web.StreamResponse:
        return web.json_response([self.node.settings.get_str("clusterName")])

    async def cluster(self, request: web.Request) -> web.StreamResponse:
        """Pulsar's ``ClusterData``: what ``/admin/clusters/<cluster>`` holds when an operator
        wrote it (a copied Pulsar tree), else this broker's URLs, as Pulsar's standalone
        registers its own (any broker of the cluster answers lookups and redirects)."""
        cluster = this_cluster(request, self.node.settings.get_str("clusterName"))
        record = await self.node.store.get(paths.cluster(cluster))
        if record is not None and record.value:
            try:
                stored = msgspec.json.decode(record.value)
            except msgspec.DecodeError:
                stored = None
            if isinstance(stored, dict):
                return web.json_response(stored)
        identity = self.node.identity
        return web.json_response(
            {
                "serviceUrl": identity.web_service_url,
                "brokerServiceUrl": identity.pulsar_service_url,
            }
        )

    # -- internal ---------------------------------------------------------------------------

    async def command(self, request: web.Request) -> web.StreamResponse:
        """``POST /admin/v2/ballast/commands``: a command from the leader's channel."""
        try:
            command = decode_command(await read_body(request))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            return reason(400, f"malformed command: {exc}")
        reply = await self.node.handle_command(command)
        return web.Response(body=msgspec.json.encode(reply), content_type="application/json")

    async def controller_request(self, request: web.Request) -> web.StreamResponse:
        """``POST /admin/v2/ballast/controller``: a request for this broker's controller."""
        try:
            body = decode_request(await read_body(request))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            return reason(400, f"malformed request: {exc}")
        controller = self.node.controller
        if controller is None or not controller.running:
            reply = not_the_leader(self.node.broker_id)
        else:
            reply = await controller.request(body)
        return web.Response(body=msgspec.json.encode(reply), content_type="application/json")
