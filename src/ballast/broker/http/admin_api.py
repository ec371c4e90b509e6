"""Pulsar's admin REST API (v2) for tenants, namespaces, bundles and the policies placement reads.
Reads come from the store (any broker answers); changes are requests to the leader's
controller, forwarded by whichever broker receives them."""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec
from aiohttp import web

from ballast.broker.binary.peers import BundlesChangedError, PeerError, PeerTopics
from ballast.broker.caches import NamespaceNotFoundError
from ballast.broker.http.bodies import json_body, json_object_body, parsed_json, text_body
from ballast.broker.http.errors import ApiError, reason, this_cluster
from ballast.broker.leader_calls import to_leader
from ballast.controller.loading import load_failure_domains, load_namespace
from ballast.controller.requests import (
    CreateNamespace,
    CreateTenant,
    DeleteNamespace,
    DeleteTenant,
    RequestReply,
    SetAntiAffinityGroup,
    SetFailureDomain,
    SetIsolationPolicy,
    SplitRequest,
    UnloadNamespace,
    UnloadRequest,
    UpdateTenant,
)
from ballast.metadata import paths
from ballast.model.bundles import SPLIT_NAMED_BUNDLES, BundleRange, InvalidBundle
from ballast.model.codec import ModelError, convert
from ballast.model.naming import (
    InvalidNameError,
    NamespaceName,
    TopicDomain,
    TopicName,
    destination_broker_id,
    java_parse_int,
    java_url_decode,
    validate_entity_name,
    validate_tenant,
)
from ballast.model.policies import BundlesData, LocalPolicies

if TYPE_CHECKING:
    from ballast.broker.node import BrokerNode


# Listings of a namespace's non-persistent topics taken before its bundles changing under
# each is answered 503.
LISTING_ATTEMPTS = 3


async def loaded_topics(
    node: BrokerNode, namespace: NamespaceName
) -> list[str] | web.StreamResponse:
    """The namespace's non-persistent topics loaded on any broker, or a 503 when a broker
    serving one of its bundles cannot be asked. Taken again when the bundles changed under
    the listing (a split between the read of the bundles and a broker's answer)."""
    peers = PeerTopics(node)
    try:
        for _ in range(LISTING_ATTEMPTS):
            try:
                return await peers.non_persistent_topics(namespace)
            except BundlesChangedError:
                node.bundles.invalidate(namespace)
        return reason(
            503,
            f"the bundles of {namespace} kept changing while its topics were listed "
            "(splits or moves); retry",
        )
    except PeerError as exc:
        return reason(503, str(exc))
    finally:
        await peers.close()


async def namespace_topics(
    node: BrokerNode,
    namespace: NamespaceName,
    domains: list[TopicDomain],
    bundle: str | None = None,
) -> web.StreamResponse:
    """The namespace's topics of ``domains``, sorted: persistent ones from the store,
    non-persistent ones loaded on the brokers; 404 for a namespace that does not exist.
    ``bundle`` (a range, ``0x..._0x...``) keeps only the topics its current bundle of that
    range serves, as Pulsar's ``getList`` does: none when no bundle has that range."""
    if await node.store.exists(paths.namespace_policies(namespace)) is None:
        return reason(404, f"namespace {namespace} does not exist")
    if bundle is not None:
        try:
            BundleRange.parse(bundle)
        except InvalidBundle as exc:  # not a range at all: no bundle could ever have it
            return reason(412, f"bundle {bundle}: {exc}")
    names: list[str] = []
    if TopicDomain.PERSISTENT in domains:
        listing = paths.namespace_topics(namespace, TopicDomain.PERSISTENT)
        names.extend(
            str(TopicName.of(TopicDomain.PERSISTENT, namespace, java_url_decode(encoded)))
            for encoded in await node.store.children(listing)
        )
    if TopicDomain.NON_PERSISTENT in domains:
        loaded = await loaded_topics(node, namespace)
        if isinstance(loaded, web.StreamResponse):
            return loaded
        names.extend(loaded)
    if bundle is not None:
        try:
            bundles = await node.bundles.bundles(namespace)
        except NamespaceNotFoundError:
            return reason(404, f"namespace {namespace} does not exist")
        names = [n for n in names if str(bundles.find(TopicName.parse(n)).range) == bundle]
    return web.json_response(sorted(set(names)))


def done(reply: RequestReply) -> web.StreamResponse:
    if reply.ok:
        return web.Response(status=204)
    return reason(reply.status, reply.message)


class _TenantBody(msgspec.Struct, kw_only=True, rename="camel"):
    """The parts of Pulsar's ``TenantInfo`` a create reads (null: none given)."""

    admin_roles: list[str] | None = None
    allowed_clusters: list[str] | None = None


class _BundlesBody(msgspec.Struct, kw_only=True, rename="camel"):
    """A namespace's ``bundles`` as a create gives them."""

    num_bundles: int | None = None
    boundaries: list[str | int] | None = None


def _checked_name(request: web.Request, key: str, check: Callable[[str], None]) -> str:
    """The path part ``key`` once ``check`` (a name check of the model) accepts it; 400 with
    its reason otherwise (the name becomes a metadata path)."""
    name = request.match_info[key]
    try:
        check(name)
    except InvalidNameError as exc:
        raise ApiError(400, str(exc)) from None
    return name


def _tenant(request: web.Request) -> str:
    return _checked_name(request, "tenant", validate_tenant)


def _domain(request: web.Request) -> str:
    return _checked_name(
        request, "domain", functools.partial(validate_entity_name, "failure domain")
    )


def _policy(request: web.Request) -> str:
    # The CLI refuses other names: a policy it cannot name again could not be deleted with it.
    return _checked_name(
        request, "policy", functools.partial(validate_entity_name, "isolation policy")
    )


def namespace_of(request: web.Request) -> NamespaceName:
    """The ``{tenant}/{namespace}`` of the path; 400 with the name's fault."""
    try:
        return NamespaceName.of(request.match_info["tenant"], request.match_info["namespace"])
    except InvalidNameError as exc:
        raise ApiError(400, str(exc)) from None


def _require_clusters(info: _TenantBody) -> None:
    """Pulsar's ``validateClusters``: a ``TenantInfo`` names at least one allowed cluster over
    the API (pulsar-admin, and ``ballast admin``, fill in every cluster when none is given)."""
    if not info.allowed_clusters:
        raise ApiError(412, "Clusters can not be empty")


async def _tenant_body(request: web.Request) -> _TenantBody:
    body = await json_object_body(request, "a tenant body is a JSON object")
    try:
        info = convert(body, _TenantBody)
    except ModelError as exc:
        raise ApiError(400, f"tenant body: {exc}") from None
    # Pulsar's TenantInfo holds sets: a name given twice is kept once, the first time
    for roles in (info.admin_roles, info.allowed_clusters):
        if roles is not None:
            roles[:] = dict.fromkeys(roles)
    return info


def forced(request: web.Request) -> bool:
    return request.query.get("force", "false").lower() == "true"


class AdminApi:
    def __init__(self, node: BrokerNode) -> None:
        self.node = node

    # -- tenants ----------------------------------------------------------------------------

    async def list_tenants(self, _request: web.Request) -> web.StreamResponse:
        return web.json_response(sorted(await self.node.store.children(paths.POLICIES)))

    async def get_tenant(self, request: web.Request) -> web.StreamResponse:
        tenant = _tenant(request)
        record = await self.node.store.get(paths.tenant(tenant))
        if record is None:
            return reason(404, f"tenant {tenant} does not exist")
        return web.Response(body=record.value or b"{}", content_type="application/json")

    async def create_tenant(self, request: web.Request) -> web.StreamResponse:
        tenant = _tenant(request)
        info = await _tenant_body(request)
        _require_clusters(info)
        return done(
            await to_leader(
                self.node,
                CreateTenant(
                    tenant=tenant,
                    admin_roles=tuple(info.admin_roles or ()),
                    allowed_clusters=tuple(info.allowed_clusters or ()),
                ),
            )
        )

    async def update_tenant(self, request: web.Request) -> web.StreamResponse:
        """``POST /admin/v2/tenants/{tenant}``: its ``TenantInfo`` replaced by the body's."""
        tenant = _tenant(request)
        info = await _tenant_body(request)
        _require_clusters(info)
        return done(
            await to_leader(
                self.node,
                UpdateTenant(
                    tenant=tenant,
                    admin_roles=tuple(info.admin_roles or ()),
                    allowed_clusters=tuple(info.allowed_clusters or ()),
                ),
            )
        )

    async def delete_tenant(self, request: web.Request) -> web.StreamResponse:
        """With ``force`` (where ``forceDeleteTenantAllowed``), its namespaces go first, each
        deleted with force, as Pulsar's ``internalDeleteTenantForcefully``."""
        tenant = _tenant(request)
        if forced(request):
            if not self.node.settings.get_bool("forceDeleteTenantAllowed"):
                return reason(405, "Broker doesn't allow forced deletion of tenants")
            # Each forced namespace deletion is asked as Pulsar asks its own API for it: the
            # leader refuses it unless forceDeleteNamespaceAllowed.
            for name in await self.node.store.children(paths.tenant(tenant)):
                namespace = f"{tenant}/{name}"
                reply = await to_leader(self.node, DeleteNamespace(namespace=namespace, force=True))
                if not reply.ok and reply.status != 404:  # gone meanwhile is fine
                    return done(reply)
        return done(await to_leader(self.node, DeleteTenant(tenant=tenant)))

    # -- namespaces -------------------------------------------------------------------------

    async def list_namespaces(self, request: web.Request) -> web.StreamResponse:
        tenant = _tenant(request)
        if await self.node.store.exists(paths.tenant(tenant)) is None:
            return reason(404, f"tenant {tenant} does not exist")
        names = await self.node.store.children(paths.tenant(tenant))
        return web.json_response([f"{tenant}/{name}" for name in sorted(names)])

    async def create_namespace(self, request: web.Request) -> web.StreamResponse:
        namespace = namespace_of(request)
        # Jackson reads Policies from an object only
        refusal = 'body must be a JSON object (Policies), e.g. {"bundles": ...}'
        body = await json_object_body(request, refusal)
        bundles = body.get("bundles")
        count: int | None = None
        boundaries: tuple[str, ...] = ()
        if isinstance(bundles, dict):
            try:
                # Not strict, as Jackson reads Pulsar's BundlesData: "8" is 8, 0 is "0".
                given = msgspec.convert(bundles, _BundlesBody, strict=False)
            except msgspec.ValidationError as exc:
                raise ApiError(400, f"bundles: {exc}") from None
            count = given.num_bundles
            boundaries = tuple(str(b) for b in given.boundaries or ())
        elif bundles is not None:
            raise ApiError(400, 'bundles must be {"numBundles": N} or {"boundaries": [...]}')
        self._check_replication(namespace, body.get("replication_clusters"))
        query_count = request.query.get("numBundles")
        if query_count is not None:
            parsed = java_parse_int(query_count)  # as Java reads an int: no "1_000", no " 1"
            if parsed is None:
                raise ApiError(400, f'numBundles "{query_count}" is not a number')
            count = parsed
        return done(
            await to_leader(
                self.node,
                CreateNamespace(namespace=str(namespace), bundles=count, boundaries=boundaries),
            )
        )

    def _check_replication(self, namespace: NamespaceName, clusters: object) -> None:
        """A namespace's ``replication_clusters`` may name this cluster only: a tenant's
        allowed clusters are among the ones that exist, and Ballast runs one. Pulsar's
        ``validateClusterForTenant`` answers 403 for a cluster the tenant does not allow."""
        if clusters is None:
            return
        if not isinstance(clusters, list) or not all(isinstance(c, str) for c in clusters):
            raise ApiError(400, "replication_clusters must be a JSON list of cluster names")
        local = self.node.settings.get_str("clusterName")
        for cluster in clusters:
            if cluster != local:
                raise ApiError(
                    403,
                    f"Cluster [{cluster}] is not in the list of allowed clusters list for "
                    f"tenant [{namespace.tenant}] (this cluster, {local}, is the only one)",
                )

    async def get_policies(self, request: web.Request) -> web.StreamResponse:
        namespace = namespace_of(request)
        record = await self.node.store.get(paths.namespace_policies(namespace))
        if record is None:
            return reason(404, f"namespace {namespace} does not exist")
        policies = json.loads(record.value or b"{}")
        state = await load_namespace(self.node.store, namespace)
        if state is not None:  # the bundles as they are now (local policies, after splits)
            policies["bundles"] = msgspec.to_builtins(BundlesData.of(state.bundles))
        return web.json_response(policies)

    async def delete_namespace(self, request: web.Request) -> web.StreamResponse:
        """Without ``force``, a namespace with topics is refused (409), as Pulsar does: the
        leader checks the store for persistent topics; the non-persistent ones live only on
        the brokers serving the bundles, so they are asked here first."""
        namespace = namespace_of(request)
        force = forced(request)  # the leader refuses it unless forceDeleteNamespaceAllowed
        if not force and await self.node.store.exists(paths.namespace_policies(namespace)):
            loaded = await loaded_topics(self.node, namespace)
            if isinstance(loaded, web.StreamResponse):
                return loaded
            if loaded:
                return reason(409, f"cannot delete non empty namespace {namespace}")
        return done(
            await to_leader(self.node, DeleteNamespace(namespace=str(namespace), force=force))
        )

    async def bundles(self, request: web.Request) -> web.StreamResponse:
        namespace = namespace_of(request)
        state = await load_namespace(self.node.store, namespace)
        if state is None:
            return reason(404, f"namespace {namespace} does not exist")
        return web.Response(
            body=msgspec.json.encode(BundlesData.of(state.bundles)),
            content_type="application/json",
        )

    async def topics(self, request: web.Request) -> web.StreamResponse:
        """``GET .../{ns}/topics?mode=PERSISTENT|NON_PERSISTENT|ALL`` (Pulsar's default:
        persistent): persistent topics from the store, non-persistent ones from the brokers
        serving the namespace's bundles (clients with an ``http://`` URL list them so)."""
        mode = request.query.get("mode", "PERSISTENT").upper()
        if mode not in ("PERSISTENT", "NON_PERSISTENT", "ALL"):
            return reason(400, f"mode {mode} is not PERSISTENT, NON_PERSISTENT or ALL")
        domains = [d for d in TopicDomain if mode in ("ALL", d.name)]
        return await namespace_topics(self.node, namespace_of(request), domains)

    async def unload_namespace(self, request: web.Request) -> web.StreamResponse:
        """``PUT .../{ns}/unload``: unload every owned bundle of the namespace, as Pulsar's
        ``unloadNamespace`` does; answered when they have moved."""
        namespace = namespace_of(request)
        return done(await to_leader(self.node, UnloadNamespace(namespace=str(namespace))))

    def _bundle(self, request: web.Request, *, named: bool = False) -> str:
        """``{namespace}/{range}``; with ``named`` (a split), the range may be LARGEST or HOT."""
        namespace = namespace_of(request)
        text = request.match_info["bundle"]
        if named and text in SPLIT_NAMED_BUNDLES:
            return f"{namespace}/{text}"
        try:
            return f"{namespace}/{BundleRange.parse(text)}"
        except InvalidBundle as exc:
            raise ApiError(412, str(exc)) from None

    async def unload(self, request: web.Request) -> web.StreamResponse:
        bundle = self._bundle(request)
        given = request.query.get("destinationBroker") or None
        destination = None if given is None else destination_broker_id(given)
        if given is not None and destination is None:
            raise ApiError(
                412, f"destination broker {given} is no broker id (host:port) nor web service URL"
            )
        return done(
            await to_leader(self.node, UnloadRequest(bundle=bundle, destination=destination))
        )

    async def split(self, request: web.Request) -> web.StreamResponse:
        bundle = self._bundle(request, named=True)
        body = await json_body(request)
        positions: tuple[int, ...] = ()
        if body is not None and body != "":  # pulsar-admin-go sends "" for no positions
            # Jackson reads them as List<Long>: no booleans, nothing past a long.
            if not isinstance(body, list) or not all(
                isinstance(p, int) and not isinstance(p, bool) and -(2**63) <= p < 2**63
                for p in body
            ):
                raise ApiError(400, "split boundaries are a JSON list of integers")
            positions = tuple(body)
        return done(
            await to_leader(
                self.node,
                SplitRequest(
                    bundle=bundle,
                    algorithm=request.query.get("splitAlgorithmName") or None,
                    boundaries=positions,
                    unload=request.query.get("unload", "false").lower() == "true",
                ),
            )
        )

    # -- policies ---------------------------------------------------------------------------

    async def get_anti_affinity(self, request: web.Request) -> web.StreamResponse:
        namespace = namespace_of(request)
        record = await self.node.store.get(paths.local_policies(namespace))
        if (
            record is None
            and await self.node.store.exists(paths.namespace_policies(namespace)) is None
        ):
            return reason(404, f"namespace {namespace} does not exist")
        group = None
        if record is not None and record.value:
            group = msgspec.json.decode(
                record.value, type=LocalPolicies
            ).namespace_anti_affinity_group
        if not group:  # Pulsar's resource returns null: JAX-RS answers 204, no body
            return web.Response(status=204)
        # A bare String: Jackson's JAX-RS provider leaves strings to Jersey's own, which
        # writes the text as it is (Pulsar's admin client reads it back as a String).
        return web.Response(text=group, content_type="application/json")

    async def set_anti_affinity(self, request: web.Request) -> web.StreamResponse:
        namespace = namespace_of(request)
        group = await text_body(request)
        if group.startswith('"'):  # a JSON string (a client that encodes it) is taken too
            with contextlib.suppress(ApiError):  # not one: the text as it is, as Pulsar
                decoded = parsed_json(group)
                group = decoded if isinstance(decoded, str) else group
        if not group.strip():
            raise ApiError(412, "the anti-affinity group is empty")
        return done(
            await to_leader(self.node, SetAntiAffinityGroup(namespace=str(namespace), group=group))
        )

    async def delete_anti_affinity(self, request: web.Request) -> web.StreamResponse:
        namespace = namespace_of(request)
        return done(
            await to_leader(self.node, SetAntiAffinityGroup(namespace=str(namespace), group=None))
        )

    def _cluster(self, request: web.Request, missing: int = 404) -> str:
        return this_cluster(request, self.node.settings.get_str("clusterName"), missing)

    async def get_isolation_policies(self, request: web.Request) -> web.StreamResponse:
        # Pulsar: 404 for the list of an unknown cluster, 412 for one policy of it.
        listing = "policy" not in request.match_info
        cluster = self._cluster(request, 404 if listing else 412)
        record = await self.node.store.get(paths.isolation_policies(cluster))
        policies = json.loads(record.value) if record is not None and record.value else {}
        if listing:
            return web.json_response(policies)
        name = _policy(request)
        if name not in policies:
            return reason(404, f"isolation policy {name} does not exist")
        return web.json_response(policies[name])

    async def set_isolation_policy(self, request: web.Request) -> web.StreamResponse:
        self._cluster(request, 412)
        name = _policy(request)
        body = await json_body(request)
        if not isinstance(body, dict):
            raise ApiError(400, "an isolation policy is a JSON object")
        # The leader checks it as Pulsar's NamespaceIsolationDataImpl.validate does.
        return done(await to_leader(self.node, SetIsolationPolicy(name=name, policy=body)))

    async def delete_isolation_policy(self, request: web.Request) -> web.StreamResponse:
        self._cluster(request, 412)
        return done(
            await to_leader(self.node, SetIsolationPolicy(name=_policy(request), policy=None))
        )

    async def get_failure_domains(self, request: web.Request) -> web.StreamResponse:
        domains = await load_failure_domains(self.node.store, self._cluster(request))
        return web.json_response(
            {name: {"brokers": list(b)} for name, b in sorted(domains.items())}
        )

    async def get_failure_domain(self, request: web.Request) -> web.StreamResponse:
        # Pulsar: an unknown cluster is 412 here, as for the changes; a missing domain 404.
        domains = await load_failure_domains(self.node.store, self._cluster(request, 412))
        name = _domain(request)
        if name not in domains:
            return reason(404, f"failure domain {name} does not exist")
        return web.json_response({"brokers": list(domains[name])})

    async def set_failure_domain(self, request: web.Request) -> web.StreamResponse:
        self._cluster(request, 412)  # as Pulsar's setFailureDomain
        body = await json_body(request)
        brokers = body.get("brokers") if isinstance(body, dict) else None
        if not isinstance(brokers, list) or not all(isinstance(b, str) for b in brokers):
            raise ApiError(400, 'a failure domain is {"brokers": ["host:port", ...]}')
        return done(
            await to_leader(
                self.node,
                SetFailureDomain(domain=_domain(request), brokers=tuple(brokers)),
            )
        )

    async def delete_failure_domain(self, request: web.Request) -> web.StreamResponse:
        self._cluster(request, 412)
        return done(
            await to_leader(self.node, SetFailureDomain(domain=_domain(request), brokers=None))
        )
