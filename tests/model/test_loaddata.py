"""The load-data model against Pulsar's JSON, arithmetic and update rules."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ballast.model.codec import ModelError, decode, encode
from ballast.model.loaddata import (
    DEFAULT_BUNDLE_STATS,
    AdvertisedListener,
    BrokerData,
    BundleData,
    LoadData,
    LocalBrokerData,
    NamespaceBundleStats,
    ResourceUsage,
    ResourceWeights,
    SystemResourceUsage,
    TimeAverageBrokerData,
    TimeAverageMessageData,
    largest_change,
    need_broker_data_update,
    percent_change,
    total_of,
)

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize(
    ("usage", "limit", "percent"),
    [
        (999, 1000, 99.9000015258789),
        (30, 100, 30.000001907348633),
        (10, 100, 10.0),
        (5, 0, 0.0),
        (-1, -1, 0.0),
        (614, 1228, 50.0),
    ],
)
def test_percent_usage_is_float32_as_in_java(usage: float, limit: float, percent: float) -> None:
    assert ResourceUsage(usage=usage, limit=limit).percent_usage() == percent


def test_max_resource_usage_skips_heap_memory() -> None:
    data = LocalBrokerData(
        cpu=ResourceUsage(usage=1, limit=100),
        memory=ResourceUsage(usage=800, limit=200),
        direct_memory=ResourceUsage(usage=2, limit=100),
        bandwidth_in=ResourceUsage(usage=3, limit=100),
        bandwidth_out=ResourceUsage(usage=4, limit=100),
    )
    assert data.max_resource_usage() == pytest.approx(0.04, abs=1e-5)
    half = ResourceWeights(0.5, 0.5, 0.5, 0.5, 0.5)
    # The weighted form counts heap memory with its weight: 400% * 0.5.
    assert data.max_resource_usage_with_weight(half) == pytest.approx(2.0)
    assert data.max_resource_usage_with_weight(ResourceWeights()) == pytest.approx(0.04, abs=1e-6)


def test_seed_002_samples_round_trip() -> None:
    for name, type_ in (
        ("seed002_local_broker_data.json", LocalBrokerData),
        ("seed002_time_average_broker_data.json", TimeAverageBrokerData),
        ("seed002_bundle_data.json", BundleData),
    ):
        raw = (DATA / name).read_bytes()
        value = LocalBrokerData.from_json(raw) if type_ is LocalBrokerData else decode(raw, type_)
        written = value.to_json()  # type: ignore[attr-defined]
        again = type_.from_json(written)  # type: ignore[attr-defined]
        assert again == value
        # Every key of the sample that the model knows comes back with the same value.
        original = json.loads(raw)
        rewritten = json.loads(written)
        for key, sample_value in original.items():
            if key in rewritten:
                assert rewritten[key] == sample_value, (name, key)


def test_seed_002_values_are_read() -> None:
    bundle = BundleData.from_json((DATA / "seed002_bundle_data.json").read_bytes())
    assert bundle.short_term_data.max_samples == 10
    assert bundle.long_term_data.num_samples == 6
    assert bundle.long_term_data.msg_rate_out == 0.15913789125963138
    averages = TimeAverageBrokerData.from_json(
        (DATA / "seed002_time_average_broker_data.json").read_bytes()
    )
    assert averages.long_term_msg_rate_in == 0.06665547501955964


def test_pulsar_report_reads_normalises_and_writes_derived_fields() -> None:
    data = LocalBrokerData.from_json((DATA / "pulsar_local_broker_data.json").read_bytes())
    key = "pulsar/pulsar/10.244.2.23:8080/0x00000000_0xffffffff"
    assert list(data.last_stats) == [key]  # upper-case hex normalised
    assert data.bundles == frozenset({key})
    assert not data.non_persistent_topics_enabled
    assert data.memory.percent_usage() == 50.0
    written = json.loads(data.to_json())
    assert written["bundleStats"] == written["lastStats"]
    assert written["loadReportType"] == "LocalBrokerData"
    assert written["maxResourceUsage"] == data.max_resource_usage()
    assert "someFutureField" not in written


@pytest.mark.parametrize(
    ("patch", "path", "message"),
    [
        ({"msgRateIn": -1.0}, "$.msgRateIn", ">= 0"),
        ({"cpu": {"usage": "high"}}, "$.cpu.usage", "Expected `float`"),
        ({"numTopics": 1.5}, "$.numTopics", "Expected `int`"),
        (
            {"lastStats": {"t/ns/0x00000000_0xffffffff": {}, "a/b/0x0_0x1": {"msgRateOut": -3}}},
            '$.lastStats["a/b/0x0_0x1"].msgRateOut',
            ">= 0",
        ),
        ({"lastStats": {"not-a-bundle": {}}}, '$.lastStats["not-a-bundle"]', "is not <namespace>"),
        # an array member: the array is named, and the value in the message
        ({"bundles": ["t/ns/0x5_0x1"]}, "$.bundles", 'bundle "t/ns/0x5_0x1": range'),
    ],
)
def test_bad_reports_name_the_path(patch: dict[str, object], path: str, message: str) -> None:
    body = json.loads((DATA / "pulsar_local_broker_data.json").read_text())
    body.update(patch)
    with pytest.raises(ModelError) as caught:
        LocalBrokerData.from_json(json.dumps(body), root="$")
    assert caught.value.path == path
    assert message in str(caught.value) or message in caught.value.message


def test_nested_map_error_names_both_keys() -> None:
    raw = {"brokerData": {"b1": {"preallocatedBundleData": {"t/n/0x0_0x1": {"topics": -1}}}}}
    with pytest.raises(ModelError) as caught:
        decode(json.dumps(raw), LoadData)
    assert caught.value.path == '$.brokerData["b1"].preallocatedBundleData["t/n/0x0_0x1"].topics'


def test_not_json() -> None:
    with pytest.raises(ModelError, match="not valid JSON"):
        LocalBrokerData.from_json(b"{nope")


def test_update_tracks_sums_gains_and_losses() -> None:
    a, b, c = (
        "t/ns/0x00000000_0x40000000",
        "t/ns/0x40000000_0x80000000",
        "t/ns/0x80000000_0xffffffff",
    )
    stats = {
        a: NamespaceBundleStats(msg_rate_in=10, msg_throughput_in=100, topics=2, producer_count=1),
        b: NamespaceBundleStats(msg_rate_out=5, msg_throughput_out=50, topics=3, consumer_count=4),
    }
    usage = SystemResourceUsage(cpu=ResourceUsage(usage=50, limit=100))
    first = LocalBrokerData().updated(usage, stats)
    assert (first.msg_rate_in, first.msg_rate_out) == (10, 5)
    assert (first.msg_throughput_in, first.msg_throughput_out) == (100, 50)
    assert (first.num_topics, first.num_bundles, first.num_consumers, first.num_producers) == (
        5,
        2,
        4,
        1,
    )
    assert first.last_bundle_gains == {a, b}
    assert first.cpu.percent_usage() == 50.0
    second = first.without_deltas().updated(usage, {b: stats[b], c: NamespaceBundleStats()})
    assert second.bundles == {b, c}
    assert second.last_bundle_gains == {c}
    assert second.last_bundle_losses == {a}
    assert first.bundles == {a, b}  # the input is never mutated


def test_time_average_update_rule() -> None:
    data = TimeAverageMessageData.starting_at(3)
    assert data.msg_rate_in == 50.0 and data.num_samples == 0
    one = data.updated(10, 20, 30, 40)  # the first sample overwrites the defaults
    assert (one.num_samples, one.msg_throughput_in, one.msg_rate_out) == (1, 10, 40)
    two = one.updated(20, 20, 30, 40)
    assert two.msg_throughput_in == 15.0
    three = two.updated(30, 20, 30, 40)
    assert three.msg_throughput_in == 20.0
    four = three.updated(60, 20, 30, 40)  # at max samples: ((3-1)*20 + 60)/3
    assert four.num_samples == 3
    assert four.msg_throughput_in == pytest.approx(100 / 3)


def test_bundle_data_defaults_and_update() -> None:
    fresh = BundleData.new_default()
    assert fresh.short_term_data.max_samples == 10 and fresh.long_term_data.max_samples == 1000
    assert fresh.long_term_data.total_msg_rate == 100.0
    updated = fresh.updated(NamespaceBundleStats(msg_rate_in=7, topics=9))
    assert updated.topics == 9
    assert updated.short_term_data.msg_rate_in == 7 and updated.long_term_data.msg_rate_in == 7


def test_time_average_broker_data_defaults_missing_bundles() -> None:
    known = BundleData.new_default().updated(
        NamespaceBundleStats(
            msg_rate_in=1, msg_rate_out=2, msg_throughput_in=3, msg_throughput_out=4
        )
    )
    sums = TimeAverageBrokerData.from_bundles(["a", "b"], {"a": known})
    assert sums.short_term_msg_rate_in == 1 + DEFAULT_BUNDLE_STATS.msg_rate_in
    assert sums.long_term_msg_throughput_out == 4 + DEFAULT_BUNDLE_STATS.msg_throughput_out
    assert sums.long_term_msg_rate == 3 + 100


def test_percent_change() -> None:
    assert percent_change(0, 0) == 0
    assert percent_change(0, 1) == float("inf")
    assert percent_change(200, 150) == 25.0


def _report(rate: float, cpu: float, bundles: int, last_update: int) -> LocalBrokerData:
    stats = {
        f"t/ns/0x{i:08x}_0x{i + 1:08x}": NamespaceBundleStats(msg_rate_in=rate / bundles)
        for i in range(bundles)
    }
    usage = SystemResourceUsage(cpu=ResourceUsage(usage=cpu, limit=100))
    return LocalBrokerData().updated(usage, stats).with_last_update(last_update)


def test_need_broker_data_update_rules() -> None:
    weights = ResourceWeights()
    last = _report(rate=1000, cpu=50, bundles=4, last_update=0)

    def decide(current: LocalBrokerData, now_ms: int = 60_000) -> bool:
        return need_broker_data_update(
            last,
            current,
            now_ms=now_ms,
            max_interval_ms=15 * 60_000,
            threshold_percentage=10,
            weights=weights,
        ).write

    assert not decide(_report(1050, 52, 4, 0))  # 5% and 2 points: below 10
    assert not decide(_report(1100, 50, 4, 0))  # exactly 10% is not strictly above
    assert decide(_report(1101, 50, 4, 0))
    assert decide(_report(1000, 61, 4, 0))  # usage moved 11 percentage points
    assert decide(_report(1000, 50, 5, 0))  # 25% more bundles
    assert decide(_report(1000, 50, 4, 0), now_ms=15 * 60_000 + 1)  # max interval passed
    assert not decide(_report(1000, 50, 4, 0), now_ms=15 * 60_000)
    assert largest_change(last, _report(1000, 61, 4, 0), weights) == pytest.approx(("usage", 11))
    assert largest_change(last, _report(1000, 50, 5, 0), weights) == ("numBundles", 25.0)
    # a change the caller computed already decides the same
    for current in (_report(1050, 52, 4, 0), _report(1101, 50, 4, 0)):
        for now_ms in (60_000, 15 * 60_000 + 1):
            given_change = need_broker_data_update(
                last,
                current,
                now_ms=now_ms,
                max_interval_ms=15 * 60_000,
                threshold_percentage=10,
                weights=weights,
                change=largest_change(last, current, weights),
            )
            assert given_change.write == decide(current, now_ms)


def test_a_nan_usage_change_never_hides_another_change() -> None:
    """A CPU limit that rounds to 0 in 32 bits makes the usage change NaN; Pulsar's
    ``LocalBrokerData.max`` skips it, so the message rate's change decides."""

    def broken(rate: float) -> LocalBrokerData:
        usage = SystemResourceUsage(cpu=ResourceUsage(usage=1, limit=1e-50))
        stats = {"t/ns/0x00000000_0xffffffff": NamespaceBundleStats(msg_rate_in=rate)}
        return LocalBrokerData().updated(usage, stats).with_last_update(0)

    weights = ResourceWeights()
    assert largest_change(broken(0), broken(1000), weights) == ("msgRate", float("inf"))
    write = need_broker_data_update(
        broken(0),
        broken(1000),
        now_ms=1,
        max_interval_ms=15 * 60_000,
        threshold_percentage=10,
        weights=weights,
    )
    assert write.write
    assert largest_change(broken(5), broken(5), weights)[1] == 0.0


def test_load_data_for_shedding_skips_system_namespaces() -> None:
    bundle = BundleData.new_default()
    data = LoadData(
        bundle_data={
            "pulsar/system/0x00000000_0xffffffff": bundle,
            "pulsar/10.0.0.1:8080/0x00000000_0xffffffff": bundle,
            "public/default/0x00000000_0xffffffff": bundle,
        },
        broker_data={"b": BrokerData()},
    )
    assert list(data.bundle_data_for_load_shedding()) == ["public/default/0x00000000_0xffffffff"]


rates = st.floats(0, 1e12, allow_nan=False)
counts = st.integers(0, 2**31 - 1)
usages = st.builds(
    ResourceUsage,
    usage=st.floats(-1, 1e9, allow_nan=False),
    limit=st.floats(-1, 1e9, allow_nan=False),
)
stats_st = st.builds(
    NamespaceBundleStats,
    msg_rate_in=rates,
    msg_throughput_in=rates,
    msg_rate_out=rates,
    msg_throughput_out=rates,
    consumer_count=counts,
    producer_count=counts,
    topics=counts,
    cache_size=counts,
)
bundle_names = st.integers(0, 2**32 - 2).map(lambda lo: f"t/ns/0x{lo:08x}_0xffffffff")
reports = st.builds(
    lambda usage, stats, when: (
        LocalBrokerData(web_service_url="http://h:8080")
        .updated(SystemResourceUsage(cpu=usage, bandwidth_in=usage), stats)
        .with_last_update(when)
    ),
    usages,
    st.dictionaries(bundle_names, stats_st, max_size=5),
    st.integers(0, 2**62),
)
averages = st.builds(
    TimeAverageMessageData,
    max_samples=st.integers(1, 1000),
    num_samples=st.integers(0, 1000),
    msg_throughput_in=rates,
    msg_throughput_out=rates,
    msg_rate_in=rates,
    msg_rate_out=rates,
)
bundle_datas = st.builds(
    BundleData, short_term_data=averages, long_term_data=averages, topics=counts
)
broker_averages = st.builds(
    TimeAverageBrokerData.from_bundles,
    st.lists(bundle_names, max_size=4),
    st.dictionaries(bundle_names, bundle_datas, max_size=4),
)


@given(reports)
def test_local_broker_data_round_trips(report: LocalBrokerData) -> None:
    assert LocalBrokerData.from_json(report.to_json()) == report


@given(
    reports,
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
    st.dictionaries(
        st.text(max_size=5),
        st.builds(AdvertisedListener, broker_service_url=st.none() | st.text(max_size=8)),
        max_size=2,
    ),
    st.frozensets(bundle_names, max_size=3),
    st.none() | st.text(max_size=8),
)
def test_report_json_is_the_json_dict_encoded(
    report: LocalBrokerData,
    protocols: dict[str, str],
    listeners: dict[str, AdvertisedListener],
    gains: frozenset[str],
    version: str | None,
) -> None:
    """to_json encodes straight from the struct: the same bytes as the dict Pulsar's
    Jackson shape is built as (keys sorted at every level)."""
    report = msgspec.structs.replace(
        report,
        protocols=protocols,
        advertised_listeners=listeners,
        last_bundle_gains=gains,
        broker_version_string=version,
    )
    assert report.to_json() == encode(report.to_json_dict())


@given(bundle_datas)
def test_bundle_data_round_trips(data: BundleData) -> None:
    assert BundleData.from_json(data.to_json()) == data


@given(broker_averages)
def test_time_average_broker_data_round_trips(data: TimeAverageBrokerData) -> None:
    assert TimeAverageBrokerData.from_json(data.to_json()) == data


@given(
    st.dictionaries(
        st.sampled_from(["b1:8080", "b2:8080"]),
        st.builds(
            BrokerData,
            local_data=reports,
            preallocated_bundle_data=st.dictionaries(bundle_names, bundle_datas, max_size=2),
        ),
        max_size=2,
    ),
    st.dictionaries(bundle_names, bundle_datas, max_size=3),
    st.dictionaries(bundle_names, st.integers(0, 2**62), max_size=3),
)
def test_load_data_round_trips(
    brokers: dict[str, BrokerData], bundles: dict[str, BundleData], unloaded: dict[str, int]
) -> None:
    data = LoadData(broker_data=brokers, bundle_data=bundles, recently_unloaded_bundles=unloaded)
    assert decode(encode(data), LoadData) == data


@given(stats_st)
def test_stats_compare_is_antisymmetric(stats: NamespaceBundleStats) -> None:
    other = msgspec.structs.replace(stats, msg_throughput_in=stats.msg_throughput_in + 2e5)
    assert stats.compare(other) == -1 and other.compare(stats) == 1
    assert stats.compare(stats) == 0


@given(st.lists(bundle_names, max_size=8), st.dictionaries(bundle_names, bundle_datas, max_size=8))
def test_broker_sums_add_in_bundle_order(bundles: list[str], data: dict[str, BundleData]) -> None:
    """Bit for bit Pulsar's loop: each sum starts at 0.0 and adds the bundles in the given
    order (a reordered or compensated sum differs in the last bits, and the pipeline's parity
    with the leader depends on it)."""
    sums = TimeAverageBrokerData.from_bundles(bundles, data)
    fallback = BundleData.new_default()
    terms = [
        (d.short_term_data, d.long_term_data) for d in (data.get(b, fallback) for b in bundles)
    ]
    for prefix, index in (("short_term", 0), ("long_term", 1)):
        for key in ("msg_throughput_in", "msg_throughput_out", "msg_rate_in", "msg_rate_out"):
            expected = 0.0
            for term in terms:
                expected += getattr(term[index], key)
            assert getattr(sums, f"{prefix}_{key}") == expected


@given(
    bundle_datas,
    st.lists(
        st.builds(
            NamespaceBundleStats,
            msg_rate_in=rates,
            msg_rate_out=rates,
            msg_throughput_in=rates,
            msg_throughput_out=rates,
            topics=counts,
        ),
        max_size=30,
    ),
)
def test_bundle_data_updates_follow_pulsars_recurrence(
    start: BundleData, samples: list[NamespaceBundleStats]
) -> None:
    data = start
    for sample in samples:
        data = data.updated(sample)
    for term in ("short_term_data", "long_term_data"):
        average = getattr(start, term)
        n, values = (
            average.num_samples,
            [
                average.msg_throughput_in,
                average.msg_throughput_out,
                average.msg_rate_in,
                average.msg_rate_out,
            ],
        )
        for sample in samples:
            n = min(n + 1, average.max_samples)
            news = [
                sample.msg_throughput_in,
                sample.msg_throughput_out,
                sample.msg_rate_in,
                sample.msg_rate_out,
            ]
            values = [((n - 1) * v + new) / n for v, new in zip(values, news, strict=True)]
        got = getattr(data, term)
        assert got.num_samples == n
        assert [
            got.msg_throughput_in,
            got.msg_throughput_out,
            got.msg_rate_in,
            got.msg_rate_out,
        ] == values


@given(st.lists(stats_st, max_size=30))
def test_a_report_sums_its_bundles_in_order(bundles: list[NamespaceBundleStats]) -> None:
    """One pass or one sum per field, left to right: the same floats, bit for bit; and a
    caller's totals give the same report as those :meth:`updated` works out itself."""
    stats = {f"t/ns/0x{i:08x}_0x{i + 1:08x}": s for i, s in enumerate(bundles)}
    total = total_of(stats.values())
    for field in ("msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out"):
        expected = 0.0
        for one in stats.values():
            expected += getattr(one, field)
        assert getattr(total, field).hex() == expected.hex()
    assert total.topics == sum(s.topics for s in bundles)
    usage = SystemResourceUsage(cpu=ResourceUsage(usage=5, limit=100))
    itself = LocalBrokerData().updated(usage, stats)
    assert LocalBrokerData().updated(usage, stats, totals=total) == itself
    assert (itself.msg_throughput_out, itself.num_producers, itself.num_consumers) == (
        total.msg_throughput_out,
        total.producer_count,
        total.consumer_count,
    )
