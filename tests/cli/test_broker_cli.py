"""``ballast broker`` before it has a store: it says where it connects, and Ctrl-C stops it
at once even while ZooKeeper does not answer (the serving broker's end-to-end tests are in
``tests/integration/test_zk_cluster.py``)."""

from __future__ import annotations

import re
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

from ballast.metadata.zkserver import free_port
from tests.support.live import distinct_free_ports, running_ballast

Run = Callable[..., subprocess.CompletedProcess[str]]


def test_ctrl_c_stops_a_broker_still_connecting_to_zookeeper() -> None:
    web, binary = distinct_free_ports(2)
    store = f"zk:127.0.0.1:{free_port()}/ballast"  # nothing listens there
    ports = ["--set", f"webServicePort={web}", "--set", f"brokerServicePort={binary}"]
    with running_ballast("broker", "--store", store, *ports, stdout=subprocess.DEVNULL) as broker:
        assert broker.stderr is not None
        line = broker.stderr.readline()
        assert f"connecting to the metadata store {store}" in line, line
        broker.send_signal(signal.SIGINT)
        # The connection attempt alone lasts 15 s: the broker does not wait for it.
        assert broker.wait(timeout=10) == 0
        assert "stopped before it connected" in broker.stderr.read()


def test_one_port_for_both_listeners_is_refused_before_anything_starts(ballast: Run) -> None:
    port = str(free_port())
    both = ballast(
        "broker", "--store", "zk:127.0.0.1:1",
        "--set", f"webServicePort={port}", "--set", f"brokerServicePort={port}",
    )  # fmt: skip
    assert both.returncode == 2  # not "address already in use" from the second listener
    assert f"webServicePort and brokerServicePort are both {port}" in both.stderr


def test_a_broker_on_an_in_process_store_says_it_is_a_cluster_of_its_own() -> None:
    """No --store: memory:, a cluster no other process can join; said once, with the time."""
    web, binary = distinct_free_ports(2)
    ports = ["--set", f"webServicePort={web}", "--set", f"brokerServicePort={binary}"]
    with running_ballast("broker", *ports, stdout=subprocess.DEVNULL) as broker:
        assert broker.stderr is not None
        line = broker.stderr.readline()
        assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} WARNING ", line), line
        assert "metadata store memory: lives in this process, so this broker is a cluster" in line
        assert "--store zk:HOST:PORT/CHROOT" in line
        while "serving on" not in line:  # then stopped as a serving broker stops
            line = broker.stderr.readline()
            assert line, "the broker ended before it served"
        broker.send_signal(signal.SIGINT)
        assert broker.wait(timeout=60) == 0


def test_a_broker_of_another_cluster_is_refused_by_the_store(ballast: Run, tmp_path: Path) -> None:
    """A wrong clusterName joined the store's load balancing, yet answered admin calls for
    its own name only. The first broker records its cluster; one of another is refused."""
    web, binary = distinct_free_ports(2)
    store = f"sqlite:{tmp_path / 'cluster.db'}"
    ports = ["--set", f"webServicePort={web}", "--set", f"brokerServicePort={binary}"]
    with running_ballast("broker", "--store", store, *ports, stdout=subprocess.DEVNULL) as first:
        assert first.stderr is not None
        line = first.stderr.readline()
        while "serving on" not in line:
            line = first.stderr.readline()
            assert line, "the broker ended before it served"
        first.send_signal(signal.SIGINT)
        assert first.wait(timeout=60) == 0
    other = ballast("broker", "--store", store, *ports, "--set", "clusterName=other")
    assert other.returncode == 2
    assert other.stderr.strip().endswith(
        "error: clusterName is other, but this metadata store is for standalone: set "
        "clusterName=standalone, or give a store of this cluster's own"
    )
    assert "serving on" not in other.stderr
