"""BundleSplitterTask: the thresholds, the < 2 topics rule, the per-namespace count in a run,
and the load manager's checks around it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ballast.balance.decisions import ReasonKind
from ballast.balance.snapshot import LoadSnapshot
from ballast.balance.split import _exceeded, find_bundles_to_split, run_split_cycle
from ballast.model.bundles import NamespaceBundles
from ballast.model.config import SplitConfig
from ballast.model.naming import NamespaceName
from tests.balance.build import MB, data, names, report, settings, snapshot, stats

CONFIG = SplitConfig.from_settings(settings())
B = [f"t/n/0x{i:08x}_0x{i + 1:08x}" for i in range(6)]


def split(snap: LoadSnapshot, config: SplitConfig = CONFIG) -> list[str]:
    return names(find_bundles_to_split(snap, config).decisions)


def test_each_threshold_is_strictly_exceeded() -> None:
    brokers = {
        "b1": report(
            stats={
                B[0]: stats(topics=1001),
                B[1]: stats(topics=1000),
                B[2]: stats(topics=2, sessions=1001),
                B[3]: stats(topics=2),
                B[4]: stats(topics=2),
            }
        )
    }
    bundles = {B[3]: data(rate=30001), B[4]: data(tput=100 * MB + 1)}
    result = find_bundles_to_split(snapshot(brokers, bundles), CONFIG)
    assert names(result.decisions) == [B[0], B[2], B[3], B[4]]
    kinds = [d.reason.kind for d in result.decisions]
    assert kinds == [
        ReasonKind.TOPICS,
        ReasonKind.SESSIONS,
        ReasonKind.MSG_RATE,
        ReasonKind.BANDWIDTH,
    ]
    assert {d.algorithm for d in result.decisions} == {"range_equally_divide"}
    assert {d.broker for d in result.decisions} == {"b1"}
    # one byte over 100 MiB/s would read "100.00 MiB/s > 100.00 MiB/s": shown in full
    assert [d.reason.text for d in result.decisions][2:] == [
        "msg rate 30001 msg/s > 30000 msg/s",
        "throughput 104857601.0 B/s > 104857600.0 B/s",
    ]


def test_rates_are_long_term_and_fewer_than_two_topics_never_split() -> None:
    hot_short = data(rate=10, long_rate=40000)
    cold_long = data(rate=40000, long_rate=10)
    brokers = {
        "b1": report(stats={B[0]: stats(topics=2), B[1]: stats(topics=2), B[2]: stats(topics=1)})
    }
    bundles = {B[0]: hot_short, B[1]: cold_long, B[2]: data(rate=1e6)}
    assert split(snapshot(brokers, bundles)) == [B[0]]
    # The one-topic bundle past a limit is told, not left out without a word.
    found = find_bundles_to_split(snapshot(brokers, bundles), CONFIG)
    why = "one topic: a bundle is cut between topics"
    assert found.stats["refused"] == [{"bundle": B[2], "broker": "b1", "why": why}]
    del bundles[B[0]]  # nothing else past a limit: no split, and why
    alone = find_bundles_to_split(snapshot(brokers, bundles), CONFIG).stats
    assert (alone["reason"], alone["detail"]) == (
        "NoBundles",
        "no bundle past a limit can be split",
    )


def test_sessions_check_is_disabled_at_zero() -> None:
    brokers = {"b1": report(stats={B[0]: stats(topics=2, sessions=5000)})}
    off = SplitConfig.from_settings(settings(loadBalancerNamespaceBundleMaxSessions=0))
    assert split(snapshot(brokers)) == [B[0]] and split(snapshot(brokers), off) == []


def test_namespace_maximum_counts_splits_chosen_in_this_run() -> None:
    brokers = {
        "b1": report(stats={B[0]: stats(topics=2000), B[1]: stats(topics=2000)}),
        "b2": report(stats={B[2]: stats(topics=2000)}),
    }
    namespaces = {"t/n": NamespaceBundles.equal(NamespaceName("t", "n"), 6)}
    limit = SplitConfig.from_settings(settings(loadBalancerNamespaceMaximumBundles=8))
    result = find_bundles_to_split(snapshot(brokers, namespaces=namespaces), limit)
    assert names(result.decisions) == [B[0], B[1]]  # 6 + 0 < 8, 6 + 1 < 8, 6 + 2 is not
    assert result.stats["refused"] == [
        {
            "bundle": B[2],
            "broker": "b2",
            "why": "namespace t/n has 6 bundles and 2 split(s) chosen this cycle (maximum 8)",
        }
    ]
    full = SplitConfig.from_settings(settings(loadBalancerNamespaceMaximumBundles=6))
    none = find_bundles_to_split(snapshot(brokers, namespaces=namespaces), full)
    assert none.decisions == ()
    assert (none.stats["outcome"], none.stats["reason"]) == ("Skip", "MaxBundles")
    quiet = find_bundles_to_split(snapshot({"b1": report(stats={B[0]: stats(topics=2)})}), limit)
    assert (quiet.stats["outcome"], quiet.stats["reason"]) == ("Skip", "Balanced")


def test_bundle_count_without_namespaces_is_the_bundles_seen() -> None:
    brokers = {"b1": report(bundles=B[:3], stats={B[0]: stats(topics=2000)})}
    limit = SplitConfig.from_settings(settings(loadBalancerNamespaceMaximumBundles=3))
    assert split(snapshot(brokers), limit) == []  # three bundles seen: 3 + 0 is not < 3
    assert split(snapshot(brokers, {}), SplitConfig.from_settings(settings())) == [B[0]]


def test_cycle_needs_two_brokers_and_a_splittable_current_bundle() -> None:
    half = "t/n/0x00000000_0x80000000"
    hot = {half: stats(topics=2000)}
    one = snapshot({"b1": report(stats=hot)})
    assert find_bundles_to_split(one, CONFIG).decisions != ()
    alone = run_split_cycle(one, CONFIG)
    assert alone.decisions == ()
    assert alone.stats == {
        "outcome": "Skip",
        "reason": "NoBrokers",
        "detail": "fewer than two brokers",
    }
    two = snapshot({"b1": report(stats=hot), "b2": report()})
    assert names(run_split_cycle(two, CONFIG).decisions) == [half]
    assert run_split_cycle(two, CONFIG).stats == {"outcome": "Success", "refused": []}
    tiny = B[5]  # one hash wide
    unsplittable = snapshot({"b1": report(stats={tiny: stats(topics=2000)}), "b2": report()})
    cut = run_split_cycle(unsplittable, CONFIG)
    assert cut.decisions == ()
    assert (cut.stats["reason"], cut.stats["detail"]) == (
        "NoBundles",
        "no chosen bundle can be split",
    )
    assert cut.stats["refused"] == [
        {"bundle": tiny, "broker": "b1", "why": "bundle cannot be split further"}
    ]
    quiet = run_split_cycle(snapshot({"b1": report(), "b2": report()}), CONFIG).stats
    assert (quiet["outcome"], quiet["reason"]) == ("Skip", "Balanced")  # the strategy's reason
    moved_on = snapshot(
        {"b1": report(stats=hot), "b2": report()},
        namespaces={"t/n": NamespaceBundles.equal(NamespaceName("t", "n"), 4)},
    )
    assert run_split_cycle(moved_on, CONFIG).decisions == ()
    disabled = SplitConfig.from_settings(settings(loadBalancerAutoBundleSplitEnabled=False))
    assert run_split_cycle(two, disabled).decisions == ()
    assert run_split_cycle(two, disabled).stats == {
        "outcome": "Skip",
        "reason": "Balanced",
        "detail": "auto bundle split is disabled",
    }


# Values on both sides of each default limit (1000 topics, 1000 sessions, 30000 msg/s,
# 100 MiB/s), and limits that turn a check off or make it always pass.
_COUNTS = st.sampled_from([0, 1, 2, 999, 1000, 1001, 5000])
_RATES = st.sampled_from([0.0, 29999.0, 30000.0, 30001.0, 1e9])
_TPUTS = st.sampled_from([0.0, 100 * MB - 1, 100 * MB, 100 * MB + 1, 1e12])


@given(
    rows=st.lists(st.tuples(_COUNTS, _COUNTS, st.none() | st.tuples(_RATES, _TPUTS)), max_size=6),
    max_sessions=st.sampled_from([-1, 0, 1000]),
    max_rate=st.sampled_from([-1, 30000]),
)
def test_a_bundle_is_chosen_exactly_when_a_limit_is_passed(
    rows: list[tuple[int, int, tuple[float, float] | None]], max_sessions: int, max_rate: int
) -> None:
    config = SplitConfig.from_settings(
        settings(
            loadBalancerNamespaceBundleMaxSessions=max_sessions,
            loadBalancerNamespaceBundleMaxMsgRate=max_rate,
        )
    )
    reported = {B[i]: stats(topics=t, sessions=s) for i, (t, s, _) in enumerate(rows)}
    bundles = {
        B[i]: data(tput=load[1], rate=load[0])
        for i, (_, _, load) in enumerate(rows)
        if load is not None
    }
    expected = [
        bundle
        for bundle, bundle_stats in reported.items()
        if bundle_stats.topics >= 2 and _exceeded(bundle_stats, bundles.get(bundle), config)
    ]
    assert split(snapshot({"b1": report(stats=reported)}, bundles), config) == expected
