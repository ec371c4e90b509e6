"""What kept ZooKeeper out of reach: kazoo says "Connection time-out" for a port nothing
listens on, a host name that does not resolve and a server that does not answer alike."""

from __future__ import annotations

import socket

from ballast.metadata.zk_client import why_unreachable
from ballast.metadata.zkserver import free_port


def test_each_server_is_told_what_kept_it_out() -> None:
    closed = free_port()
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts, never answers
        port = silent.getsockname()[1]
        hosts = f"127.0.0.1:{closed},no-such-host.invalid:2181,127.0.0.1:{port}/chroot"
        assert why_unreachable(hosts) == (
            f"nothing listens at 127.0.0.1:{closed}; no-such-host.invalid does not resolve to "
            f"an address; 127.0.0.1:{port} accepts connections but did not answer as ZooKeeper"
        )
    assert why_unreachable("") == ""
