"""The ``ballast`` command's Typer app: a sub-command per capability.

Each sub-command's module is imported only when the app is built for it: ``ballast admin``
need not load numpy, pyarrow, the simulator and the servers, which made every command take
most of a second to start. Without a sub-command (``ballast --help``, a misspelt name) the app
holds them all, so the help lists every one and click names the valid choices."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass

import typer

from ballast import __version__


@dataclass(frozen=True)
class SubCommand:
    """A sub-command: the attribute ``attribute`` of module ``module``, a Typer app (a group
    such as ``admin``) or a single command function."""

    name: str
    module: str
    attribute: str


# Registered in this order (`ballast --help` lists the single commands first, then the groups).
SUB_COMMANDS = (
    SubCommand("topic", "ballast.cli.topic", "topic_command"),
    SubCommand("standalone", "ballast.cli.standalone", "standalone_command"),
    SubCommand("broker", "ballast.cli.servers", "broker_command"),
    SubCommand("zookeeper", "ballast.cli.servers", "zookeeper_command"),
    SubCommand("bundle", "ballast.cli.bundle", "bundle_app"),
    SubCommand("config", "ballast.cli.config", "config_app"),
    SubCommand("admin", "ballast.cli.admin", "admin_app"),
    SubCommand("metadata", "ballast.cli.metadata", "metadata_app"),
    SubCommand("decide", "ballast.cli.decide", "decide_app"),
    SubCommand("perf", "ballast.cli.perf", "perf_app"),
    SubCommand("simulate", "ballast.cli.simulate", "simulate_command"),
    SubCommand("pipeline", "ballast.cli.pipeline", "pipeline_app"),
)


VERSION_ONLY = ""
"""What :func:`requested` names for ``ballast --version`` alone: no sub-command to load."""


def requested(argv: Sequence[str]) -> str | None:
    """The sub-command ``argv`` (the arguments after ``ballast``) names, if its first
    argument is one of :data:`SUB_COMMANDS`. A top-level option before it (``--help``,
    ``--version``) acts before any sub-command runs, and the help lists every one."""
    if list(argv) == ["--version"]:
        return VERSION_ONLY
    first = argv[0] if argv else None
    return first if any(sub.name == first for sub in SUB_COMMANDS) else None


def build_app(only: str | None = None) -> typer.Typer:
    """The app with the sub-command named ``only``, or with all of them."""
    app = typer.Typer(
        name="ballast",
        help="Ballast: control plane of a load-balanced, bundle-sharded message-broker cluster "
        "(Apache Pulsar compatible).",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
        # Help texts are plain: they show URL forms such as ``zk:host:port[/chroot]``.
        rich_markup_mode=None,
        # Sub-commands inherit this: `ballast admin topics -h` as well as `--help`.
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(main)
    for sub in SUB_COMMANDS:
        if only is not None and sub.name != only:
            continue
        target = getattr(importlib.import_module(sub.module), sub.attribute)
        if isinstance(target, typer.Typer):
            app.add_typer(target, name=sub.name)
        else:
            app.command(sub.name)(target)
    return app


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ballast {__version__}")
        raise typer.Exit()


def main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """Ballast: control plane of a load-balanced, bundle-sharded message-broker cluster."""
