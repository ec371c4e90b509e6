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
    """A sub-command: a Typer app (a group such as ``admin``) or a single command function,
    the attribute ``attribute`` of module ``module``."""

    name: str
    module: str
    attribute: str
    group: bool


# In the order `ballast --help` lists them.
SUB_COMMANDS = (
    SubCommand("topic", "ballast.cli.topic", "topic_command", group=False),
    SubCommand("standalone", "ballast.cli.standalone", "standalone_command", group=False),
    SubCommand("broker", "ballast.cli.servers", "broker_command", group=False),
    SubCommand("zookeeper", "ballast.cli.servers", "zookeeper_command", group=False),
    SubCommand("bundle", "ballast.cli.bundle", "bundle_app", group=True),
    SubCommand("config", "ballast.cli.config", "config_app", group=True),
    SubCommand("admin", "ballast.cli.admin", "admin_app", group=True),
    SubCommand("metadata", "ballast.cli.metadata", "metadata_app", group=True),
    SubCommand("decide", "ballast.cli.decide", "decide_app", group=True),
    SubCommand("perf", "ballast.cli.perf", "perf_app", group=True),
    SubCommand("simulate", "ballast.cli.simulate", "simulate_command", group=False),
    SubCommand("pipeline", "ballast.cli.pipeline", "pipeline_app", group=True),
)


def requested(argv: Sequence[str]) -> str | None:
    """The sub-command ``argv`` (the arguments after ``ballast``) names, if it names one of
    :data:`SUB_COMMANDS`: its first argument that is no option (the top level's options,
    ``--version`` and ``--help``, take no value)."""
    first = next((arg for arg in argv if not arg.startswith("-")), None)
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
        if sub.group:
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
