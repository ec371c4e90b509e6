"""Helpers every command shares: failing with exit code 2 and a reason on stderr, printing
JSON, and loading settings from ``--config``, the environment and ``--set``."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

import typer
from rich.console import Console

from ballast.model.config import ConfigError, Settings, decode_conf, load_settings

EXIT_INVALID = 2


# Control characters a terminal acts on (all but newline and tab, which lay text out): a value
# quoted in a message (from a settings file, an argument, a server) must not recolour or
# rewrite the terminal, so they are shown escaped, as \x1b.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def for_terminal(text: str) -> str:
    """``text`` with its control characters escaped (:data:`_CONTROL`)."""
    return _CONTROL.sub(lambda m: m[0].encode("unicode_escape").decode(), text)


def fail(reason: str, *, code: int = EXIT_INVALID) -> NoReturn:
    """Print ``error: reason`` to stderr and exit (2: invalid input)."""
    typer.echo(f"error: {for_terminal(reason)}", err=True)
    raise typer.Exit(code)


PIPED_WIDTH = 160
"""Line width of output that goes to a file or a pipe (Rich would assume 80 columns)."""


def output_console(*, stderr: bool = False) -> Console:
    """A Rich console for a command's output. Redirected or piped output is read whole, so
    it is not squeezed into 80 columns; a terminal keeps its own width."""
    console = Console(stderr=stderr)
    return console if console.is_terminal else Console(stderr=stderr, width=PIPED_WIDTH)


def url_problem(url: str, schemes: tuple[str, ...], *, several_hosts: bool = False) -> str | None:
    """Why ``url`` is not ``scheme://host[:port]`` with one of ``schemes`` — with
    ``several_hosts``, one or more such hosts separated by commas, as a Pulsar service URL may
    list them — or None when it is."""
    scheme, found, rest = url.partition("://")
    if not found or scheme not in schemes:
        return "it does not start with " + " or ".join(f"{name}://" for name in schemes)
    hosts = rest.split("/", 1)[0]
    if "?" in rest or "#" in rest:  # the client would send it, or ignore it, or fail late
        return "a service URL has no query or fragment (? or #)"
    if "@" in hosts:
        return "it names a user (user@host), which Ballast's clients do not send"
    for host in hosts.split(",") if several_hosts else [hosts]:
        try:
            parts = urlsplit(f"{scheme}://{host}")
            port = parts.port  # raises ValueError for a port outside 0-65535
        except ValueError as exc:
            return str(exc)
        if not parts.hostname:
            return "it names no host"
        if port == 0:  # no server listens there: a client would wait its whole timeout
            return "port 0 is no port a server listens on"
    return None


def warn(message: str) -> None:
    typer.echo(f"warning: {for_terminal(message)}", err=True)


def print_json(value: Any) -> None:
    """One JSON document on stdout, keys in a stable order."""
    typer.echo(json.dumps(value, indent=2, sort_keys=False))


def settings_from(config: Path | None, overrides: list[str] | None) -> Settings:
    """Defaults, then ``config`` (broker.conf form), then ``BALLAST_<key>`` variables, then
    ``--set`` pairs. Warnings go to stderr; bad values exit 2."""
    conf_text = None
    if config is not None:
        try:
            conf_text = decode_conf(config.read_bytes())
        except OSError as exc:
            fail(f"cannot read config file {config}: {exc.strerror or exc}")
    try:
        loaded = load_settings(
            conf_text=conf_text,
            conf_name=str(config) if config else "broker.conf",
            environ=os.environ,
            overrides=overrides or [],
        )
    except ConfigError as exc:
        fail(exc.args[0])
    for message in loaded.warnings:
        warn(message)
    return loaded.settings


def given_path(text: str, name: str, wanted: str) -> str:
    """``text`` as given; exit 2 with ``{name} is empty: give {wanted}`` when it is blank,
    which as a ``Path`` would be the current directory: read as input, or written into."""
    if not text.strip():
        fail(f"{name} is empty: give {wanted}")
    return text


def read_text_arg(path: str) -> str:
    """The text of a file argument, ``-`` meaning stdin; exit 2 if unreadable. A UTF-8 byte
    order mark (some editors write one) is not part of the text."""
    given_path(path, "the file name", "a file, or - for stdin")
    try:
        if path == "-":
            return sys.stdin.buffer.read().decode("utf-8-sig")
        return Path(path).read_text(encoding="utf-8-sig")
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}")
    except UnicodeDecodeError as exc:
        fail(f"{'stdin' if path == '-' else path} is not UTF-8 text: {exc}")


class _KeyTwice(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise _KeyTwice(key)
        seen.add(key)
    return dict(pairs)


def read_json_arg(path: str) -> Any:
    """The JSON of a file argument (:func:`read_text_arg`); exit 2 when it is not JSON,
    nested past the parser's depth, or gives a key twice in one object (a hand-merged dump
    whose second record of a path would replace the first without a word)."""
    text = read_text_arg(path)
    name = "stdin" if path == "-" else path
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except _KeyTwice as exc:
        fail(f"{name}: the key {json.dumps(exc.args[0])} is given twice in one object")
    except (json.JSONDecodeError, RecursionError) as exc:
        fail(f"{name} is not JSON: {exc}")
