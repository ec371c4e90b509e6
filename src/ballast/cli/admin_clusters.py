"""``ballast admin clusters`` and ``ballast admin isolation``: what Pulsar keeps per cluster
(its data, failure domains, namespace isolation policies), with pulsar-admin's command names."""

from __future__ import annotations

from typing import Annotated

import typer

from ballast.cli.admin_args import (
    ClusterArg,
    ClusterOption,
    cluster_given,
    entity_arg,
)
from ballast.cli.admin_client import call, show
from ballast.cli.common import fail, read_json_arg

clusters_app = typer.Typer(help="The cluster and its failure domains.", no_args_is_help=True)
isolation_app = typer.Typer(help="Namespace isolation policies.", no_args_is_help=True)

DomainOption = Annotated[
    str, typer.Option("--domain-name", "--domain", help="The failure domain's name.")
]
BrokersOption = Annotated[
    str,
    typer.Option(
        "--broker-list",
        "--brokers",
        help="Comma-separated brokers (host:port, as `ballast admin brokers list` names them).",
    ),
]


def _domains_path(cluster: str, domain: str | None = None) -> str:
    path = f"/admin/v2/clusters/{cluster}/failureDomains"
    return path if domain is None else f"{path}/{entity_arg('failure domain', domain)}"


def _on_domain(
    ctx: typer.Context,
    method: str,
    domain: str,
    argument: str | None,
    option: str | None,
    body: object = None,
) -> None:
    """Send ``method`` to one failure domain of the cluster named (or the one cluster)."""
    path = _domains_path(cluster_given(ctx, argument, option), domain)
    show(ctx, call(ctx, method, path, body))


@clusters_app.command("list")
def clusters_list(ctx: typer.Context) -> None:
    """List the clusters (Ballast's brokers serve one: their clusterName)."""
    show(ctx, call(ctx, "GET", "/admin/v2/clusters"))


@clusters_app.command("get")
def clusters_get(
    ctx: typer.Context, cluster_argument: ClusterArg = None, cluster: ClusterOption = None
) -> None:
    """Show the cluster's data (serviceUrl, brokerServiceUrl)."""
    name = cluster_given(ctx, cluster_argument, cluster)
    show(ctx, call(ctx, "GET", f"/admin/v2/clusters/{name}"))


@clusters_app.command("list-failure-domains")
def domains_list(
    ctx: typer.Context, cluster_argument: ClusterArg = None, cluster: ClusterOption = None
) -> None:
    """List the failure domains and their brokers."""
    show(ctx, call(ctx, "GET", _domains_path(cluster_given(ctx, cluster_argument, cluster))))


@clusters_app.command("get-failure-domain")
def domains_get(
    ctx: typer.Context,
    domain: DomainOption,
    cluster_argument: ClusterArg = None,
    cluster: ClusterOption = None,
) -> None:
    """Show one failure domain's brokers."""
    _on_domain(ctx, "GET", domain, cluster_argument, cluster)


@clusters_app.command("update-failure-domain")
@clusters_app.command("create-failure-domain")
def domains_set(
    ctx: typer.Context,
    domain: DomainOption,
    brokers: BrokersOption,
    cluster_argument: ClusterArg = None,
    cluster: ClusterOption = None,
) -> None:
    """Create a failure domain or replace its brokers (a broker belongs to one domain)."""
    members = [b.strip() for b in brokers.split(",") if b.strip()]
    if not members:
        fail("--broker-list names no broker (give host:port, comma-separated)")
    _on_domain(ctx, "POST", domain, cluster_argument, cluster, {"brokers": members})


@clusters_app.command("delete-failure-domain")
def domains_delete(
    ctx: typer.Context,
    domain: DomainOption,
    cluster_argument: ClusterArg = None,
    cluster: ClusterOption = None,
) -> None:
    """Delete a failure domain."""
    _on_domain(ctx, "DELETE", domain, cluster_argument, cluster)


# -- namespace isolation policies ---------------------------------------------------------------


@isolation_app.command("list")
def isolation_list(
    ctx: typer.Context, cluster_argument: ClusterArg = None, cluster: ClusterOption = None
) -> None:
    """Show the namespace isolation policies."""
    name = cluster_given(ctx, cluster_argument, cluster)
    path = f"/admin/v2/clusters/{name}/namespaceIsolationPolicies"
    show(ctx, call(ctx, "GET", path))


@isolation_app.command("set")
def isolation_set(
    ctx: typer.Context,
    name: str,
    policy_file: Annotated[
        str,
        typer.Option(
            "--file", help="The policy as Pulsar's NamespaceIsolationData JSON ('-' for stdin)."
        ),
    ],
    cluster: ClusterOption = None,
) -> None:
    """Set a namespace isolation policy from a JSON file."""
    policy = read_json_arg(policy_file)
    path = _isolation_path(cluster_given(ctx, None, cluster), name)
    show(ctx, call(ctx, "POST", path, policy))


@isolation_app.command("delete")
def isolation_delete(ctx: typer.Context, name: str, cluster: ClusterOption = None) -> None:
    """Delete a namespace isolation policy."""
    show(ctx, call(ctx, "DELETE", _isolation_path(cluster_given(ctx, None, cluster), name)))


def _isolation_path(cluster: str, name: str) -> str:
    policy = entity_arg("isolation policy", name)
    return f"/admin/v2/clusters/{cluster}/namespaceIsolationPolicies/{policy}"
