"""Each pipeline job end to end through the ``ballast`` command, on a small generated
history and on a history imported from a Pulsar dump; results checked against the model."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ballast.model.bundles import BundleRange
from ballast.model.config import SplitConfig, load_settings
from ballast.model.loaddata import BundleData, NamespaceBundleStats, TimeAverageBrokerData
from ballast.model.split_algorithms import SplitRequest, TopicLoad, split_algorithm
from ballast.pipeline.history import read_table
from ballast.pipeline.schema import BROKERS, BUNDLES, TOPICS

from .test_importer import make_dump

Ballast = Callable[..., subprocess.CompletedProcess[str]]


def empty_bundles_table(history: Path) -> None:
    """A bundles table of one file without rows: a history to the checks made before Spark
    starts (a table's directory without a file is none), and to Spark an empty one."""
    partition = history / "bundles" / "date=2026-01-05" / "hour=0"
    partition.mkdir(parents=True)
    pq.write_table(BUNDLES.arrow_schema().empty_table(), partition / "part-0.parquet")


KEYS = ("msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out")
GENERATE = [
    "--snapshots",
    "30",
    "--brokers",
    "5",
    "--bundles",
    "24",
    "--namespaces",
    "4",
    "--topic-every",
    "10",
    "--mean-bundle-msg-rate",
    "4000",
    "--seed",
    "9",
]


def summary(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr[-3000:]
    # Spark's start-up banner and warnings stay out of a job's output.
    assert "log4j" not in result.stderr and "default log level" not in result.stderr
    assert " WARN " not in result.stderr, result.stderr
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.conftest import run_ballast

    root = tmp_path_factory.mktemp("cli") / "history"
    done = summary(run_ballast("pipeline", "generate", "--out", str(root), *GENERATE))
    assert done["bundleRows"] == 30 * 24
    assert done["outputs"] == [str(root / t) for t in ("brokers", "bundles", "topics")]
    return root


def model_averages(root: Path) -> tuple[dict[str, BundleData], dict[str, int]]:
    """Bundle data as the leader's updates make it, from the history's rows in order."""
    rows = read_table(root, BUNDLES).to_pylist()
    rows.sort(key=lambda r: (r["snapshot_ms"], r["broker"]))
    data: dict[str, BundleData] = {}
    last: dict[str, int] = {}
    for row in rows:
        stats = NamespaceBundleStats(**{k: row[k] for k in KEYS}, topics=row["topics"])
        data[row["bundle"]] = data.get(row["bundle"], BundleData.new_default()).updated(stats)
        last[row["bundle"]] = row["snapshot_ms"]
    return data, last


@pytest.mark.spark
@pytest.mark.parametrize("buckets", [1, 3])
def test_time_averages_equal_the_model(
    ballast: Ballast, history: Path, tmp_path: Path, buckets: int
) -> None:
    out = tmp_path / "averages"
    args = ["--history", str(history), "--out", str(out)]
    if buckets > 1:  # folded in three passes, appended to one table
        args += ["--buckets", str(buckets)]
    done = summary(ballast("pipeline", "time-averages", *args))
    assert (done["bundles"], done["buckets"]) == (24, buckets)
    model, last = model_averages(history)
    bundles = pq.read_table(out / "bundle_averages").to_pylist()
    assert len(bundles) == 24
    for row in bundles:
        data = model[row["bundle"]]
        assert row["snapshot_ms"] == last[row["bundle"]]
        assert row["topics"] == data.topics
        for term, averages in (("short", data.short_term_data), ("long", data.long_term_data)):
            assert row[f"{term}_num_samples"] == averages.num_samples
            for key in KEYS:
                assert row[f"{term}_{key}"] == getattr(averages, key), (row["bundle"], key)
    brokers = pq.read_table(out / "broker_averages").to_pylist()
    latest = max(r["snapshot_ms"] for r in read_table(history, BROKERS).to_pylist())
    owned: dict[str, list[str]] = defaultdict(list)
    for row in read_table(history, BUNDLES, since_ms=latest).to_pylist():
        owned[row["broker"]].append(row["bundle"])
    live = {r["broker"] for r in read_table(history, BROKERS, since_ms=latest).to_pylist()}
    assert {r["broker"] for r in brokers} == live
    for row in brokers:
        expected = TimeAverageBrokerData.from_bundles(sorted(owned[row["broker"]]), model)
        assert row["long_msg_rate_in"] == expected.long_term_msg_rate_in
        assert row["short_msg_throughput_out"] == expected.short_term_msg_throughput_out
        assert row["num_bundles"] == len(owned[row["broker"]])


@pytest.mark.spark
def test_shed_folds_the_averages_a_generated_history_lacks(
    ballast: Ballast, history: Path, tmp_path: Path
) -> None:
    """A generated history stores no averages: shed computes them as time-averages does
    (the model's), in one pass or several, and decides the same either way."""
    decided = []
    for buckets in (1, 3):
        out = tmp_path / f"shed-{buckets}"
        args = ["--history", str(history), "--out", str(out), "--strategy", "uniform"]
        done = summary(ballast("pipeline", "shed", *args, "--buckets", str(buckets)))
        assert done["outputs"] == [
            str(out / "shed_decisions"),
            str(out / "shed_bundle_averages"),
        ]
        assert not (out / "bundle_averages").exists()  # time-averages' table, not shed's
        decided.append(done["clusters"]["synthetic"]["decisions"])
        model, _ = model_averages(history)
        rows = pq.read_table(out / "shed_bundle_averages").to_pylist()
        assert sorted(r["bundle"] for r in rows) == sorted(model)
        for row in rows:
            data = model[row["bundle"]]
            assert row["long_msg_rate_in"] == data.long_term_data.msg_rate_in
            assert row["short_msg_throughput_out"] == data.short_term_data.msg_throughput_out
    assert decided[0] == decided[1] != []


@pytest.mark.spark
def test_shed_on_stored_averages_removes_an_earlier_runs_folded_ones(
    ballast: Ballast, history: Path, tmp_path: Path
) -> None:
    """A run on a history with stored averages left the averages an earlier run had folded
    (of another history) beside its decisions, as if they were its own."""
    out = tmp_path / "shed"
    folded = summary(ballast("pipeline", "shed", "--history", str(history), "--out", str(out)))
    assert str(out / "shed_bundle_averages") in folded["outputs"]
    imported = tmp_path / "imported"
    example = Path(__file__).resolve().parents[2] / "examples" / "cluster-snapshot.json"
    made = ballast("pipeline", "import", str(example), "--history", str(imported))
    assert made.returncode == 0, made.stderr
    stored = summary(ballast("pipeline", "shed", "--history", str(imported), "--out", str(out)))
    assert stored["outputs"] == [str(out / "shed_decisions")]
    assert not (out / "shed_bundle_averages").exists()
    assert (out / "shed_decisions").is_dir()


@pytest.mark.spark
def test_split_plan_uses_latest_topics(ballast: Ballast, history: Path, tmp_path: Path) -> None:
    out = tmp_path / "plan"
    algorithm = "flow_or_qps_equally_divide"
    done = summary(
        ballast(
            "pipeline",
            "split-plan",
            "--history",
            str(history),
            "--out",
            str(out),
            "--set",
            f"defaultNamespaceBundleSplitAlgorithm={algorithm}",
            "--set",
            "loadBalancerNamespaceBundleMaxMsgRate=20000",
        )
    )
    plan = pq.read_table(out / "split_plan").to_pylist()
    assert done["selected"] == len(plan) > 0
    assert done["withCutPoints"] == sum(1 for r in plan if r["children"]) > 0
    settings = load_settings(overrides=["loadBalancerNamespaceBundleMaxMsgRate=20000"]).settings
    thresholds = SplitConfig.from_settings(settings).flow_or_qps
    topics = read_table(history, TOPICS).to_pylist()
    latest = max(t["snapshot_ms"] for t in topics)
    for row in plan:
        assert row["algorithm"] == algorithm
        assert row["long_msg_rate"] > 20000 or row["topics"] > 1000 or row["sessions"] > 1000
        loads = sorted(
            (
                TopicLoad(t["topic"], *(t[k] for k in KEYS))
                for t in topics
                if t["snapshot_ms"] == latest and t["bundle"] == row["bundle"]
            ),
            key=lambda t: (t.hash, t.name),
        )
        request = SplitRequest(
            bundle=BundleRange.parse(row["bundle"].rpartition("/")[2]),
            topics=loads,
            thresholds=thresholds,
        )
        assert row["split_points"] == list(split_algorithm(algorithm)(request).points)


@pytest.mark.spark
def test_report_writes_page_and_charts(ballast: Ballast, history: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    done = summary(ballast("pipeline", "report", "--history", str(history), "--out", str(out)))
    assert done["clusters"] == ["synthetic"]
    assert done["snapshots"] == 30
    page = (out / "index.html").read_text()
    for chart in ("synthetic-usage.png", "synthetic-imbalance.png", "synthetic-namespaces.png"):
        assert f'src="{chart}"' in page
        assert (out / chart).read_bytes().startswith(b"\x89PNG")
    over_time = (out / "broker_load_over_time.csv").read_text().splitlines()
    assert len(over_time) == 1 + 30
    assert over_time[0].startswith("cluster,snapshot_ms,brokers,usage_p50,usage_p90,usage_p99")
    assert len((out / "namespace_percentiles.csv").read_text().splitlines()) == 1 + 4
    written = sorted(p.name for p in out.iterdir())
    assert sorted(Path(o).name for o in done["outputs"]) == written  # every file it wrote


@pytest.mark.spark
def test_report_of_bundle_rows_alone(ballast: Ballast, history: Path, tmp_path: Path) -> None:
    only = tmp_path / "bundles-only"
    shutil.copytree(history / "bundles", only / "bundles")
    out = tmp_path / "report"
    done = summary(ballast("pipeline", "report", "--history", str(only), "--out", str(out)))
    assert done["snapshots"] == 30  # counted from the bundle rows
    assert done["brokers"] == 0
    page = (out / "index.html").read_text()
    assert ", 30 snapshots; 0 brokers, 4 namespaces." in page
    assert (out / "synthetic-namespaces.png").exists()
    assert not (out / "synthetic-usage.png").exists()  # no broker rows to draw
    assert "synthetic-usage.png" not in page


@pytest.mark.spark
def test_imported_dump_runs_through_the_jobs(ballast: Ballast, tmp_path: Path) -> None:
    root = tmp_path / "history"
    dump = make_dump(tmp_path / "dump")
    imported = summary(
        ballast("pipeline", "import", str(dump), "--history", str(root), "--cluster", "prod")
    )
    assert (imported["brokers"], imported["bundles"], imported["bundleAverages"]) == (2, 2, 1)
    out = tmp_path / "out"
    done = summary(
        ballast(
            "pipeline",
            "time-averages",
            "--history",
            str(root),
            "--out",
            str(out),
            "--conf",
            "spark.sql.shuffle.partitions=2",
        )
    )
    assert (done["bundles"], done["brokers"]) == (2, 2)
    brokers = {r["broker"]: r for r in pq.read_table(out / "broker_averages").to_pylist()}
    # one sample each: the averages are the reported rates
    assert brokers["10.0.0.9:8080"]["short_msg_rate_in"] == 12.5
    assert brokers["10.0.0.9:8080"]["num_bundles"] == 1


def test_bad_input_exits_2_before_spark(ballast: Ballast, tmp_path: Path) -> None:
    history = tmp_path / "h"
    empty_bundles_table(history)  # a history, as far as the path check sees
    positions = ballast(
        "pipeline",
        "split-plan",
        "--history",
        str(history),
        "--out",
        str(tmp_path / "o"),
        "--set",
        "defaultNamespaceBundleSplitAlgorithm=specified_positions_divide",
    )
    assert positions.returncode == 2
    assert "cannot plan automatic splits" in positions.stderr
    spec = ballast(
        "pipeline", "generate", "--out", str(tmp_path), "--bundles", "2", "--namespaces", "3"
    )
    assert spec.returncode == 2
    assert "bundles (2) must be >= namespaces (3)" in spec.stderr
    results = tmp_path / "results"  # a job's --out: its tables and a history's would mix
    (results / "split_plan").mkdir(parents=True)
    mixed = ballast("pipeline", "generate", "--out", str(results))
    assert mixed.returncode == 2 and "log4j" not in mixed.stderr  # before Spark starts
    assert "holds a job's results (split_plan), not a history: write the" in mixed.stderr
    missing = ballast("pipeline", "import", str(tmp_path / "nope"), "--history", str(tmp_path))
    assert missing.returncode == 2
    assert "nope does not exist" in missing.stderr
    conf = ballast("pipeline", "report", "--history", "h", "--out", "o", "--conf", "novalue")
    assert conf.returncode == 2
    assert '--conf "novalue" is not key=value' in conf.stderr
    master = ballast("pipeline", "split-plan", "--history", "h", "--out", "o", "--master", "x://y")
    assert master.returncode == 2
    assert '--master "x://y" is not a Spark master URL' in master.stderr
    for job in ("time-averages", "shed"):  # each pass reads the whole history: minutes each
        passes = ballast("pipeline", job, "--history", "h", "--out", "o", "--buckets", "1001")
        assert passes.returncode == 2
        assert "Invalid value for '--buckets'" in passes.stderr and "1000" in passes.stderr


def test_a_setting_spark_cannot_start_with_exits_2(ballast: Ballast, tmp_path: Path) -> None:
    """Spark's launcher prints why it stopped; the command then ends with a plain error."""
    history = tmp_path / "h"
    empty_bundles_table(history)  # passes the check made before Spark starts
    # (a size that is no size, or a bad count, is named before the JVM starts: test_session.py)
    memory = ballast(
        "pipeline", "report", "--history", str(history), "--out", str(tmp_path / "o"),
        "--conf", "spark.driver.memory=0",
    )  # fmt: skip
    assert memory.returncode == 2
    assert "Could not create the Java Virtual Machine" in memory.stderr
    assert "error: Spark did not start (master local[" in memory.stderr
    assert "internal error" not in memory.stderr
    # Spark logs the failure of a master it cannot reach, a line each, without the Java stacks
    # (364 lines for a Kubernetes master; BALLAST_DEBUG shows them)
    k8s = ballast(
        "pipeline", "report", "--history", str(history), "--out", str(tmp_path / "o"),
        "--master", "k8s://https://127.0.0.1:1",
    )  # fmt: skip
    assert k8s.returncode == 2
    assert k8s.stderr.rstrip().endswith(
        "error: Spark did not start (master k8s://https://127.0.0.1:1): "
        "java.net.ConnectException: Connection refused"
    )
    assert "ERROR SparkContext: Error initializing SparkContext" in k8s.stderr
    assert "\tat " not in k8s.stderr and "Caused by" not in k8s.stderr
    assert len(k8s.stderr.splitlines()) < 10
    # a bad SQL setting failed the first read, as an internal error naming no setting
    sql = ballast(
        "pipeline", "time-averages", "--history", str(history), "--out", str(tmp_path / "o"),
        "--conf", "spark.sql.adaptive.enabled=maybe",
    )  # fmt: skip
    assert sql.returncode == 2, sql.stderr
    assert (
        "error: Spark refused its SQL settings (--conf spark.sql.adaptive.enabled=maybe): "
        "[INVALID_CONF_VALUE.TYPE_MISMATCH] The value 'maybe'" in sql.stderr
    )  # the setting's own message, not "Error while instantiating ...:"
    assert "internal error" not in sql.stderr
    assert not (tmp_path / "o").exists()  # the failed runs left no empty --out behind


def test_a_job_on_a_missing_history_exits_2(ballast: Ballast, tmp_path: Path) -> None:
    """A mistyped --history is an error, not an empty result."""
    absent = tmp_path / "typo"
    plan = ballast("pipeline", "split-plan", "--history", str(absent), "--out", str(tmp_path))
    assert plan.returncode == 2
    assert f"error: no history at {absent}: the path does not exist" in plan.stderr
    assert "jdk.incubator" not in plan.stderr  # a local path is checked before Spark starts
    assert not (tmp_path / "split_plan").exists()
    # Where the default file system may not be local, Spark's own check says the same.
    hdfs_maybe = ballast(
        "pipeline", "report", "--history", str(absent), "--out", str(tmp_path),
        "--conf", "spark.hadoop.fs.defaultFS=file:///",
    )  # fmt: skip
    # (The JVM names the incubator module Spark adds when it starts.)
    assert hdfs_maybe.returncode == 2 and "jdk.incubator" in hdfs_maybe.stderr
    assert f"error: no history at {absent}: the path does not exist" in hdfs_maybe.stderr
    scheme = ballast("pipeline", "generate", "--out", "nofs://h", "--snapshots", "1")
    assert scheme.returncode == 2
    assert 'No FileSystem for scheme "nofs"' in scheme.stderr
    assert "Traceback" not in scheme.stderr and "\tat org.apache" not in scheme.stderr


def test_an_output_that_is_a_file_exits_2(ballast: Ballast, tmp_path: Path) -> None:
    """Outputs are directories: a file given for one is named, not met by a Java stack."""
    a_file = tmp_path / "notes.txt"
    a_file.write_text("kept")
    generated = ballast("pipeline", "generate", "--out", str(a_file), "--snapshots", "1")
    assert generated.returncode == 2
    assert f"error: {a_file} is a file, not a directory" in generated.stderr
    assert "internal error" not in generated.stderr and "\tat org.apache" not in generated.stderr
    example = Path(__file__).resolve().parents[2] / "examples" / "cluster-snapshot.json"
    imported = ballast("pipeline", "import", str(example), "--history", str(a_file))
    assert imported.returncode == 2
    assert f"error: --history {a_file} is a file, not a directory" in imported.stderr
    unwritable = ballast("pipeline", "import", str(example), "--history", str(a_file / "h"))
    assert unwritable.returncode == 2
    assert f"error: cannot write the history at {a_file / 'h'}: Not a directory" in (
        unwritable.stderr
    )
    assert a_file.read_text() == "kept"


def test_an_output_in_the_history_or_unwritable_exits_2_before_spark(
    ballast: Ballast, tmp_path: Path
) -> None:
    """An --out equal to --history once replaced an imported dump's stored averages with the
    job's own; an --out that cannot be written failed after the job, with a Java stack."""
    history = tmp_path / "h"
    (history / "bundle_averages").mkdir(parents=True)
    empty_bundles_table(history)
    kept = history / "bundle_averages" / "stored.parquet"
    kept.write_text("the dump's averages")
    for job in ("time-averages", "shed", "split-plan", "report"):
        same = ballast("pipeline", job, "--history", str(history), "--out", str(history))
        assert same.returncode == 2, (job, same.stderr)
        assert f"error: --out {history} is the history or inside it" in same.stderr
        assert "log4j" not in same.stderr  # refused before Spark starts
    assert kept.read_text() == "the dump's averages"
    # Another history as --out: its stored averages were replaced by the job's.
    other = tmp_path / "other"
    shutil.copytree(history, other)
    for job in ("time-averages", "shed"):
        refused = ballast("pipeline", job, "--history", str(history), "--out", str(other))
        assert refused.returncode == 2, (job, refused.stderr)
        assert f"error: --out {other} holds a history (bundles/)" in refused.stderr
        assert "log4j" not in refused.stderr  # refused before Spark starts
    assert (other / "bundle_averages" / "stored.parquet").read_text() == "the dump's averages"
    for out, said in (("", "--out is empty"), ("/proc/ballast-out", "cannot write to --out")):
        for args in (("time-averages", "--history", str(history)), ("generate",)):
            refused = ballast("pipeline", *args, "--out", out)
            assert refused.returncode == 2 and f"error: {said}" in refused.stderr, args
            assert "internal error" not in refused.stderr and "log4j" not in refused.stderr
    empty = ballast("pipeline", "split-plan", "--history", "", "--out", str(tmp_path / "o"))
    assert empty.returncode == 2 and "error: --history is empty" in empty.stderr
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    filed = ballast("pipeline", "report", "--history", str(a_file), "--out", str(tmp_path / "r"))
    assert filed.returncode == 2
    assert f"no history at {a_file}: the path is a file, not a history directory" in filed.stderr
    example = Path(__file__).resolve().parents[2] / "examples" / "cluster-snapshot.json"
    unnamed = ballast("pipeline", "import", str(example), "--history", str(tmp_path / "i"),
                      "--cluster", " ")  # fmt: skip
    assert unnamed.returncode == 2 and "--cluster is empty" in unnamed.stderr
    seconds = ballast("pipeline", "generate", "--out", str(tmp_path / "g"), "--interval-s", "-60")
    assert seconds.returncode == 2
    assert "--interval-s must be at least 1 (seconds), not -60" in seconds.stderr


def test_generate_never_writes_over_a_history(ballast: Ballast, history: Path) -> None:
    """A history given to generate by mistake (a leader's, say) is kept unless --replace."""
    before = {p: p.stat().st_mtime_ns for p in history.rglob("*") if p.is_file()}
    again = ballast("pipeline", "generate", "--out", str(history), *GENERATE)
    assert again.returncode == 2
    assert "already holds a history (brokers/, bundles/, topics/)" in again.stderr
    assert "--replace" in again.stderr
    assert "log4j" not in again.stderr  # a local --out is checked before a JVM starts
    assert {p: p.stat().st_mtime_ns for p in history.rglob("*") if p.is_file()} == before


@pytest.mark.spark
def test_a_history_file_not_of_its_table_is_named(
    ballast: Ballast, history: Path, tmp_path: Path
) -> None:
    """A corrupt file gave a Java stack and "internal error"; a file lacking a column read as
    nulls in it: wrong averages, exit 0."""
    copy = tmp_path / "history"
    shutil.copytree(history, copy)
    hour = next((copy / "bundles").glob("date=*/hour=*"))
    stray = hour / "zz-stray.parquet"
    stray.write_bytes(b"not parquet at all")
    done = ballast(
        "pipeline", "time-averages", "--history", str(copy), "--out", str(tmp_path / "o")
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"error: {stray} is not a readable Parquet file" in done.stderr
    assert "Traceback" not in done.stderr and "\tat org.apache" not in done.stderr
    assert not (tmp_path / "o" / "bundle_averages").exists()


@pytest.mark.spark
def test_a_file_whose_pages_are_corrupt_is_named(
    ballast: Ballast, history: Path, tmp_path: Path
) -> None:
    """Its footer passes the check, so Spark reads it and fails: the line named no file
    ("don't know what type: 14"), and PySpark's warning printed the task's traceback."""
    copy = tmp_path / "history"
    shutil.copytree(history, copy)
    broken = sorted((copy / "bundles").rglob("*.parquet"))[0]
    data = bytearray(broken.read_bytes())
    data[8 : len(data) // 2] = b"\xee" * (len(data) // 2 - 8)  # the pages, not the footer
    broken.write_bytes(bytes(data))
    for job in ("time-averages", "report"):  # Spark's own read, and the tasks' pyarrow read
        failed = ballast("pipeline", job, "--history", str(copy), "--out", str(tmp_path / job))
        assert failed.returncode == 1, failed.stderr[-2000:]
        assert "error: Spark failed the job: " in failed.stderr
        assert str(broken) in failed.stderr, failed.stderr[-2000:]
        assert "Traceback" not in failed.stderr and "UserWarning" not in failed.stderr


@pytest.mark.spark
def test_a_sample_that_is_not_a_number_stops_shed_with_exit_2(
    ballast: Ballast, history: Path, tmp_path: Path
) -> None:
    """No Parquet statistics count a NaN, so the file check passes it; the decision step
    refused it with "internal error: ModelError"."""
    copy = tmp_path / "history"
    shutil.copytree(history, copy)
    newest = sorted((copy / "bundles").rglob("*.parquet"))[-1]
    rows = pq.read_table(newest)
    rates = rows.column("msg_rate_in").to_pylist()
    rates[-1] = math.nan
    index = rows.schema.get_field_index("msg_rate_in")
    pq.write_table(rows.set_column(index, "msg_rate_in", pa.array(rates)), newest)
    failed = ballast("pipeline", "shed", "--history", str(copy), "--out", str(tmp_path / "o"))
    assert failed.returncode == 2, failed.stderr[-2000:]
    assert "error: the latest snapshot of cluster synthetic holds a value the model refuses: $" in (
        failed.stderr
    )
    assert "internal error" not in failed.stderr
    assert not (tmp_path / "o" / "shed_decisions").exists()
