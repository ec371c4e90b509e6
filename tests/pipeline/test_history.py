"""History records and the pyarrow writer/reader (no Spark)."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from ballast.model.loaddata import (
    BrokerData,
    BundleData,
    LoadData,
    LocalBrokerData,
    NamespaceBundleStats,
    ResourceUsage,
    SystemResourceUsage,
    TimeAverageBrokerData,
)
from ballast.pipeline import history
from ballast.pipeline.history import (
    ROW_TYPES,
    HistoryError,
    HistorySnapshot,
    TopicRow,
    partition_of,
    read_table,
    snapshot_from_load_data,
    write_snapshot,
)
from ballast.pipeline.schema import BROKER_AVERAGES, BROKERS, BUNDLE_AVERAGES, BUNDLES, TOPICS

SNAPSHOT_MS = 1_767_600_000_000  # 2026-01-05T08:00:00Z


def load_data() -> LoadData:
    stats = NamespaceBundleStats(
        msg_rate_in=10.0, msg_rate_out=20.0, msg_throughput_in=1e3, topics=3, producer_count=2
    )
    usage = SystemResourceUsage(
        cpu=ResourceUsage(usage=40.0, limit=100.0),
        bandwidth_in=ResourceUsage(usage=5.0, limit=1000.0),
    )
    report = (
        LocalBrokerData()
        .updated(usage, {"t/n/0x80000000_0xffffffff": stats, "t/n/0x00000000_0x80000000": stats})
        .with_last_update(SNAPSHOT_MS - 500)
    )
    return LoadData(
        broker_data={
            "10.0.0.2:8080": BrokerData(local_data=report),
            "10.0.0.1:8080": BrokerData(
                local_data=LocalBrokerData(),
                time_average_data=TimeAverageBrokerData(long_term_msg_rate_in=7.5),
            ),
        },
        bundle_data={"t/n/0x00000000_0x80000000": BundleData.new_default().updated(stats)},
    )


def test_records_match_table_columns() -> None:
    for name, row_type in ROW_TYPES.items():
        table = {t.name: t for t in (BROKERS, BUNDLES, TOPICS, BUNDLE_AVERAGES, BROKER_AVERAGES)}[
            name
        ]
        assert ("snapshot_ms", "cluster", *(f.name for f in fields(row_type))) == tuple(
            c for c in table.column_names
        ), name


def test_snapshot_from_load_data() -> None:
    snapshot = snapshot_from_load_data(load_data(), snapshot_ms=SNAPSHOT_MS, cluster="c1")
    assert [b.broker for b in snapshot.brokers] == ["10.0.0.1:8080", "10.0.0.2:8080"]
    busy = snapshot.brokers[1]
    assert (busy.cpu_usage, busy.cpu_limit, busy.bandwidth_in_usage) == (40.0, 100.0, 5.0)
    assert (busy.msg_rate_in, busy.num_bundles, busy.num_topics) == (20.0, 2, 6)
    assert busy.last_update_ms == SNAPSHOT_MS - 500
    assert [(b.broker, b.bundle, b.namespace) for b in snapshot.bundles] == [
        ("10.0.0.2:8080", "t/n/0x00000000_0x80000000", "t/n"),
        ("10.0.0.2:8080", "t/n/0x80000000_0xffffffff", "t/n"),
    ]
    assert snapshot.bundles[0].producer_count == 2
    [average] = snapshot.bundle_averages
    assert (average.short_num_samples, average.long_max_samples) == (1, 1000)
    assert average.long_msg_rate_out == 20.0
    assert [(a.broker, a.num_bundles, a.long_msg_rate_in) for a in snapshot.broker_averages] == [
        ("10.0.0.1:8080", 0, 7.5),
        ("10.0.0.2:8080", 2, 0.0),
    ]
    bare = snapshot_from_load_data(
        load_data(), snapshot_ms=SNAPSHOT_MS, cluster="c1", include_averages=False
    )
    assert bare.bundle_averages == () and bare.broker_averages == ()


def test_partition_is_utc_date_and_hour() -> None:
    assert partition_of(SNAPSHOT_MS) == ("2026-01-05", 8)
    assert partition_of(0) == ("1970-01-01", 0)
    assert partition_of(SNAPSHOT_MS - 1) == ("2026-01-05", 7)


def test_write_then_read_round_trip(tmp_path: Path) -> None:
    snapshot = snapshot_from_load_data(load_data(), snapshot_ms=SNAPSHOT_MS, cluster="c/1")
    topic = TopicRow(
        "10.0.0.2:8080",
        "t/n/0x00000000_0x80000000",
        "t/n",
        "persistent://t/n/x",
        1.0,
        2.0,
        3.0,
        4.0,
        1,
        2,
    )
    with_topics = HistorySnapshot(
        snapshot_ms=snapshot.snapshot_ms,
        cluster=snapshot.cluster,
        brokers=snapshot.brokers,
        bundles=snapshot.bundles,
        topics=(topic,),
    )
    files = write_snapshot(tmp_path, with_topics)
    assert sorted(f.relative_to(tmp_path).as_posix() for f in files) == [
        f"{t}/date=2026-01-05/hour=8/snapshot-c%2F1-{SNAPSHOT_MS}.parquet"
        for t in ("brokers", "bundles", "topics")
    ]
    assert not list(tmp_path.rglob(".*"))  # no temporary files left behind
    brokers = read_table(tmp_path, BROKERS).to_pylist()
    assert [r["broker"] for r in brokers] == ["10.0.0.1:8080", "10.0.0.2:8080"]
    assert brokers[1]["cpu_usage"] == 40.0
    assert {r["cluster"] for r in brokers} == {"c/1"}
    assert {(r["date"], r["hour"]) for r in brokers} == {("2026-01-05", 8)}
    [topic_read] = read_table(tmp_path, TOPICS).to_pylist()
    assert topic_read["topic"] == "persistent://t/n/x" and topic_read["consumer_count"] == 2
    assert read_table(tmp_path, BUNDLE_AVERAGES).num_rows == 0  # absent table


def test_rewriting_a_snapshot_replaces_it(tmp_path: Path) -> None:
    first = snapshot_from_load_data(load_data(), snapshot_ms=SNAPSHOT_MS, cluster="c")
    write_snapshot(tmp_path, first)
    write_snapshot(tmp_path, first)
    later = snapshot_from_load_data(load_data(), snapshot_ms=SNAPSHOT_MS + 60_000, cluster="c")
    write_snapshot(tmp_path, later)
    other = snapshot_from_load_data(load_data(), snapshot_ms=SNAPSHOT_MS, cluster="d")
    write_snapshot(tmp_path, other)
    assert read_table(tmp_path, BUNDLES).num_rows == 6
    only_c = read_table(tmp_path, BUNDLES, cluster="c", since_ms=SNAPSHOT_MS + 1)
    assert only_c.column("snapshot_ms").to_pylist() == [SNAPSHOT_MS + 60_000] * 2
    # The same snapshot again with no brokers or bundles (a dump holding only bundle-data/):
    # it replaces the snapshot whole, so the rows it lacks are gone too.
    write_snapshot(tmp_path, HistorySnapshot(snapshot_ms=SNAPSHOT_MS, cluster="c"))
    assert (
        read_table(tmp_path, BUNDLES, cluster="c").column("snapshot_ms").to_pylist()
        == [SNAPSHOT_MS + 60_000] * 2
    )
    assert read_table(tmp_path, BUNDLES, cluster="d").num_rows == 2  # another cluster's stays


def test_a_snapshot_written_halfway_is_not_the_latest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The jobs take a cluster's latest snapshot from its brokers rows, so a write stopped
    midway (here: its bundles file fails) must leave none, never brokers rows whose bundle
    rows are missing; rewriting a snapshot withdraws its old brokers rows first."""
    first = snapshot_from_load_data(load_data(), snapshot_ms=SNAPSHOT_MS, cluster="c")
    later = snapshot_from_load_data(load_data(), snapshot_ms=SNAPSHOT_MS + 60_000, cluster="c")
    write_snapshot(tmp_path, first)
    write_table = history.pq.write_table

    def failing_for_bundles(data: object, where: object, **options: object) -> None:
        if "bundles" in Path(str(where)).parts:
            raise OSError(28, "No space left on device")
        write_table(data, where, **options)

    def latest_brokers() -> set[int]:
        return set(read_table(tmp_path, BROKERS).column("snapshot_ms").to_pylist())

    with monkeypatch.context() as patched:
        patched.setattr(history.pq, "write_table", failing_for_bundles)
        with pytest.raises(OSError, match="No space"):
            write_snapshot(tmp_path, later)
    assert latest_brokers() == {SNAPSHOT_MS}
    write_snapshot(tmp_path, later)
    assert latest_brokers() == {SNAPSHOT_MS, SNAPSHOT_MS + 60_000}
    with monkeypatch.context() as patched:  # the same snapshot again, stopped midway
        patched.setattr(history.pq, "write_table", failing_for_bundles)
        with pytest.raises(OSError, match="No space"):
            write_snapshot(tmp_path, later)
    assert latest_brokers() == {SNAPSHOT_MS}
    assert not list(tmp_path.rglob(".*"))  # no temporary files left behind


def test_bad_rows_and_times_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match="before 1970"):
        HistorySnapshot(snapshot_ms=-1, cluster="c")
    with pytest.raises(HistoryError, match="cluster"):
        HistorySnapshot(snapshot_ms=1, cluster="")
    bad = TopicRow("b", "t/n/0x0_0x1", "t/n", "x", "fast", 0.0, 0.0, 0.0, 0, 0)  # type: ignore[arg-type]
    with pytest.raises(HistoryError, match="topics rows do not fit"):
        write_snapshot(tmp_path, HistorySnapshot(snapshot_ms=1, cluster="c", topics=(bad,)))
