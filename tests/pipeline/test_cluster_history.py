"""End to end: a running ``ballast standalone`` keeps a load history
(``loadBalancerHistoryPath``), and the pipeline's jobs run on it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ballast.pipeline.history import read_table
from ballast.pipeline.schema import BROKERS, BUNDLES
from tests.conftest import REPO, run_ballast
from tests.support.live import free_ports

pytestmark = [pytest.mark.integration, pytest.mark.spark]

BROKERS_RUN = 3


def test_history_written_by_a_running_cluster_feeds_the_jobs(tmp_path: Path) -> None:
    history = tmp_path / "history"
    # One shedding cycle (a minute) after the leader is elected, plus slack.
    standalone = subprocess.run(
        [sys.executable, "-m", "ballast", "standalone", "--duration", "75",
         "--brokers", str(BROKERS_RUN), "--port", str(free_ports(BROKERS_RUN)),
         "--broker-port", str(free_ports(BROKERS_RUN)),
         "--set", f"loadBalancerHistoryPath={history}", "--set", "clusterName=e2e"],
        capture_output=True, text=True, cwd=REPO, timeout=180, check=False,
    )  # fmt: skip
    assert standalone.returncode == 0, standalone.stdout + standalone.stderr
    assert "Traceback" not in standalone.stdout + standalone.stderr

    brokers = read_table(history, BROKERS)
    assert brokers.num_rows >= BROKERS_RUN
    assert set(brokers.column("cluster").to_pylist()) == {"e2e"}
    bundles = read_table(history, BUNDLES)
    demo = {b for b in bundles.column("bundle").to_pylist() if b.startswith("public/demo/")}
    assert demo  # the demo namespace's bundles, as their owners reported them

    out = tmp_path / "results"
    averages = run_ballast(
        "pipeline", "time-averages", "--history", str(history), "--out", str(out),
        "--master", "local[1]",
    )  # fmt: skip
    assert averages.returncode == 0, averages.stderr
    summary = json.loads(averages.stdout)
    assert summary["brokers"] == BROKERS_RUN
    assert summary["bundles"] == len(set(bundles.column("bundle").to_pylist()))

    # The other jobs that read a history run on the same one.
    plan = run_ballast(
        "pipeline", "split-plan", "--history", str(history), "--out", str(out),
        "--master", "local[1]",
    )  # fmt: skip
    assert plan.returncode == 0, plan.stderr
    assert Path(json.loads(plan.stdout)["outputs"][0]).exists()

    shed = run_ballast(
        "pipeline", "shed", "--history", str(history), "--out", str(out),
        "--master", "local[1]", "--strategy", "threshold",
    )  # fmt: skip
    assert shed.returncode == 0, shed.stderr
    latest = max(read_table(history, BROKERS).column("snapshot_ms").to_pylist())
    assert json.loads(shed.stdout)["clusters"]["e2e"]["snapshotMs"] == latest

    report = run_ballast(
        "pipeline", "report", "--history", str(history), "--out", str(out),
        "--master", "local[1]",
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    pages = json.loads(report.stdout)
    assert pages["brokers"] == BROKERS_RUN
    assert all(Path(output).exists() for output in pages["outputs"])
