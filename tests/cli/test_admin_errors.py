"""``ballast admin`` against a server that answers with errors of every shape: Pulsar's JSON
``reason``, an empty body, a long page from a server that is not Pulsar's."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from subprocess import CompletedProcess

import pytest

Run = Callable[..., CompletedProcess[str]]

ANSWERS = {
    "/admin/v2/tenants": (409, b'{"reason": "Tenant already exists"}'),
    "/admin/v2/namespaces/acme": (404, b""),
    "/admin/v2/brokers/leaderBroker": (502, b"<html>" + b"x" * 5000 + b"</html>"),
    # A file server's answers: a page on several lines, text, bytes that are not UTF-8.
    "/admin/v2/tenants/acme": (404, b"<html>\n  <title>Error</title>\n</html>\n"),
    "/admin/v2/namespaces/other": (200, b"not json at all"),
    "/admin/v2/broker-stats/load-report": (200, b'{"a": '),
    "/admin/v2/namespaces/latin": (200, b"caf\xe9"),
}


# A path whose answer never comes in the time the client gives it (held until the server
# closes).
SLOW = "/admin/v2/clusters"
RELEASE = threading.Event()


class _Errors(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == SLOW:
            RELEASE.wait(30)
        status, body = ANSWERS.get(self.path, (404, b""))
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # quiet: the test reads stderr
        pass


@pytest.fixture
def server_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Errors)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    RELEASE.clear()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        RELEASE.set()
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (("tenants", "list"), "error: 409: Tenant already exists"),
        (("namespaces", "list", "acme"), "error: 404: Not Found (no reason given)"),
        (("brokers", "leader"), "error: 502: <html>" + "x" * 191 + "..."),
        (("tenants", "update", "acme"), "error: 404: <html> <title>Error</title> </html>"),
        (("namespaces", "list", "other"), '"not json at all"'),
        (("broker-stats", "load-report"), '"{"a":"'),
        (("namespaces", "list", "latin"), '"caf\ufffd"'),
    ],
)
def test_errors_exit_1_with_a_readable_reason(
    ballast: Run, server_url: str, command: tuple[str, ...], message: str
) -> None:
    result = ballast("admin", "--url", server_url, *command)
    assert result.returncode == 1
    if message.startswith('"'):  # an answer that is not JSON: from a server that is no broker
        assert result.stderr.strip() == (
            f"error: {server_url} answered 200 with something that is not JSON "
            f"({message}): is it a broker's web port?"
        )
    else:
        assert result.stderr.strip() == message


def test_a_bad_url_is_blamed_on_where_it_came_from(ballast: Run) -> None:
    from_env = ballast("admin", "tenants", "list", env={**os.environ, "BALLAST_ADMIN_URL": "x"})
    assert from_env.returncode == 2
    assert 'BALLAST_ADMIN_URL "x" is not a valid URL' in from_env.stderr
    given = ballast("admin", "--url", "y", "tenants", "list")
    assert given.returncode == 2 and '--url "y" is not a valid URL' in given.stderr
    empty = ballast("admin", "--url", "", "tenants", "list")  # not the default's cluster
    assert empty.returncode == 2 and "--url is empty" in empty.stderr
    # the API's paths were appended after the query: http://h:1?x=1/admin/v2/tenants
    query = ballast("admin", "--url", "http://127.0.0.1:1?x=1", "tenants", "list")
    assert query.returncode == 2 and "has no query or fragment" in query.stderr


def test_an_empty_destination_is_refused_not_read_as_an_unload(ballast: Run) -> None:
    """An unset $DEST gave ``-d ""``, and the bundle was unloaded instead of transferred."""
    url = "http://127.0.0.1:1"  # refused before any request
    for bundle in (("0x00000000_0x40000000",), ()):  # nor the whole namespace
        result = ballast("admin", "--url", url, "namespaces", "unload", "a/b", *bundle, "-d", "")
        assert result.returncode == 2
        assert "--destination is empty: name the broker" in result.stderr
    wrong = ballast("admin", "--url", url, "namespaces", "unload", "a/b", "0x0_0x1", "-d", "h:abc")
    assert wrong.returncode == 2
    assert '--destination "h:abc" is no broker id (host:port) nor web service URL' in wrong.stderr


def test_an_answer_late_past_the_timeout_is_told_as_such(ballast: Run, server_url: str) -> None:
    """The request was delivered: say it was not answered in time, not that the server could
    not be reached (a change may still complete)."""
    late = ballast("admin", "--url", server_url, "--timeout", "0.5", "brokers", "list")
    assert late.returncode == 1, late.stderr
    assert late.stderr.strip() == (
        f"error: {server_url} did not answer within 0.5 s; the request may still complete "
        "(check before repeating it)"
    )
    for wrong in ("0", "inf", "1e400", "nan"):  # nan was told "should be <= 86400"
        refused = ballast("admin", "--url", server_url, "--timeout", wrong, "tenants", "list")
        assert refused.returncode == 2, refused.stderr
        assert f"'--timeout': {wrong}: from 0.001 to 86400 seconds" in refused.stderr


@pytest.mark.parametrize(
    ("arguments", "command"),
    [
        (("topics", "list", "t/ns", "--url", "http://127.0.0.1:1"), "topics list"),
        (("namespaces", "split", "t/ns", "--json"), "namespaces split"),
        (("clusters", "--timeout", "3", "get"), "clusters"),
    ],
)
def test_an_admin_option_after_the_group_says_where_it_goes(
    ballast: Run, arguments: tuple[str, ...], command: str
) -> None:
    """The parser said only "No such option: --url" (pulsar-admin also takes its options
    first)."""
    result = ballast("admin", *arguments)
    assert result.returncode == 2
    option = next(a for a in arguments if a.startswith("--"))
    admin = result.stderr.split("Usage: ", 1)[1].split(" admin ", 1)[0] + " admin"
    assert (
        f"It is an option of '{admin}': give it before the group, as in "
        f"'{admin} {option} ... {command} ...'"
    ) in result.stderr, result.stderr
    assert "Possible options" not in result.stderr
    other = ballast("admin", "topics", "list", "t/ns", "--bogus")  # any other: as it was
    assert other.returncode == 2 and "No such option: --bogus\n" in other.stderr
