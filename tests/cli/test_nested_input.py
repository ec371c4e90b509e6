"""Input nested past what a parser can descend (100,000 ``[``) is bad input, refused with
exit 2 and the file named, not an internal error: every command that reads a user's JSON or
TOML file."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

Run = Callable[..., subprocess.CompletedProcess[str]]
DEPTH = 100_000


@pytest.fixture
def deep_json(tmp_path: Path) -> Path:
    path = tmp_path / "deep.json"
    path.write_text("[" * DEPTH + "]" * DEPTH)
    return path


@pytest.fixture
def deep_toml(tmp_path: Path) -> Path:
    path = tmp_path / "deep.toml"
    path.write_text("duration = " + "[" * DEPTH + "]" * DEPTH + "\n")
    return path


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("decide shed {json}", "malformed snapshot: $: not valid JSON (maximum recursion depth"),
        ("decide split {json}", "malformed snapshot: $: not valid JSON (maximum recursion depth"),
        ("metadata load --store sqlite:{tmp}/s.db {json}", "deep.json is not JSON: maximum"),
        ("admin isolation set p --file {json}", "deep.json is not JSON: maximum recursion"),
        ("pipeline import {json} --history {tmp}/h", "not valid JSON (maximum recursion depth"),
        ("simulate {toml}", "deep.toml: maximum recursion depth exceeded"),
        ("standalone --workload {toml}", "deep.toml: not TOML: maximum recursion depth"),
    ],
)
def test_deeply_nested_input_exits_2(
    ballast: Run, tmp_path: Path, deep_json: Path, deep_toml: Path, command: str, message: str
) -> None:
    args = command.format(json=deep_json, toml=deep_toml, tmp=tmp_path).split()
    result = ballast(*args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "h").exists()  # the importer wrote no history
