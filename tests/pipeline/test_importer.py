"""Importing a Pulsar /loadbalance dump into history rows (no Spark)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ballast.model.loaddata import LocalBrokerData, NamespaceBundleStats, SystemResourceUsage
from ballast.pipeline.history import HistoryError
from ballast.pipeline.importer import ImportOptions, import_pulsar_dump, importer

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
    [broker_average] = snapshot.broker_averages
    assert broker_average.broker == "10.244.2.23:8080"
    assert broker_average.num_bundles == 1
    assert broker_average.long_msg_rate_in == 0.06665547501955964
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
    (tmp_path / "bundle-data").mkdir()
    with pytest.raises(HistoryError, match="no broker reports"):
        import_pulsar_dump(tmp_path, ImportOptions("c"))
    assert import_pulsar_dump(tmp_path, ImportOptions("c", 7)).brokers == ()
    with pytest.raises(HistoryError, match="not a directory"):
        import_pulsar_dump(tmp_path / "missing", ImportOptions("c", 7))
    with pytest.raises(HistoryError, match="pulsar-dump"):
        importer("decide-snapshot")
