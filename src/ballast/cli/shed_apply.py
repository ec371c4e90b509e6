"""Carrying out shedding decisions on a live cluster through its admin HTTP API — the endpoint
``ballast admin namespaces unload`` uses (Pulsar's): ``PUT
/admin/v2/namespaces/{tenant}/{namespace}/{range}/unload``, with ``destinationBroker`` for a
transfer. Any broker's URL will do: the broker forwards the change to the leader, which
carries it out like any admin move (and answers when it is done).

Decisions are sent one at a time, in their order; a refused one is reported and the rest are
still sent. Not being able to reach the URL at all is :class:`Unreachable`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp

REQUEST_TIMEOUT_S = 60.0


class Unreachable(Exception):
    """The admin URL does not answer."""


@dataclass(frozen=True, slots=True)
class Applied:
    """What the cluster answered to one decision (``status`` is the HTTP status)."""

    action: str
    bundle: str
    broker: str
    destination: str | None
    status: int
    ok: bool
    message: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def unload_path(bundle: str, destination: str | None) -> str:
    """The admin path that unloads ``bundle`` (``tenant/ns/0x..._0x...``), or transfers it
    when ``destination`` is given."""
    namespace, _, bundle_range = bundle.rpartition("/")
    tenant, _, name = namespace.partition("/")
    path = "/admin/v2/namespaces/" + "/".join(
        quote(part, safe="") for part in (tenant, name, bundle_range)
    )
    path += "/unload"
    if destination is not None:
        path += "?" + urlencode({"destinationBroker": destination})
    return path


async def _send(session: aiohttp.ClientSession, method: str, url: str) -> tuple[int, str]:
    try:
        async with session.request(
            method, url, timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)
        ) as response:
            return response.status, await response.text()
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise Unreachable(f"cannot reach {url}: {exc or type(exc).__name__}") from None


def _reason(status: int, text: str) -> str:
    if status < 400:
        return "done"
    try:
        body = json.loads(text)
    except json.JSONDecodeError:
        return text.strip() or f"HTTP {status}"
    return str(body.get("reason", text)) if isinstance(body, dict) else text


async def check_reachable(base_url: str) -> None:
    """Fail early (:class:`Unreachable`) when ``base_url`` is not a broker that answers."""
    async with aiohttp.ClientSession() as session:
        status, _ = await _send(session, "GET", base_url + "/admin/v2/brokers/leaderBroker")
    if status >= 500 and status != 503:
        raise Unreachable(f"{base_url} answers HTTP {status}; is it a Ballast broker?")


async def apply_decisions(base_url: str, decisions: Sequence[Mapping[str, Any]]) -> list[Applied]:
    """Send each decision (``ballast decide``'s JSON form: action, bundle, broker,
    destination) to the cluster at ``base_url``; what it answered to each."""
    answers: list[Applied] = []
    async with aiohttp.ClientSession() as session:
        for decision in decisions:
            bundle = str(decision["bundle"])
            destination = decision.get("destination")
            url = base_url + unload_path(bundle, None if destination is None else str(destination))
            status, text = await _send(session, "PUT", url)
            answers.append(
                Applied(
                    action=str(decision["action"]),
                    bundle=bundle,
                    broker=str(decision["broker"]),
                    destination=None if destination is None else str(destination),
                    status=status,
                    ok=status < 400,
                    message=_reason(status, text),
                )
            )
    return answers
