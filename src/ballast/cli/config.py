"""``ballast config``: the effective configuration."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ballast.cli.common import fail, for_terminal, print_json, settings_from
from ballast.metadata.factory import InvalidStoreUrlError, parse_store_url
from ballast.model.config import SETTINGS

config_app = typer.Typer(help="Inspect Ballast's configuration.", no_args_is_help=True)


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value)


@config_app.command("show")
def show_command(
    config: Annotated[
        Path | None, typer.Option("--config", help="broker.conf-style settings file.")
    ] = None,
    overrides: Annotated[
        list[str] | None,
        typer.Option(
            "--set", help="Override a setting: key=value (repeatable).", metavar="KEY=VALUE"
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    changed: Annotated[
        bool, typer.Option("--changed", help="Only settings that differ from the default.")
    ] = False,
) -> None:
    """Print every setting with its effective value, unit and where it came from when not
    the default (the config file, a BALLAST_<key> environment variable, or --set; --json
    names "default" too)."""
    settings = settings_from(config, overrides)
    try:  # checked here as every server command checks it before it starts
        parse_store_url(settings.get_str("metadataStoreUrl"))
    except InvalidStoreUrlError as exc:
        fail(f"metadataStoreUrl ({settings.source('metadataStoreUrl')}): {exc}")
    rows = [s for s in SETTINGS if not changed or settings[s.key] != s.default]
    if as_json:
        print_json(
            {
                s.key: {
                    "value": list(v) if isinstance(v := settings[s.key], tuple) else v,
                    "default": list(d) if isinstance(d := s.default, tuple) else d,
                    "unit": s.unit,
                    "source": settings.source(s.key),
                }
                for s in rows
            }
        )
        return
    if not rows:  # stdout stays empty for scripts; a person is told why
        typer.echo("every setting has its default value", err=True)
        return
    width = max(len(s.key) for s in rows)
    for s in rows:
        unit = f" {s.unit}" if s.unit and settings[s.key] is not None else ""
        source = settings.source(s.key)
        origin = "" if source == "default" else f"   ({source})"
        # a value's control characters escaped: an ESC in a file would recolour the terminal
        shown = for_terminal(_shown(settings[s.key]))
        typer.echo(f"{s.key:<{width}}  {shown}{unit}{for_terminal(origin)}")
