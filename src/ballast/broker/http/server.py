"""The broker's HTTP server (aiohttp): the route table of Pulsar's lookup and admin paths, the
internal endpoints, ``/metrics`` and ``/openapi.json``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from ballast import __version__
from ballast.broker.http.admin_api import AdminApi
from ballast.broker.http.bodies import IDLE_TIMEOUT, IDLE_TIMEOUT_S
from ballast.broker.http.errors import (
    STORE_AWAY_LOG,
    StoreAwayLog,
    error_middleware,
    protocol_logger,
)
from ballast.broker.http.lookup_api import LookupApi
from ballast.broker.http.metrics import CONTENT_TYPE, metrics_registry, render
from ballast.broker.http.routes import Route, openapi, register
from ballast.broker.http.topic_admin import TopicAdminApi
from ballast.broker.http.topic_stats import TopicStatsApi
from ballast.broker.http.topics_api import TopicsApi
from ballast.broker.http.transport import COMMANDS_PATH, CONTROLLER_PATH
from ballast.model.naming import TopicDomain

if TYPE_CHECKING:
    from ballast.broker.binary.topics import TopicService
    from ballast.broker.node import BrokerNode

NS = "/admin/v2/namespaces/{tenant}/{namespace}"
CLUSTER = "/admin/v2/clusters/{cluster}"
TOPIC = "/admin/v2/{domain}/{tenant}/{namespace}/{topic}"


def routes(node: BrokerNode, clients: TopicService | None = None) -> list[Route]:
    """Every route of the API; ``clients``: the broker's binary listener's topics."""
    lookup = LookupApi(node)
    stats = TopicStatsApi(node, clients)
    topic_admin = TopicAdminApi(node, clients)
    admin = AdminApi(node)
    topics = TopicsApi(node)
    registry = metrics_registry(node)

    async def metrics(_request: web.Request) -> web.StreamResponse:
        return web.Response(body=render(registry), headers={"Content-Type": CONTENT_TYPE})

    table: list[Route] = [
        Route(
            "GET",
            "/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}",
            lookup.lookup,
            "Look a topic up: its owner's URLs, or a 307 to the broker that must answer",
            "lookup",
            query=("authoritative", "listenerName", "readOnly"),
            responses={
                307: "Redirect",
                400: "Bad name",
                404: "Namespace not found",
                503: "Bundle moving; retry",
            },
        ),
        Route(
            "GET",
            "/lookup/v2/destination/{domain}/{tenant}/{cluster}/{namespace}/{topic}",
            lookup.lookup,
            "Look up a v1 topic (Pulsar's v1 lookup path)",
            "lookup",
            query=("authoritative",),
        ),
        Route(
            "GET",
            "/admin/v2/non-persistent/{tenant}/{namespace}/{topic}/stats",
            stats.stats,
            "A non-persistent topic's stats (rates, counters, producers, subscriptions), from "
            "the broker serving it",
            "topics",
            responses={307: "Redirect to the owner", 404: "Topic not found"},
        ),
        Route(
            "GET",
            TOPIC + "/partitions",
            topics.partitions,
            'Partitioned-topic metadata ({"partitions": N}; 0 for a plain topic)',
            "topics",
            query=("checkAllowAutoCreation",),
        ),
        Route(
            "GET",
            "/admin/{domain}/{tenant}/{cluster}/{namespace}/{topic}/partitions",
            topics.partitions_v1,
            "Partitioned-topic metadata of a v1 topic",
            "topics",
            query=("checkAllowAutoCreation",),
        ),
        Route(
            "PUT",
            TOPIC + "/partitions",
            topics.create,
            "Create a partitioned topic",
            "topics",
            query=("createLocalTopicOnly",),
            body="the number of partitions, e.g. 4",
            responses={
                400: "Bad name or body",
                404: "Namespace not found",
                406: "Partition count out of range",
                409: "Topic exists",
                412: "Name contains -partition-",
            },
        ),
        Route(
            "POST",
            TOPIC + "/partitions",
            topics.update,
            "Raise a partitioned topic's partition count",
            "topics",
            query=("updateLocalTopicOnly", "force"),
            body="the new number of partitions",
            responses={
                406: "Partition count out of range",
                409: "Not a partitioned topic",
                422: "Fewer partitions than now",
            },
        ),
        Route(
            "DELETE",
            TOPIC + "/partitions",
            topics.delete,
            "Delete a partitioned topic",
            "topics",
            query=("force",),
            responses={404: "Not a partitioned topic", 412: "Partitions in use"},
        ),
        # One route per domain: aiohttp tries the routes of the longest literal prefix first,
        # so /admin/v2/{domain}/... would lose to the bundle route below.
        *(
            Route(
                "GET",
                f"/admin/v2/{domain.value}/{{tenant}}/{{namespace}}/partitioned",
                topics.list_partitioned,
                f"A namespace's {domain.value} partitioned topics",
                "topics",
                responses={400: "Bad name", 404: "Namespace not found"},
            )
            for domain in TopicDomain
        ),
        *(
            Route(
                "GET",
                f"/admin/v2/{domain.value}/{{tenant}}/{{namespace}}",
                topics.list_topics,
                f"A namespace's {domain.value} topics (those of one bundle with bundle=RANGE)",
                "topics",
                query=("bundle",),
                responses={400: "Bad name", 404: "Namespace not found", 503: "A broker is away"},
            )
            for domain in TopicDomain
        ),
        # The same path as the bundle listing below, as in Pulsar: the method tells them apart.
        Route(
            "PUT",
            "/admin/v2/non-persistent/{tenant}/{namespace}/{topic}",
            topic_admin.create,
            "Create a non-partitioned non-persistent topic: load it on the broker serving it",
            "topics",
            responses={
                307: "Redirect to the owner",
                404: "Namespace not found",
                409: "This topic already exists",
            },
        ),
        Route(
            "DELETE",
            "/admin/v2/non-persistent/{tenant}/{namespace}/{topic}",
            topic_admin.delete,
            "Delete a non-persistent topic (force=true closes its producers and consumers)",
            "topics",
            query=("force",),
            responses={
                307: "Redirect to the owner",
                404: "Topic not found",
                412: "Active producers or subscriptions",
            },
        ),
        Route(
            "GET",
            "/admin/v2/non-persistent/{tenant}/{namespace}/{bundle}",
            lookup.non_persistent_in_bundle,
            "Non-persistent topics loaded in a bundle this broker serves (307 to its owner)",
            "topics",
            responses={
                204: "No broker owns the bundle",
                307: "Served by another broker",
                404: "Namespace not found, or not served",
                412: "Not a bundle of the namespace",
            },
        ),
        Route(
            "GET",
            "/admin/v2/brokers/leaderBroker",
            lookup.leader_broker,
            "The elected leader",
            "brokers",
            responses={404: "No leader"},
        ),
        Route(
            "GET",
            "/admin/v2/brokers/health",
            lookup.health,
            "ok while this broker is connected, registered and serving its heartbeat bundle",
            "brokers",
            responses={500: "Not healthy, and why"},
        ),
        Route("GET", "/admin/v2/brokers", lookup.brokers, "Active brokers (host:port)", "brokers"),
        Route(
            "GET",
            "/admin/v2/brokers/{cluster}",
            lookup.brokers,
            "Active brokers (host:port)",
            "brokers",
            responses={404: "Unknown cluster"},
        ),
        Route(
            "GET",
            "/admin/v2/brokers/{cluster}/{broker}/ownedNamespaces",
            lookup.owned_namespaces,
            "Bundles a broker owns",
            "brokers",
        ),
        Route(
            "GET",
            "/admin/v2/broker-stats/load-report",
            lookup.load_report,
            "This broker's load report (LocalBrokerData)",
            "brokers",
        ),
        Route("GET", "/admin/v2/clusters", lookup.clusters, "Clusters", "clusters"),
        Route(
            "GET",
            CLUSTER,
            lookup.cluster,
            "The cluster's ClusterData (serviceUrl, brokerServiceUrl)",
            "clusters",
            responses={404: "Unknown cluster"},
        ),
        Route("GET", "/admin/v2/tenants", admin.list_tenants, "Tenants", "tenants"),
        Route(
            "GET",
            "/admin/v2/tenants/{tenant}",
            admin.get_tenant,
            "A tenant",
            "tenants",
            responses={404: "Not found"},
        ),
        Route(
            "PUT",
            "/admin/v2/tenants/{tenant}",
            admin.create_tenant,
            "Create a tenant",
            "tenants",
            body="TenantInfo",
            responses={400: "Bad name", 409: "Exists"},
        ),
        Route(
            "POST",
            "/admin/v2/tenants/{tenant}",
            admin.update_tenant,
            "Update a tenant (its TenantInfo replaced by the body's)",
            "tenants",
            body='{"adminRoles": [...], "allowedClusters": [...]}',
            responses={400: "Bad body", 404: "Unknown tenant", 412: "Unknown cluster"},
        ),
        Route(
            "DELETE",
            "/admin/v2/tenants/{tenant}",
            admin.delete_tenant,
            "Delete a tenant",
            "tenants",
            responses={404: "Not found", 409: "Has namespaces"},
        ),
        Route(
            "GET",
            "/admin/v2/namespaces/{tenant}",
            admin.list_namespaces,
            "Namespaces of a tenant",
            "namespaces",
            responses={404: "Tenant not found"},
        ),
        Route(
            "PUT",
            NS,
            admin.create_namespace,
            "Create a namespace",
            "namespaces",
            query=("numBundles",),
            body='Policies, e.g. {"bundles": {"numBundles": 8}}',
            responses={400: "Bad name or bundles", 404: "Tenant not found", 409: "Exists"},
        ),
        Route(
            "GET",
            NS,
            admin.get_policies,
            "A namespace's policies",
            "namespaces",
            responses={404: "Not found"},
        ),
        Route(
            "DELETE",
            NS,
            admin.delete_namespace,
            "Delete a namespace",
            "namespaces",
            query=("force",),
            responses={404: "Not found", 409: "Not empty"},
        ),
        Route(
            "GET",
            NS + "/bundles",
            admin.bundles,
            "The namespace's bundles",
            "namespaces",
            responses={404: "Not found"},
        ),
        Route(
            "GET",
            NS + "/topics",
            admin.topics,
            "Topics of a namespace (mode PERSISTENT, NON_PERSISTENT or ALL)",
            "namespaces",
            query=("mode",),
        ),
        Route(
            "PUT",
            NS + "/unload",
            admin.unload_namespace,
            "Unload every owned bundle of a namespace",
            "namespaces",
            responses={404: "Namespace not found", 409: "A bundle is moving"},
        ),
        Route(
            "PUT",
            NS + "/{bundle}/unload",
            admin.unload,
            "Unload a bundle (transfer it with destinationBroker)",
            "namespaces",
            query=("authoritative", "destinationBroker"),
            responses={404: "Namespace not found", 412: "Invalid bundle"},
        ),
        Route(
            "PUT",
            NS + "/{bundle}/split",
            admin.split,
            "Split a bundle (a range, LARGEST or HOT)",
            "namespaces",
            query=("authoritative", "unload", "splitAlgorithmName"),
            body="split boundaries (specified_positions_divide)",
            responses={404: "Namespace not found", 412: "Invalid bundle or algorithm"},
        ),
        Route(
            "GET",
            NS + "/antiAffinity",
            admin.get_anti_affinity,
            "Anti-affinity group",
            "namespaces",
        ),
        Route(
            "POST",
            NS + "/antiAffinity",
            admin.set_anti_affinity,
            "Set the anti-affinity group",
            "namespaces",
            body="the group, a JSON string",
        ),
        Route(
            "DELETE",
            NS + "/antiAffinity",
            admin.delete_anti_affinity,
            "Remove the anti-affinity group",
            "namespaces",
        ),
        Route(
            "GET",
            CLUSTER + "/namespaceIsolationPolicies",
            admin.get_isolation_policies,
            "Namespace isolation policies",
            "clusters",
        ),
        Route(
            "GET",
            CLUSTER + "/namespaceIsolationPolicies/{policy}",
            admin.get_isolation_policies,
            "One isolation policy",
            "clusters",
        ),
        Route(
            "POST",
            CLUSTER + "/namespaceIsolationPolicies/{policy}",
            admin.set_isolation_policy,
            "Set an isolation policy",
            "clusters",
            body="NamespaceIsolationData",
            responses={400: "Invalid policy"},
        ),
        Route(
            "DELETE",
            CLUSTER + "/namespaceIsolationPolicies/{policy}",
            admin.delete_isolation_policy,
            "Delete an isolation policy",
            "clusters",
        ),
        Route(
            "GET",
            CLUSTER + "/failureDomains",
            admin.get_failure_domains,
            "Failure domains",
            "clusters",
        ),
        Route(
            "GET",
            CLUSTER + "/failureDomains/{domain}",
            admin.get_failure_domain,
            "A failure domain",
            "clusters",
            responses={404: "Unknown domain", 412: "Unknown cluster"},
        ),
        Route(
            "POST",
            CLUSTER + "/failureDomains/{domain}",
            admin.set_failure_domain,
            "Set a failure domain",
            "clusters",
            body='{"brokers": [...]}',
        ),
        Route(
            "DELETE",
            CLUSTER + "/failureDomains/{domain}",
            admin.delete_failure_domain,
            "Delete a failure domain",
            "clusters",
        ),
        Route(
            "POST",
            COMMANDS_PATH,
            lookup.command,
            "Internal: a command from the leader",
            "internal",
            body="a controller command",
        ),
        Route(
            "POST",
            CONTROLLER_PATH,
            lookup.controller_request,
            "Internal: a request for the leader's controller",
            "internal",
            body="a controller request",
        ),
        Route("GET", "/metrics", metrics, "Prometheus metrics", "metrics"),
    ]
    document = openapi(table, title="Ballast admin and lookup API", version=__version__)

    async def openapi_json(_request: web.Request) -> web.StreamResponse:
        return web.json_response(document)

    table.append(Route("GET", "/openapi.json", openapi_json, "This document", "meta"))
    return table


def make_app(
    node: BrokerNode,
    idle_timeout_s: float = IDLE_TIMEOUT_S,
    clients: TopicService | None = None,
) -> web.Application:
    app = web.Application(middlewares=[error_middleware])
    app[IDLE_TIMEOUT] = idle_timeout_s
    app[STORE_AWAY_LOG] = StoreAwayLog(node.clock.monotonic)
    register(app, routes(node, clients))
    return app


class ApiServer:
    """Serves :func:`make_app` on ``host:port``. ``idle_timeout_s``: how long a request's
    headers or body may take to arrive (Jetty's default, as Pulsar's, unless a test asks for
    less); ``clients``: the topics of the broker's binary listener, whose stats it serves."""

    def __init__(
        self,
        node: BrokerNode,
        host: str,
        port: int,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        clients: TopicService | None = None,
    ) -> None:
        # An open connection waits this long for its next request's headers (aiohttp's
        # keep-alive timeout counts from the connection's start or its last answer).
        self._runner = web.AppRunner(
            make_app(node, idle_timeout_s, clients),
            access_log=None,
            logger=protocol_logger(),
            keepalive_timeout=idle_timeout_s,
        )
        self.host = host
        self.port = port

    async def start(self) -> None:
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, reuse_address=True)
        await site.start()

    async def stop(self) -> None:
        await self._runner.cleanup()
