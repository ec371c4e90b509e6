"""The cluster transport over HTTP: the controller's commands go to
``POST http://<broker>/admin/v2/ballast/commands`` and requests for the leader to
``POST http://<leader>/admin/v2/ballast/controller`` (a broker id is ``host:port`` of its web
service). Any failure to deliver is a :class:`TransportError`, which the channel retries; a 4xx
answer is a refusal, not a failure to deliver, and becomes a reply that says so."""

from __future__ import annotations

import os

import aiohttp
import msgspec
from aiohttp.http_exceptions import HttpProcessingError

from ballast.controller.commands import AnyCommand, CommandReply, TransportError, encode_command
from ballast.controller.requests import AnyRequest, RequestReply

COMMANDS_PATH = "/admin/v2/ballast/commands"
CONTROLLER_PATH = "/admin/v2/ballast/controller"
# Why a call failed when the server's answer was not HTTP at all.
NOT_HTTP = "its answer is not HTTP"


def _refusal(status: int, data: bytes) -> str | None:
    """The reason of a 4xx answer (Pulsar's ``{"reason": ...}``, or its text), None for any
    other status."""
    if not 400 <= status < 500 or status in (408, 429):  # a timeout, too many requests: retry
        return None
    try:
        body = msgspec.json.decode(data)
    except msgspec.DecodeError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("reason"), str):
        return str(body["reason"])
    return f"status {status}: {data[:200].decode(errors='replace')}"


def delivery_failure(exc: BaseException, timeout: aiohttp.ClientTimeout) -> tuple[bool, str]:
    """Why an HTTP call failed, and whether its request may have reached the server: a
    connection that never completed sent nothing, a late answer may still come (aiohttp's
    ConnectionTimeoutError is a TimeoutError too, so it is told first)."""
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return False, f"no connection within {timeout.connect:g} s"
    if isinstance(exc, TimeoutError):
        return True, f"no answer within {timeout.total:g} s"
    if isinstance(exc, aiohttp.ClientResponseError) and isinstance(
        exc.__cause__, HttpProcessingError
    ):
        # aiohttp's parser refused the answer: whatever listens there does not speak HTTP
        # (a broker's binary port answers an HTTP request with a protocol error frame).
        return False, NOT_HTTP
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return False, f"cannot resolve the host {exc.host}"
    if isinstance(exc, aiohttp.ClientConnectorError) and exc.os_error.errno:
        # aiohttp's own words add "ssl:default" and asyncio's "Connect call failed (...)"
        return False, f"cannot connect to {exc.host}:{exc.port}: {os.strerror(exc.os_error.errno)}"
    return False, str(exc) or type(exc).__name__


class HttpTransport:
    def __init__(self, *, timeout_s: float = 30.0) -> None:
        self._timeout = aiohttp.ClientTimeout(total=timeout_s, connect=min(timeout_s, 10.0))
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        return self._session

    async def _post(self, url: str, body: bytes) -> tuple[int, bytes]:
        try:
            async with self._client().post(
                url, data=body, headers={"Content-Type": "application/json"}
            ) as response:
                data = await response.read()
                if (response.status >= 500 and response.status != 503) or response.status in (
                    408,
                    429,
                ):
                    raise TransportError(f"{url} answered {response.status}")
                return response.status, data
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise TransportError(
                f"{url}: {delivery_failure(exc, self._timeout)[1]}",
                unreachable=isinstance(
                    exc, aiohttp.ClientConnectorError | aiohttp.ConnectionTimeoutError
                ),
            ) from None

    async def send(self, broker_id: str, command: AnyCommand) -> CommandReply:
        status, data = await self._post(
            f"http://{broker_id}{COMMANDS_PATH}", encode_command(command)
        )
        refused = _refusal(status, data)
        if refused is not None:
            # The broker read the command and refused it: sent again, it would be refused
            # again, and every later command to that broker would wait behind it.
            return CommandReply(ok=False, message=f"{broker_id} refused the command: {refused}")
        try:
            return msgspec.json.decode(data, type=CommandReply)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise TransportError(f"{broker_id} sent a malformed reply: {exc}") from None

    async def call_leader(self, leader_id: str, request: AnyRequest) -> RequestReply:
        status, data = await self._post(
            f"http://{leader_id}{CONTROLLER_PATH}", msgspec.json.encode(request)
        )
        refused = _refusal(status, data)
        if refused is not None:
            return RequestReply(ok=False, status=status, message=refused)
        try:
            return msgspec.json.decode(data, type=RequestReply)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise TransportError(f"{leader_id} sent a malformed reply: {exc}") from None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
