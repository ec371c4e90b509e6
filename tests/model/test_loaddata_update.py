"""The leader's update of every reported bundle's averages in one pass against the per-bundle
recurrence and Pulsar's broker sums, bit for bit: the same values, the same sums, the same
mapping order."""

from __future__ import annotations

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from ballast.model.loaddata import (
    BundleData,
    NamespaceBundleStats,
    TimeAverageBrokerData,
    TimeAverageMessageData,
)
from ballast.model.loaddata.averages import add_report_samples

# Signed zeros, tiny and huge values, infinities: each operation must round as Python's does.
values = st.one_of(
    st.floats(allow_nan=False),
    st.sampled_from([0.0, -0.0, 5e-324, 1e308]),
    st.floats(0, 1e12, allow_nan=False),
)
stats = st.builds(
    NamespaceBundleStats,
    msg_rate_in=values,
    msg_rate_out=values,
    msg_throughput_in=values,
    msg_throughput_out=values,
    topics=st.integers(0, 2**31 - 1),
)
averages = st.builds(
    TimeAverageMessageData,
    max_samples=st.integers(1, 1000),
    num_samples=st.integers(0, 1000),
    msg_throughput_in=values,
    msg_throughput_out=values,
    msg_rate_in=values,
    msg_rate_out=values,
)
bundle_datas = st.builds(
    BundleData,
    short_term_data=averages,
    long_term_data=averages,
    topics=st.integers(0, 2**31 - 1),
)
names = st.sampled_from([f"t/ns/0x{lo:08x}_0xffffffff" for lo in range(12)])
reports = st.dictionaries(names, stats, max_size=6)
# Between updates the mapping's owner may set or drop entries itself (preallocation, splits).
edits = st.lists(st.tuples(names, st.none() | bundle_datas), max_size=3)
rounds = st.lists(
    st.tuples(st.lists(st.integers(0, 3), max_size=4), edits),
    min_size=1,
    max_size=5,
)


def reference_update(
    bundle_data: dict[str, BundleData], reported: list[dict[str, NamespaceBundleStats]]
) -> list[TimeAverageBrokerData]:
    """The leader's update as Pulsar's loops write it, one bundle and one value at a time."""
    for report in reported:
        for bundle, sample in report.items():
            known = bundle_data.get(bundle)
            bundle_data[bundle] = (known or BundleData.new_default()).updated(sample)
    return [TimeAverageBrokerData.from_bundles(report.keys(), bundle_data) for report in reported]


def bits(value: object) -> bytes:
    """msgpack keeps every float's 64 bits (signed zeros and infinities included)."""
    return msgspec.msgpack.encode(value)


@settings(max_examples=300)
@given(st.dictionaries(names, bundle_datas, max_size=6), st.lists(reports, max_size=4), rounds)
def test_updates_equal_the_per_bundle_recurrence_bit_for_bit(
    start: dict[str, BundleData],
    pool: list[dict[str, NamespaceBundleStats]],
    steps: list[tuple[list[int], list[tuple[str, BundleData | None]]]],
) -> None:
    expected = dict(start)
    got = dict(start)
    for picks, changes in steps:
        # the same mapping objects come back across updates (a report that did not change)
        # and a bundle may be in two reports (mid-transfer)
        reported = [pool[i] for i in picks if i < len(pool)]
        want = reference_update(expected, reported)
        sums = add_report_samples(got, reported)
        assert bits(list(got.items())) == bits(list(expected.items()))
        assert bits(sums) == bits(want)
        for bundle, data in changes:
            for mapping in (expected, got):
                if data is None:
                    mapping.pop(bundle, None)
                else:
                    mapping[bundle] = data


def test_a_bundle_in_two_reports_takes_both_samples_in_order() -> None:
    bundle = "t/ns/0x00000000_0xffffffff"
    first = {bundle: NamespaceBundleStats(msg_rate_in=10.0, topics=1)}
    second = {bundle: NamespaceBundleStats(msg_rate_in=40.0, topics=2)}
    data: dict[str, BundleData] = {}
    sums = add_report_samples(data, [first, second])
    expected = BundleData.new_default().updated(first[bundle]).updated(second[bundle])
    assert data == {bundle: expected}
    assert sums[0] == sums[1] == TimeAverageBrokerData.from_bundles([bundle], data)
    assert data[bundle].topics == 2


def test_many_bundles_in_one_report() -> None:
    report = {
        f"t/ns/0x{lo:08x}_0x{lo + 1:08x}": NamespaceBundleStats(msg_rate_in=float(lo), topics=1)
        for lo in range(3000)
    }
    data: dict[str, BundleData] = {}
    expected: dict[str, BundleData] = {}
    for _ in range(2):
        sums = add_report_samples(data, [report])
        want = reference_update(expected, [report])
        assert bits(list(data.items())) == bits(list(expected.items()))
        assert bits(sums) == bits(want)


@given(st.lists(stats, min_size=1, max_size=12), st.integers(1, 4))
def test_disjoint_reports_in_one_pass(samples: list[NamespaceBundleStats], parts: int) -> None:
    names_in_order = [f"t/ns/0x{lo:08x}_0xffffffff" for lo in range(len(samples))]
    reported: list[dict[str, NamespaceBundleStats]] = [{} for _ in range(parts)]
    for i, (name, sample) in enumerate(zip(names_in_order, samples, strict=True)):
        reported[i % parts][name] = sample
    expected: dict[str, BundleData] = {
        names_in_order[0]: BundleData.new_default().updated(samples[0])
    }
    got = dict(expected)
    want = reference_update(expected, reported)
    assert bits(add_report_samples(got, reported)) == bits(want)
    assert bits(list(got.items())) == bits(list(expected.items()))
