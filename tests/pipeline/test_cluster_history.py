"""End to end: a running ``ballast standalone`` keeps a load history
(``loadBalancerHistoryPath``), and the pipeline's jobs run on it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ballast.pipeline.history import read_table
from ballast.pipeline.schema import BROKERS, BUNDLES
from tests.conftest import REPO
from tests.support.live import free_ports, running_ballast, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.spark]

BROKERS_RUN = 3


def _has_a_snapshot(history: Path) -> bool:
    """Whether the leader's first snapshot is there: every broker's row and some bundles'."""
    try:
        return read_table(history, BROKERS).num_rows >= BROKERS_RUN and (
            read_table(history, BUNDLES).num_rows > 0
        )
    except (FileNotFoundError, ValueError, OSError):
        return False  # no table yet


def _jobs_side_by_side(*jobs: list[str]) -> list[subprocess.CompletedProcess[str]]:
    """``ballast pipeline JOB ...`` for each of ``jobs``, in child processes that run at the
    same time (each a JVM of its own on one core)."""
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, "cwd": REPO}
    children = [
        subprocess.Popen([sys.executable, "-m", "ballast", "pipeline", *job], **pipes)
        for job in jobs
    ]
    done = []
    for child, job in zip(children, jobs, strict=True):
        stdout, stderr = child.communicate(timeout=300)
        done.append(subprocess.CompletedProcess(job, child.returncode, stdout, stderr))
    return done


def test_history_written_by_a_running_cluster_feeds_the_jobs(tmp_path: Path) -> None:
    history = tmp_path / "history"
    # The leader writes its first snapshot at its first shedding cycle, a minute after it is
    # elected; the cluster is stopped with Ctrl-C once it has.
    with running_ballast(
        "standalone", "--duration", "180", "--brokers", str(BROKERS_RUN),
        "--port", str(free_ports(BROKERS_RUN)), "--broker-port", str(free_ports(BROKERS_RUN)),
        "--set", f"loadBalancerHistoryPath={history}", "--set", "clusterName=e2e",
    ) as standalone:  # fmt: skip
        wait_until(
            lambda: _has_a_snapshot(history) or standalone.poll() is not None,
            timeout_s=150,
            what="the leader's first snapshot",
            interval_s=1,
        )
        standalone.send_signal(signal.SIGINT)
        stdout, stderr = standalone.communicate(timeout=60)
    assert standalone.returncode == 0, stdout + stderr
    assert "Traceback" not in stdout + stderr

    brokers = read_table(history, BROKERS)
    assert brokers.num_rows >= BROKERS_RUN
    assert set(brokers.column("cluster").to_pylist()) == {"e2e"}
    bundles = read_table(history, BUNDLES)
    demo = {b for b in bundles.column("bundle").to_pylist() if b.startswith("public/demo/")}
    assert demo  # the demo namespace's bundles, as their owners reported them

    out = tmp_path / "results"
    common = ["--history", str(history), "--out", str(out), "--master", "local[1]"]
    averages, plan = _jobs_side_by_side(["time-averages", *common], ["split-plan", *common])
    assert averages.returncode == 0, averages.stderr
    summary = json.loads(averages.stdout)
    assert summary["brokers"] == BROKERS_RUN
    assert summary["bundles"] == len(set(bundles.column("bundle").to_pylist()))
    # The other jobs that read a history run on the same one.
    assert plan.returncode == 0, plan.stderr
    assert Path(json.loads(plan.stdout)["outputs"][0]).exists()

    shed, report = _jobs_side_by_side(
        ["shed", *common, "--strategy", "threshold"], ["report", *common]
    )
    assert shed.returncode == 0, shed.stderr
    latest = max(read_table(history, BROKERS).column("snapshot_ms").to_pylist())
    assert json.loads(shed.stdout)["clusters"]["e2e"]["snapshotMs"] == latest
    assert report.returncode == 0, report.stderr
    pages = json.loads(report.stdout)
    assert pages["brokers"] == BROKERS_RUN
    assert all(Path(output).exists() for output in pages["outputs"])
