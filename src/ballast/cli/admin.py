"""``ballast admin``: a pulsar-admin-like client of a cluster's HTTP API. Any broker's URL will
do: reads are answered by the broker asked, changes are forwarded to the leader, lookups follow
the redirects."""

from __future__ import annotations

import itertools
import os
from typing import Annotated

import typer

from ballast.cli.admin_args import (
    AdminGroup,
    ClusterArg,
    ClusterOption,
    bundle_arg,
    cluster_given,
    given_once,
    namespace_arg,
    tenant_arg,
    topic_arg,
)
from ballast.cli.admin_client import (
    ANSWER_TIMEOUT_S,
    DEFAULT_URL,
    MAX_TIMEOUT_S,
    AdminTarget,
    call,
    show,
)
from ballast.cli.admin_clusters import clusters_app, isolation_app
from ballast.cli.common import fail, print_json, url_problem
from ballast.model.bundles import SPLIT_NAMED_BUNDLES, BundleRange, parse_boundaries, parse_position
from ballast.model.naming import destination_broker_id
from ballast.model.split_algorithms import SPECIFIED_POSITIONS_DIVIDE

admin_app = typer.Typer(
    help="Administer a running cluster through its HTTP API (like pulsar-admin).",
    no_args_is_help=True,
    cls=AdminGroup,
)
tenants_app = typer.Typer(help="Tenants.", no_args_is_help=True)
namespaces_app = typer.Typer(help="Namespaces and their bundles.", no_args_is_help=True)
brokers_app = typer.Typer(help="Brokers and the leader.", no_args_is_help=True)
topics_app = typer.Typer(help="Topics.", no_args_is_help=True)
stats_app = typer.Typer(help="Broker statistics.", no_args_is_help=True)
admin_app.add_typer(tenants_app, name="tenants")
admin_app.add_typer(namespaces_app, name="namespaces")
admin_app.add_typer(brokers_app, name="brokers")
admin_app.add_typer(topics_app, name="topics")
admin_app.add_typer(stats_app, name="broker-stats")
admin_app.add_typer(clusters_app, name="clusters")
admin_app.add_typer(isolation_app, name="isolation")


def _timeout_s(text: str) -> float:
    """``--timeout``: seconds, from a millisecond to a day (nan is not a number of them)."""
    try:
        seconds = float(text)
    except ValueError:
        raise typer.BadParameter(f'"{text}" is not a number of seconds') from None
    if not 0.001 <= seconds <= MAX_TIMEOUT_S:  # false for nan too
        raise typer.BadParameter(f"{text}: from 0.001 to {MAX_TIMEOUT_S:g} seconds")
    return seconds


@admin_app.callback()
def admin_options(
    ctx: typer.Context,
    url: Annotated[
        str | None,
        typer.Option("--url", help=f"A broker's web URL (env BALLAST_ADMIN_URL; {DEFAULT_URL})."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            help="Seconds to wait for each answer (a change may still complete after it).",
            parser=_timeout_s,
        ),
    ] = ANSWER_TIMEOUT_S,
) -> None:
    """Administer a running cluster through its HTTP API (like pulsar-admin)."""
    if url is not None and not url.strip():
        fail('--url is empty: give a broker\'s web URL, such as "http://127.0.0.1:8080"')
    from_env = os.environ.get("BALLAST_ADMIN_URL") if url is None else None
    chosen = (url or from_env or DEFAULT_URL).rstrip("/")
    problem = url_problem(chosen, ("http", "https"))
    if problem is not None:
        given = "BALLAST_ADMIN_URL" if from_env else "--url"
        fail(f'{given} "{chosen}" is not a valid URL: {problem}')
    ctx.obj = AdminTarget(chosen, as_json, timeout)


NamespaceArg = Annotated[str, typer.Argument(metavar="TENANT/NAMESPACE")]
SplitBundleArg = Annotated[
    str | None,
    typer.Argument(
        metavar="BUNDLE",
        help="0x..._0x..., LARGEST (most persistent topics) or HOT (highest long-term throughput)",
        show_default=False,
    ),
]
# pulsar-admin names the bundle with -b; either way is taken.
BundleOption = Annotated[
    str | None,
    typer.Option("--bundle", "-b", help="The bundle, as pulsar-admin names it (or the argument)."),
]


# -- tenants ------------------------------------------------------------------------------------


@tenants_app.command("list")
def tenants_list(ctx: typer.Context) -> None:
    """List tenants."""
    show(ctx, call(ctx, "GET", "/admin/v2/tenants"))


AllowedClustersOption = Annotated[
    str | None, typer.Option("--allowed-clusters", help="Comma-separated clusters.")
]


def _tenant_info(allowed_clusters: str | None) -> dict[str, list[str]]:
    return {"allowedClusters": [c for c in (allowed_clusters or "").split(",") if c]}


@tenants_app.command("create")
def tenants_create(
    ctx: typer.Context, tenant: str, allowed_clusters: AllowedClustersOption = None
) -> None:
    """Create a tenant, allowed on every cluster unless --allowed-clusters says which."""
    path = f"/admin/v2/tenants/{tenant_arg(tenant)}"
    info = _tenant_info(allowed_clusters)
    if allowed_clusters is None:  # as pulsar-admin: every cluster (the API wants at least one)
        clusters = call(ctx, "GET", "/admin/v2/clusters")
        info["allowedClusters"] = (
            [c for c in clusters if isinstance(c, str)] if isinstance(clusters, list) else []
        )
    show(ctx, call(ctx, "PUT", path, info))


@tenants_app.command("update")
def tenants_update(
    ctx: typer.Context,
    tenant: str,
    allowed_clusters: AllowedClustersOption = None,
    admin_roles: Annotated[
        str | None, typer.Option("--admin-roles", help="Comma-separated admin roles.")
    ] = None,
) -> None:
    """Change a tenant's allowed clusters or admin roles; what is not given is kept."""
    path = f"/admin/v2/tenants/{tenant_arg(tenant)}"
    current = call(ctx, "GET", path)
    info = dict(current) if isinstance(current, dict) else {}
    if allowed_clusters is not None:
        info.update(_tenant_info(allowed_clusters))
    if admin_roles is not None:
        info["adminRoles"] = [r for r in admin_roles.split(",") if r]
    show(ctx, call(ctx, "POST", path, info))


@tenants_app.command("delete")
def tenants_delete(
    ctx: typer.Context,
    tenant: str,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Delete its namespaces too (the brokers must allow it: "
            "forceDeleteTenantAllowed and forceDeleteNamespaceAllowed).",
        ),
    ] = False,
) -> None:
    """Delete a tenant (it must have no namespaces, unless --force)."""
    params = {"force": "true" if force else "false"}
    show(ctx, call(ctx, "DELETE", f"/admin/v2/tenants/{tenant_arg(tenant)}", params=params))


# -- namespaces ---------------------------------------------------------------------------------


@namespaces_app.command("list")
def namespaces_list(ctx: typer.Context, tenant: str) -> None:
    """List a tenant's namespaces."""
    show(ctx, call(ctx, "GET", f"/admin/v2/namespaces/{tenant_arg(tenant)}"))


@namespaces_app.command("create")
def namespaces_create(
    ctx: typer.Context,
    namespace: NamespaceArg,
    bundles: Annotated[
        int | None, typer.Option("--bundles", "-b", help="Number of bundles.", min=1)
    ] = None,
) -> None:
    """Create a namespace (with the default number of bundles unless --bundles)."""
    ns = namespace_arg(namespace)
    body = {"bundles": {"numBundles": bundles}} if bundles is not None else {}
    show(ctx, call(ctx, "PUT", f"/admin/v2/namespaces/{ns}", body))


@namespaces_app.command("delete")
def namespaces_delete(
    ctx: typer.Context,
    namespace: NamespaceArg,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Delete even with topics (the brokers must allow it: "
            "forceDeleteNamespaceAllowed).",
        ),
    ] = False,
) -> None:
    """Delete a namespace."""
    ns = namespace_arg(namespace)
    params = {"force": "true" if force else "false"}
    show(ctx, call(ctx, "DELETE", f"/admin/v2/namespaces/{ns}", params=params))


@namespaces_app.command("policies")
def namespaces_policies(ctx: typer.Context, namespace: NamespaceArg) -> None:
    """Show a namespace's policies."""
    show(ctx, call(ctx, "GET", f"/admin/v2/namespaces/{namespace_arg(namespace)}"))


@namespaces_app.command("bundles")
def namespaces_bundles(ctx: typer.Context, namespace: NamespaceArg) -> None:
    """Show a namespace's bundle boundaries."""
    show(ctx, call(ctx, "GET", f"/admin/v2/namespaces/{namespace_arg(namespace)}/bundles"))


TOPIC_MODES = {"persistent": "PERSISTENT", "non-persistent": "NON_PERSISTENT", "all": "ALL"}


@topics_app.command("list")  # pulsar-admin's way to the same list
@namespaces_app.command("topics")
def namespaces_topics(
    ctx: typer.Context,
    namespace: NamespaceArg,
    mode: Annotated[
        str,
        typer.Option(
            "--mode",
            help="persistent, non-persistent or all. Ballast serves non-persistent topics, so "
            "the default is all (Pulsar's API lists persistent ones unless asked).",
        ),
    ] = "all",
) -> None:
    """List a namespace's topics."""
    wanted = TOPIC_MODES.get(mode.lower().replace("_", "-"))
    if wanted is None:
        fail(f'--mode "{mode}" is not persistent, non-persistent or all')
    path = f"/admin/v2/namespaces/{namespace_arg(namespace)}/topics"
    show(ctx, call(ctx, "GET", path, params={"mode": wanted}))


@namespaces_app.command("unload")
def namespaces_unload(
    ctx: typer.Context,
    namespace: NamespaceArg,
    bundle: Annotated[
        str | None,
        typer.Argument(
            metavar="BUNDLE", help="0x..._0x...; without it, every owned bundle of the namespace."
        ),
    ] = None,
    destination: Annotated[
        str | None,
        typer.Option(
            "--destination",
            "--destinationBroker",
            "-d",
            help="Transfer to this broker (host:port).",
        ),
    ] = None,
    bundle_option: BundleOption = None,
) -> None:
    """Unload a bundle (or transfer it with --destination), or the whole namespace."""
    ns = namespace_arg(namespace)
    bundle = given_once("bundles", bundle, "--bundle", bundle_option)
    if destination is not None and not destination.strip():  # an unset $VARIABLE, say
        fail("--destination is empty: name the broker (host:port), or leave it out to unload")
    if destination is not None and destination_broker_id(destination) is None:
        fail(f'--destination "{destination}" is no broker id (host:port) nor web service URL')
    if bundle is None:
        if destination:
            fail("--destination moves one bundle: name it")
        show(ctx, call(ctx, "PUT", f"/admin/v2/namespaces/{ns}/unload"))
        return
    path = f"/admin/v2/namespaces/{ns}/{bundle_arg(bundle)}/unload"
    params = {"destinationBroker": destination} if destination else None
    show(ctx, call(ctx, "PUT", path, params=params))


@namespaces_app.command("split-bundle", hidden=True)  # pulsar-admin's name
@namespaces_app.command("split")
def namespaces_split(
    ctx: typer.Context,
    namespace: NamespaceArg,
    bundle: SplitBundleArg = None,
    algorithm: Annotated[
        str | None,
        typer.Option(
            "--algorithm", "--split-algorithm-name", "-san", help="A split algorithm name."
        ),
    ] = None,
    unload: Annotated[bool, typer.Option("--unload", "-u", help="Unload the two halves.")] = False,
    positions: Annotated[
        str | None,
        typer.Option(
            "--positions",
            "--split-boundaries",
            help="Split positions (0x... or decimal, comma-separated); they take "
            "specified_positions_divide, the only algorithm that reads them.",
        ),
    ] = None,
    bundle_option: BundleOption = None,
) -> None:
    """Split a bundle. A split whose algorithm finds no cut point leaves the bundle as it
    was (Pulsar answers it as a success): that is said, not "ok"."""
    bundle = given_once("bundles", bundle, "--bundle", bundle_option)
    if bundle is None:
        fail("name the bundle (0x..._0x..., LARGEST or HOT), as an argument or with --bundle")
    body = None
    if positions is not None:
        try:
            body = [parse_position(p.strip()) for p in positions.split(",") if p.strip()]
        except ValueError:
            fail("--positions are hash positions (0x... hex or decimal)")
        if not body:
            fail("--positions names no position (give 0x... or decimal, comma-separated)")
        if algorithm is None:
            algorithm = SPECIFIED_POSITIONS_DIVIDE
        elif algorithm != SPECIFIED_POSITIONS_DIVIDE:
            only = SPECIFIED_POSITIONS_DIVIDE
            fail(f"--positions are read by {only} only, not --algorithm {algorithm}")
    params = {"unload": "true" if unload else "false"}
    if algorithm:
        params["splitAlgorithmName"] = algorithm
    name = namespace_arg(namespace)
    target = bundle_arg(bundle, named=True)
    answer = call(ctx, "PUT", f"/admin/v2/namespaces/{name}/{target}/split", body, params=params)
    if target in SPLIT_NAMED_BUNDLES:
        show(ctx, answer)
        return
    bundles = call(ctx, "GET", f"/admin/v2/namespaces/{name}/bundles")
    split = BundleRange.parse(target)
    still = (split.lower, split.upper) in itertools.pairwise(
        parse_boundaries(bundles["boundaries"])
    )
    # The API answers 204 either way, as Pulsar's does; the algorithms that read topics
    # find no cut point in a bundle with fewer than two topics (nor at positions outside
    # it), which is the usual reason.
    why = (
        "its split algorithm found no cut point: the topic-count, flow and position "
        "algorithms need at least two topics in the bundle, and positions inside it"
    )
    if ctx.obj.as_json:
        print_json({"ok": True, "split": not still, **({"reason": why} if still else {})})
        return
    show(ctx, answer, ok=f"ok: {target} was not split ({why})" if still else "ok")


@namespaces_app.command("anti-affinity")
def namespaces_anti_affinity(
    ctx: typer.Context,
    namespace: NamespaceArg,
    group: Annotated[str | None, typer.Option("--set", help="Set the group.")] = None,
    delete: Annotated[bool, typer.Option("--delete", help="Remove the group.")] = False,
) -> None:
    """Show, set or remove a namespace's anti-affinity group."""
    path = f"/admin/v2/namespaces/{namespace_arg(namespace)}/antiAffinity"
    if group is not None and delete:
        fail("--set and --delete exclude each other")
    if group is not None:  # the name as bare text both ways, as pulsar-admin sends it
        show(ctx, call(ctx, "POST", path, group, text=True))
    elif delete:
        show(ctx, call(ctx, "DELETE", path))
    else:
        group_now = call(ctx, "GET", path, text=True)  # None: the namespace has no group
        show(ctx, group_now if group_now is not None else "")


# -- brokers, topics, stats --------------------------------------------------------------


@brokers_app.command("list")
def brokers_list(
    ctx: typer.Context, cluster_argument: ClusterArg = None, cluster: ClusterOption = None
) -> None:
    """List the live brokers."""
    name = cluster_given(ctx, cluster_argument, cluster)
    show(ctx, call(ctx, "GET", f"/admin/v2/brokers/{name}"))


@brokers_app.command("leader-broker", hidden=True)  # pulsar-admin's name
@brokers_app.command("leader")
def brokers_leader(ctx: typer.Context) -> None:
    """Show the elected leader."""
    show(ctx, call(ctx, "GET", "/admin/v2/brokers/leaderBroker"))


@topics_app.command("lookup")
def topics_lookup(ctx: typer.Context, topic: str) -> None:
    """Look a topic up: the URLs of the broker that serves it."""
    show(ctx, call(ctx, "GET", f"/lookup/v2/topic/{topic_arg(topic).lookup_name}"))


def _non_persistent_path(text: str) -> str:
    name = topic_arg(text)
    if name.is_persistent:
        read = "" if "://" in text else f", which Pulsar reads as {name}"
        fail(
            f"{text!r} is not a non-persistent topic{read}: Ballast serves non-persistent "
            "topics only; give non-persistent://tenant/namespace/topic"
        )
    if not name.namespace.is_v2:
        fail(f"{text!r} is a v1 name (tenant/cluster/namespace): give a v2 one, "
             "non-persistent://tenant/namespace/topic")  # fmt: skip
    return f"/admin/v2/{name.lookup_name}"


@topics_app.command("stats")
def topics_stats(ctx: typer.Context, topic: str) -> None:
    """A non-persistent topic's stats from the broker serving it: rates, message and byte
    counters, producers, subscriptions and their consumers."""
    show(ctx, call(ctx, "GET", f"{_non_persistent_path(topic)}/stats"))


@topics_app.command("create")
def topics_create(ctx: typer.Context, topic: str) -> None:
    """Create a non-partitioned non-persistent topic: loaded on the broker serving it, idle
    until clients come (the inactivity sweep deletes it if none do)."""
    show(ctx, call(ctx, "PUT", _non_persistent_path(topic)))


@topics_app.command("delete")
def topics_delete(
    ctx: typer.Context,
    topic: str,
    force: Annotated[
        bool, typer.Option("--force", "-f", help="Close its producers and consumers too.")
    ] = False,
) -> None:
    """Delete a non-persistent topic (refused while it has producers or subscriptions,
    unless --force)."""
    params = {"force": "true" if force else "false"}
    show(ctx, call(ctx, "DELETE", _non_persistent_path(topic), params=params))


def _partitions_path(text: str) -> str:
    name = topic_arg(text)
    if not name.namespace.is_v2:
        fail("give a topic as domain://tenant/namespace/topic")
    return f"/admin/v2/{name.lookup_name}/partitions"


PartitionsOption = Annotated[
    int,
    typer.Option(
        "--partitions",
        "-p",
        help=(
            "Number of partitions (at most maxNumPartitionsPerPartitionedTopic, and Ballast's "
            "ceiling of 10000)."
        ),
        min=1,
        max=2**31 - 1,  # the API's body is a Java int
    ),
]


@topics_app.command("create-partitioned-topic")
def topics_create_partitioned(ctx: typer.Context, topic: str, partitions: PartitionsOption) -> None:
    """Create a partitioned topic: clients then use TOPIC-partition-0 ... -partition-N-1."""
    show(ctx, call(ctx, "PUT", _partitions_path(topic), partitions))


@topics_app.command("update-partitioned-topic")
def topics_update_partitioned(ctx: typer.Context, topic: str, partitions: PartitionsOption) -> None:
    """Raise a partitioned topic's partition count (it can never be lowered)."""
    show(ctx, call(ctx, "POST", _partitions_path(topic), partitions))


@topics_app.command("delete-partitioned-topic")
def topics_delete_partitioned(
    ctx: typer.Context,
    topic: str,
    force: Annotated[
        bool,
        typer.Option("--force", help="Delete even while partitions are loaded on brokers."),
    ] = False,
) -> None:
    """Delete a partitioned topic."""
    params = {"force": "true" if force else "false"}
    show(ctx, call(ctx, "DELETE", _partitions_path(topic), params=params))


@topics_app.command("get-partitioned-topic-metadata")
def topics_partitioned_metadata(ctx: typer.Context, topic: str) -> None:
    """Show a topic's partition count (0: not a partitioned topic)."""
    show(ctx, call(ctx, "GET", _partitions_path(topic)))


@topics_app.command("list-partitioned-topics")
def topics_list_partitioned(ctx: typer.Context, namespace: NamespaceArg) -> None:
    """List a namespace's partitioned topics, persistent and non-persistent."""
    ns = namespace_arg(namespace)
    names = [
        *call(ctx, "GET", f"/admin/v2/persistent/{ns}/partitioned"),
        *call(ctx, "GET", f"/admin/v2/non-persistent/{ns}/partitioned"),
    ]
    show(ctx, sorted(names))


@stats_app.command("load-report")
def load_report(ctx: typer.Context) -> None:
    """The load report of the broker at --url."""
    show(ctx, call(ctx, "GET", "/admin/v2/broker-stats/load-report"))
