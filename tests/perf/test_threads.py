"""The client's blocking calls run on daemon threads the command can tell apart: it leaves
without the interpreter's exit only while one of them is still blocked."""

from __future__ import annotations

import asyncio
import threading

import pytest

from ballast.perf.run import _in_thread, client_threads_ended

pytestmark = pytest.mark.real_time  # the calls end on other threads, in real time


async def test_a_blocked_call_is_reported_until_it_returns() -> None:
    release = threading.Event()
    call = _in_thread(lambda: release.wait(30))
    assert not client_threads_ended(0.01)
    release.set()
    assert await asyncio.wait_for(call, 30) is True
    assert client_threads_ended(30)


async def test_a_calls_error_reaches_its_future() -> None:
    def refuse() -> None:
        raise ValueError("no")

    call = _in_thread(refuse)
    try:
        await asyncio.wait_for(call, 30)
    except ValueError as exc:
        assert str(exc) == "no"
    else:
        raise AssertionError("the error was lost")
    assert client_threads_ended(30)
