"""Request bodies: read within a time limit, and as JSON. A body that cannot be read, or holds
text no record or log line can encode, is a 400 with the reason before any of it reaches the
controller or the store; one that does not arrive in time is a 408."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web

from ballast.broker.http.errors import ApiError

# How long a request's body may take to arrive, and how long the server waits for the next
# request's headers on an open connection: Jetty's default idle timeout, which Pulsar's web
# service keeps. Without it a client that sends a part and stops holds its connection (and,
# for a body, the handler) for as long as it likes.
IDLE_TIMEOUT_S = 30.0
# The application's idle timeout (``make_app`` sets it: IDLE_TIMEOUT_S unless a test asks less).
IDLE_TIMEOUT = web.AppKey("idle_timeout_s", float)


async def read_body(request: web.Request) -> bytes:
    """The whole body, refused with 408 when it has not arrived within the application's
    idle timeout (:data:`IDLE_TIMEOUT`)."""
    limit_s = request.app[IDLE_TIMEOUT]
    try:
        async with asyncio.timeout(limit_s):
            return await request.read()
    except TimeoutError:
        raise ApiError(408, f"the request body did not arrive within {limit_s:g} s") from None


async def text_body(request: web.Request) -> str:
    """The body as text (a bare string Pulsar reads as it is, not as JSON); 400 when it is
    not UTF-8."""
    raw = await read_body(request)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(400, f"body is not UTF-8 text: {exc.reason} at byte {exc.start}") from None


async def json_body(request: web.Request) -> Any:
    """The body parsed as JSON (:func:`parsed_json`), None when it is empty. A body said to
    be of another type is refused, 415, as Pulsar's resources, which consume
    ``application/json`` only, refuse it; one whose type is not said is read as JSON, and an
    empty body's type does not matter (HTTP clients label even none)."""
    raw = await read_body(request)
    if not raw.strip():
        return None
    if "Content-Type" in request.headers:
        media = request.content_type
        if media != "application/json" and not media.endswith("+json"):
            raise ApiError(
                415, f"Unsupported Media Type: the body must be application/json, not {media}"
            )
    return parsed_json(raw)


async def json_object_body(request: web.Request, refusal: str) -> dict[str, Any]:
    """The body as a JSON object, ``{}`` when it is empty; 400 with ``refusal`` for any other
    JSON value (``[]`` and ``0`` included, which are no empty body)."""
    body = await json_body(request)
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise ApiError(400, refusal)
    return body


def parsed_json(raw: bytes | str) -> Any:
    """``raw`` parsed as JSON. Refused (400): text that is not JSON, nesting past the parser's
    depth, and a string with a lone surrogate (``"\\ud800"``): a valid JSON escape, but not
    Unicode text, so UTF-8 cannot encode it (Java's strings hold one; Ballast's records are
    UTF-8)."""
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ApiError(400, f"body is not JSON: {exc}") from None
    where = _lone_surrogate(value)
    if where is not None:
        raise ApiError(400, f"body is not Unicode text: a lone surrogate in {where}")
    return value


def _lone_surrogate(value: Any) -> str | None:
    """The JSON path of the first string (key or value) holding a lone surrogate, if any."""
    pending: list[tuple[str, Any]] = [("$", value)]
    while pending:
        path, item = pending.pop()
        if isinstance(item, str):
            if not _encodable(item):
                return path
        elif isinstance(item, dict):
            for key, child in item.items():
                if not _encodable(key):
                    return f"{path} (a key)"
                pending.append((f"{path}.{key}", child))
        elif isinstance(item, list):
            pending.extend((f"{path}[{index}]", child) for index, child in enumerate(item))
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
