"""The admin paths ``pipeline shed --apply`` sends decisions to."""

from __future__ import annotations

import asyncio
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import aiohttp
import pytest

from ballast.cli.shed_apply import LiveCluster, Unreachable, unload_path


def test_unload_and_transfer_paths() -> None:
    assert unload_path("public/demo/0x00000000_0x40000000", None) == (
        "/admin/v2/namespaces/public/demo/0x00000000_0x40000000/unload"
    )
    assert unload_path("t/ns/0x40000000_0x80000000", "127.0.0.1:8081") == (
        "/admin/v2/namespaces/t/ns/0x40000000_0x80000000/unload?destinationBroker=127.0.0.1%3A8081"
    )


class _NotABroker(BaseHTTPRequestHandler):
    """A server that is not a broker: a list of clusters in bytes that are not UTF-8, and
    then an object where the brokers' list should be."""

    def do_GET(self) -> None:
        body = b'["caf\xe9"]' if self.path == "/admin/v2/clusters" else b'{"a": 1}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_server_that_is_not_a_broker_is_said_to_be_one() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotABroker)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"

    async def load() -> None:
        async with aiohttp.ClientSession() as session:
            await LiveCluster(session, url).load()

    try:
        with pytest.raises(Unreachable) as caught:
            asyncio.run(load())
    finally:
        server.shutdown()
        server.server_close()
    assert str(caught.value) == (
        f'{url}/admin/v2/brokers/caf%EF%BF%BD answers HTTP 200 with no JSON list ("{{"a": 1}}"); '
        "is it a Ballast broker?"
    )
