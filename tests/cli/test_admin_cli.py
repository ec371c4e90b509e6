"""End to end: ``ballast admin`` against a running ``ballast standalone --no-load``."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from subprocess import CompletedProcess

import pytest

from tests.conftest import REPO
from tests.support.live import get_json, running_ballast, standalone_ports

Run = Callable[..., CompletedProcess[str]]
pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster_ports() -> tuple[int, int]:
    """The standalone's first web port and first binary port."""
    return standalone_ports(3)


@pytest.fixture(scope="module")
def cluster_url(
    tmp_path_factory: pytest.TempPathFactory, cluster_ports: tuple[int, int]
) -> Iterator[str]:
    port, broker_port = cluster_ports
    log = tmp_path_factory.mktemp("standalone") / "stderr.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "ballast", "standalone", "--no-load", "--port", str(port),
             "--broker-port", str(broker_port), "--duration", "600"],
            stdout=subprocess.DEVNULL, stderr=stderr, cwd=REPO,
        )  # fmt: skip
    try:
        try:
            # Generous: on a loaded two-core machine the three brokers take a while to start.
            get_json(f"http://127.0.0.1:{port}/admin/v2/brokers/leaderBroker", 90)
            get_json(f"http://127.0.0.1:{port}/admin/v2/namespaces/public", 30)
        except OSError:
            pytest.fail(f"standalone did not come up (exit {process.poll()}): {log.read_text()}")
        yield f"http://127.0.0.1:{port + 1}"
    finally:
        process.terminate()
        process.wait(timeout=60)


def test_admin_round_trip(ballast: Run, cluster_url: str, tmp_path: Path) -> None:
    def admin(*args: str) -> CompletedProcess[str]:
        return ballast("admin", "--url", cluster_url, *args)

    assert admin("tenants", "create", "acme").stdout.strip() == "ok"
    # Without --allowed-clusters, every cluster (the API refuses none, as Pulsar's does).
    assert get_json(f"{cluster_url}/admin/v2/tenants/acme", 10) == {
        "adminRoles": [],
        "allowedClusters": ["standalone"],
    }
    assert admin("tenants", "update", "acme", "--admin-roles", "ops,dev").returncode == 0
    updated = admin("tenants", "update", "acme", "--allowed-clusters", "standalone,global")
    assert updated.returncode == 0, updated.stderr
    assert get_json(f"{cluster_url}/admin/v2/tenants/acme", 10) == {
        "adminRoles": ["ops", "dev"],  # kept: only the clusters were given
        "allowedClusters": ["standalone", "global"],
    }
    assert "acme" in admin("tenants", "list").stdout.split()
    assert admin("namespaces", "create", "acme/orders", "--bundles", "4").returncode == 0
    assert admin("namespaces", "list", "acme").stdout.split() == ["acme/orders"]
    bundles = json.loads(admin("--json", "namespaces", "bundles", "acme/orders").stdout)
    assert bundles["numBundles"] == 4
    lookup = json.loads(admin("--json", "topics", "lookup", "acme/orders/t1").stdout)
    assert lookup["brokerUrl"].startswith("pulsar://127.0.0.1:")
    brokers = admin("brokers", "list").stdout.split()
    assert len(brokers) == 3
    leader = json.loads(admin("--json", "brokers", "leader").stdout)
    assert leader["brokerId"] in brokers
    owned_range = "0x00000000_0x40000000"
    for i in range(40):  # own every bundle (over HTTP: forty CLI start-ups would dominate the test)
        get_json(f"{cluster_url}/lookup/v2/topic/persistent/acme/orders/t{i}", 10)
    split = admin(
        "--json", "namespaces", "split", "acme/orders", owned_range,
        "--algorithm", "range_equally_divide",
    )  # fmt: skip
    assert split.returncode == 0, split.stderr
    assert json.loads(split.stdout) == {"ok": True, "split": True}
    after = json.loads(admin("--json", "namespaces", "bundles", "acme/orders").stdout)
    assert after["numBundles"] == 5 and "0x20000000" in after["boundaries"]
    assert admin("namespaces", "unload", "acme/orders", "0x80000000_0xc0000000").returncode == 0
    whole = admin("namespaces", "unload", "acme/orders")  # every owned bundle of it
    assert (whole.returncode, whole.stdout.strip()) == (0, "ok"), whole.stderr
    where = admin("namespaces", "unload", "acme/orders", "--destination", "127.0.0.1:1")
    assert where.returncode == 2 and "--destination moves one bundle" in where.stderr
    # Positions take specified_positions_divide. The bundle was just unloaded: it is assigned,
    # then split; with no topics in it the algorithm finds no cut and nothing changes (204).
    cut = admin(
        "namespaces", "split", "acme/orders", "0x80000000_0xc0000000", "--positions", "0x90000000"
    )
    assert cut.returncode == 0, cut.stderr
    assert cut.stdout.startswith(
        "ok: 0x80000000_0xc0000000 was not split (its split algorithm found no cut point: "
    )
    assert "need at least two topics in the bundle" in cut.stdout  # the reason here
    cut_json = admin("--json", "namespaces", "split", "acme/orders", "0x80000000_0xc0000000",
                     "--positions", "0x90000000")  # fmt: skip
    said = json.loads(cut_json.stdout)
    assert (said["ok"], said["split"]) == (True, False) and "no cut point" in said["reason"]
    assert json.loads(admin("--json", "namespaces", "bundles", "acme/orders").stdout) == after
    mixed = admin("namespaces", "split", "acme/orders", "0x90000000_0xc0000000",
                  "--positions", "0xa0000000", "--algorithm", "range_equally_divide")  # fmt: skip
    assert mixed.returncode == 2 and "specified_positions_divide only" in mixed.stderr
    empty = admin("namespaces", "split", "acme/orders", "0x90000000_0xc0000000", "--positions", "")
    assert empty.returncode == 2 and "--positions names no position" in empty.stderr
    none_yet = admin("namespaces", "anti-affinity", "acme/orders")
    assert none_yet.returncode == 0 and none_yet.stdout.strip() == ""
    assert admin("namespaces", "anti-affinity", "acme/orders", "--set", "g1").returncode == 0
    assert admin("namespaces", "anti-affinity", "acme/orders").stdout.strip() == "g1"
    policy = tmp_path / "iso.json"
    policy.write_text(
        json.dumps(
            {
                "namespaces": ["acme/.*"],
                "primary": ["127.0.0.1"],
                "secondary": [],
                "auto_failover_policy": {
                    "policy_type": "min_available",
                    "parameters": {"min_limit": "1", "usage_threshold": "80"},
                },
            }
        )
    )
    empty = tmp_path / "empty.json"
    empty.write_text("\ufeff{}", encoding="utf-8")  # an editor's byte order mark is read past
    refused = admin("isolation", "set", "p0", "--file", str(empty))
    assert refused.returncode == 1  # the server's 400, as Pulsar refuses it
    assert "needs namespaces, primary, secondary, auto_failover_policy" in refused.stderr
    assert admin("isolation", "set", "p1", "--file", str(policy)).returncode == 0
    assert "p1" in json.loads(admin("--json", "isolation", "list").stdout)
    assert admin("isolation", "delete", "p1").returncode == 0
    report = json.loads(admin("--json", "broker-stats", "load-report").stdout)
    assert report["loadReportType"] == "LocalBrokerData"
    # Errors: the server's reason, exit 1; bad input found locally, exit 2.
    conflict = admin("namespaces", "create", "acme/orders")
    assert (
        conflict.returncode == 1
        and "409" in conflict.stderr
        and "already exists" in conflict.stderr
    )
    unknown = admin("tenants", "create", "other", "--allowed-clusters", "nope")
    assert unknown.returncode == 1 and "412: Clusters do not exist: nope" in unknown.stderr
    missing = admin("namespaces", "policies", "acme/none")
    assert missing.returncode == 1 and "404" in missing.stderr
    none = admin("namespaces", "split", "acme/orders", "LARGEST")  # no persistent topics yet
    assert none.returncode == 1 and "404: Bundle range LARGEST not found" in none.stderr
    named = admin("namespaces", "unload", "acme/orders", "HOT")  # only a split picks by name
    assert named.returncode == 2 and "InvalidBundle" in named.stderr
    bad = admin("namespaces", "unload", "acme/orders", "0xzz_0x1")
    assert bad.returncode == 2 and "InvalidBundle" in bad.stderr
    bad_name = admin("topics", "lookup", "persistent:///x")
    assert bad_name.returncode == 2 and "InvalidTopicName" in bad_name.stderr
    idle = admin("topics", "stats", "non-persistent://acme/orders/idle")  # no client loaded it
    assert idle.returncode == 1 and "404: Topic not found" in idle.stderr, idle.stderr
    # create loads it where it is served (idle, until the inactivity sweep), delete unloads it
    assert admin("topics", "create", "non-persistent://acme/orders/idle").returncode == 0
    made = admin("--json", "topics", "stats", "non-persistent://acme/orders/idle")
    assert made.returncode == 0 and json.loads(made.stdout)["publishers"] == []
    again = admin("topics", "create", "non-persistent://acme/orders/idle")
    assert again.returncode == 1 and "409: This topic already exists" in again.stderr
    assert admin("topics", "delete", "non-persistent://acme/orders/idle").returncode == 0
    gone = admin("topics", "delete", "non-persistent://acme/orders/idle", "--force")
    assert gone.returncode == 1 and "404: Topic not found" in gone.stderr
    stored = admin("topics", "stats", "acme/orders/t1")  # persistent: Ballast serves none
    assert stored.returncode == 2 and "give non-persistent://tenant/namespace/topic" in (
        stored.stderr
    )
    # a short name is Pulsar's persistent://public/default/NAME: it said only "give ..."
    short = admin("topics", "stats", "st")
    assert short.returncode == 2
    assert "'st' is not a non-persistent topic, which Pulsar reads as " in short.stderr
    assert "persistent://public/default/st" in short.stderr
    # a tenant with a "/" would reach another path and come back as a bare 404
    for command in (("tenants", "create"), ("tenants", "delete"), ("namespaces", "list")):
        bad_tenant = admin(*command, "acme/orders")
        assert bad_tenant.returncode == 2, command
        assert 'tenant "acme/orders" has characters outside' in bad_tenant.stderr
    # Names are checked before they become a path: no "..", no query in a policy name.
    for command in (
        ("namespaces", "delete", "acme/.."),
        ("tenants", "create", ".."),
        ("isolation", "delete", "p1?x=1"),
        ("brokers", "list", "--cluster", "a/b"),
        ("namespaces", "topics", "acme/orders", "--mode", "durable"),
    ):
        refused = admin(*command)
        assert refused.returncode == 2 and refused.stderr.startswith("error: "), command
    for url in ("http://127.0.0.1:99999", "http://[::1"):
        bad_url = ballast("admin", "--url", url, "brokers", "list")
        assert bad_url.returncode == 2 and "is not a valid URL" in bad_url.stderr, url
    unreachable = ballast("admin", "--url", "http://127.0.0.1:1", "brokers", "list")
    assert unreachable.returncode == 1 and unreachable.stderr == (
        "error: cannot reach http://127.0.0.1:1: cannot connect to 127.0.0.1:1: "
        "Connection refused\n"
    )


def test_a_redirect_to_a_broker_that_is_gone_names_that_broker(ballast: Run) -> None:
    """A broker redirects to a topic's owner or the leader it still knows (a killed one, until
    its session ends): the error named the broker asked as the one not reached."""

    class Redirecting(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(307)
            self.send_header("Location", f"http://127.0.0.1:1{self.path}")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_args: object) -> None:
            pass

    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Redirecting) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            result = ballast("admin", "--url", url, "brokers", "list")
        finally:
            server.shutdown()
    assert result.returncode == 1
    assert result.stderr == (
        f"error: {url} redirected the request to 127.0.0.1:1: cannot connect to 127.0.0.1:1: "
        "Connection refused\n"
    )


def test_admin_pointed_at_a_binary_port_says_so(
    ballast: Run, cluster_url: str, cluster_ports: tuple[int, int]
) -> None:
    binary_port = cluster_ports[1]
    result = ballast("admin", "--url", f"http://127.0.0.1:{binary_port}", "tenants", "list")
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"error: cannot reach http://127.0.0.1:{binary_port}: its answer is not HTTP (is it a "
        "broker's binary port, brokerServicePort? admin calls go to its web port, "
        "webServicePort: 8080 unless configured)"
    )


def test_partitioned_topic_commands(ballast: Run, cluster_url: str) -> None:
    def admin(*args: str) -> CompletedProcess[str]:
        return ballast("admin", "--url", cluster_url, *args)

    topic = "non-persistent://public/default/cli-parts"
    made = admin("topics", "create-partitioned-topic", topic, "-p", "3")
    assert (made.returncode, made.stdout.strip()) == (0, "ok"), made.stderr
    shown = json.loads(admin("--json", "topics", "get-partitioned-topic-metadata", topic).stdout)
    assert shown == {"partitions": 3}
    assert admin("topics", "create-partitioned-topic", "persistent://public/default/p2",
                 "--partitions", "2").returncode == 0  # fmt: skip
    listed = admin("topics", "list-partitioned-topics", "public/default").stdout.split()
    assert listed == [topic, "persistent://public/default/p2"]
    lower = admin("topics", "update-partitioned-topic", topic, "-p", "2")
    assert lower.returncode == 1 and "422: Expect partitions 2 can't less than" in lower.stderr
    assert admin("topics", "update-partitioned-topic", topic, "-p", "6").returncode == 0
    assert json.loads(
        admin("--json", "topics", "get-partitioned-topic-metadata", topic).stdout
    ) == {"partitions": 6}
    again = admin("topics", "create-partitioned-topic", topic, "-p", "3")
    assert again.returncode == 1 and "409: This topic already exists" in again.stderr
    for partitions in ("0", "-1", "2147483648"):  # refused before any request (a Java int)
        zero = admin("topics", "create-partitioned-topic", topic, "-p", partitions)
        assert zero.returncode == 2 and "--partitions" in zero.stderr
    v1 = admin("topics", "get-partitioned-topic-metadata", "persistent://public/c/default/x")
    assert v1.returncode == 2 and "domain://tenant/namespace/topic" in v1.stderr
    for name in (topic, "persistent://public/default/p2"):
        assert admin("topics", "delete-partitioned-topic", name).returncode == 0
    gone = admin("topics", "delete-partitioned-topic", topic, "--force")
    assert gone.returncode == 1 and "404: Partitioned topic does not exist" in gone.stderr
    assert admin("topics", "list-partitioned-topics", "public/default").stdout == ""


def test_pulsar_admin_spellings(ballast: Run, cluster_url: str) -> None:
    """An operator's pulsar-admin habits work: ``create -b``, ``unload -b``/``-d``,
    ``split-bundle -b ... -san``, ``brokers list CLUSTER``, ``brokers leader-broker``,
    ``topics list``."""

    def admin(*args: str) -> CompletedProcess[str]:
        return ballast("admin", "--url", cluster_url, *args)

    assert admin("namespaces", "create", "public/habits", "-b", "2").returncode == 0
    bundles = json.loads(admin("--json", "namespaces", "bundles", "public/habits").stdout)
    assert bundles["boundaries"] == ["0x00000000", "0x80000000", "0xffffffff"]
    for i in range(10):  # own both bundles
        get_json(f"{cluster_url}/lookup/v2/topic/non-persistent/public/habits/t{i}", 10)
    split = admin("--json", "namespaces", "split-bundle", "public/habits",
                  "-b", "0x00000000_0x80000000", "-san", "range_equally_divide")  # fmt: skip
    assert split.returncode == 0, split.stderr
    assert json.loads(split.stdout) == {"ok": True, "split": True}
    after = json.loads(admin("--json", "namespaces", "bundles", "public/habits").stdout)
    assert after["boundaries"] == ["0x00000000", "0x40000000", "0x80000000", "0xffffffff"]
    unload = admin("namespaces", "unload", "public/habits", "-b", "0x40000000_0x80000000")
    assert (unload.returncode, unload.stdout.strip()) == (0, "ok"), unload.stderr
    leader = json.loads(admin("--json", "brokers", "leader").stdout)["brokerId"]
    moved = admin("namespaces", "unload", "public/habits", "--bundle", "0x80000000_0xffffffff",
                  "-d", leader)  # fmt: skip
    assert moved.returncode == 0, moved.stderr
    owner = get_json(f"{cluster_url}/lookup/v2/topic/non-persistent/public/habits/t0", 10)
    assert owner["httpUrl"] == f"http://{leader}"  # t0 hashes into the bundle moved there
    two = admin("namespaces", "unload", "public/habits", "0x80000000_0xffffffff",
                "-b", "0x00000000_0x40000000")  # fmt: skip
    assert two.returncode == 2 and "two bundles given" in two.stderr
    unnamed = admin("namespaces", "split-bundle", "public/habits")
    assert unnamed.returncode == 2 and "name the bundle" in unnamed.stderr
    named = admin("brokers", "list", "standalone")
    assert (named.returncode, named.stdout) == (0, admin("brokers", "list").stdout)
    assert len(named.stdout.split()) == 3
    other = admin("brokers", "list", "elsewhere")
    assert other.returncode == 1 and "404" in other.stderr
    assert json.loads(admin("--json", "brokers", "leader-broker").stdout)["brokerId"] == leader
    listed = admin("topics", "list", "public/habits")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == admin("namespaces", "topics", "public/habits").stdout


def test_clusters_and_failure_domains(ballast: Run, cluster_url: str) -> None:
    """pulsar-admin's ``clusters`` commands: the cluster's data, and failure domains set,
    read, replaced and deleted (the cluster as an argument or taken from --url)."""

    def admin(*args: str) -> CompletedProcess[str]:
        return ballast("admin", "--url", cluster_url, *args)

    assert json.loads(admin("--json", "clusters", "list").stdout) == ["standalone"]
    isolation = admin("isolation", "list", "standalone")
    assert (isolation.returncode, isolation.stdout) == (0, admin("isolation", "list").stdout)
    data = json.loads(admin("--json", "clusters", "get", "standalone").stdout)
    # The broker asked answers with its own URLs, as Pulsar's standalone registers them.
    assert data["serviceUrl"] == cluster_url
    assert data["brokerServiceUrl"].startswith("pulsar://127.0.0.1:")
    assert admin("clusters", "get").stdout == admin("clusters", "get", "standalone").stdout
    unknown = admin("clusters", "get", "elsewhere")
    assert unknown.returncode == 1 and "404" in unknown.stderr
    brokers = admin("brokers", "list").stdout.split()
    made = admin("clusters", "create-failure-domain", "standalone", "--domain-name", "rack1",
                 "--broker-list", ",".join(brokers[:2]))  # fmt: skip
    assert made.returncode == 0, made.stderr
    got = json.loads(
        admin("--json", "clusters", "get-failure-domain", "--domain-name", "rack1").stdout
    )
    assert got == {"brokers": brokers[:2]}
    assert admin("clusters", "update-failure-domain", "--domain-name", "rack1",
                 "--broker-list", brokers[2]).returncode == 0  # fmt: skip
    listed = json.loads(admin("--json", "clusters", "list-failure-domains").stdout)
    assert listed == {"rack1": {"brokers": [brokers[2]]}}
    assert admin("clusters", "delete-failure-domain", "--domain-name", "rack1").returncode == 0
    missing = admin("clusters", "get-failure-domain", "--domain-name", "rack1")
    assert missing.returncode == 1 and "404" in missing.stderr
    elsewhere = admin("clusters", "get-failure-domain", "elsewhere", "--domain-name", "rack1")
    assert elsewhere.returncode == 1 and "412" in elsewhere.stderr
    empty = admin("clusters", "create-failure-domain", "--domain-name", "r", "--broker-list", ",")
    assert empty.returncode == 2 and "names no broker" in empty.stderr
    bad = admin("clusters", "get-failure-domain", "--domain-name", "a/b")
    assert bad.returncode == 2 and "failure domain" in bad.stderr
    both = admin("clusters", "get", "standalone", "--cluster", "prod")
    assert both.returncode == 2 and "two clusters given" in both.stderr


def test_brokers_and_isolation_default_to_the_cluster_of_the_broker(ballast: Run) -> None:
    """A cluster named by its brokers' clusterName ("prod"), not "standalone": without
    --cluster the commands take the one cluster the broker at --url belongs to."""
    port, broker_port = standalone_ports(1)
    args = ("standalone", "--no-load", "--brokers", "1", "--port", str(port))
    with running_ballast(
        *args, "--broker-port", str(broker_port), "--set", "clusterName=prod",
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    ):  # fmt: skip
        get_json(f"http://127.0.0.1:{port}/admin/v2/brokers/leaderBroker", 90)
        url = f"http://127.0.0.1:{port}"
        listed = ballast("admin", "--url", url, "brokers", "list")
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.split() == [f"127.0.0.1:{port}"]
        assert ballast("admin", "--url", url, "--json", "isolation", "list").returncode == 0
        other = ballast("admin", "--url", url, "brokers", "list", "--cluster", "standalone")
        assert other.returncode == 1 and "404" in other.stderr
