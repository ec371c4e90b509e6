"""End to end: ``ballast pipeline shed --apply`` moves bundles of a running
``ballast standalone`` through its admin API, and says so plainly when the URL does not
answer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ballast.metadata.zkserver import free_port
from ballast.pipeline.history import BrokerRow, BundleRow, HistorySnapshot, write_snapshot
from tests.conftest import REPO, run_ballast
from tests.support.live import fetch_json, free_ports, get_json, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.spark]

NAMESPACE = "public/demo"


LOAD_REPORT = "/admin/v2/broker-stats/load-report"


def owned_bundles(url: str) -> list[str]:
    """The demo namespace's bundles ``url``'s broker reports, asked once (the callers wait)."""
    report = fetch_json(url + LOAD_REPORT)
    return sorted(b for b in report.get("bundles", []) if b.startswith(NAMESPACE + "/"))


def broker(name: str, cpu_percent: float) -> BrokerRow:
    return BrokerRow(
        broker=name, cpu_usage=cpu_percent, cpu_limit=100.0, memory_usage=0.0,
        memory_limit=0.0, direct_memory_usage=0.0, direct_memory_limit=0.0,
        bandwidth_in_usage=0.0, bandwidth_in_limit=0.0, bandwidth_out_usage=0.0,
        bandwidth_out_limit=0.0, msg_rate_in=0.0, msg_rate_out=0.0, msg_throughput_in=0.0,
        msg_throughput_out=0.0, num_topics=0, num_bundles=0, num_consumers=0, num_producers=0,
        last_update_ms=1,
    )  # fmt: skip


def bundle(owner: str, name: str, throughput: float) -> BundleRow:
    return BundleRow(
        broker=owner, bundle=name, namespace=NAMESPACE, msg_rate_in=throughput / 1000,
        msg_rate_out=0.0, msg_throughput_in=throughput, msg_throughput_out=0.0, topics=5,
        producer_count=1, consumer_count=1, cache_size=0,
    )  # fmt: skip


def test_shed_apply_moves_bundles_on_a_live_cluster(tmp_path: Path) -> None:
    port = free_ports(2)
    workload = tmp_path / "w.toml"
    workload.write_text(
        f'namespace = "{NAMESPACE}"\nbundles = 4\ntopics = 40\nhotspot_after_s = 0.0\n'
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "ballast", "standalone", "--brokers", "2", "--port", str(port),
         "--broker-port", str(free_ports(2)), "--duration", "150", "--workload", str(workload)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO,
    )  # fmt: skip
    try:
        first, second = f"127.0.0.1:{port}", f"127.0.0.1:{port + 1}"
        url = f"http://{first}"
        get_json(url + LOAD_REPORT, 60)  # the broker is up
        # The demo's lookups place the bundles.
        wait_until(
            lambda: bool(owned_bundles(url)),
            timeout_s=60,
            what="a bundle placed on the first broker",
        )
        hot = owned_bundles(url)
        # A history whose latest snapshot says the first broker is overloaded by its bundles.
        write_snapshot(
            tmp_path / "history",
            HistorySnapshot(
                snapshot_ms=1_700_000_000_000,
                cluster="standalone",
                brokers=(broker(first, 95.0), broker(second, 5.0)),
                bundles=tuple(bundle(first, b, 10e6 * (i + 1)) for i, b in enumerate(hot)),
            ),
        )
        shed = (
            "pipeline", "shed", "--history", str(tmp_path / "history"), "--out",
            str(tmp_path / "out"), "--strategy", "overload", "--cluster", "standalone",
            "--apply", url, "--master", "local[1]",
        )  # fmt: skip
        result = run_ballast(*shed)
        assert result.returncode == 0, result.stdout + result.stderr
        summary = json.loads(result.stdout)
        decisions = summary["clusters"]["standalone"]["decisions"]
        assert decisions and all(d["destination"] == second for d in decisions)
        applied = summary["applied"]
        assert [a["bundle"] for a in applied] == [d["bundle"] for d in decisions]
        assert all(a["ok"] for a in applied), applied
        moved = {d["bundle"] for d in decisions}
        wait_until(
            lambda: moved <= set(owned_bundles(f"http://{second}")),
            timeout_s=30,
            what="the transferred bundles reaching the target",
        )
        # The same decisions again: the history is now older than the cluster, so none fits
        # (each bundle left the broker it names) and none is sent.
        again = run_ballast(*shed)
        assert again.returncode == 1
        stale = json.loads(again.stdout)["applied"]
        assert [a["message"] for a in stale] == [
            f"skipped: {d['bundle']} is not on {first} now" for d in decisions
        ]
        assert all(a["status"] == 0 and not a["ok"] for a in stale)
        assert f"{len(stale)} of {len(stale)} decisions were not carried out" in again.stderr
    finally:
        process.terminate()
        process.wait(timeout=60)


def test_shed_apply_to_an_unreachable_url_fails_plainly(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = run_ballast(
        "pipeline", "shed", "--history", str(tmp_path), "--out", str(tmp_path / "o"),
        "--cluster", "c", "--apply", url,
    )  # fmt: skip
    assert result.returncode == 1
    assert f"error: cannot reach {url}" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    no_cluster = run_ballast(
        "pipeline", "shed", "--history", str(tmp_path), "--out", "o", "--apply", url
    )
    assert no_cluster.returncode == 2
    assert "--apply needs --cluster" in no_cluster.stderr
    bad = run_ballast("pipeline", "shed", "--history", "h", "--out", "o", "--apply", "nope")
    assert bad.returncode == 2 and "not an http(s) URL" in bad.stderr
