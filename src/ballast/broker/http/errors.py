"""Errors as Pulsar's REST API gives them: ``{"reason": "..."}`` with its status codes (400 bad
name, 404 unknown, 409 conflict, 412 precondition failed, 503 unavailable — the metadata store
away included)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from ballast.metadata.store import ConnectionLossError, InvalidPathError, SessionExpiredError

log = logging.getLogger(__name__)


class ApiError(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def reason(status: int, text: str) -> web.Response:
    return web.json_response({"reason": text}, status=status)


def this_cluster(request: web.Request, cluster_name: str, missing: int = 404) -> str:
    """The path's ``{cluster}``, which must be this broker's ``cluster_name``; else an
    ApiError of status ``missing`` (Pulsar answers 404 or 412 depending on the endpoint)."""
    cluster = request.match_info["cluster"]
    if cluster != cluster_name:
        raise ApiError(missing, f"cluster {cluster} does not exist")
    return cluster


class StoreAwayLog:
    """Says that requests fail because the metadata store is away: the first such failure,
    then at most one line every ``interval_s`` with how many more failed meanwhile. A line per
    request flooded a broker's log while it was cut off (every lookup and admin call)."""

    def __init__(self, now: Callable[[], float], interval_s: float = 30.0) -> None:
        self._now = now
        self.interval_s = interval_s
        self._said_at: float | None = None
        self._unsaid = 0

    def note(self, request: web.Request, exc: Exception) -> None:
        now = self._now()
        if self._said_at is not None and now - self._said_at < self.interval_s:
            self._unsaid += 1
            return
        more = (
            f" ({self._unsaid} more requests failed so in the last {now - self._said_at:.0f} s)"
            if self._said_at is not None and self._unsaid
            else ""
        )
        log.warning("%s %s: %s%s", request.method, request.path, exc, more)
        self._said_at, self._unsaid = now, 0


STORE_AWAY_LOG = web.AppKey("store_away_log", StoreAwayLog)


@web.middleware
async def error_middleware(
    request: web.Request,
    handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
) -> web.StreamResponse:
    """Every error leaves as Pulsar's JSON; a bug is a 500 with a reason, never a stack trace."""
    try:
        return await handler(request)
    except ApiError as exc:
        return reason(exc.status, exc.reason)
    except web.HTTPRedirection:
        raise
    except web.HTTPException as exc:
        # aiohttp's own text where it says more than the status ("Maximum request body size
        # 1048576 exceeded"), and its Allow header on a 405.
        text = exc.text if exc.text and not exc.text.startswith(f"{exc.status}:") else exc.reason
        refused = reason(exc.status, text)
        if "Allow" in exc.headers:
            refused.headers["Allow"] = exc.headers["Allow"]
        return refused
    except web.RequestPayloadError as exc:
        # The body could not be read as sent (a Content-Encoding it is not in, cut short).
        # Close the connection after the answer, and read no more of the body: aiohttp
        # would read the rest to keep the connection, meet the error again, log it as
        # unhandled and reset the connection under the client's next request.
        refused = reason(400, f"cannot read the body: {' '.join(str(exc).split())}")
        refused.force_close()
        request.content.feed_eof()
        return refused
    except (ConnectionLossError, SessionExpiredError) as exc:
        # The store is away (ZooKeeper down, the session lost): retry later, as for a lookup.
        request.app[STORE_AWAY_LOG].note(request, exc)
        return reason(503, f"{exc}; retry")
    except ConnectionResetError as exc:
        if request.transport is None or request.transport.is_closing():
            # The client hung up (mid-body, say): nobody to answer, and not the broker's fault.
            log.debug("%s %s: the client closed the connection", request.method, request.path)
            return reason(400, "the client closed the connection")
        return _internal_error(request, exc)  # a call of the broker's own was reset
    except InvalidPathError as exc:
        # A name from the request that no metadata path can hold (a topic called "..", a
        # control character): the request is bad, not the broker.
        return reason(400, f"invalid name: {exc}")
    except Exception as exc:
        return _internal_error(request, exc)


def _internal_error(request: web.Request, exc: Exception) -> web.Response:
    """A bug, or a failure of the broker's own: logged with its traceback, a 500 with a reason."""
    log.error("%s %s failed", request.method, request.path, exc_info=exc)
    return reason(500, f"internal error: {type(exc).__name__}: {exc}")


class ClientMistakes(logging.Filter):
    """aiohttp logs a request that is not HTTP it can read (a request line past 8,190 bytes, a
    bad header) as an error with its traceback, eleven lines a request: the client's mistake,
    not the broker's. Here it is one warning line."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            remote = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
            record.msg = "refused a request from %s that is not HTTP: %s"
            record.args = (remote, " ".join(str(exc).split()))
            record.exc_info = record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


CLIENT_MISTAKES = ClientMistakes()


def protocol_logger() -> logging.Logger:
    """The logger the HTTP server's protocol writes to, with :class:`ClientMistakes`."""
    logger = logging.getLogger("ballast.broker.http.protocol")
    logger.addFilter(CLIENT_MISTAKES)  # once: a filter already there is not added again
    return logger
