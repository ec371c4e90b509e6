"""Every command's ``--help`` renders: help texts are plain text, so URL forms such as
``zk:host:port[/chroot]`` must not be read as markup."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from ballast import __version__
from ballast.cli.app import SUB_COMMANDS, VERSION_ONLY, build_app, requested

app = build_app()


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


@pytest.mark.parametrize("name", [sub.name for sub in SUB_COMMANDS])
def test_the_app_built_for_one_sub_command_is_that_of_the_whole(name: str) -> None:
    """``ballast NAME ...`` builds the app with NAME alone (the others' modules unloaded):
    its help is the whole app's, and ``--version`` still works."""
    alone = build_app(name)
    assert list(typer.main.get_command(alone).commands) == [name]  # type: ignore[attr-defined]
    help_alone = CliRunner().invoke(alone, [name, "--help"])
    assert help_alone.exit_code == 0
    assert help_alone.output == CliRunner().invoke(app, [name, "--help"]).output
    assert CliRunner().invoke(alone, ["--version"]).output.startswith("ballast ")


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["admin", "tenants", "list"], "admin"),
        (["--version", "pipeline"], None),
        (["-h", "admin"], None),  # the top-level help, which lists every sub-command
        (["-h"], None),
        ([], None),
        (["admn", "tenants"], None),  # the whole app, so that click offers "admin"
        (["simulate", "topic"], "simulate"),
        (["--version"], VERSION_ONLY),  # alone: no sub-command to load
    ],
)
def test_the_sub_command_named_is_the_first_argument(argv: list[str], name: str | None) -> None:
    assert requested(argv) == name


def test_a_sub_command_loads_only_its_own_modules() -> None:
    """``ballast admin`` starts without numpy, the simulator or the servers (most of a
    second of imports for every command before)."""
    probe = (
        "import sys; from ballast.cli.app import build_app; build_app('admin'); "
        "print(sorted(m for m in ('numpy', 'pyarrow', 'ballast.sim.runner', "
        "'ballast.broker.process', 'ballast.cli.decide') if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert loaded.stdout.strip() == "[]"


def test_the_version_alone_loads_no_sub_command() -> None:
    """``ballast --version`` loaded every sub-command (1.5 s; 0.15 s now)."""
    probe = (
        "import sys; from ballast.cli.app import build_app, requested; "
        "from typer.testing import CliRunner; "
        "out = CliRunner().invoke(build_app(requested(['--version'])), ['--version']).output; "
        "print(out.strip(), sorted(m for m in sys.modules if m.startswith('ballast.cli.') "
        "and m not in ('ballast.cli.app', 'ballast.cli.main')))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert loaded.stdout.strip() == f"ballast {__version__} []"
