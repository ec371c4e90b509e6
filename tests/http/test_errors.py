"""Errors leave the HTTP API as Pulsar's ``{"reason": ...}`` with its status codes."""

from __future__ import annotations

import logging

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from ballast.broker.http.errors import error_middleware
from ballast.metadata.store import ConnectionLossError, SessionExpiredError

pytestmark = [pytest.mark.real_time]


async def _answer(raised: Exception) -> tuple[int, object]:
    async def handler(_request: web.Request) -> web.StreamResponse:
        raise raised

    app = web.Application(middlewares=[error_middleware])
    app.router.add_get("/x", handler)
    async with TestClient(TestServer(app)) as client:
        response = await client.get("/x")
        return response.status, await response.json()


@pytest.mark.parametrize(
    "raised", [ConnectionLossError("/loadbalance/leader"), SessionExpiredError("/admin")]
)
async def test_the_store_away_is_a_503_to_retry_without_a_traceback(
    raised: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="ballast.broker.http.errors"):
        status, body = await _answer(raised)
    assert status == 503 and isinstance(body, dict)
    assert body["reason"].endswith("; retry") and str(raised) in body["reason"]
    assert [r.exc_info for r in caplog.records] == [None]  # one line, no traceback


async def test_a_bug_is_a_500_with_a_reason(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="ballast.broker.http.errors"):
        status, body = await _answer(ZeroDivisionError("division by zero"))
    assert (status, body) == (
        500,
        {"reason": "internal error: ZeroDivisionError: division by zero"},
    )
    assert caplog.records and caplog.records[0].exc_info is not None
