"""Bundle arithmetic against Pulsar's NamespaceBundleFactory / PoliciesUtil behaviour."""

from __future__ import annotations

import bisect
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ballast.model.bundles import (
    FULL_UPPER,
    MAX_BUNDLES,
    MAX_CREATED_BUNDLES,
    BundleName,
    BundleRange,
    InvalidBundle,
    NamespaceBundles,
    equal_boundaries,
    equal_range_for_hash,
    equal_split_points,
    iter_equal_boundaries,
    java_long_decode,
    parse_boundaries,
    parse_position,
    split_boundaries,
    topic_hash,
)
from ballast.model.naming import NamespaceName, TopicName

NS = NamespaceName("public", "default")


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        (1, [0, FULL_UPPER]),
        (4, [0, 0x40000000, 0x80000000, 0xC0000000, FULL_UPPER]),
        (3, [0, 0x55555555, 0xAAAAAAAA, FULL_UPPER]),
        (
            7,
            [0, 0x24924924, 0x49249248, 0x6DB6DB6C, 0x92492490, 0xB6DB6DB4, 0xDB6DB6D8, FULL_UPPER],
        ),
    ],
)
def test_equal_boundaries_known_values(count: int, expected: list[int]) -> None:
    assert list(equal_boundaries(count)) == expected


@pytest.mark.parametrize("count", [0, -1, 2**31])
def test_bundle_count_limits(count: int) -> None:
    with pytest.raises(InvalidBundle):
        equal_boundaries(count)


@pytest.mark.parametrize(
    ("topic", "crc", "bundle"),
    [
        ("persistent://public/default/my-topic", 0x2BAD45F7, "0x00000000_0x40000000"),
        (
            "persistent://public/default/my-topic-partition-1",
            0x4A4C72A3,
            "0x40000000_0x80000000",
        ),
        ("non-persistent://public/default/my-topic", 0x831E214A, "0x80000000_0xc0000000"),
        ("persistent://my-tenant/my-ns/test", 0xC34273A5, "0xc0000000_0xffffffff"),
    ],
)
def test_topic_hash_and_bundle_known_values(topic: str, crc: int, bundle: str) -> None:
    name = TopicName.parse(topic)
    assert topic_hash(name) == crc
    found = NamespaceBundles.equal(name.namespace, 4).find(name)
    assert str(found.range) == bundle
    assert found.includes(name)


def test_hash_on_boundary_goes_to_the_bundle_starting_there() -> None:
    bundles = NamespaceBundles.equal(NS, 4)
    assert str(bundles.range_for_hash(0x40000000)) == "0x40000000_0x80000000"
    assert str(bundles.range_for_hash(0x3FFFFFFF)) == "0x00000000_0x40000000"
    assert str(bundles.range_for_hash(FULL_UPPER)) == "0xc0000000_0xffffffff"


def test_range_strings_and_names() -> None:
    assert str(BundleRange.parse("0x0FFFFFFF_0xFFFFFFFF")) == "0x0fffffff_0xffffffff"
    assert BundleRange.parse("0x0_0xffffffff").upper_closed
    assert not BundleRange.parse("0x0_0x10").upper_closed
    name = BundleName.parse("My-T/ns/0x00000000_0x40000000")
    assert str(name.namespace) == "My-T/ns"
    assert str(BundleName.parse("t/c/ns/0X10_#20")) == "t/c/ns/0x00000010_0x00000020"


@pytest.mark.parametrize(
    "text", ["0x10", "0x20_0x10", "0x10_0x10", "zz_0x10", "0x0_0x100000000", "-0x1_0x10", ""]
)
def test_bad_ranges(text: str) -> None:
    with pytest.raises(InvalidBundle):
        BundleRange.parse(text)


def test_long_decode_follows_java() -> None:
    assert java_long_decode("0x1F") == 31
    assert java_long_decode("#1f") == 31
    assert java_long_decode("010") == 8
    assert java_long_decode("10") == 10
    assert java_long_decode("-0x10") == -16
    assert java_long_decode("0") == 0
    for bad in ("0x", "0x-1", "08", "1e3", " 1", "+", "0xg"):
        with pytest.raises(ValueError):
            java_long_decode(bad)


def test_includes_checks_namespace_too() -> None:
    bundle = BundleName(NamespaceName("other", "ns"), BundleRange.full())
    assert not bundle.includes(TopicName.parse("persistent://public/default/x"))


def test_equal_split_of_full_range_known_values() -> None:
    full = BundleRange.full()
    assert equal_split_points(full, 2) == (0x7FFFFFFF,)
    assert equal_split_points(full, 4) == (0x3FFFFFFF, 0x7FFFFFFE, 0xBFFFFFFD)
    assert len(equal_split_points(full, MAX_CREATED_BUNDLES)) == MAX_CREATED_BUNDLES - 1
    with pytest.raises(InvalidBundle, match="at most 1048576 parts"):  # not a MemoryError
        equal_split_points(full, 1_000_000_000)


def test_split_rules() -> None:
    with pytest.raises(InvalidBundle, match="can't be split further"):
        split_boundaries(BundleRange(5, 6), [5])
    with pytest.raises(InvalidBundle, match="strictly inside"):
        split_boundaries(BundleRange(0, 100), [100])
    with pytest.raises(InvalidBundle, match="given twice"):
        split_boundaries(BundleRange(0, 100), [50, 50])
    with pytest.raises(InvalidBundle, match="too few hashes"):
        equal_split_points(BundleRange(5, 7), 3)
    assert split_boundaries(BundleRange(0, 100), [70, 30]) == (0, 30, 70, 100)


def test_namespace_split_replaces_the_parent() -> None:
    bundles = NamespaceBundles.equal(NS, 2)
    parent = bundles.ranges[1]
    after = bundles.with_split(parent, [0xC0000000])
    assert after.boundaries == (0, 0x80000000, 0xC0000000, FULL_UPPER)
    with pytest.raises(InvalidBundle):
        after.with_split(parent, [0xC0000001])


def test_user_boundaries() -> None:
    assert parse_boundaries(["0x0", "0x80000000", "0xffffffff", "0x80000000"]) == (
        0,
        0x80000000,
        FULL_UPPER,
    )
    with pytest.raises(InvalidBundle, match="start at 0x00000000"):
        parse_boundaries(["0x10", "0xffffffff"])
    with pytest.raises(InvalidBundle, match="not a number"):
        parse_boundaries(["0x0", "nope", "0xffffffff"])
    with pytest.raises(InvalidBundle, match='"-1" is negative'):  # not "0x-0000001"
        parse_boundaries(["0x0", "-1", "0xffffffff"])


def test_split_positions_read_as_pulsar_admin_reads_them() -> None:
    assert parse_position("0x60000000") == parse_position("0X60000000") == 0x60000000
    assert parse_position("0100000000") == 100_000_000  # decimal: a leading 0 is not octal
    assert parse_position("010") == 10
    for bad in ("-1", "+5", "0x", "1_0", "1e3", " 5", "#10"):
        with pytest.raises(ValueError):
            parse_position(bad)


@given(count=st.integers(1, 5000), key=st.integers(0, FULL_UPPER))
def test_the_equal_bundle_of_a_hash_needs_no_boundaries(count: int, key: int) -> None:
    bundles = NamespaceBundles.equal(NS, count)
    assert equal_range_for_hash(count, key) == bundles.range_for_hash(key)
    assert tuple(iter_equal_boundaries(count)) == bundles.boundaries


def test_the_largest_count_in_constant_memory() -> None:
    segment = 2**32 // MAX_BUNDLES  # 2: the last bundle takes the remainder
    assert equal_range_for_hash(MAX_BUNDLES, 0) == BundleRange(0, segment)
    assert equal_range_for_hash(MAX_BUNDLES, FULL_UPPER) == BundleRange(
        (MAX_BUNDLES - 1) * segment, FULL_UPPER
    )
    first = list(itertools.islice(iter_equal_boundaries(MAX_BUNDLES), 3))
    assert first == [0, segment, 2 * segment]
    with pytest.raises(InvalidBundle):
        equal_range_for_hash(MAX_BUNDLES + 1, 0)


@st.composite
def boundary_lists(draw: st.DrawFn) -> tuple[int, ...]:
    inner = draw(st.sets(st.integers(1, FULL_UPPER - 1), max_size=40))
    return (0, *sorted(inner), FULL_UPPER)


@given(boundaries=boundary_lists(), key=st.integers(0, FULL_UPPER))
def test_every_hash_falls_in_exactly_one_bundle(boundaries: tuple[int, ...], key: int) -> None:
    bundles = NamespaceBundles(NS, boundaries)
    holders = [r for r in bundles.ranges if r.contains(key)]
    assert len(holders) == 1
    assert bundles.range_for_hash(key) == holders[0]
    # Pulsar's binarySearch rule: the greatest lower boundary <= key.
    expected = min(bisect.bisect_right(boundaries, key) - 1, len(boundaries) - 2)
    assert holders[0].lower == boundaries[expected]


@given(
    lower=st.integers(0, FULL_UPPER - 2),
    width=st.integers(2, FULL_UPPER),
    parts=st.integers(2, 16),
    data=st.data(),
)
def test_splits_cover_the_parent_exactly(
    lower: int, width: int, parts: int, data: st.DataObject
) -> None:
    parent = BundleRange(lower, min(lower + width, FULL_UPPER))
    if (parent.upper - parent.lower) // parts == 0:
        with pytest.raises(InvalidBundle):
            equal_split_points(parent, parts)
        return
    points = equal_split_points(parent, parts)
    children = split_boundaries(parent, points)
    assert children[0] == parent.lower and children[-1] == parent.upper
    assert all(a < b for a, b in itertools.pairwise(children))
    key = data.draw(st.integers(parent.lower, parent.upper - (0 if parent.upper_closed else 1)))
    ranges = [BundleRange(a, b) for a, b in itertools.pairwise(children)]
    assert sum(r.contains(key) for r in ranges) == 1
    assert sum(r.size for r in ranges) == parent.size
