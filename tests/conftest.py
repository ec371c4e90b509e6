"""Shared test machinery: running ``async def`` tests on a virtual-time loop (the default) or
a real one (``@pytest.mark.real_time``, or a backend that needs real time), and running the
``ballast`` command as a user would."""

from __future__ import annotations

import asyncio
import inspect
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from ballast.clock import Clock, SystemClock, VirtualClock, VirtualTimeLoop

# Property tests are deterministic: the same examples on every run (STYLE 10).
settings.register_profile("ballast", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("ballast")

REPO = Path(__file__).resolve().parent.parent

# The metadata backends (memory, sqlite, a real ZooKeeper) and their fault-injection harness.
pytest_plugins = ["tests.support.backends"]


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
        timeout=300,
        check=False,
    )


@pytest.fixture
def ballast() -> Callable[..., subprocess.CompletedProcess[str]]:
    return run_ballast


def _wants_real_time(request: pytest.FixtureRequest) -> bool:
    if request.node.get_closest_marker("real_time") is not None:
        return True
    if "backend" in request.fixturenames:
        return bool(getattr(request.getfixturevalue("backend"), "real_time", False))
    return False


@pytest.fixture
def loop(request: pytest.FixtureRequest) -> Iterator[asyncio.AbstractEventLoop]:
    """The event loop an ``async def`` test runs on: virtual time unless it needs real time."""
    event_loop: asyncio.AbstractEventLoop = (
        asyncio.new_event_loop() if _wants_real_time(request) else VirtualTimeLoop()
    )
    yield event_loop
    pending = [t for t in asyncio.all_tasks(event_loop) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        event_loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    event_loop.run_until_complete(event_loop.shutdown_default_executor())
    event_loop.close()


@pytest.fixture
def clock(loop: asyncio.AbstractEventLoop) -> Clock:
    return VirtualClock(loop) if isinstance(loop, VirtualTimeLoop) else SystemClock()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if (
            isinstance(item, pytest.Function)
            and inspect.iscoroutinefunction(item.obj)
            and "loop" not in item.fixturenames
        ):
            item.fixturenames.insert(0, "loop")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    event_loop: asyncio.AbstractEventLoop = pyfuncitem.funcargs["loop"]
    names = pyfuncitem._fixtureinfo.argnames
    kwargs: dict[str, Any] = {name: pyfuncitem.funcargs[name] for name in names}
    event_loop.run_until_complete(pyfuncitem.obj(**kwargs))
    return True


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "real_time: run this async test on a real-time loop")
