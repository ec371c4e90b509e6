"""Carrying out shedding decisions on a live cluster through its admin HTTP API — the endpoint
``ballast admin namespaces unload`` uses (Pulsar's): ``PUT
/admin/v2/namespaces/{tenant}/{namespace}/{range}/unload``, with ``destinationBroker`` for a
transfer. Any broker's URL will do: the broker forwards the change to the leader, which
carries it out like any admin move (and answers when it is done).

Decisions are sent one at a time, in their order; a refused one is reported and the rest are
still sent. Each is checked against the live cluster first, since a history's snapshot may be
older than the cluster's state, or of another cluster: a decision whose broker does not own the
bundle now, or whose destination is not one of the cluster's brokers, is skipped (status 0)
rather than sent — an unload of a bundle nobody owns answers "done" and moves nothing. Not
being able to reach the URL at all is :class:`Unreachable`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp

from ballast.cli.admin_client import one_line
from ballast.model.bundles import BundleName

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
            # A server that is not a broker may answer anything, in any encoding.
            return response.status, (await response.read()).decode("utf-8", errors="replace")
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        raise Unreachable(f"cannot reach {url}: {exc or type(exc).__name__}") from None


def _reason(status: int, text: str) -> str:
    if status < 400:
        return "done"
    try:
        body = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        body = text
    why = str(body.get("reason", text)) if isinstance(body, dict) else text
    return one_line(why) or f"HTTP {status}"


async def check_reachable(base_url: str) -> None:
    """Fail early (:class:`Unreachable`) when ``base_url`` is not a broker that answers."""
    async with aiohttp.ClientSession() as session:
        status, _ = await _send(session, "GET", base_url + "/admin/v2/brokers/leaderBroker")
    if status >= 500 and status != 503:
        raise Unreachable(f"{base_url} answers HTTP {status}; is it a Ballast broker?")


class LiveCluster:
    """What the cluster at ``base_url`` holds now: its brokers, and the bundles each owns
    (asked once per broker)."""

    def __init__(self, session: aiohttp.ClientSession, base_url: str) -> None:
        self.session = session
        self.base_url = base_url
        self.name = ""
        self.brokers: frozenset[str] = frozenset()
        self._owned: dict[str, frozenset[str]] = {}

    async def load(self) -> None:
        clusters = await self._json("/admin/v2/clusters", list)
        if not clusters:
            raise Unreachable(f"{self.base_url} names no cluster; is it a Ballast broker?")
        self.name = str(clusters[0])
        listed = await self._json(f"/admin/v2/brokers/{quote(self.name, safe='')}", list)
        self.brokers = frozenset(str(b) for b in listed)

    async def owned_by(self, broker: str) -> frozenset[str]:
        if broker not in self._owned:
            path = f"/admin/v2/brokers/{quote(self.name, safe='')}/{quote(broker, safe='')}"
            owned = await self._json(path + "/ownedNamespaces", dict)
            self._owned[broker] = frozenset(
                bundle
                for bundle, status in owned.items()
                if not isinstance(status, dict) or status.get("is_active", True)
            )
        return self._owned[broker]

    async def _json(self, path: str, shape: type[list[Any]] | type[dict[str, Any]]) -> Any:
        """The JSON answer at ``path``, which must be a ``shape``; else :class:`Unreachable`."""
        status, text = await _send(self.session, "GET", self.base_url + path)
        if status >= 400:
            raise Unreachable(
                f"{self.base_url}{path} answers HTTP {status}: {_reason(status, text)}"
            )
        try:
            answer = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            answer = None
        if not isinstance(answer, shape):
            raise Unreachable(
                f"{self.base_url}{path} answers HTTP {status} with no JSON {shape.__name__} "
                f'("{one_line(text)}"); is it a Ballast broker?'
            )
        return answer

    async def problem(self, bundle: str, broker: str, destination: str | None) -> str | None:
        """Why a decision does not fit the cluster as it is now (None: it does)."""
        if destination is not None and destination not in self.brokers:
            return f"destination {destination} is not a broker of cluster {self.name} now"
        if broker not in self.brokers:
            return f"broker {broker} is not a broker of cluster {self.name} now"
        if str(BundleName.parse(bundle)) not in await self.owned_by(broker):
            return f"{bundle} is not on {broker} now"
        return None


async def apply_decisions(base_url: str, decisions: Sequence[Mapping[str, Any]]) -> list[Applied]:
    """Send each decision (``ballast decide``'s JSON form: action, bundle, broker,
    destination) that fits the cluster at ``base_url`` now; what it answered to each, and
    why the others were skipped."""
    answers: list[Applied] = []
    async with aiohttp.ClientSession() as session:
        live = LiveCluster(session, base_url)
        await live.load()
        for decision in decisions:
            bundle, broker = str(decision["bundle"]), str(decision["broker"])
            destination = decision.get("destination")
            target = None if destination is None else str(destination)
            problem = await live.problem(bundle, broker, target)
            if problem is None:
                status, text = await _send(session, "PUT", base_url + unload_path(bundle, target))
                message = _reason(status, text)
            else:
                status, message = 0, f"skipped: {problem}"
            answers.append(
                Applied(
                    action=str(decision["action"]),
                    bundle=bundle,
                    broker=broker,
                    destination=target,
                    status=status,
                    ok=0 < status < 400,
                    message=message,
                )
            )
    return answers
