"""Helpers for tests that run real Ballast processes: free port ranges, and waiting on a
condition of a live server. Those servers run on real time, so the waits are
:func:`tests.support.waiting.eventually` on the system clock, from synchronous tests."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

from ballast.clock import SystemClock
from tests.conftest import REPO
from tests.support.waiting import eventually


def port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def distinct_free_ports(count: int) -> list[int]:
    """``count`` different free loopback ports: all are held at once while chosen, so two
    calls in a row cannot hand out the same port (one server of a broker would then find
    it taken by the other)."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


# Ports handed out for servers come from below Linux's ephemeral range (32768 and up by
# default): a port from inside it, free when checked, could be taken by any outgoing
# connection before the server under test binds it, and a standalone then failed to start.
_SERVER_PORTS = range(20000, 32768)


def free_ports(count: int, *, avoid: range = range(0)) -> int:
    """The first of ``count`` consecutive free loopback ports (a standalone cluster's brokers
    take consecutive ports), none of them in ``avoid``."""
    while True:
        first = random.randrange(_SERVER_PORTS.start, _SERVER_PORTS.stop - count)
        wanted = range(first, first + count)
        if not set(wanted) & set(avoid) and all(port_is_free(port) for port in wanted):
            return first


def standalone_ports(brokers: int) -> tuple[int, int]:
    """Free ``--port`` and ``--broker-port`` for a standalone of ``brokers``: two ranges
    of consecutive ports that do not overlap."""
    web = free_ports(brokers)
    return web, free_ports(brokers, avoid=range(web, web + brokers))


def wait_until(
    condition: Callable[[], bool], *, timeout_s: float, what: str, interval_s: float = 0.2
) -> None:
    """Return once ``condition()`` holds; AssertionError naming ``what`` after ``timeout_s``.
    ``condition`` runs inside an event loop: it must not wait itself (use :func:`fetch_json`
    there, not :func:`get_json`)."""
    clock = SystemClock()
    asyncio.run(eventually(condition, clock, timeout_s=timeout_s, interval_s=interval_s, what=what))


def fetch_json(url: str) -> Any:
    """The JSON body of ``url``, asked once (OSError or ValueError if it does not answer)."""
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


def get_json(url: str, timeout_s: float = 30) -> Any:
    """The JSON body of ``url`` once it answers; the last error after ``timeout_s`` (a server
    still starting refuses connections)."""
    answers: list[Any] = []
    errors: list[Exception] = []

    def answered() -> bool:
        try:
            answers.append(fetch_json(url))
        except (OSError, ValueError) as exc:
            errors[:] = [exc]
            return False
        return True

    try:
        wait_until(answered, timeout_s=timeout_s, what=f"an answer from {url}")
    except AssertionError:
        raise errors[-1] from None
    return answers[0]


@contextlib.contextmanager
def running_ballast(
    *args: str, stdout: int = subprocess.PIPE, stderr: int = subprocess.PIPE
) -> Iterator[subprocess.Popen[str]]:
    """``ballast ARGS`` in a child process, started as a user starts it (text pipes); killed
    on leaving if it still runs."""
    process = subprocess.Popen(
        [sys.executable, "-m", "ballast", *args], stdout=stdout, stderr=stderr, text=True, cwd=REPO
    )
    with process:
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()
