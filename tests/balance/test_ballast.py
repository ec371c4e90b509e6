"""Ballast's own shedding strategy on small hand-built snapshots: best-fit moves on predicted
loads, several brokers per run, limits, hysteresis, pending moves, swaps, policies."""

from __future__ import annotations

import dataclasses
import random
import statistics

import msgspec
import pytest

from ballast.balance.decisions import ReasonKind, Transfer, Unload
from ballast.balance.placement.strategies import PlacementState, least_predicted_load
from ballast.balance.shedding.ballast import BallastState, PendingMove, find_bundles_to_unload
from ballast.balance.snapshot import LoadSnapshot, Policies
from ballast.model.config import BallastShedderConfig, PlacementConfig
from ballast.model.loaddata import LocalBrokerData, NamespaceBundleStats, ResourceUsage
from ballast.model.policies import IsolationPolicies
from tests.balance.build import settings, snapshot

NOW = 1_700_000_000_000
CONFIG = BallastShedderConfig.from_settings(settings())
COST = 0.1  # percent of a core per msg/s: a bundle of 80 msg/s is 8% of one core


def bundle(broker: str, i: int, namespace: str = "t/ns") -> str:
    return f"{namespace}/0x{ord(broker[0]) << 24 | i:08x}_0x{(ord(broker[0]) << 24 | i) + 1:08x}"


def broker(*loads: float, name: str, namespace: str = "t/ns", cores: int = 1) -> LocalBrokerData:
    """A broker of one core (or ``cores``) whose bundles carry ``loads`` (fractions of its
    CPU); CPU usage is exactly their traffic's cost."""
    per_load = cores * 100 / COST / 2  # msg/s each way of a whole broker's load
    stats = {
        bundle(name, i, namespace): NamespaceBundleStats(
            msg_rate_in=load * per_load, msg_rate_out=load * per_load, topics=1
        )
        for i, load in enumerate(loads)
    }
    messages = sum(s.msg_rate_in + s.msg_rate_out for s in stats.values())
    return LocalBrokerData(
        cpu=ResourceUsage(usage=messages * COST, limit=cores * 100.0),
        msg_rate_in=messages / 2,
        msg_rate_out=messages / 2,
        last_stats=stats,
        bundles=frozenset(stats),
    )


def cluster(**brokers: tuple[float, ...]) -> LoadSnapshot:
    return snapshot({name: broker(*loads, name=name) for name, loads in brokers.items()})


def run(
    snap: LoadSnapshot, state: BallastState | None = None, config: BallastShedderConfig = CONFIG
) -> tuple[list[Transfer], BallastState, dict[str, object]]:
    result = find_bundles_to_unload(snap, state or BallastState(), config, NOW)
    moves = [d for d in result.decisions if isinstance(d, Transfer)]
    assert len(moves) == len(result.decisions)
    return moves, result.state, dict(result.stats)


def reported(stats: dict[str, NamespaceBundleStats], cores: float = 1.0) -> LocalBrokerData:
    messages = sum(s.msg_rate_in + s.msg_rate_out for s in stats.values())
    return LocalBrokerData(
        cpu=ResourceUsage(usage=messages * COST, limit=cores * 100.0),
        msg_rate_in=messages / 2,
        msg_rate_out=messages / 2,
        last_stats=stats,
        bundles=frozenset(stats),
    )


def moved(snap: LoadSnapshot, moves: list[Transfer]) -> LoadSnapshot:
    """The snapshot once ``moves`` are done and every broker reported again."""
    stats = {name: dict(data.local_data.last_stats) for name, data in snap.brokers.items()}
    cores = {name: data.local_data.cpu.limit / 100 for name, data in snap.brokers.items()}
    for move in moves:
        stats[move.destination][str(move.bundle)] = stats[move.source].pop(str(move.bundle))
    return snapshot({name: reported(s, cores[name]) for name, s in stats.items()})


def loads_after(snap: LoadSnapshot, moves: list[Transfer]) -> dict[str, float]:
    """Each broker's load once ``moves`` are done (by the test's own arithmetic)."""
    return {
        name: round(data.local_data.cpu.usage / data.local_data.cpu.limit, 6)
        for name, data in moved(snap, moves).brokers.items()
    }


def test_the_worked_example_two_full_brokers_and_two_new_ones() -> None:
    snap = cluster(a=(0.08,) * 10, b=(0.08,) * 10, c=(), d=())
    moves, state, stats = run(snap)
    assert stats["outcome"] == "Success"
    assert moves[0].reason.kind is ReasonKind.UNDERLOADED  # idle brokers: at once
    # Round robin between the heavy pair and the light pair, 0.3 of load per broker at most.
    assert [(m.source, m.destination) for m in moves] == [
        ("a", "c"),
        ("b", "d"),
        ("a", "c"),
        ("b", "d"),
        ("a", "c"),
        ("b", "d"),
    ]
    assert loads_after(snap, moves) == {"a": 0.56, "b": 0.56, "c": 0.24, "d": 0.24}
    assert state.balancing and set(state.pending) == {str(m.bundle) for m in moves}
    # The next run sees reports that already show the moves: it finishes the job.
    after = moved(snap, moves)
    more, state, _ = run(after, state)
    assert len(more) == 4 and loads_after(after, more) == {n: 0.4 for n in "abcd"}
    assert not state.balancing


def test_stale_reports_do_not_cause_the_same_moves_again() -> None:
    snap = cluster(a=(0.1,) * 8, b=(0.1,) * 2)
    moves, state, _ = run(snap, BallastState(hit_count=5))
    assert loads_after(snap, moves) == {"a": 0.5, "b": 0.5}
    # The reports have not changed yet: the pending moves account for them.
    again, _, stats = run(snap, state)
    assert again == [] and stats["pending"] == len(moves)


def test_hysteresis_a_mild_spread_waits_one_run_an_idle_broker_does_not() -> None:
    mild = cluster(a=(0.1,) * 6, b=(0.1,) * 5, c=(0.1,) * 4)  # std 0.08 > trigger 0.045
    moves, state, stats = run(mild)
    assert moves == [] and stats["reason"] == "HitCount" and state.hit_count == 1
    moves, state, _ = run(mild, state)
    assert [(m.source, m.destination) for m in moves] == [("a", "c")]
    calm = cluster(a=(0.1,) * 5, b=(0.1,) * 5, c=(0.1,) * 5)
    moves, state, stats = run(calm)
    assert moves == [] and state.hit_count == 0


def test_a_target_above_its_trigger_counts_as_the_trigger() -> None:
    # std 0.082 and max 1.2 x the mean: beyond the triggers (0.045, 1.08) but within targets
    # set above them. The balancing that starts must still bring the spread to the triggers
    # (taken as the targets), not stop at once with nothing moved.
    loose = BallastShedderConfig.from_settings(
        settings(loadBalancerBallastTargetStd=0.09, loadBalancerBallastTargetMaxOverMean=1.25)
    )
    assert (loose.target_std, loose.target_max_over_mean) == (0.045, 1.08)
    mild = cluster(a=(0.1,) * 6, b=(0.1,) * 5, c=(0.1,) * 4)
    moves, _, _ = run(mild, BallastState(hit_count=5), loose)
    assert [(m.source, m.destination) for m in moves] == [("a", "c")]
    assert loads_after(mild, moves) == {"a": 0.5, "b": 0.5, "c": 0.5}


def test_a_spread_that_came_with_a_swing_waits_the_swing_hit_count() -> None:
    # The loads settle at an even spread; then a burst takes broker a up by 0.2 (half the
    # mean, far more than the swing fraction): the spread is beyond the trigger, but it is
    # acted on only after SWING_RUNS runs, not after the usual two.
    calm = cluster(a=(0.1,) * 5, b=(0.1,) * 5, c=(0.1,) * 5)
    _, state, _ = run(calm)
    assert state.settled == {"a": 0.5, "b": 0.5, "c": 0.5} and state.swung_runs_ago is None
    burst = cluster(a=(0.1,) * 4 + (0.3,), b=(0.1,) * 5, c=(0.1,) * 5)
    runs = CONFIG.swing_hit_count_threshold
    for hit in range(1, runs + 1):
        moves, state, stats = run(burst, state)
        assert moves == [] and state.hit_count == hit, hit
        assert stats["swungRunsAgo"] == hit - 1 and "swinging" in str(stats["detail"])
    assert state.settled["a"] == pytest.approx(0.7)  # the swung broker settled anew
    moves, state, _ = run(burst, state)
    assert moves, "an imbalance that outlasts the swing hit count is acted on"
    # The strategy's own moves are not swings: the settled loads move with them.
    assert state.settled == pytest.approx(loads_after(burst, moves))


def test_a_burst_that_passes_in_time_causes_no_move() -> None:
    calm = cluster(a=(0.1,) * 5, b=(0.1,) * 5, c=(0.1,) * 5)
    burst = cluster(a=(0.1,) * 4 + (0.3,), b=(0.1,) * 5, c=(0.1,) * 5)
    _, state, _ = run(calm)
    for _ in range(CONFIG.swing_hit_count_threshold - 1):
        moves, state, _ = run(burst, state)
        assert moves == []
    moves, state, stats = run(calm, state)  # the burst is over: a swing back, within triggers
    assert moves == [] and state.hit_count == 0 and stats["swungRunsAgo"] == 0


def test_steady_loads_are_balanced_after_the_usual_hit_count() -> None:
    # No swing: a spread the loads settled at (a snapshot as the leader first sees it, or
    # one that stayed) waits loadBalancerBallastHitCountThreshold runs, not the swing count.
    mild = cluster(a=(0.1,) * 6, b=(0.1,) * 5, c=(0.1,) * 4)
    _, state, _ = run(mild)
    moves, _, stats = run(mild, state)
    assert moves and stats["swungRunsAgo"] is None
    # A swing long enough ago no longer holds it back either.
    old_swing = dataclasses.replace(CONFIG, swing_hit_count_threshold=3)
    settled = BallastState(settled={"a": 0.6, "b": 0.5, "c": 0.4}, swung_runs_ago=2, hit_count=1)
    moves, state, _ = run(mild, settled, old_swing)
    assert moves and state.swung_runs_ago == 3


def test_idle_and_overloaded_brokers_do_not_wait_for_a_swing() -> None:
    calm = cluster(a=(0.1,) * 5, b=(0.1,) * 5, c=(0.1,) * 5)
    _, state, _ = run(calm)
    emptied = cluster(a=(0.1,) * 5, b=(0.1,) * 5, c=(0.1,) * 5, d=())
    moves, _, _ = run(emptied, state)
    assert moves and moves[0].reason.kind is ReasonKind.UNDERLOADED
    hot = cluster(a=(0.1,) * 4 + (0.55,), b=(0.1,) * 5, c=(0.1,) * 5)  # a at 0.95 > 0.85
    moves, _, _ = run(hot, state)
    assert moves and moves[0].reason.kind is ReasonKind.OVERLOADED


def test_an_overloaded_broker_is_relieved_at_once_and_only_that() -> None:
    # Broker a is over the overload threshold (0.95 > 0.85) at the first run: it is relieved
    # at once, but only until no broker is overloaded; the rest of the spread waits for the
    # hit count like any other (under bursts, an overload is often the burst's peak).
    snap = cluster(a=(0.1,) * 4 + (0.55,), b=(0.1,) * 5, c=(0.1,) * 2)
    moves, state, _ = run(snap)
    assert [(m.source, m.destination) for m in moves] == [("a", "c")]
    # The hot bundle itself (its first bundle of the run is not held to the 0.3 cap).
    assert loads_after(snap, moves) == {"a": 0.4, "b": 0.5, "c": 0.75}
    assert moves[0].reason.kind is ReasonKind.OVERLOADED and not state.balancing
    # A spread that has lasted past the hit count is balanced all the way, overload or not.
    more, _, _ = run(snap, BallastState(hit_count=5))
    assert len(more) > 1
    # Relief takes load off overloaded brokers only: when a's one bundle cannot move (it
    # would overload any other broker more), b, merely above the mean, keeps its bundles.
    stuck = cluster(a=(0.95,), b=(0.1,) * 6, c=(0.1,) * 2)
    moves, _, stats = run(stuck)
    assert moves == [] and stats["reason"] == "NoBundles"


def test_a_lightly_loaded_cluster_is_balanced_by_its_ratios_too() -> None:
    # A cluster at 2% load: the std-dev is tiny, yet one broker carries twice the mean and
    # another nothing (a restarted broker). Predicted loads come from traffic, so a relative
    # imbalance is as real at 2% as at 50%: the idle broker gets load at once and the
    # heaviest is brought within the target multiple of the mean.
    light = cluster(a=(0.001,) * 40, b=(0.001,) * 20, c=(0.001,) * 20, d=())
    moves, _, _ = run(light)
    assert moves and moves[0].reason.kind is ReasonKind.UNDERLOADED
    after = loads_after(light, moves)
    mean = sum(after.values()) / len(after)
    assert max(after.values()) <= mean * CONFIG.target_max_over_mean
    assert after["d"] > 0


def test_brokers_of_different_sizes_are_balanced_to_equal_loads() -> None:
    # An 8-core broker at 0.6 and a 4-core one at 0.3 (a cluster of mixed machines): a
    # bundle moved to the small broker loads it twice as much as it unloaded the large one,
    # so the mean load rises with each move. The moves even the loads out; they do not stop
    # where the large broker carries twice the small one's load, where the sum of the
    # loads' squares is least (0.6 and 0.3 already nearly is).
    snap = snapshot(
        {
            "big": broker(*(0.025,) * 24, name="big", cores=8),
            "small": broker(*(0.05,) * 6, name="small", cores=4),
        }
    )
    moves, _, stats = run(snap, BallastState(hit_count=5))
    assert [(m.source, m.destination) for m in moves] == [("big", "small")] * 4
    assert loads_after(snap, moves) == {"big": 0.5, "small": 0.5}
    assert stats["stdAfter"] == pytest.approx(0.0, abs=1e-9)


def test_the_best_fit_towards_a_smaller_broker_is_a_smaller_bundle() -> None:
    # A 16-core broker at 0.42 and a 2-core one at 0.29: a bundle of 0.01 on the large broker
    # is 0.08 on the small one. Half the gap (0.065) would point at the large broker's
    # biggest bundles (0.03, 0.24 on the small one: it would end far busier); the fit
    # weighs the gap by the brokers' sizes and moves one of the small ones.
    snap = snapshot(
        {
            "big": broker(*(0.03,) * 10, *(0.01,) * 12, name="big", cores=16),
            "small": broker(*(0.01,) * 29, name="small", cores=2),
        }
    )
    moves, _, _ = run(snap, BallastState(hit_count=5))
    assert [(m.source, m.destination) for m in moves] == [("big", "small")]
    assert loads_after(snap, moves) == {"big": 0.41, "small": 0.37}


@pytest.mark.parametrize("seed", range(100))
def test_random_clusters_of_mixed_machines_end_within_the_trigger(seed: int) -> None:
    # Brokers of 2 to 16 cores holding up to 30 bundles of 0.1% to 4% of their CPU each,
    # balanced run after run until nothing moves: the spread ends within the trigger std-dev
    # (before the best fit weighed the gap by the brokers' sizes, seed 43 was left beyond
    # it, nothing moving: an 8-core broker's bundles near half the gap overfill a 4-core one).
    rng = random.Random(seed)
    snap = snapshot(
        {
            f"b{i}": broker(
                *(rng.uniform(0.001, 0.04) for _ in range(rng.randint(0, 30))),
                name=f"{chr(ord('a') + i)}{i}",
                cores=rng.choice((2, 4, 8, 16)),
            )
            for i in range(rng.randint(2, 6))
        }
    )
    for _ in range(8):
        moves, _, _ = run(snap, BallastState(hit_count=5))
        if not moves:
            break
        snap = moved(snap, moves)
    loads = [d.local_data.cpu.usage / d.local_data.cpu.limit for d in snap.brokers.values()]
    assert statistics.pstdev(loads) <= CONFIG.trigger_std or statistics.mean(loads) < 0.01


def test_a_broker_emptied_since_the_last_run_waits_one_run_a_new_one_does_not() -> None:
    # c held six bundles at the last run; now it is back empty (drained and restarted, as in
    # a rolling restart): it is left out of this run, since the next drain fills it for free.
    drained = cluster(a=(0.1,) * 9, b=(0.1,) * 9, c=())
    moves, state, stats = run(drained, BallastState(held={"a": 6, "b": 6, "c": 6}))
    assert moves == [] and stats["waiting"] == ["c"]
    assert state.held == {"a": 9, "b": 9, "c": 0}
    # Still idle at the next run (no drain came): it gets load at once.
    moves, _, stats = run(drained, state)
    assert moves and {m.destination for m in moves} == {"c"} and "waiting" not in stats
    assert moves[0].reason.kind is ReasonKind.UNDERLOADED
    # A broker the last run did not know is new: no waiting.
    moves, _, stats = run(drained, BallastState(held={"a": 9, "b": 9}))
    assert {m.destination for m in moves} == {"c"} and "waiting" not in stats
    # A broker whose traffic fell but which kept its bundles is not emptied.
    quiet = cluster(a=(0.1,) * 9, b=(0.1,) * 9, c=(0.001,) * 6)
    moves, _, stats = run(quiet, BallastState(held={"a": 9, "b": 9, "c": 6}))
    assert {m.destination for m in moves} == {"c"} and "waiting" not in stats


def test_when_many_brokers_are_emptied_at_once_none_waits() -> None:
    # Two of ten emptied at once: more than a rolling restart's batch (a tenth, at least
    # one), so the restart has swept the cluster and no drain will refill them.
    loads = {name: (0.1,) * 8 for name in "abcdefgh"}
    snap = cluster(**loads, i=(), j=())
    held = {name: 6 for name in "abcdefghij"}
    moves, _, stats = run(snap, BallastState(held=held))
    assert {m.destination for m in moves} == {"i", "j"} and "waiting" not in stats
    # One of ten emptied: it waits.
    snap = cluster(**loads, i=(0.1,) * 8, j=())
    moves, _, stats = run(snap, BallastState(held=held))
    assert moves == [] and stats["waiting"] == ["j"]


def test_a_waiting_broker_is_neither_a_trigger_nor_a_destination() -> None:
    # The rest of the cluster is unbalanced on its own: it is balanced among a, b and d, on
    # their own mean, while the emptied c waits.
    snap = cluster(a=(0.1,) * 9, b=(0.1,) * 3, c=(), d=(0.1,) * 6)
    moves, _, stats = run(snap, BallastState(hit_count=5, held={"a": 6, "b": 6, "c": 6, "d": 6}))
    assert stats["waiting"] == ["c"] and stats["loadAvg"] == pytest.approx(0.6)
    assert moves and all(m.destination != "c" for m in moves)
    after = loads_after(snap, moves)
    assert after["c"] == 0 and max(after.values()) <= 0.6 * CONFIG.target_max_over_mean


def test_an_empty_cluster_is_left_alone() -> None:
    # Below a thousandth of a broker on average there is nothing to balance.
    idle = cluster(a=(0.0001,) * 3, b=())
    moves, _, stats = run(idle, BallastState(hit_count=5))
    assert moves == [] and stats["reason"] == "HitCount"


def test_small_differences_are_left_alone() -> None:
    # One bundle of difference: moving it would only swap the roles.
    snap = cluster(a=(0.1,) * 5, b=(0.1,) * 4)
    assert run(snap, BallastState(hit_count=5))[0] == []


def test_a_swap_when_no_single_bundle_fits() -> None:
    snap = cluster(a=(0.3, 0.3), b=(0.25, 0.05))
    moves, _, _ = run(snap, BallastState(hit_count=5))
    assert {(m.source, m.destination) for m in moves} == {("a", "b"), ("b", "a")}
    after = loads_after(snap, moves)
    assert max(after.values()) < 0.6


def test_recently_unloaded_and_pending_bundles_stay_put() -> None:
    base = cluster(a=(0.1,) * 8, b=(0.1,) * 2)
    recent = {bundle("a", i): NOW - 1000 for i in range(4)}
    snap = snapshot({n: d.local_data for n, d in base.brokers.items()}, unloaded=recent)
    pending = {bundle("a", 4): PendingMove(source="a", destination="b", at_ms=NOW - 1000)}
    moves, _, _ = run(snap, BallastState(pending=pending, hit_count=5))
    assert moves
    assert not {str(m.bundle) for m in moves} & (set(recent) | set(pending))


def isolated(namespace: str, *primary: str) -> Policies:
    """An isolation policy keeping ``namespace`` on the ``primary`` brokers (host names)."""
    policy = {
        "iso": {
            "namespaces": [namespace],
            "primary": list(primary),
            "secondary": [],
            "auto_failover_policy": {
                "policy_type": "min_available",
                "parameters": {"min_limit": "1", "usage_threshold": "80"},
            },
        }
    }
    return Policies(isolation=IsolationPolicies.from_mapping(policy))


def test_isolated_namespaces_move_only_to_brokers_their_policy_allows() -> None:
    brokers = {
        "a:8080": broker(*(0.1,) * 8, name="a:8080", namespace="t/iso"),
        "b:8080": broker(name="b:8080"),
        "c:8080": broker(name="c:8080"),
    }
    snap = snapshot(brokers, policies=isolated("t/iso", "a", "c"))
    moves, _, _ = run(snap)
    assert moves and {m.destination for m in moves} == {"c:8080"}


@pytest.mark.parametrize("cap", [0.1, 0.25])
def test_a_broker_moves_at_most_its_share_per_run(cap: float) -> None:
    config = BallastShedderConfig.from_settings(
        settings(loadBalancerBallastMaxLoadMovedPerBroker=cap)
    )
    snap = cluster(a=(0.05,) * 16, b=())
    moves, _, _ = run(snap, config=config)
    assert len(moves) == round(cap / 0.05)


def test_a_bundle_larger_than_the_cap_still_leaves_an_overloaded_broker() -> None:
    # Both of a's bundles are above the 0.3 a broker may send in a run. Its first bundle of
    # a run is not held to the cap: a's relief onto the idle broker takes one move, and the
    # cap holds back the second (a second 0.45 would pass it).
    snap = cluster(a=(0.45, 0.45), b=(), c=(0.3,))
    moves, _, stats = run(snap)
    assert stats["outcome"] == "Success"
    assert [(m.source, m.destination) for m in moves] == [("a", "b")]
    assert loads_after(snap, moves) == {"a": 0.45, "b": 0.45, "c": 0.3}


def test_a_broker_receives_one_bundle_above_the_cap_and_no_more() -> None:
    # b and c are idle, and a's bundles are above the cap: each idle broker receives one of
    # them in this run, and a, having sent one, keeps the rest for the next run.
    snap = cluster(a=(0.35,) * 3, b=(), c=(), d=(0.35,))
    moves, _, _ = run(snap)
    assert [(m.source, m.destination) for m in moves] == [("a", "b")]
    more, _, _ = run(moved(snap, moves), BallastState(hit_count=5))
    assert [(m.source, m.destination) for m in more] == [("a", "c")]


def test_the_share_a_broker_receives_is_counted_in_its_own_load() -> None:
    # Each of a's bundles is 0.05 of its 4 cores and 0.1 of b's 2: b takes two of them and
    # reaches the 0.2 it may receive in a run (counted in a's load, it would take four).
    config = BallastShedderConfig.from_settings(
        settings(loadBalancerBallastMaxLoadMovedPerBroker=0.2)
    )
    snap = snapshot({"a": broker(*(0.05,) * 16, name="a", cores=4), "b": broker(name="b", cores=2)})
    moves, _, _ = run(snap, config=config)
    assert len(moves) == 2
    assert loads_after(snap, moves) == {"a": 0.7, "b": 0.2}


def test_a_broker_of_tiny_bundles_is_still_relieved() -> None:
    # 300 bundles of 0.003 (below the minimum improvement of 0.005 each) on one broker, as
    # after a fast restart of the whole cluster: the bundles move, the largest first.
    snap = cluster(a=(0.003,) * 300, b=(), c=())
    moves, _, stats = run(snap)
    assert stats["outcome"] == "Success"
    after = loads_after(snap, moves)
    assert after["a"] <= 0.9 - 0.2 and after["b"] >= 0.1 and after["c"] >= 0.1


UNLOADS = dataclasses.replace(CONFIG, transfer_enabled=False)


def test_with_transfers_off_unloads_are_pending_until_the_source_reports_them_gone() -> None:
    snap = cluster(a=(0.1,) * 8, b=(0.1,) * 2)
    result = find_bundles_to_unload(snap, BallastState(hit_count=5), UNLOADS, NOW)
    unloads = [d for d in result.decisions if isinstance(d, Unload)]
    assert len(unloads) == len(result.decisions) == 3
    assert {b: (m.source, m.destination) for b, m in result.state.pending.items()} == {
        str(u.bundle): ("a", "") for u in unloads
    }
    # Stale reports: the unloads are accounted for, nothing more is unloaded.
    again = find_bundles_to_unload(snap, result.state, UNLOADS, NOW + 60_000)
    assert again.decisions == () and len(again.state.pending) == 3
    # The source reports them gone (wherever the lookups placed them): forgotten.
    done = find_bundles_to_unload(
        moved(snap, [Transfer(u.bundle, "a", "b", u.reason) for u in unloads]),
        result.state,
        UNLOADS,
        NOW + 120_000,
    )
    assert done.state.pending == {}


def test_with_transfers_off_no_swap_is_planned() -> None:
    snap = cluster(a=(0.3, 0.3), b=(0.25, 0.05))
    result = find_bundles_to_unload(snap, BallastState(hit_count=5), UNLOADS, NOW)
    assert result.decisions == ()


def test_placement_never_puts_an_unloaded_bundle_back_on_the_broker_it_left() -> None:
    # a released the bundle a moment ago; its report still lists it and b is busier.
    base = cluster(a=(0.1,) * 3, b=(0.1,) * 5)
    leaving = bundle("a", 0)
    snap = snapshot({n: d.local_data for n, d in base.brokers.items()}, unloaded={leaving: NOW})
    placement = PlacementConfig.from_settings(settings(loadBalancerLoadPlacementStrategy="ballast"))
    choice, _ = least_predicted_load(
        snap, ("a", "b"), placement, PlacementState(), random.Random(1), bundle=leaving
    )
    assert choice.broker == "b"
    # The only candidate: it stays possible.
    alone, _ = least_predicted_load(
        snap, ("a",), placement, PlacementState(), random.Random(1), bundle=leaving
    )
    assert alone.broker == "a"
    # Not recently unloaded: the least loaded broker.
    fresh = bundle("b", 0)
    other, _ = least_predicted_load(
        snap, ("a", "b"), placement, PlacementState(), random.Random(1), bundle=fresh
    )
    assert other.broker == "a"


def test_a_run_begun_for_an_idle_broker_names_its_other_moves_for_the_spread() -> None:
    # c is idle and gets one of a's bundles, which leaves it above the mean: its own small
    # bundle then goes to b, a move away from the broker that was idle
    moves, _, _ = run(cluster(a=(0.47, 0.47), b=(0.29,), c=(0.047,)))
    assert [(m.source, m.destination, m.reason.kind) for m in moves] == [
        ("a", "c", ReasonKind.UNDERLOADED),
        ("c", "b", ReasonKind.OVERLOADED),
    ]
    assert moves[1].reason.text.startswith("c above the mean")
    assert "(the run began as broker c is idle" in moves[1].reason.text


def busy_elsewhere(name: str) -> LocalBrokerData:
    """A broker without bundles whose own report says its CPU is 95% used (something besides
    the brokers' traffic loads it)."""
    return msgspec.structs.replace(broker(name=name), cpu=ResourceUsage(usage=95.0, limit=100.0))


def test_a_broker_busy_besides_its_bundles_is_neither_idle_nor_a_destination() -> None:
    """It was taken for idle (its traffic predicts no load): shedding sent it a bundle at
    once and placement chose it, though its report put it past the overload threshold."""
    base = cluster(a=(0.1,) * 6, b=(0.1,) * 2)
    snap = snapshot(
        {**{n: d.local_data for n, d in base.brokers.items()}, "c": busy_elsewhere("c")}
    )
    moves, state, stats = run(snap)
    assert moves == [] and stats["reason"] == "HitCount"  # no idle broker: the spread waits
    moves, _, _ = run(snap, state)
    assert moves and {m.destination for m in moves} == {"b"}
    placement = PlacementConfig.from_settings(settings(loadBalancerLoadPlacementStrategy="ballast"))
    choice, _ = least_predicted_load(
        snap, ("a", "b", "c"), placement, PlacementState(), random.Random(1), bundle=bundle("x", 0)
    )
    assert choice.broker == "b"
    # Every candidate past the threshold: the choice is still made among them.
    alone, _ = least_predicted_load(
        snap, ("c",), placement, PlacementState(), random.Random(1), bundle=bundle("x", 0)
    )
    assert alone.broker == "c"


def test_an_idle_broker_no_movable_bundle_may_reach_does_not_make_a_run_urgent() -> None:
    """c, idle, is kept by isolation for a namespace that has no bundle elsewhere: it used to
    make every run urgent, so a burst on a and b was chased at once, past the swing rule."""
    brokers = {
        "a:8080": broker(*(0.1,) * 6, name="a:8080"),
        "b:8080": broker(*(0.1,) * 4, name="b:8080"),
        "c:8080": broker(name="c:8080"),
    }
    snap = snapshot(brokers, policies=isolated("t/iso", "c"))
    moves, state, stats = run(snap)
    assert moves == [] and stats["reason"] == "HitCount" and state.hit_count == 1
    # Once the spread has lasted, a and b are balanced between themselves; nothing goes to c.
    moves, _, _ = run(snap, state)
    assert [(m.source, m.destination) for m in moves] == [("a:8080", "b:8080")]


def test_an_idle_broker_only_bundles_of_light_brokers_may_reach_is_not_idle() -> None:
    """c is kept by isolation for t/iso, whose one bundle sits on d, below the mean: the
    balancing never takes from d, so c is not an idle broker to fill (it made the run urgent,
    and a→b moved at once, before the hit count)."""
    brokers = {
        "a:8080": broker(*(0.1,) * 6, name="a:8080"),
        "b:8080": broker(*(0.1,) * 4, name="b:8080"),
        "c:8080": broker(name="c:8080"),
        "d:8080": broker(0.1, name="d:8080", namespace="t/iso"),
    }
    moves, state, stats = run(snapshot(brokers, policies=isolated("t/iso", "c", "d")))
    assert moves == [] and stats["reason"] == "HitCount" and state.hit_count == 1


def test_a_full_broker_gets_no_bundle_back_in_a_swap() -> None:
    """a's report is past the overload threshold (its NIC): a swap sent it b's light bundle."""
    base = cluster(a=(0.3, 0.3), b=(0.25, 0.05))
    nic = ResourceUsage(usage=90.0, limit=100.0)
    full = msgspec.structs.replace(base.brokers["a"].local_data, bandwidth_in=nic)
    snap = snapshot({"a": full, "b": base.brokers["b"].local_data})
    _, state, _ = run(snap)
    moves, _, stats = run(snap, state)
    assert all(m.destination != "a" for m in moves)
    assert stats["full"] == ["a"]


def test_placement_keeps_off_a_full_broker_before_the_one_a_bundle_left() -> None:
    """The bundle just left a (healthy); b is past the overload threshold: a, not b."""
    base = cluster(a=(0.1,) * 3, b=(0.1,))
    leaving = bundle("a", 0)
    busy = msgspec.structs.replace(
        base.brokers["b"].local_data, cpu=ResourceUsage(usage=95.0, limit=100.0)
    )
    snap = snapshot({"a": base.brokers["a"].local_data, "b": busy}, unloaded={leaving: NOW})
    placement = PlacementConfig.from_settings(settings(loadBalancerLoadPlacementStrategy="ballast"))
    choice, _ = least_predicted_load(
        snap, ("a", "b"), placement, PlacementState(), random.Random(1), bundle=leaving
    )
    assert choice.broker == "a"
