"""Shared test helpers."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def run_ballast(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the ``ballast`` command as a user would, in a child process."""
    return subprocess.run(
        [sys.executable, "-m", "ballast", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
        check=False,
    )


@pytest.fixture
def ballast() -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_ballast
