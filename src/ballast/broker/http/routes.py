"""One table of routes: it registers the aiohttp handlers and generates the OpenAPI document,
so the two cannot drift apart."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True, slots=True)
class Route:
    method: str
    path: str  # aiohttp pattern, e.g. /admin/v2/namespaces/{tenant}/{namespace}
    handler: Handler
    summary: str
    tag: str
    query: tuple[str, ...] = ()
    body: str | None = None  # a short description of the JSON body, when there is one
    responses: dict[int, str] = field(default_factory=dict)


_PARAM = re.compile(r"\{(\w+)(?::[^}]*)?\}")


def register(app: web.Application, routes: list[Route]) -> None:
    for route in routes:
        if route.method == "GET":  # HEAD too, as Jersey answers it for every GET
            app.router.add_get(route.path, route.handler)
        else:
            app.router.add_route(route.method, route.path, route.handler)


def openapi(routes: list[Route], *, title: str, version: str) -> dict[str, Any]:
    """The OpenAPI 3 document of ``routes``."""
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        path = _PARAM.sub(lambda m: "{" + m.group(1) + "}", route.path)
        parameters: list[dict[str, Any]] = [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
            for name in _PARAM.findall(route.path)
        ]
        parameters += [
            {"name": name, "in": "query", "required": False, "schema": {"type": "string"}}
            for name in route.query
        ]
        operation: dict[str, Any] = {
            "summary": route.summary,
            "tags": [route.tag],
            "operationId": route.handler.__name__,
            "parameters": parameters,
            "responses": {
                str(status): {"description": text}
                for status, text in sorted(
                    {200: "OK", **route.responses}.items()
                    if route.method == "GET"
                    else {204: "Done", **route.responses}.items()
                )
            },
        }
        if route.body is not None:
            operation["requestBody"] = {
                "description": route.body,
                "content": {"application/json": {"schema": {}}},
            }
        paths.setdefault(path, {})[route.method.lower()] = operation
    return {
        "openapi": "3.0.3",
        "info": {"title": title, "version": version},
        "paths": dict(sorted(paths.items())),
    }
