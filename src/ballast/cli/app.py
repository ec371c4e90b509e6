"""The ``ballast`` command's Typer app: a sub-command per capability."""

from __future__ import annotations

import typer

from ballast import __version__
from ballast.cli.admin import admin_app
from ballast.cli.bundle import bundle_app
from ballast.cli.config import config_app
from ballast.cli.decide import decide_app
from ballast.cli.metadata import metadata_app
from ballast.cli.perf import perf_app
from ballast.cli.pipeline import pipeline_app
from ballast.cli.servers import broker_command, zookeeper_command
from ballast.cli.simulate import simulate_command
from ballast.cli.standalone import standalone_command
from ballast.cli.topic import topic_command

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
app.command("topic")(topic_command)
app.command("standalone")(standalone_command)
app.command("broker")(broker_command)
app.command("zookeeper")(zookeeper_command)
app.add_typer(bundle_app, name="bundle")
app.add_typer(config_app, name="config")
app.add_typer(admin_app, name="admin")
app.add_typer(metadata_app, name="metadata")
app.add_typer(decide_app, name="decide")
app.add_typer(perf_app, name="perf")
app.command("simulate")(simulate_command)
app.add_typer(pipeline_app, name="pipeline")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ballast {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """Ballast: control plane of a load-balanced, bundle-sharded message-broker cluster."""
