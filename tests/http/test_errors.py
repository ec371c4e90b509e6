"""Errors leave the HTTP API as Pulsar's ``{"reason": ...}`` with its status codes."""

from __future__ import annotations

import logging

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from ballast.broker.http.errors import STORE_AWAY_LOG, StoreAwayLog, error_middleware
from ballast.metadata.store import ConnectionLossError, SessionExpiredError

pytestmark = [pytest.mark.real_time]


async def _answer(raised: Exception) -> tuple[int, object]:
    async def handler(_request: web.Request) -> web.StreamResponse:
        raise raised

    app = web.Application(middlewares=[error_middleware])
    app[STORE_AWAY_LOG] = StoreAwayLog(lambda: 0.0)  # as make_app sets it
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


async def test_while_the_store_is_away_the_log_says_so_once_in_a_while(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A line per failed request flooded the log while a broker was cut off."""
    now = [0.0]

    async def handler(_request: web.Request) -> web.StreamResponse:
        raise ConnectionLossError("/admin/policies/t/ns")

    app = web.Application(middlewares=[error_middleware])
    app[STORE_AWAY_LOG] = StoreAwayLog(lambda: now[0], interval_s=30.0)
    app.router.add_get("/x", handler)
    with caplog.at_level(logging.WARNING, logger="ballast.broker.http.errors"):
        async with TestClient(TestServer(app)) as client:
            for t in (0.0, 1.0, 2.0, 29.0, 31.0, 32.0):
                now[0] = t
                assert (await client.get("/x")).status == 503  # every request told
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert lines[0].startswith("GET /x: ")
    assert lines[1].endswith("(3 more requests failed so in the last 31 s)")


async def test_a_bug_is_a_500_with_a_reason(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="ballast.broker.http.errors"):
        status, body = await _answer(ZeroDivisionError("division by zero"))
    assert (status, body) == (
        500,
        {"reason": "internal error: ZeroDivisionError: division by zero"},
    )
    assert caplog.records and caplog.records[0].exc_info is not None
