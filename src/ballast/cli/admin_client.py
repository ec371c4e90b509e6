"""The HTTP half of ``ballast admin``: where it sends its calls, how long it waits, and how it
shows their answers and errors."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import typer

from ballast.broker.http.transport import NOT_HTTP, delivery_failure
from ballast.cli.common import fail, print_json

DEFAULT_URL = "http://127.0.0.1:8080"
# Longest error text shown from an answer without a reason.
REASON_LENGTH = 200
# How long a call waits for its answer by default (pulsar-admin's default read timeout).
ANSWER_TIMEOUT_S = 60.0
# The longest --timeout taken: a day (an infinite one overflows the client's timers).
MAX_TIMEOUT_S = 86_400.0
# How long a call waits for its connection (within ANSWER_TIMEOUT_S).
CONNECT_TIMEOUT_S = 10.0
JSON_TYPE = "application/json"


@dataclass(frozen=True, slots=True)
class AdminTarget:
    url: str
    as_json: bool
    timeout_s: float = ANSWER_TIMEOUT_S


def call(
    ctx: typer.Context,
    method: str,
    path: str,
    body: Any = None,
    params: dict[str, str] | None = None,
    *,
    text: bool = False,
) -> Any:
    """One HTTP call; the JSON answer (None for 204). Errors exit 1 with Pulsar's reason.
    ``path`` is made of checked names only; values a user typed go in ``params``, which are
    escaped. ``text``: the body (a string) is sent and the answer read as bare text, as
    Pulsar's admin client does for the few strings its API takes and gives unquoted."""
    target: AdminTarget = ctx.obj
    payload: dict[str, Any] = {"json": body}
    if text and body is not None:
        payload = {"data": str(body).encode("utf-8"), "headers": {"Content-Type": JSON_TYPE}}

    # a connection that never completes is no request sent: told apart below
    timeout = aiohttp.ClientTimeout(
        total=target.timeout_s, connect=min(target.timeout_s, CONNECT_TIMEOUT_S)
    )

    async def run() -> tuple[int, Any, bool]:
        async with (
            aiohttp.ClientSession() as session,
            session.request(
                method,
                target.url + path,
                params=params,
                timeout=timeout,
                **payload,
            ) as response,
        ):
            if response.status == 204:
                return 204, None, True
            # A server that is not a broker may answer anything, in any encoding.
            answer = (await response.read()).decode("utf-8", errors="replace")
            if text and response.status < 400:
                return response.status, answer, True
            try:
                return response.status, json.loads(answer) if answer else None, True
            except (json.JSONDecodeError, RecursionError):
                return response.status, answer, False

    try:
        status, answer, is_json = asyncio.run(run())
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        sent, why = delivery_failure(exc, timeout)
        if sent:
            fail(
                f"{target.url} did not answer within {target.timeout_s:g} s; the request may "
                "still complete (check before repeating it)",
                code=1,
            )
        if why == NOT_HTTP:
            why += (
                " (is it a broker's binary port, brokerServicePort? admin calls go to its web "
                "port, webServicePort: 8080 unless configured)"
            )
        fail(f"{_unreached(target.url, exc)}: {why}", code=1)
    if status >= 400:
        fail(f"{status}: {_reason(status, answer)}", code=1)
    if not is_json:  # every answer the admin commands read is JSON
        fail(
            f"{target.url} answered {status} with something that is not JSON "
            f'("{one_line(answer)}"): is it a broker\'s web port?',
            code=1,
        )
    return answer


def _unreached(url: str, exc: BaseException) -> str:
    """Which server could not be reached: the one asked, or the one it redirected the request
    to (the topic's owner, the leader), which a broker names while its session lasts even
    when that broker is gone."""
    asked = urlsplit(url)
    port = asked.port or (443 if asked.scheme == "https" else 80)
    if isinstance(exc, aiohttp.ClientConnectorError) and (exc.host, exc.port) != (
        asked.hostname,
        port,
    ):
        return f"{url} redirected the request to {exc.host}:{exc.port}"
    return f"cannot reach {url}"


def one_line(text: str) -> str:
    """``text`` on one line, cut at :data:`REASON_LENGTH` (a server that is not Pulsar's may
    answer a whole page)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= REASON_LENGTH else flat[: REASON_LENGTH - 3] + "..."


def _reason(status: int, answer: Any) -> str:
    """Pulsar's ``reason`` of an error answer, or else its text (cut short: a server that is
    not Pulsar's may answer a page), or else the status's standard phrase."""
    why = answer.get("reason") if isinstance(answer, dict) else answer
    if why and str(why).strip():
        return one_line(str(why))
    try:
        return f"{HTTPStatus(status).phrase} (no reason given)"
    except ValueError:
        return "no reason given"


def show(ctx: typer.Context, answer: Any, *, ok: str = "ok") -> None:
    target: AdminTarget = ctx.obj
    if target.as_json:
        print_json(answer if answer is not None else {"ok": True})
    elif answer is None:
        typer.echo(ok)
    elif isinstance(answer, list):
        for item in answer:
            typer.echo(item)
    elif isinstance(answer, str):
        typer.echo(answer)
    else:
        print_json(answer)
