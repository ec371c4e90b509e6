"""The cluster transport over HTTP: the controller's commands go to
``POST http://<broker>/admin/v2/ballast/commands`` and requests for the leader to
``POST http://<leader>/admin/v2/ballast/controller`` (a broker id is ``host:port`` of its web
service). Any failure to deliver is a :class:`TransportError`, which the channel retries."""

from __future__ import annotations

import aiohttp
import msgspec

from ballast.controller.commands import AnyCommand, CommandReply, TransportError, encode_command
from ballast.controller.requests import AnyRequest, RequestReply

COMMANDS_PATH = "/admin/v2/ballast/commands"
CONTROLLER_PATH = "/admin/v2/ballast/controller"


class HttpTransport:
    def __init__(self, *, timeout_s: float = 30.0) -> None:
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        return self._session

    async def _post(self, url: str, body: bytes) -> bytes:
        try:
            async with self._client().post(
                url, data=body, headers={"Content-Type": "application/json"}
            ) as response:
                data = await response.read()
                if response.status >= 500 and response.status != 503:
                    raise TransportError(f"{url} answered {response.status}")
                return data
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise TransportError(f"{url}: {exc}") from None

    async def send(self, broker_id: str, command: AnyCommand) -> CommandReply:
        data = await self._post(f"http://{broker_id}{COMMANDS_PATH}", encode_command(command))
        try:
            return msgspec.json.decode(data, type=CommandReply)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise TransportError(f"{broker_id} sent a malformed reply: {exc}") from None

    async def call_leader(self, leader_id: str, request: AnyRequest) -> RequestReply:
        data = await self._post(
            f"http://{leader_id}{CONTROLLER_PATH}", msgspec.json.encode(request)
        )
        try:
            return msgspec.json.decode(data, type=RequestReply)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise TransportError(f"{leader_id} sent a malformed reply: {exc}") from None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
