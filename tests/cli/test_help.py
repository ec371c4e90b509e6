"""Every command's ``--help`` renders: help texts are plain text, so URL forms such as
``zk:host:port[/chroot]`` must not be read as markup."""

from __future__ import annotations

from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from ballast.cli.app import app


def _command_paths() -> list[list[str]]:
    root = typer.main.get_command(app)
    paths: list[list[str]] = []

    def walk(command: Any, path: list[str]) -> None:
        paths.append(path)
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, [*path, name])

    walk(root, [])
    return paths


def test_the_command_tree_is_complete() -> None:
    names = {" ".join(path) for path in _command_paths()}
    assert {"metadata ls", "pipeline generate", "simulate", "decide shed", "broker"} <= names


@pytest.mark.parametrize("path", _command_paths(), ids=lambda path: " ".join(path) or "ballast")
def test_help_renders(path: list[str]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
    if path == ["metadata"]:
        assert "[/chroot]" in result.output
    # Repeatable key=value options name their form, not a Python type.
    assert "--set <list[str]>" not in result.output
    assert "--conf <list[str]>" not in result.output
    short = CliRunner().invoke(app, [*path, "-h"])  # as most commands take it
    assert short.exit_code == 0 and short.output == result.output, short.output
