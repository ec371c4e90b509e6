"""Pulsar's named split algorithms on small hand-built bundles."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ballast.model.bundles import FULL_UPPER, BundleRange, InvalidBundle, hash_key, split_boundaries
from ballast.model.split_algorithms import (
    MIB,
    FlowOrQpsThresholds,
    SplitRequest,
    TopicLoad,
    flow_or_qps_equally_divide,
    range_equally_divide,
    specified_positions_divide,
    split_algorithm,
    topic_count_equally_divide,
)

FULL = BundleRange.full()


def test_range_equally_divide_known_values() -> None:
    assert range_equally_divide(SplitRequest(BundleRange(10, FULL_UPPER))).points == (2147483652,)
    assert range_equally_divide(SplitRequest(FULL)).points == (0x7FFFFFFF,)


def test_topic_count_equally_divide_cuts_between_middle_hashes() -> None:
    topics = [TopicLoad(f"persistent://t/ns/topic-{i}") for i in range(6)]
    hashes = sorted(t.hash for t in topics)
    found = topic_count_equally_divide(SplitRequest(FULL, topics))
    assert found.points == (hashes[2] + (hashes[3] - hashes[2]) // 2,)
    lower_half = [h for h in hashes if h < found.points[0]]
    assert len(lower_half) == 3


def test_topic_count_needs_two_owned_topics() -> None:
    one = [TopicLoad("persistent://t/ns/only")]
    assert not topic_count_equally_divide(SplitRequest(FULL, one)).found
    # Topics outside the bundle are not owned by it.
    outside = BundleRange(0, 1000)
    many = [TopicLoad(f"persistent://t/ns/x{i}") for i in range(5)]
    assert not topic_count_equally_divide(SplitRequest(outside, many)).found


def test_specified_positions_rules() -> None:
    topics = [TopicLoad("a"), TopicLoad("b")]
    bundle = BundleRange(0x1000, FULL_UPPER)
    assert all(bundle.contains(t.hash) for t in topics)
    found = specified_positions_divide(
        SplitRequest(bundle, topics, positions=[0x80000000, 0x0500, 0x2000, FULL_UPPER])
    )
    assert found.points == (0x2000, 0x80000000)  # sorted, outside ones dropped
    assert not specified_positions_divide(
        SplitRequest(bundle, topics, positions=[FULL_UPPER])
    ).found
    assert not specified_positions_divide(
        SplitRequest(bundle, topics[:1], positions=[0x2000])
    ).found
    with pytest.raises(InvalidBundle):
        specified_positions_divide(SplitRequest(bundle, topics))


def _load(name: str, rate: float = 0.0, mib: float = 0.0) -> TopicLoad:
    return TopicLoad(name, rate / 2, rate / 2, mib * MIB / 2, mib * MIB / 2)


def test_flow_or_qps_cuts_where_running_load_passes_the_limit() -> None:
    limits = FlowOrQpsThresholds(max_msg_rate=1000, max_bandwidth_mbytes=100)
    topics = [_load(f"t{i}", rate=600) for i in range(4)]
    hashes = sorted(t.hash for t in topics)
    found = flow_or_qps_equally_divide(SplitRequest(FULL, topics, thresholds=limits))
    # 600 + 600 > 1000 at every step: a cut between every neighbour pair, +1 as Pulsar.
    expected = tuple(a + (b - a) // 2 + 1 for a, b in itertools.pairwise(hashes))
    assert found.points == expected


def test_flow_or_qps_declines_below_limit_and_with_idle_topics() -> None:
    limits = FlowOrQpsThresholds(max_msg_rate=1000, max_bandwidth_mbytes=100)
    calm = [_load("a", rate=500), _load("b", rate=500)]  # 1000 < 1100 (10% tolerance)
    assert "below" in flow_or_qps_equally_divide(SplitRequest(FULL, calm, thresholds=limits)).reason
    idle = [_load("a", rate=5000), _load("b")]
    assert (
        "with traffic"
        in flow_or_qps_equally_divide(SplitRequest(FULL, idle, thresholds=limits)).reason
    )
    hot_bytes = [_load("a", mib=80), _load("b", mib=80)]
    assert flow_or_qps_equally_divide(SplitRequest(FULL, hot_bytes, thresholds=limits)).found


def test_unknown_algorithm_lists_valid_names() -> None:
    with pytest.raises(InvalidBundle, match="range_equally_divide"):
        split_algorithm("halves")


@given(st.lists(st.text(min_size=1, max_size=10), min_size=2, max_size=30, unique=True))
def test_topic_count_split_cut_is_inside_and_balances(names: list[str]) -> None:
    topics = [TopicLoad(n) for n in names]
    hashes = sorted({hash_key(n) for n in names})
    if len(hashes) < 2:
        return
    found = topic_count_equally_divide(SplitRequest(FULL, topics))
    (cut,) = found.points
    if 0 < cut < FULL_UPPER:
        children = split_boundaries(FULL, [cut])
        assert children == (0, cut, FULL_UPPER)
