"""What brokers and administrators ask of the leader. Any broker may receive an admin request;
it forwards the request to the leader, whose controller serialises it with every other
decision. msgspec structs tagged by kind, so the HTTP shell carries them as JSON unchanged."""

from __future__ import annotations

from typing import Any, Protocol

import msgspec

from ballast.controller.commands import AdminTransport


class ControllerRequest(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind"):
    pass


class UnloadRequest(ControllerRequest, frozen=True, kw_only=True, tag="unload"):
    """Unload a bundle; with ``destination`` (a broker id) it is transferred there."""

    bundle: str
    destination: str | None = None


class UnloadNamespace(ControllerRequest, frozen=True, kw_only=True, tag="unload-namespace"):
    """Unload every owned bundle of a namespace."""

    namespace: str


class SplitRequest(ControllerRequest, frozen=True, kw_only=True, tag="split"):
    """Split a bundle (``bundle`` may be a bundle name, ``<namespace>/LARGEST`` or
    ``<namespace>/HOT``)."""

    bundle: str
    algorithm: str | None = None
    boundaries: tuple[int, ...] = ()
    unload: bool = False


class DrainBroker(ControllerRequest, frozen=True, kw_only=True, tag="drain"):
    """A broker is shutting down: move its bundles elsewhere, place nothing on it."""

    broker: str


class CreateTenant(ControllerRequest, frozen=True, kw_only=True, tag="create-tenant"):
    tenant: str
    admin_roles: tuple[str, ...] = ()
    allowed_clusters: tuple[str, ...] = ()


class UpdateTenant(ControllerRequest, frozen=True, kw_only=True, tag="update-tenant"):
    """Replace a tenant's ``TenantInfo``, as Pulsar's ``updateTenant`` does."""

    tenant: str
    admin_roles: tuple[str, ...] = ()
    allowed_clusters: tuple[str, ...] = ()


class DeleteTenant(ControllerRequest, frozen=True, kw_only=True, tag="delete-tenant"):
    tenant: str


class CreateNamespace(ControllerRequest, frozen=True, kw_only=True, tag="create-namespace"):
    """Create a namespace with ``bundles`` equal bundles, or at ``boundaries`` (hex strings)."""

    namespace: str
    bundles: int | None = None
    boundaries: tuple[str, ...] = ()


class DeleteNamespace(ControllerRequest, frozen=True, kw_only=True, tag="delete-namespace"):
    namespace: str
    force: bool = False


class SetAntiAffinityGroup(ControllerRequest, frozen=True, kw_only=True, tag="anti-affinity"):
    """Set (or with ``group`` None, remove) a namespace's anti-affinity group."""

    namespace: str
    group: str | None = None


class SetIsolationPolicy(ControllerRequest, frozen=True, kw_only=True, tag="isolation"):
    """Set (or with ``policy`` None, remove) a namespace isolation policy of the cluster, in
    Pulsar's JSON shape."""

    name: str
    policy: dict[str, object] | None = None


class SetFailureDomain(ControllerRequest, frozen=True, kw_only=True, tag="failure-domain"):
    """Set (or with ``brokers`` None, remove) a failure domain."""

    domain: str
    brokers: tuple[str, ...] | None = None


class CreatePartitionedTopic(
    ControllerRequest, frozen=True, kw_only=True, tag="create-partitioned-topic"
):
    """Create a partitioned topic of ``partitions`` partitions (``topic``: its full name),
    with the topic's ``properties`` if given."""

    topic: str
    partitions: int
    properties: dict[str, str] | None = None


class UpdatePartitionedTopic(
    ControllerRequest, frozen=True, kw_only=True, tag="update-partitioned-topic"
):
    """Raise a partitioned topic's partition count to ``partitions`` (never lower it)."""

    topic: str
    partitions: int


class DeletePartitionedTopic(
    ControllerRequest, frozen=True, kw_only=True, tag="delete-partitioned-topic"
):
    """Delete a partitioned topic's metadata (its partitions are topics of their own)."""

    topic: str


AnyRequest = (
    UnloadRequest
    | UnloadNamespace
    | SplitRequest
    | DrainBroker
    | CreateTenant
    | UpdateTenant
    | DeleteTenant
    | CreateNamespace
    | DeleteNamespace
    | SetAntiAffinityGroup
    | SetIsolationPolicy
    | SetFailureDomain
    | CreatePartitionedTopic
    | UpdatePartitionedTopic
    | DeletePartitionedTopic
)


class RequestReply(msgspec.Struct, frozen=True, kw_only=True):
    """``ok``; otherwise ``status`` says how it failed (Pulsar's HTTP codes: 400 bad request,
    404 not found, 409 conflict, 412 precondition failed, 503 not the leader / unavailable)."""

    ok: bool
    status: int = 200
    message: str = ""
    result: dict[str, object] = {}
    not_leader: bool = False  # the broker asked is not (or not yet) the leader: ask again


def not_the_leader(broker_id: str) -> RequestReply:
    """The answer of a broker asked for its controller when it runs none: the request was
    not handled, so the asker may send it again (to the leader, once one runs)."""
    return RequestReply(
        ok=False, status=503, message=f"{broker_id} is not the leader", not_leader=True
    )


def ok(message: str = "", **result: Any) -> RequestReply:
    return RequestReply(ok=True, status=200, message=message, result=result)


def failed(status: int, message: str) -> RequestReply:
    return RequestReply(ok=False, status=status, message=message)


class ClusterTransport(AdminTransport, Protocol):
    """Both directions between the members of a cluster: the controller's commands to
    brokers, and requests to the current leader."""

    async def call_leader(self, leader_id: str, request: AnyRequest) -> RequestReply:
        """Deliver ``request`` to the controller of ``leader_id``; TransportError if it
        cannot."""
        ...


_REQUEST_DECODER: msgspec.json.Decoder[AnyRequest] = msgspec.json.Decoder(AnyRequest)


def decode_request(data: bytes) -> AnyRequest:
    return _REQUEST_DECODER.decode(data)
