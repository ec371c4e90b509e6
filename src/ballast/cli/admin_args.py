"""How ``ballast admin`` reads names from its command line: each checked as the model checks
it, so that what reaches a URL path is a name the cluster would take (never a ``/`` or ``?``
typed into one), and a mistake exits 2 with the model's reason."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any

import typer
import typer.core

from ballast.cli.admin_client import call
from ballast.cli.common import fail
from ballast.model.bundles import SPLIT_NAMED_BUNDLES, BundleRange, InvalidBundle
from ballast.model.naming import (
    InvalidNameError,
    NamespaceName,
    TopicName,
    validate_entity_name,
    validate_tenant,
)


def namespace_arg(text: str) -> NamespaceName:
    try:
        namespace = NamespaceName.parse(text)
    except InvalidNameError as exc:
        fail(str(exc))
    if not namespace.is_v2:
        fail("give a namespace as tenant/namespace")
    return namespace


def checked_name(check: Callable[[str], None], text: str) -> str:
    """``text`` once ``check`` (a name check of the model) accepts it; exit 2 with its reason
    otherwise."""
    try:
        check(text)
    except InvalidNameError as exc:
        fail(str(exc))
    return text


def tenant_arg(text: str) -> str:
    return checked_name(validate_tenant, text)


def entity_arg(role: str, text: str) -> str:
    """A cluster, failure domain or policy name: Pulsar's rule for named entities."""
    return checked_name(functools.partial(validate_entity_name, role), text)


def bundle_arg(text: str, *, named: bool = False) -> str:
    """A bundle range; with ``named``, also ``LARGEST`` or ``HOT`` (a split picks the bundle)."""
    if named and text in SPLIT_NAMED_BUNDLES:
        return text
    try:
        return str(BundleRange.parse(text))
    except InvalidBundle as exc:
        fail(str(exc))


def topic_arg(text: str) -> TopicName:
    try:
        name = TopicName.parse(text)
    except InvalidNameError as exc:
        fail(str(exc))
    return name


def given_once(what: str, argument: str | None, flag: str, option: str | None) -> str | None:
    """A value given as the argument or as its option (pulsar-admin's way), not two of it."""
    if argument is not None and option is not None and argument != option:
        fail(f"two {what} given: {argument} and {flag} {option}")
    return argument if argument is not None else option


ClusterOption = Annotated[
    str | None,
    typer.Option("--cluster", help="Cluster name (default: the one cluster --url belongs to)."),
]
# pulsar-admin takes the cluster as an argument; either way is taken.
ClusterArg = Annotated[
    str | None,
    typer.Argument(
        metavar="[CLUSTER]", help="The cluster, as pulsar-admin takes it.", show_default=False
    ),
]


def cluster_given(ctx: typer.Context, argument: str | None, option: str | None) -> str:
    """The cluster named by the argument or ``--cluster`` (not two), checked as a name; else
    the cluster the broker at ``--url`` knows, when it knows one (a cluster is named by its
    brokers' ``clusterName``, which need not be "standalone")."""
    given = given_once("clusters", argument, "--cluster", option)
    if given is not None:
        return entity_arg("cluster", given)
    known = call(ctx, "GET", "/admin/v2/clusters")
    if isinstance(known, list) and len(known) == 1 and isinstance(known[0], str):
        return entity_arg("cluster", known[0])
    fail(f"give --cluster: the broker knows the clusters {', '.join(map(str, known or []))}")


ADMIN_OPTIONS = ("--url", "--json", "--timeout")
"""The options of ``ballast admin`` itself, which come before its groups."""


class AdminGroup(typer.core.TyperGroup):
    """``ballast admin``'s group: an option of its own typed after a sub-command (``admin
    topics list t/ns --url U``; pulsar-admin takes ``--admin-url`` only first too) is named
    with where it goes, where the parser said only "No such option: --url"."""

    def invoke(self, ctx: Any) -> Any:  # the parser's Context, which typer does not export
        try:
            return super().invoke(ctx)
        except Exception as exc:
            # The parser's NoSuchOption (typer does not export its class): a usage error
            # that names the option, shown with its own message.
            option = getattr(exc, "option_name", None)
            if type(exc).__name__ == "NoSuchOption" and option in ADMIN_OPTIONS:
                admin = ctx.command_path  # "ballast admin", or "python -m ballast admin"
                path = getattr(getattr(exc, "ctx", None), "command_path", admin)
                command = path.removeprefix(admin).strip() or "GROUP COMMAND"
                exc.message = (  # type: ignore[attr-defined]
                    f"No such option: {option} here. It is an option of '{admin}': give it "
                    f"before the group, as in '{admin} {option} ... {command} ...'"
                )
                exc.possibilities = None  # type: ignore[attr-defined]
            raise
