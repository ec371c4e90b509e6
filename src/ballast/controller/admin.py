"""Admin requests the controller serves, with Pulsar's status codes: unload and split of a
bundle, draining a broker before it stops, tenants, namespaces (created with N bundles or given
boundaries) and the policies placement reads (isolation, anti-affinity, failure domains).

Every write goes through the leader's epoch fence. A request that starts a move completes when
the move does: the handler returns a future that the caller awaits outside the event queue.

Concurrency contract: handlers run in the controller's event task.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from ballast.controller.leftovers import drop_namespace_parent, drop_tenant_parent
from ballast.controller.partitioned_topics import PartitionedTopicHandlers
from ballast.controller.requests import (
    AnyRequest,
    CreateNamespace,
    CreateTenant,
    DeleteNamespace,
    DeleteTenant,
    DrainBroker,
    RequestReply,
    SetAntiAffinityGroup,
    SetFailureDomain,
    SetIsolationPolicy,
    SplitRequest,
    UnloadNamespace,
    UnloadRequest,
    UpdateTenant,
    failed,
    ok,
)
from ballast.metadata import paths
from ballast.metadata.store import (
    BadVersionError,
    Check,
    Create,
    Delete,
    MultiOpError,
    NoNodeError,
    Op,
    SetValue,
)
from ballast.model.bundles import (
    SPLIT_NAMED_BUNDLES,
    BundleName,
    InvalidBundle,
    NamespaceBundles,
    equal_boundaries,
    parse_boundaries,
    validate_created_bundles,
)
from ballast.model.codec import ModelError
from ballast.model.naming import (
    InvalidNameError,
    NamespaceName,
    TopicDomain,
    TopicName,
    java_url_decode,
    validate_entity_name,
    validate_tenant,
)
from ballast.model.policies import (
    BundlesData,
    FailureDomain,
    IsolationPolicies,
    LocalPolicies,
    NamespacePolicies,
    isolation_policy_problem,
    pattern_matches,
    unload_patterns,
)
from ballast.model.split_algorithms import SPECIFIED_POSITIONS_DIVIDE

if TYPE_CHECKING:
    from ballast.controller.controller import Controller


GLOBAL_CLUSTER = "global"  # Pulsar's name for a namespace of every cluster
# Writes of a namespace's deletion tried before splits changing its bundles under each
# are answered 409.
DELETE_ATTEMPTS = 5


def _heartbeat_reason(namespace: NamespaceName) -> str:
    # Each broker owns its own one whole, outside placement; bundles an admin made in it would
    # be placed on other brokers and outlive a delete.
    return f"{namespace} is a broker's heartbeat namespace, which only that broker holds"


class TenantInfo(msgspec.Struct, kw_only=True, rename="camel"):
    """Pulsar's ``TenantInfo`` at ``/admin/policies/<tenant>``."""

    admin_roles: list[str] = []
    allowed_clusters: list[str] = []


class AdminHandlers:
    def __init__(self, controller: Controller) -> None:
        self.c = controller
        self._topics = PartitionedTopicHandlers(controller)

    async def handle(self, request: AnyRequest) -> Any:
        """A :class:`RequestReply`, or a future of one for requests that start a move."""
        name = "_" + type(request).__name__
        handler = getattr(self, name, None) or getattr(self._topics, name, None)
        if handler is None:
            return failed(400, f"unsupported request {type(request).__name__}")
        return await handler(request)

    # -- load management ------------------------------------------------------------------------

    def _bundle(self, text: str) -> BundleName | RequestReply:
        try:
            bundle = BundleName.parse(text)
        except InvalidBundle as exc:
            return failed(412, str(exc))
        if bundle.namespace not in self.c.image.namespaces:
            return failed(404, f"namespace {bundle.namespace} does not exist")
        if not self.c.image.bundle_exists(bundle):
            return failed(412, f"{bundle.range} is not a bundle of {bundle.namespace}")
        return bundle

    async def _UnloadRequest(self, request: UnloadRequest) -> Any:  # noqa: N802
        bundle = self._bundle(request.bundle)
        if isinstance(bundle, RequestReply):
            return bundle
        name = str(bundle)
        destination = request.destination
        if destination is not None and destination not in self.c.image.placeable_brokers():
            # refused whether or not the bundle is owned, so that a typo is never taken for
            # ok; a broker shutting down takes nothing more, a transfer included
            view = self.c.image.brokers.get(destination)
            why = "is shutting down" if view is not None else "is not available"
            return failed(412, f"destination broker {destination} {why}")
        owner = self.c.image.owners.get(name)
        if owner is None:
            return ok(f"{name} is not owned: nothing to unload")
        if name in self.c.image.moving:
            return failed(409, f"{name} is already being moved")
        now = self.c.clock.wall_ms()
        if destination == owner:  # where it is asked to go: it stays (no move)
            return ok(f"{name} is already on {owner}: nothing to move")
        if destination is not None:
            self.c.image.moving.add(name)
            self.c.image.recently_unloaded_bundles[name] = now
            self.c.log_decision(
                "transfer", name, owner, destination, "admin unload", origin="admin"
            )
            return self.c.completion(self.c.moves.transfer(name, owner, destination))
        return self.c.completion(self._start_unload(name, owner, "admin unload"))

    async def _UnloadNamespace(self, request: UnloadNamespace) -> Any:  # noqa: N802
        """Every owned bundle of the namespace, at once (Pulsar's ``unloadNamespace``); the
        reply comes when all have moved. Bundles already moving are left to their move."""
        namespace = self._existing_namespace(request.namespace)
        if isinstance(namespace, RequestReply):
            return namespace
        moves = self._unload_owned(lambda ns: ns == namespace, "admin unload of its namespace")
        if not moves:
            return ok(f"{namespace} has no owned bundle to unload")
        replies = [self.c.completion(move) for move in moves]

        async def all_moved() -> RequestReply:
            done = await asyncio.gather(*replies)
            return next((r for r in done if not r.ok), ok(f"unloaded {len(done)} bundles"))

        return asyncio.ensure_future(all_moved())

    def _existing_namespace(self, text: str) -> NamespaceName | RequestReply:
        """The namespace ``text`` names, or the refusal: 400 for a bad name, 404 for one the
        cluster does not have."""
        try:
            namespace = NamespaceName.parse(text)
        except InvalidNameError as exc:
            return failed(400, str(exc))
        if namespace not in self.c.image.namespaces:
            return failed(404, f"namespace {namespace} does not exist")
        return namespace

    def _start_unload(self, bundle: str, owner: str, why: str) -> int:
        """Start unloading an owned bundle; the move's id."""
        self.c.image.moving.add(bundle)
        self.c.image.recently_unloaded_bundles[bundle] = self.c.clock.wall_ms()
        self.c.image.drop_preallocations(bundle)
        self.c.log_decision("unload", bundle, owner, None, why, origin="admin")
        return self.c.moves.unload(bundle, owner)

    def _unload_owned(self, matches: Callable[[NamespaceName], bool], why: str) -> list[int]:
        """Start unloading every owned bundle, not already moving, of the namespaces that
        ``matches`` (never a system one); the moves' ids."""
        moves: list[int] = []
        for bundle, owner in sorted(self.c.image.owners.items()):
            namespace = BundleName.parse(bundle).namespace
            if bundle in self.c.image.moving or namespace.is_system_service:
                continue
            if matches(namespace):
                moves.append(self._start_unload(bundle, owner, why))
        return moves

    async def _SplitRequest(self, request: SplitRequest) -> Any:  # noqa: N802
        text = request.bundle
        namespace_text, _, last = text.rpartition("/")
        if last in SPLIT_NAMED_BUNDLES:
            found = await self._named_bundle(namespace_text, last)
            if isinstance(found, RequestReply):
                return found
            text = found
        bundle = self._bundle(text)
        if isinstance(bundle, RequestReply):
            return bundle
        algorithm = request.algorithm or self.c.split_config.default_algorithm
        if algorithm not in self.c.split_config.supported_algorithms:
            return failed(412, f"unsupported split algorithm {algorithm}")
        if algorithm == SPECIFIED_POSITIONS_DIVIDE and not request.boundaries:
            return failed(412, "specified_positions_divide needs split boundaries")
        if not bundle.range.can_split:
            return failed(412, f"{bundle} can't be split further")
        name = str(bundle)
        if name in self.c.image.moving:
            return failed(409, f"{name} is already being moved")
        owner = self.c.image.owners.get(name)
        if owner is None:
            return self._assign_then_split(bundle, msgspec.structs.replace(request, bundle=name))
        self.c.image.moving.add(name)
        self.c.log_decision(
            "split", name, owner, None, f"admin split ({algorithm})", origin="admin"
        )
        return self.c.completion(
            self.c.moves.split(name, owner, algorithm, request.boundaries, request.unload)
        )

    def _assign_then_split(self, bundle: BundleName, request: SplitRequest) -> Any:
        """Pulsar's split looks the bundle up for writing first (``validateNamespaceBundle
        Ownership`` with ``readOnly`` false), so a bundle nobody owns is placed, and split once
        its owner holds it."""
        started = self.c.start_assign(bundle, "admin split of an unowned bundle", origin="admin")
        if started is None:
            return failed(503, f"no broker can take {bundle}")
        assigned = self.c.completion(started[1])

        async def split_when_owned() -> RequestReply:
            reply = await assigned
            if not reply.ok:
                return reply
            return await self.c.request(request)

        return asyncio.ensure_future(split_when_owned())

    async def _named_bundle(self, namespace_text: str, which: str) -> str | RequestReply:
        """The bundle ``LARGEST`` or ``HOT`` names in a split (Pulsar's ``getBundleRange``):
        LARGEST holds the most persistent topics (the first to reach the count, listing the
        topics in order); HOT has the highest long-term throughput among bundles with topics.
        404 when no bundle qualifies, as Pulsar answers."""
        namespace = self._existing_namespace(namespace_text)
        if isinstance(namespace, RequestReply):
            return namespace
        bundles = self.c.image.namespaces[namespace]
        found: BundleName | None = None
        if which == "LARGEST":
            counts: Counter[BundleName] = Counter()
            most = 0
            topics_path = paths.namespace_topics(namespace, TopicDomain.PERSISTENT)
            for encoded in await self.c.store.children(topics_path):
                topic = TopicName.of(TopicDomain.PERSISTENT, namespace, java_url_decode(encoded))
                home = bundles.find(topic)
                counts[home] += 1
                if counts[home] > most:
                    most, found = counts[home], home
        else:
            data = self.c.image.bundle_data
            hottest = -1.0
            for candidate in bundles.bundles:
                stats = data.get(str(candidate))
                if stats is None or stats.topics <= 0:
                    continue
                throughput = stats.long_term_data.total_msg_throughput
                if throughput > hottest:
                    hottest, found = throughput, candidate
        if found is None:  # Pulsar's status and words, and what they mean here
            why = (
                "no bundle of the namespace holds a persistent topic (LARGEST counts those)"
                if which == "LARGEST"
                else "no bundle of the namespace has topics in its load data yet"
            )
            return failed(404, f"Bundle range {which} not found: {why}")
        return str(found)

    async def _DrainBroker(self, request: DrainBroker) -> RequestReply:  # noqa: N802
        view = self.c.image.brokers.get(request.broker)
        if view is None:
            return failed(404, f"broker {request.broker} is not registered")
        view.draining = True
        moved = unplaced = in_flight = 0
        for bundle in self.c.image.bundles_owned_by(request.broker):
            parsed = BundleName.parse(bundle)
            if parsed.namespace.is_system_service:
                continue
            if bundle in self.c.image.moving:
                in_flight += 1
                continue
            choice = self.c.choose(parsed)
            if choice is None or choice[0] == request.broker:
                unplaced += 1  # every other broker is stopping too, or none may take it
                continue
            destination, placed = choice
            self.c.image.moving.add(bundle)
            self.c.log_decision(
                "transfer",
                bundle,
                request.broker,
                destination,
                f"broker is stopping; {placed}",
                origin="drain",
            )
            self.c.moves.transfer(bundle, request.broker, destination)
            moved += 1
        nowhere = f"; no broker can take {unplaced}" if unplaced else ""
        return ok(
            f"moving {moved + in_flight} bundles off {request.broker}{nowhere}",
            moving=moved + in_flight,
            unplaced=unplaced,
        )

    # -- tenants and namespaces -----------------------------------------------------------------

    async def _CreateTenant(self, request: CreateTenant) -> RequestReply:  # noqa: N802
        try:
            validate_tenant(request.tenant)
        except InvalidNameError as exc:
            return failed(400, str(exc))
        path = paths.tenant(request.tenant)
        if await self.c.store.exists(path) is not None:
            return failed(409, f"tenant {request.tenant} already exists")
        info = self._tenant_info(request)
        if isinstance(info, RequestReply):
            return info
        await self.c.store.ensure(paths.POLICIES)
        await self.c.fenced([Create(path, msgspec.json.encode(info))])
        return ok(f"tenant {request.tenant} created")

    async def _UpdateTenant(self, request: UpdateTenant) -> RequestReply:  # noqa: N802
        try:
            validate_tenant(request.tenant)
        except InvalidNameError as exc:
            return failed(400, str(exc))
        info = self._tenant_info(request)  # Pulsar checks the clusters first
        if isinstance(info, RequestReply):
            return info
        record = await self.c.store.get(paths.tenant(request.tenant))
        if record is None:
            return failed(404, f"tenant {request.tenant} does not exist")
        old = msgspec.json.decode(record.value or b"{}", type=TenantInfo)
        removed = set(old.allowed_clusters) - set(info.allowed_clusters)
        in_use = await self._clusters_in_use(request.tenant, removed)
        if in_use:  # Pulsar's canUpdateCluster
            return failed(
                409,
                "Failed to update the tenant because active namespaces are present in colos "
                f"{sorted(in_use)}. Please delete those namespaces first",
            )
        body = msgspec.json.encode(info)
        await self.c.fenced([SetValue(paths.tenant(request.tenant), body, record.stat.version)])
        return ok(f"tenant {request.tenant} updated")

    async def _clusters_in_use(self, tenant: str, clusters: set[str]) -> set[str]:
        """Which of ``clusters`` a namespace of ``tenant`` replicates to."""
        used: set[str] = set()
        if not clusters:
            return used
        for name in await self.c.store.children(paths.tenant(tenant)):
            record = await self.c.store.get(f"{paths.tenant(tenant)}/{name}")
            if record is not None and record.value:
                policies = msgspec.json.decode(record.value, type=NamespacePolicies)
                used |= clusters & set(policies.replication_clusters)
        return used

    def _tenant_info(self, request: CreateTenant | UpdateTenant) -> TenantInfo | RequestReply:
        """The ``TenantInfo`` to store, or the refusal of its clusters (Pulsar's
        ``validateClusters``: no blank name, and only clusters that exist, "global" included).
        None at all is this cluster, as pulsar-admin fills in every cluster."""
        if any(not c.strip() for c in request.allowed_clusters):
            return failed(412, "Clusters can not be empty")
        unknown = sorted(set(request.allowed_clusters) - {self.c.cluster, GLOBAL_CLUSTER})
        if unknown:
            return failed(412, f"Clusters do not exist: {', '.join(unknown)}")
        return TenantInfo(
            admin_roles=list(request.admin_roles),
            allowed_clusters=list(request.allowed_clusters) or [self.c.cluster],
        )

    async def _DeleteTenant(self, request: DeleteTenant) -> RequestReply:  # noqa: N802
        path = paths.tenant(request.tenant)
        stat = await self.c.store.exists(path)
        if stat is None:
            return failed(404, f"tenant {request.tenant} does not exist")
        if await self.c.store.children(path):
            return failed(409, f"tenant {request.tenant} still has namespaces")
        await self.c.fenced([Delete(path, stat.version)])
        # What its namespaces left behind (Pulsar's internalDeleteTenantAsync clears these).
        for root in (
            paths.LOCAL_POLICIES,
            paths.PARTITIONED_TOPICS,
            paths.MANAGED_LEDGERS,
            paths.BUNDLE_DATA,
        ):
            await self.c.store.delete_recursive(f"{root}/{request.tenant}")
        await drop_tenant_parent(self.c.store, request.tenant)
        return ok(f"tenant {request.tenant} deleted")

    async def _CreateNamespace(self, request: CreateNamespace) -> RequestReply:  # noqa: N802
        try:
            namespace = NamespaceName.parse(request.namespace)
        except InvalidNameError as exc:
            return failed(400, str(exc))
        if not namespace.is_v2:
            return failed(400, "only v2 namespaces (tenant/namespace) can be created")
        if namespace.is_heartbeat:
            return failed(412, _heartbeat_reason(namespace))
        if await self.c.store.exists(paths.tenant(namespace.tenant)) is None:
            return failed(404, f"tenant {namespace.tenant} does not exist")
        if await self.c.store.exists(paths.namespace_policies(namespace)) is not None:
            return failed(409, f"namespace {namespace} already exists")
        try:
            if request.boundaries:
                boundaries = parse_boundaries(request.boundaries)
            else:
                # Pulsar's validatePolicies: no count above 0 means the default count
                given = request.bundles
                count = given if given and given > 0 else self.c.namespace_config.default_bundles
                validate_created_bundles(count)
                boundaries = equal_boundaries(count)
        except InvalidBundle as exc:
            return failed(400, str(exc))
        bundles = BundlesData.of(NamespaceBundles(namespace, boundaries))
        policies = {
            "bundles": msgspec.to_builtins(bundles),
            "replication_clusters": [self.c.cluster],
        }
        local = LocalPolicies(bundles=bundles)
        await self.c.store.ensure(paths.LOCAL_POLICIES + f"/{namespace.tenant}")
        await self.c.fenced(
            [
                Create(paths.namespace_policies(namespace), msgspec.json.encode(policies)),
                Create(paths.local_policies(namespace), msgspec.json.encode(local)),
            ]
        )
        await self.c.track_namespace(namespace)
        return ok(f"namespace {namespace} created", numBundles=len(boundaries) - 1)

    async def _DeleteNamespace(self, request: DeleteNamespace) -> Any:  # noqa: N802
        try:
            namespace = NamespaceName.parse(request.namespace)
        except InvalidNameError as exc:
            return failed(400, str(exc))
        if namespace.is_heartbeat:
            return failed(412, _heartbeat_reason(namespace))
        if request.force and not self.c.settings.get_bool("forceDeleteNamespaceAllowed"):
            return failed(405, "Broker doesn't allow forced deletion of namespaces")
        policy = await self.c.store.exists(paths.namespace_policies(namespace))
        if policy is None:
            return failed(404, f"namespace {namespace} does not exist")
        ledgers = paths.MANAGED_LEDGERS + f"/{namespace}"
        partitioned = paths.PARTITIONED_TOPICS + f"/{namespace}"
        has_topics = False
        for domain in ("persistent", "non-persistent"):
            for listing in (f"{ledgers}/{domain}", f"{partitioned}/{domain}"):
                has_topics = has_topics or bool(await self.c.store.children(listing))
        if has_topics and not request.force:
            return failed(409, f"cannot delete non empty namespace {namespace}")
        for bundle, owner in sorted(self.c.image.owners.items()):
            if (
                BundleName.parse(bundle).namespace == namespace
                and bundle not in self.c.image.moving
            ):
                self.c.image.moving.add(bundle)
                self.c.moves.unload(bundle, owner)
        for _ in range(DELETE_ATTEMPTS):
            # A split under way rewrites the local policies: read their version again then
            # (splits check that the policies exist, so none writes after this delete).
            ops: list[Op] = [Delete(paths.namespace_policies(namespace), policy.version)]
            local = await self.c.store.exists(paths.local_policies(namespace))
            if local is not None:
                ops.append(Delete(paths.local_policies(namespace), local.version))
            try:
                await self.c.fenced(ops)
                break
            except MultiOpError as exc:
                if not isinstance(exc.cause, BadVersionError | NoNodeError):
                    raise
                policy = await self.c.store.exists(paths.namespace_policies(namespace))
                if policy is None:
                    return failed(404, f"namespace {namespace} does not exist")
        else:
            return failed(409, f"the bundles of {namespace} kept being split; retry")
        await self.c.store.delete_recursive(ledgers)
        await self.c.store.delete_recursive(partitioned)
        await self.c.store.delete_recursive(paths.BUNDLE_DATA + f"/{namespace}")
        self.c.untrack_namespace(namespace)
        await drop_namespace_parent(self.c.store, namespace)  # again as its unloads finish
        return ok(f"namespace {namespace} deleted")

    # -- policies -----------------------------------------------------------------------------

    async def _SetAntiAffinityGroup(self, request: SetAntiAffinityGroup) -> RequestReply:  # noqa: N802
        namespace = self._existing_namespace(request.namespace)
        if isinstance(namespace, RequestReply):
            return namespace
        path = paths.local_policies(namespace)
        record = await self.c.store.get(path)
        local = LocalPolicies()
        if record is not None and record.value:
            local = msgspec.json.decode(record.value, type=LocalPolicies)
        updated = msgspec.structs.replace(local, namespace_anti_affinity_group=request.group)
        body = msgspec.json.encode(updated)
        op: Op = Create(path, body) if record is None else SetValue(path, body, record.stat.version)
        await self.c.fenced([op])
        if request.group:
            self.c.image.anti_affinity[str(namespace)] = request.group
        else:
            self.c.image.anti_affinity.pop(str(namespace), None)
        self.c.image.drop_preallocations()
        return ok()

    async def _SetIsolationPolicy(self, request: SetIsolationPolicy) -> RequestReply:  # noqa: N802
        path = paths.isolation_policies(self.c.cluster)
        record = await self.c.store.get(path)
        current: dict[str, Any] = {}
        if record is not None and record.value:
            current = msgspec.json.decode(record.value)
        problem = None if request.policy is None else isolation_policy_problem(request.policy)
        if problem is not None:
            return failed(400, problem)
        if request.policy is None:
            if request.name not in current:
                return ok()  # Pulsar deletes a missing policy without complaint (204)
            current.pop(request.name)
        else:
            current[request.name] = request.policy
        try:
            policies = IsolationPolicies.from_mapping(current)
        except ModelError as exc:
            return failed(400, str(exc))
        body = msgspec.json.encode(policies.to_json_dict())
        await self.c.store.ensure(paths.cluster(self.c.cluster))
        op: Op = Create(path, body) if record is None else SetValue(path, body, record.stat.version)
        await self.c.fenced([op])
        before = self.c.image.isolation.policies.get(request.name)
        self.c.image.isolation = policies
        self.c.image.drop_preallocations()
        after = policies.policies.get(request.name)
        if after is None:  # Pulsar unloads nothing when a policy is deleted
            return ok()
        patterns = unload_patterns(before, after)
        moves = self._unload_owned(
            lambda ns: any(pattern_matches(p, str(ns)) for p in patterns),
            f"isolation policy {request.name} changed",
        )
        return ok(f"unloading {len(moves)} bundles", unloading=len(moves))

    async def _SetFailureDomain(self, request: SetFailureDomain) -> RequestReply:  # noqa: N802
        try:
            validate_entity_name("failure domain", request.domain)
        except InvalidNameError as exc:
            return failed(400, str(exc))
        path = paths.failure_domain(self.c.cluster, request.domain)
        stat = await self.c.store.exists(path)
        if request.brokers is None:
            if stat is None:
                return failed(404, f"failure domain {request.domain} does not exist")
            await self.c.fenced([Delete(path, stat.version)])
            self.c.image.failure_domains.pop(request.domain, None)
            self.c.image.drop_preallocations()
            return ok()
        for other, brokers in sorted(self.c.image.failure_domains.items()):
            # A broker belongs to one domain: Pulsar refuses the second (CONFLICT).
            shared = sorted(set(brokers) & set(request.brokers))
            if other != request.domain and shared:
                return failed(409, f"failure domain {other} already has broker {', '.join(shared)}")
        members = list(dict.fromkeys(request.brokers))  # a set in Pulsar's FailureDomain
        body = msgspec.json.encode(FailureDomain(brokers=members))
        await self.c.store.ensure(paths.failure_domains(self.c.cluster))
        ops: list[Op] = (
            [Create(path, body)]
            if stat is None
            else [Check(path, stat.version), SetValue(path, body)]
        )
        await self.c.fenced(ops)
        self.c.image.failure_domains[request.domain] = tuple(members)
        self.c.image.drop_preallocations()
        return ok()
