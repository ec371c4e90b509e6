"""The HTTP cluster transport against a real server: a refusal (4xx) is a reply, not a failure
to deliver — a command retried for ever would hold up every later command to that broker."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from ballast.broker.http.transport import COMMANDS_PATH, CONTROLLER_PATH, HttpTransport
from ballast.controller.commands import TransportError, UnloadBundle
from ballast.controller.requests import CreateTenant
from tests.support.live import distinct_free_ports

pytestmark = [pytest.mark.real_time, pytest.mark.integration]


async def _serving(status: int, body: bytes, *, late: bool = False) -> AsyncIterator[str]:
    held = asyncio.Event()

    async def answer(_request: web.Request) -> web.Response:
        if late:
            await held.wait()  # never set: the answer never comes
        return web.Response(status=status, body=body, content_type="application/json")

    app = web.Application()
    app.router.add_post(COMMANDS_PATH, answer)
    app.router.add_post(CONTROLLER_PATH, answer)
    runner = web.AppRunner(app)
    await runner.setup()
    (port,) = distinct_free_ports(1)
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        held.set()  # else the server's cleanup waits for the late answer (aiohttp: 60 s)
        await runner.cleanup()


COMMAND = UnloadBundle(epoch=1, bundle="t/ns/0x00000000_0xffffffff")


@pytest.mark.parametrize(
    ("status", "body", "why"),
    [
        (400, b'{"reason": "malformed command: Expected `int`, got `bool`"}', "Expected `int`"),
        (404, b"<html>Not Found</html>", "status 404: <html>Not Found</html>"),
    ],
)
async def test_a_refused_command_is_a_reply(status: int, body: bytes, why: str) -> None:
    async for broker in _serving(status, body):
        transport = HttpTransport(timeout_s=10)
        try:
            reply = await transport.send(broker, COMMAND)
            assert not reply.ok and why in reply.message and broker in reply.message
            answer = await transport.call_leader(broker, CreateTenant(tenant="t"))
            assert (answer.ok, answer.status) == (False, status) and why in answer.message
        finally:
            await transport.close()


@pytest.mark.parametrize("status", [500, 408, 429])  # a proxy's timeout or throttle too
async def test_a_server_error_is_still_a_failure_to_deliver(status: int) -> None:
    async for broker in _serving(status, b'{"reason": "try later"}'):
        transport = HttpTransport(timeout_s=10)
        try:
            with pytest.raises(TransportError):
                await transport.send(broker, COMMAND)
        finally:
            await transport.close()


async def test_a_late_answer_is_named_as_such() -> None:
    """Not an empty reason after the URL (a timeout's text is empty)."""
    async for broker in _serving(200, b"{}", late=True):
        transport = HttpTransport(timeout_s=0.3)
        try:
            with pytest.raises(TransportError, match=r"no answer within 0\.3 s") as failed:
                await transport.call_leader(broker, CreateTenant(tenant="t"))
            assert not failed.value.unreachable  # it may have been handled
        finally:
            await transport.close()


async def test_no_connection_is_told_apart_from_a_lost_answer() -> None:
    """Nothing was sent to a port nobody listens on: a leader's caller may wait for the
    next leader and send it again."""
    (port,) = distinct_free_ports(1)
    transport = HttpTransport(timeout_s=10)
    try:
        with pytest.raises(TransportError, match="Connection refused") as failed:
            await transport.call_leader(f"127.0.0.1:{port}", CreateTenant(tenant="t"))
        assert failed.value.unreachable
    finally:
        await transport.close()
