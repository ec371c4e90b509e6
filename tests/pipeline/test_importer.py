"""Importing a Pulsar /loadbalance dump or a `ballast decide` snapshot into history rows (no
Spark)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ballast.balance.snapshot_json import parse_snapshot
from ballast.model.loaddata import LocalBrokerData, NamespaceBundleStats, SystemResourceUsage
from ballast.pipeline.history import HistoryError, HistorySnapshot, held_for_writing, read_table
from ballast.pipeline.importer import (
    ImportOptions,
    detect_format,
    import_pulsar_dump,
    importer,
    read_decide_snapshot,
)
from ballast.pipeline.schema import BROKERS

Run = Callable[..., subprocess.CompletedProcess[str]]

DATA = Path(__file__).resolve().parents[1] / "model" / "data"
PULSAR_REPORT_MS = 1650886425227
LATER_MS = PULSAR_REPORT_MS + 30_000


def make_dump(root: Path) -> Path:
    """A dump as copied from ZooKeeper: one node per file under loadbalance/."""
    base = root / "loadbalance"
    (base / "brokers").mkdir(parents=True)
    shutil.copy(DATA / "pulsar_local_broker_data.json", base / "brokers" / "10.244.2.23:8080")
    stats = NamespaceBundleStats(msg_rate_in=12.5, topics=4, consumer_count=3)
    second = (
        LocalBrokerData()
        .updated(SystemResourceUsage(), {"public/default/0x40000000_0x80000000": stats})
        .with_last_update(LATER_MS)
    )
    (base / "brokers" / "10.0.0.9:8080").write_bytes(second.to_json())
    (base / "broker-time-average").mkdir()
    shutil.copy(
        DATA / "seed002_time_average_broker_data.json",
        base / "broker-time-average" / "10.244.2.23:8080",
    )
    bundle_dir = base / "bundle-data" / "public" / "default"
    bundle_dir.mkdir(parents=True)
    shutil.copy(DATA / "seed002_bundle_data.json", bundle_dir / "0x40000000_0x80000000")
    (base / "leader").write_text('{"serviceUrl": "http://10.0.0.9:8080"}')
    return root


def test_import_dump(tmp_path: Path) -> None:
    snapshot = import_pulsar_dump(make_dump(tmp_path), ImportOptions(cluster="prod"))
    assert snapshot.snapshot_ms == LATER_MS  # the newest report
    assert snapshot.cluster == "prod"
    assert [b.broker for b in snapshot.brokers] == ["10.0.0.9:8080", "10.244.2.23:8080"]
    pulsar = snapshot.brokers[1]
    assert (pulsar.cpu_usage, pulsar.memory_limit, pulsar.last_update_ms) == (
        3.15,
        1228.0,
        PULSAR_REPORT_MS,
    )
    assert [(b.broker, b.bundle, b.namespace, b.topics) for b in snapshot.bundles] == [
        ("10.0.0.9:8080", "public/default/0x40000000_0x80000000", "public/default", 4),
        # Pulsar wrote the key with upper-case hex; history names are canonical.
        (
            "10.244.2.23:8080",
            "pulsar/pulsar/10.244.2.23:8080/0x00000000_0xffffffff",
            "pulsar/pulsar/10.244.2.23:8080",
            1,
        ),
    ]
    assert snapshot.bundles[0].msg_rate_in == 12.5
    [average] = snapshot.bundle_averages
    assert average.bundle == "public/default/0x40000000_0x80000000"
    assert (average.short_num_samples, average.long_max_samples) == (6, 1000)
    assert average.long_msg_rate_out == 0.15913789125963138
    computed, broker_average = snapshot.broker_averages
    assert broker_average.broker == "10.244.2.23:8080"  # stored by the leader
    assert broker_average.num_bundles == 1
    assert broker_average.long_msg_rate_in == 0.06665547501955964
    # 10.0.0.9 has no stored averages: its bundles' data summed, as the leader does (and as
    # a decide snapshot without timeAverages is read); it used to get no row
    assert computed.broker == "10.0.0.9:8080"
    assert computed.long_msg_rate_out == average.long_msg_rate_out
    assert computed.short_msg_rate_in == average.short_msg_rate_in
    assert snapshot.topics == ()


def test_snapshot_time_can_be_given(tmp_path: Path) -> None:
    dump = make_dump(tmp_path)
    snapshot = importer("pulsar-dump")(dump / "loadbalance", ImportOptions("c", 42))
    assert snapshot.snapshot_ms == 42


def test_errors_name_the_file(tmp_path: Path) -> None:
    dump = make_dump(tmp_path)
    broken = dump / "loadbalance" / "brokers" / "10.0.0.9:8080"
    broken.write_text('{"cpu": {"usage": "high"}}')
    with pytest.raises(HistoryError, match=r"10\.0\.0\.9:8080.*cpu"):
        import_pulsar_dump(dump, ImportOptions("c"))
    broken.unlink()
    (dump / "loadbalance" / "bundle-data" / "public" / "default" / "nonsense").write_text("{}")
    with pytest.raises(HistoryError, match="not a bundle path"):
        import_pulsar_dump(dump, ImportOptions("c"))


def test_a_dump_without_reports_needs_a_time(tmp_path: Path) -> None:
    bundle_dir = tmp_path / "bundle-data" / "public" / "default"
    bundle_dir.mkdir(parents=True)
    shutil.copy(DATA / "seed002_bundle_data.json", bundle_dir / "0x40000000_0x80000000")
    with pytest.raises(HistoryError, match=r"no broker reports .* give it \(--at\)"):
        import_pulsar_dump(tmp_path, ImportOptions("c"))
    imported = import_pulsar_dump(tmp_path, ImportOptions("c", 7))
    assert imported.brokers == () and len(imported.bundle_averages) == 1
    with pytest.raises(HistoryError, match="not a directory"):
        import_pulsar_dump(tmp_path / "missing", ImportOptions("c", 7))
    with pytest.raises(HistoryError, match="pulsar-dump"):
        importer("nope")


def test_a_history_given_as_a_dump_is_named_as_such(tmp_path: Path) -> None:
    """Its Parquet files were read as broker reports: "not valid JSON"."""
    partition = tmp_path / "brokers" / "date=2026-11-24" / "hour=17"
    partition.mkdir(parents=True)
    (partition / "snapshot-c-1.parquet").write_bytes(b"PAR1")
    with pytest.raises(HistoryError, match=r"is a history \(Parquet tables\), not a dump"):
        import_pulsar_dump(tmp_path, ImportOptions("c"))
    # A history of bundle rows alone is one too (it read as a dump without load data).
    bundles_only = tmp_path / "bundles-only" / "bundles" / "date=2026-11-24" / "hour=17"
    bundles_only.mkdir(parents=True)
    (bundles_only / "snapshot-c-1.parquet").write_bytes(b"PAR1")
    with pytest.raises(HistoryError, match=r"is a history \(Parquet tables\), not a dump"):
        import_pulsar_dump(tmp_path / "bundles-only", ImportOptions("c"))


def test_a_dump_with_no_load_data_is_refused_even_with_a_time(tmp_path: Path) -> None:
    # Most likely the wrong directory: importing it would add a snapshot of nothing.
    (tmp_path / "bundle-data").mkdir()
    (tmp_path / "leader").write_text("{}")
    with pytest.raises(HistoryError, match=r"holds no load data .*nothing to import"):
        import_pulsar_dump(tmp_path, ImportOptions("c", 7))


# -- ballast decide snapshots -----------------------------------------------------------------

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cluster-snapshot.json"


def test_a_decide_snapshot_is_detected_and_read_as_decide_reads_it(tmp_path: Path) -> None:
    assert detect_format(EXAMPLE) == "decide-snapshot"
    assert detect_format(tmp_path) == "pulsar-dump"
    parsed = parse_snapshot(EXAMPLE.read_bytes()).snapshot
    snapshot, warnings = read_decide_snapshot(EXAMPLE, ImportOptions("c"))
    assert snapshot.snapshot_ms == max(d.local_data.last_update for d in parsed.brokers.values())
    assert [r.broker for r in snapshot.brokers] == sorted(parsed.brokers)
    expected_bundles = sorted(
        (broker, bundle)
        for broker, d in parsed.brokers.items()
        for bundle in d.local_data.last_stats
    )
    assert [(r.broker, r.bundle) for r in snapshot.bundles] == expected_bundles
    assert {r.bundle for r in snapshot.bundle_averages} == set(parsed.bundles)
    for row in snapshot.broker_averages:
        average = parsed.brokers[row.broker].time_average_data
        assert row.long_msg_rate_in == average.long_term_msg_rate_in
    assert "state is not kept in a history; left out" in warnings
    assert importer("decide-snapshot")(EXAMPLE, ImportOptions("c", 5)).snapshot_ms == 5


def test_bundles_listed_without_stats_are_written_idle_with_a_warning() -> None:
    # Pulsar's shedder tests list each broker's bundles but report no stats for them.
    source = EXAMPLE.parents[1] / "tests" / "balance" / "data" / "os-multiple-bundles.snapshot.json"
    parsed = parse_snapshot(source.read_bytes()).snapshot
    listed = sum(len(d.local_data.bundles) for d in parsed.brokers.values())
    reported = sum(len(d.local_data.last_stats) for d in parsed.brokers.values())
    assert listed > reported
    snapshot, warnings = read_decide_snapshot(source, ImportOptions("c"))
    assert len(snapshot.bundles) == listed
    idle = [r for r in snapshot.bundles if r.msg_throughput_in == 0 and r.msg_rate_in == 0]
    assert len(idle) == listed - reported
    assert f"{listed - reported} bundles listed without lastStats are written with zero load" in (
        " ".join(warnings)
    )


def test_decide_snapshot_errors_name_the_json_path(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"brokers": {"b1": {"cpu": {"usage": "high"}}}}')
    with pytest.raises(HistoryError, match=r"bad\.json: malformed snapshot.*\$\.brokers"):
        read_decide_snapshot(bad, ImportOptions("c"))
    other = tmp_path / "other.json"
    other.write_text("[1, 2]")
    with pytest.raises(HistoryError, match="neither a ballast decide snapshot"):
        detect_format(other)
    with pytest.raises(HistoryError, match="does not exist"):
        detect_format(tmp_path / "missing.json")


def test_import_command_takes_a_decide_snapshot(ballast: Run, tmp_path: Path) -> None:
    result = ballast(
        "pipeline", "import", str(EXAMPLE), "--history", str(tmp_path), "--cluster", "demo"
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["format"], summary["brokers"], summary["bundles"]) == ("decide-snapshot", 3, 7)
    assert "namespaces is not kept" in result.stderr
    rows = read_table(tmp_path, BROKERS, cluster="demo")
    assert rows.num_rows == 3
    # The same cluster at the same time again: the snapshot there (a leader's, say) was
    # replaced whole, its tables the import has no rows for deleted, with exit 0.
    again = ballast(
        "pipeline", "import", str(EXAMPLE), "--history", str(tmp_path), "--cluster", "demo"
    )
    assert again.returncode == 2
    assert f"holds a snapshot of cluster demo at {summary['snapshotMs']} already" in again.stderr
    assert "(broker_averages/, brokers/, bundle_averages/, bundles/)" in again.stderr
    replaced = ballast(
        "pipeline", "import", str(EXAMPLE), "--history", str(tmp_path), "--cluster", "demo",
        "--replace",
    )  # fmt: skip
    assert replaced.returncode == 0, replaced.stderr
    assert read_table(tmp_path, BROKERS, cluster="demo").num_rows == 3


def test_an_import_into_a_history_being_generated_is_refused(ballast: Run, tmp_path: Path) -> None:
    """``generate`` moves its tables into place whole when it ends: what an import wrote in
    the meantime was dropped, after the import had said it succeeded."""
    history = tmp_path / "h"
    with held_for_writing(history):  # as a running generate holds it
        refused = ballast("pipeline", "import", str(EXAMPLE), "--history", str(history))
        with (
            pytest.raises(HistoryError, match="being written by another process"),
            held_for_writing(history),
        ):
            pass
    assert refused.returncode == 2
    assert f"error: {history} is being written by another process" in refused.stderr
    assert list(history.iterdir()) == []
    taken = ballast("pipeline", "import", str(EXAMPLE), "--history", str(history))
    assert taken.returncode == 0, taken.stderr  # released


def test_a_metadata_dump_imports_as_its_snapshot(ballast: Run, tmp_path: Path) -> None:
    source = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    records = {f"/loadbalance/brokers/{b}": {"json": r} for b, r in source["brokers"].items()}
    records["/loadbalance/leader"] = {"json": {"serviceUrl": "http://10.0.0.1:8080"}}
    dump = tmp_path / "loadbalance.json"
    dump.write_text(json.dumps({"root": "/loadbalance", "records": records}), encoding="utf-8")
    assert detect_format(dump) == "metadata-dump"
    result = ballast("pipeline", "import", str(dump), "--history", str(tmp_path / "h"))
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["format"], summary["brokers"], summary["bundles"]) == ("metadata-dump", 3, 7)
    # A format given that is not the source's is refused (the summary named the one given).
    wrong = ballast("pipeline", "import", str(dump), "--history", str(tmp_path / "w"),
                    "--format", "decide-snapshot")  # fmt: skip
    assert wrong.returncode == 2
    assert f"error: {dump} is a metadata-dump, not a decide-snapshot (--format)" in wrong.stderr
    assert not (tmp_path / "w").exists()
    named = ballast("pipeline", "import", str(dump), "--history", str(tmp_path / "w"),
                    "--format", "metadata-dump")  # fmt: skip
    assert named.returncode == 0 and json.loads(named.stdout)["format"] == "metadata-dump"


def test_import_refuses_what_it_cannot_write_well(ballast: Run, tmp_path: Path) -> None:
    """Each of these was written (into a table of another history, into the current
    directory) or ended in an internal error."""
    history = tmp_path / "h"
    assert ballast("pipeline", "import", str(EXAMPLE), "--history", str(history)).returncode == 0
    for args, said in (
        (("--history", str(history / "bundles")), f"is inside the history at {history}"),
        (("--history", " "), "--history is empty"),
        (("--history", str(tmp_path / "a"), "--at", "9" * 20), "is outside 1970-01-01 to 9999"),
        (("--history", str(tmp_path / "a"), "--at", "253402300800000"), "is outside 1970"),
        (("--history", str(tmp_path / "a"), "--at", "-1"), '"-1" is outside 1970'),
        # a name no broker's clusterName could be, which would name the files
        (("--history", str(tmp_path / "a"), "--cluster", "a/b"), 'cluster "a/b" has characters'),
    ):
        refused = ballast("pipeline", "import", str(EXAMPLE), *args)
        assert refused.returncode == 2 and said in refused.stderr, args
    assert not (tmp_path / "a").exists() and not (history / "bundles" / "brokers").exists()
    generated = ballast("pipeline", "generate", "--out", str(tmp_path / "g"), "--cluster", "..")
    assert generated.returncode == 2 and 'cluster ".."' in generated.stderr
    assert not (tmp_path / "g").exists()
    cut = tmp_path / "cut.json"
    cut.write_text('{"brokers": {', encoding="utf-8")
    truncated = ballast("pipeline", "import", str(cut), "--history", str(tmp_path / "b"))
    assert truncated.returncode == 2
    assert "not valid JSON (Input data was truncated)" in truncated.stderr


def test_reports_without_a_last_update_need_a_time(tmp_path: Path) -> None:
    """Such a snapshot was written at time 0, in a 1970-01-01 partition."""
    snapshot = tmp_path / "s.json"
    snapshot.write_text('{"brokers": {"b1": {}}}', encoding="utf-8")
    with pytest.raises(HistoryError, match=r"no broker report has a lastUpdate .* \(--at\)"):
        read_decide_snapshot(snapshot, ImportOptions("c"))
    taken, _ = read_decide_snapshot(snapshot, ImportOptions("c", 7))
    assert taken.snapshot_ms == 7


@pytest.mark.parametrize("last_update", [253_402_300_800_000, 999_999_999_999_999_999])
def test_a_last_update_past_9999_needs_a_time(tmp_path: Path, last_update: int) -> None:
    """No date= partition names such a time: the import stopped with an OverflowError."""
    snapshot = tmp_path / "s.json"
    snapshot.write_text(f'{{"brokers": {{"b1": {{"lastUpdate": {last_update}}}}}}}', "utf-8")
    with pytest.raises(HistoryError, match=rf"lastUpdate .*, {last_update}, is after 9999"):
        read_decide_snapshot(snapshot, ImportOptions("c"))
    with pytest.raises(HistoryError, match="is after 9999-12-31"):
        HistorySnapshot(snapshot_ms=last_update, cluster="c")
    taken, _ = read_decide_snapshot(snapshot, ImportOptions("c", 7))
    assert taken.snapshot_ms == 7
