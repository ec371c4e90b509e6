"""End to end: ``ballast standalone`` starts a cluster, balances the demo load, stops with a
summary — and the admin API answers while it runs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import pytest

from tests.conftest import REPO
from tests.support.live import get_json, standalone_ports

Run = Callable[..., CompletedProcess[str]]


@pytest.mark.integration
def test_standalone_runs_serves_and_summarises(tmp_path: Path) -> None:
    port, broker_port = standalone_ports(3)
    workload = tmp_path / "w.toml"
    workload.write_text(
        'namespace = "public/demo"\nbundles = 8\ntopics = 60\nhotspot_after_s = 5.0\n'
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "ballast", "standalone", "--port", str(port),
         "--broker-port", str(broker_port), "--duration", "25", "--workload", str(workload),
         "--store", f"sqlite:{tmp_path / 'cluster.db'}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
    )  # fmt: skip
    try:
        leader = get_json(f"http://127.0.0.1:{port}/admin/v2/brokers/leaderBroker", 30)
        assert leader["brokerId"].startswith("127.0.0.1:")
        namespaces = get_json(f"http://127.0.0.1:{port + 1}/admin/v2/namespaces/public", 10)
        assert "public/demo" in namespaces
        lookup = get_json(
            f"http://127.0.0.1:{port + 2}/lookup/v2/topic/persistent/public/demo/perf-topic-1", 10
        )
        assert lookup["brokerUrl"].startswith("pulsar://127.0.0.1:")
        output, _ = process.communicate(timeout=90)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, output
    assert "Ballast standalone" in output and "leader=127.0.0.1" in output
    assert "final loads:" in output
    # the demo's bundles were placed by the leader
    assert re.search(r"^load std-dev [0-9.]+; decisions: \d+ assign", output, re.MULTILINE)
    assert "Traceback" not in output
    # The durable store kept the namespace for the next run.
    assert (tmp_path / "cluster.db").exists()


def test_standalone_rejects_bad_options(ballast: Run, tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("topics = -3\n")
    endless = tmp_path / "endless.toml"
    endless.write_text("rate = inf\n")  # it ran, until the summary's std-dev of infinities
    vast = tmp_path / "vast.toml"
    vast.write_text("hotspot_factor = 1e300\n")
    split_fine = tmp_path / "split-fine.toml"
    split_fine.write_text("bundles = 2000000\n")  # it ran, without its namespace (refused)
    huge = tmp_path / "huge.toml"
    huge.write_text("size = 99999999999\n")  # it ran, brokers at a billion percent
    v1 = tmp_path / "v1.toml"
    v1.write_text('namespace = "a/b/c"\n')  # refused by the leader once started: exit 1
    for args, needle in (
        (["--brokers", "0"], "--brokers must be in 1..100, not 0"),
        (["--brokers", "101"], "run `ballast broker` processes for a bigger cluster"),
        (["--duration", "-1"], "--duration must be a positive number of seconds, not -1.0"),
        (["--duration", "nan"], "--duration must be a positive number"),
        (["--duration", "inf"], "--duration must be a positive number"),  # omit it instead
        (["--store", "zk:127.0.0.1:2181"], "ballast broker"),
        (["--store", "nope"], "invalid metadata store URL"),
        (["--workload", str(bad)], f"error: {bad}: topics = -3 is out of range"),
        (["--workload", str(endless)], "rate = inf is out of range (at most 1e+15)"),
        (["--workload", str(vast)], "hotspot_factor = 1e+300 is out of range"),
        (["--workload", str(split_fine)], "bundles = 2000000 is out of range (at most 1,048,576)"),
        (["--workload", str(huge)], "size = 99999999999 is out of range (at most 5,242,880)"),
        (["--workload", str(tmp_path / "missing.toml")], "cannot read"),
        (["--workload", str(v1)], "namespace: a/b/c is not tenant/namespace"),
        (["--no-load", "--workload", str(bad)], "exclude each other"),
        (["--port", "65535", "--brokers", "3"], "web ports 65535..65537"),
        (["--broker-port", "0"], "binary ports 0..2"),
        (["--brokers", "60", "--broker-port", "8100"], "web ports 8080..8139 and the binary"),
        (
            ["--broker-port", "8081"],
            "overlap: move --port (unset: webServicePort) or --broker-port\n",
        ),
        # the settings give the ports and the store the options do not
        (["--set", "webServicePort=65535"], "web ports 65535..65537"),
        (
            ["--set", "brokerServicePort=8081"],
            "--broker-port (unset: brokerServicePort from --set)",
        ),
        (
            ["--set", "metadataStoreUrl=zk:127.0.0.1:2181"],
            "(unset: metadataStoreUrl from --set) is",
        ),
    ):
        result = ballast("standalone", *args)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert needle in result.stderr, (args, result.stderr)


@pytest.mark.integration
def test_a_leader_record_that_never_expires_does_not_hang_the_start(
    ballast: Run, tmp_path: Path
) -> None:
    store = f"sqlite:{tmp_path / 'cluster.db'}"
    dump = tmp_path / "leader.json"
    leader = {"brokerId": "10.9.9.9:8080", "serviceUrl": "http://10.9.9.9:8080", "epoch": 1}
    dump.write_text(
        '{"root": "/loadbalance", "records": {"/loadbalance/leader": '
        f'{{"json": {json.dumps(leader)}, "ephemeral": true}}}}}}'
    )
    # left out by default; loaded on request, it is a persistent record no session holds
    assert ballast("metadata", "load", str(dump), "--store", store).returncode == 0
    assert ballast("metadata", "ls", "/loadbalance", "--store", store).returncode == 1
    kept = ballast("metadata", "load", str(dump), "--store", store, "--keep-ephemeral")
    assert kept.returncode == 0, kept.stderr
    port, broker_port = standalone_ports(1)
    run = ballast(
        "standalone", "--store", store, "--no-load", "--brokers", "1", "--duration", "3",
        "--port", str(port), "--broker-port", str(broker_port),
    )  # fmt: skip
    # It used to wait for that leader for ever, deaf to --duration; then it stopped with no
    # leader elected. A leader's record is ephemeral: this one is no leader, and is removed.
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert (
        ballast("metadata", "ls", "/loadbalance", "--store", store).stdout.split().count("leader")
        == 0
    )  # the stale record is gone (and the new leader's was ephemeral)


@pytest.mark.integration
def test_a_stop_during_the_demo_setup_is_heard(ballast: Run, tmp_path: Path) -> None:
    """Creating a million demo topics took minutes, deaf to --duration, Ctrl-C and SIGTERM
    (the store answered without yielding, so no signal handler ran). The most there may be
    now, 100,000, take about 7 s: the stop at 3 s is heard in the middle."""
    workload = tmp_path / "many.toml"
    workload.write_text("topics = 100000\nhotspot_after_s = 0\n")  # about 7 s to create
    port, broker_port = standalone_ports(1)
    run = ballast(
        "standalone", "--brokers", "1", "--duration", "3", "--workload", str(workload),
        "--port", str(port), "--broker-port", str(broker_port),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    ran = re.search(r"^ran (\d+) s", run.stdout, re.MULTILINE)
    assert ran is not None and int(ran.group(1)) <= 5, run.stdout  # a million took 188 s


@pytest.mark.integration
def test_a_store_of_another_cluster_is_refused(ballast: Run, tmp_path: Path) -> None:
    """``--store`` another cluster's store: its brokers joined that cluster's balancing (only
    ``ballast broker`` claimed the store for its clusterName)."""
    store = f"sqlite:{tmp_path / 'cluster.db'}"
    port, broker_port = standalone_ports(1)
    ports = ["--port", str(port), "--broker-port", str(broker_port)]
    first = ballast(
        "standalone", "--store", store, "--no-load", "--brokers", "1", "--duration", "1", *ports
    )
    assert first.returncode == 0, first.stderr
    claimed = ballast("metadata", "get", "/admin/clusters", "--raw", "--store", store)
    assert claimed.stdout.strip() == "standalone", claimed.stdout
    other = ballast(
        "standalone", "--store", store, "--set", "clusterName=prod", "--no-load",
        "--brokers", "1", "--duration", "1", *ports,
    )  # fmt: skip
    assert other.returncode == 2, other.stderr
    assert "clusterName is prod, but this metadata store is for standalone" in other.stderr
    assert "Traceback" not in other.stderr and "ran " not in other.stdout
