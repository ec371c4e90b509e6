"""``shed``: on the same snapshot, the Spark job decides exactly what ``ballast decide shed``
decides — every strategy, both scopes, decisions and reasons alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from typer.testing import CliRunner

from ballast.balance.shedding.registry import SHEDDERS
from ballast.cli.app import build_app
from ballast.model.config import load_settings
from ballast.pipeline.history import write_snapshot
from ballast.pipeline.importer import NOT_KEPT, ImportOptions, read_decide_snapshot
from ballast.pipeline.jobs import JobError, JobPaths
from ballast.pipeline.jobs.shed import shed_history
from ballast.pipeline.schema import SHED_DECISIONS
from ballast.pipeline.shedding import Scope, ShedOptions
from ballast.pipeline.sparkio import read_output

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
SNAPSHOTS = [
    *sorted((REPO / "tests" / "balance" / "data").glob("*.snapshot.json")),
    REPO / "examples" / "cluster-snapshot.json",
]
STRATEGIES = tuple(SHEDDERS)
# The transfer strategy's settings of Pulsar's TransferShedderTest (decide-examples.json),
# and AvgShedder's hit counts at one so that a single run pairs brokers and moves load; each
# strategy ignores the others' settings.
SETTINGS = [
    "loadBalancerDebugModeEnabled=true",
    "loadBalancerSheddingConditionHitCountThreshold=0",
    "loadBalancerSheddingBundlesWithPoliciesEnabled=false",
    "loadBalancerAvgShedderHitCountHighThreshold=1",
    "loadBalancerAvgShedderHitCountLowThreshold=1",
]


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple[Path, int]]]:
    """Every snapshot as a history holds it, imported as its own cluster; the file decide
    reads and the snapshot time, by cluster. A history leaves out the parts it has no table
    for, and holds a bundle that a hand-made report lists without ``lastStats`` as reported
    idle (the importer warns): ``ballast`` would weigh it by the leader's averages instead."""
    root = tmp_path_factory.mktemp("shed")
    sources: dict[str, tuple[Path, int]] = {}
    for path in SNAPSHOTS:
        body = {k: v for k, v in json.loads(path.read_text()).items() if k not in NOT_KEPT}
        for report in body["brokers"].values():
            stats = report.setdefault("lastStats", {})
            for bundle in report.get("bundles", ()):
                stats.setdefault(bundle, {})
        kept = root / path.name
        kept.write_text(json.dumps(body))
        cluster = path.name.removesuffix(".json").removesuffix(".snapshot")
        snapshot, _ = read_decide_snapshot(kept, ImportOptions(cluster))
        write_snapshot(root / "history", snapshot)
        sources[cluster] = (kept, snapshot.snapshot_ms)
    return root, sources


def decide(source: Path, strategy: str, scope: Scope, now_ms: int) -> list[dict[str, Any]]:
    argv = ["decide", "shed", str(source), "--strategy", strategy, "--scope", scope.value]
    argv += ["--now-ms", str(now_ms)]
    for pair in SETTINGS:
        argv += ["--set", pair]
    result = CliRunner().invoke(build_app("decide"), argv)
    assert result.exit_code == 0, result.output
    decisions: list[dict[str, Any]] = json.loads(result.stdout)["decisions"]
    return decisions


@pytest.mark.parametrize("scope", list(Scope))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_shed_equals_decide_on_the_same_snapshot(
    spark: SparkSession,
    history: tuple[Path, dict[str, tuple[Path, int]]],
    strategy: str,
    scope: Scope,
) -> None:
    root, sources = history
    out = root / f"out-{strategy}-{scope.value}"
    settings = load_settings(overrides=SETTINGS).settings
    summary = shed_history(
        spark,
        JobPaths(history=str(root / "history"), out=str(out)),
        settings,
        ShedOptions(strategy=strategy, scope=scope),
    )
    clusters = summary["clusters"]
    assert isinstance(clusters, dict) and set(clusters) == set(sources)
    decided = 0
    for cluster, (source, snapshot_ms) in sources.items():
        expected = decide(source, strategy, scope, snapshot_ms)
        assert clusters[cluster]["decisions"] == expected, cluster
        assert clusters[cluster]["snapshotMs"] == snapshot_ms
        decided += len(expected)
    assert decided > 0  # the comparison is not vacuous for any strategy and scope
    rows = read_output(spark, str(out), SHED_DECISIONS).orderBy("cluster", "seq").collect()
    assert len(rows) == decided
    first = rows[0]
    expected_first = clusters[first["cluster"]]["decisions"][0]
    assert (first["action"], first["bundle"], first["broker"], first["destination"]) == (
        expected_first["action"],
        expected_first["bundle"],
        expected_first["broker"],
        expected_first.get("destination"),
    )
    assert first["strategy"] == strategy


def test_an_unknown_cluster_names_the_known_ones(
    spark: SparkSession, history: tuple[Path, dict[str, tuple[Path, int]]]
) -> None:
    root, _ = history
    with pytest.raises(JobError, match=r'no cluster "nope".*cluster-snapshot'):
        shed_history(
            spark,
            JobPaths(history=str(root / "history"), out=str(root / "o")),
            load_settings().settings,
            ShedOptions(),
            cluster="nope",
        )
