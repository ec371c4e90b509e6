"""AvgShedder (PIP-364): pairs from both ends of the ranking, hit counts against the low and
high thresholds, the traffic gap to move, and its placement sending each bundle to its pair."""

from __future__ import annotations

import dataclasses
import math
import random

from ballast.balance.cycle import run_shedding_cycle
from ballast.balance.decisions import ReasonKind, Transfer
from ballast.balance.placement.select import select_broker
from ballast.balance.placement.strategies import PlacementState, paired_or_random
from ballast.balance.shedding.avg import AvgState, find_bundles_to_unload
from ballast.balance.shedding.registry import shedding_strategy
from ballast.balance.snapshot import LoadSnapshot
from ballast.model.config import AvgShedderConfig, PlacementConfig, SheddingConfig
from tests.balance.build import MB, data, names, report, settings, snapshot

CONFIG = AvgShedderConfig.from_settings(settings())
B = [f"t/ns/0x{i:08x}_0x{i + 1:08x}" for i in range(12)]


def four_brokers(
    rates: tuple[int, ...] = (4000, 3000, 1500, 1000, 500, 3000, 2000, 1000),
) -> LoadSnapshot:
    """a at 90% CPU, b 60%, c 30%, d 10%: the pairs (d, a), 80 points apart (past the high
    threshold), and (c, b), 30 apart (past the low one only). a carries 10,000 msg/s in
    five bundles, d 0; b 13,000 in three, c 3,000 (the bundles' ``rates`` aside)."""
    bundles = {b: data(rate * 1024, rate) for b, rate in zip(B, rates, strict=False)}
    return snapshot(
        {
            "a": report(cpu=90, rate=10000, tput=10000 * 1024, bundles=B[:5]),
            "b": report(cpu=60, rate=13000, tput=13000 * 1024, bundles=B[5:8]),
            "c": report(cpu=30, rate=3000, tput=3000 * 1024),
            "d": report(cpu=10),
        },
        bundles,
    )


def run(snap: LoadSnapshot, state: AvgState) -> tuple[list[Transfer], AvgState, dict[str, object]]:
    result = find_bundles_to_unload(snap, state, CONFIG, 0)
    moves = [d for d in result.decisions if isinstance(d, Transfer)]
    assert len(moves) == len(result.decisions)
    return moves, result.state, dict(result.stats)


def test_pairs_count_their_runs_and_act_past_the_high_threshold_on_the_second() -> None:
    snap = four_brokers()
    moves, state, stats = run(snap, AvgState())
    assert stats["pairs"] == [["d", "a"], ["c", "b"]]
    assert moves == []  # one run is not enough for either pair
    assert state.hit_high == {"d": 1, "a": 1}
    assert state.hit_low == {"d": 1, "a": 1, "c": 1, "b": 1}
    moves, state, _ = run(snap, state)
    # (10000 - 0) msg/s * maxUnloadPercentage 0.2 = 2000 msg/s, heaviest first within what is
    # left: 4000 and 3000 are more, 1500 fits (500 left), 1000 does not, 500 does.
    assert names(moves) == [B[2], B[4]]
    assert {(m.source, m.destination) for m in moves} == {("a", "d")}
    # The placement picks the destination (only avg's sends it to the pair): say "pair".
    assert moves[0].reason.text == (
        "a scores 90.0 against d's 10.0, its pair; shedding 2000 msg/s; bundle 1500 msg/s"
    )
    # The pair that acted starts again; (c, b) keeps counting towards the low hit count (8).
    assert state.hit_high == {} and state.hit_low == {"c": 2, "b": 2}


def test_a_pair_past_the_low_threshold_only_waits_the_low_hit_count() -> None:
    snap = four_brokers()
    state = AvgState(hit_low={"c": 7, "b": 7})
    moves, state, _ = run(snap, state)
    # (13000 - 3000) * 0.2 = 2000 msg/s: 3000 is more, 2000 fits (nothing left).
    assert [(str(m.bundle), m.source, m.destination) for m in moves] == [(B[6], "b", "c")]
    assert "b" not in state.hit_low and "c" not in state.hit_low


def test_close_brokers_clear_their_counts_and_no_pair_clears_all() -> None:
    near = snapshot({"a": report(cpu=50, rate=9000), "b": report(cpu=40, rate=1000)})
    moves, state, stats = run(near, AvgState(hit_high={"a": 1, "z": 3}, hit_low={"b": 5}))
    assert moves == [] and stats["reason"] == "Balanced"
    assert state == AvgState()  # no pair at all: every count goes, a departed broker's too


def test_too_small_a_gap_in_traffic_moves_nothing() -> None:
    # 80 usage points apart, but only 4,000 msg/s (800 to move: not more than minUnloadMessage,
    # 1000) and 1 MiB/s (0.2 MiB/s: not more than minUnloadMessageThroughput, 1 MiB/s).
    bundles = {B[0]: data(MB / 2, 2000), B[1]: data(MB / 2, 2000)}
    quiet = snapshot(
        {"a": report(cpu=90, rate=4000, tput=MB, bundles=B[:2]), "b": report()}, bundles
    )
    moves, _, stats = run(quiet, AvgState(hit_high={"a": 5, "b": 5}))
    assert moves == [] and stats["skipped"] == [
        {"pair": ["b", "a"], "why": "traffic gap below the minimum"}
    ]
    # The pair waited long enough: it said "HitCount", the reason for a pair still waiting.
    assert stats["reason"] == "NoBundles"


def test_a_pair_that_waited_but_has_no_bundle_that_fits_says_so() -> None:
    snap = four_brokers()
    _, _, waiting = run(snap, AvgState())
    assert waiting["reason"] == "HitCount"  # one run is not enough
    heavy = four_brokers((2500,) * 8)  # each more than the 2,000 msg/s to move
    moves, _, stats = run(heavy, AvgState(hit_high={"a": 1}))
    assert moves == [] and stats["reason"] == "NoBundles"


def test_scores_less_than_a_point_apart_keep_the_snapshot_order() -> None:
    # Pulsar's comparison is (int) (a - b): 10.9 and 10.1 compare equal, so p (first in the
    # snapshot) ranks below q although it scores more, and pairs with the busiest; q is left
    # in the middle, unpaired. An exact sort would pair q.
    snap = snapshot({"p": report(cpu=10.9), "q": report(cpu=10.1), "hot": report(cpu=40)})
    _, _, stats = run(snap, AvgState())
    assert stats["pairs"] == [["p", "hot"]]


def test_the_reason_says_paired_or_random() -> None:
    snap = four_brokers()
    config = dataclasses.replace(PlacementConfig.from_settings(settings()), strategy="avg")
    state = PlacementState(paired={B[2]: "d"})
    paired = select_broker(snap, B[2], config, state, random.Random(3))
    assert (paired.broker, paired.reason.kind) == ("d", ReasonKind.PAIRED)
    other = select_broker(snap, B[0], config, state, random.Random(3))
    assert other.reason.kind is ReasonKind.RANDOM


def test_the_placement_sends_a_bundle_to_its_pair_and_others_at_random() -> None:
    snap = four_brokers()
    config = PlacementConfig.from_settings(settings())
    state = PlacementState(paired={B[2]: "d"})
    rng = random.Random(7)
    choice, _ = paired_or_random(snap, ("a", "b", "c", "d"), config, state, rng, bundle=B[2])
    assert choice.broker == "d"
    choice, _ = paired_or_random(snap, ("a", "b", "c"), config, state, rng, bundle=B[2])
    assert choice.broker in {"a", "b", "c"}  # its pair is no candidate: at random
    seen = {
        paired_or_random(snap, ("a", "b", "c", "d"), config, state, rng, bundle=B[0])[0].broker
        for _ in range(50)
    }
    assert seen == {"a", "b", "c", "d"}


def test_a_random_pick_replaces_a_pair_that_is_gone() -> None:
    """Pulsar's ``bundleBrokerMap`` keeps the pick: a bundle whose pair was drained goes to its
    new owner, and on its next placement it must not return to the old pair (d, back)."""
    snap = four_brokers()
    config = PlacementConfig.from_settings(settings())
    state = PlacementState(paired={B[2]: "d", B[4]: "d"})
    choice, state = paired_or_random(
        snap, ("a", "b", "c"), config, state, random.Random(1), bundle=B[2]
    )
    assert choice.broker in {"a", "b", "c"}
    assert state.paired == {B[2]: choice.broker, B[4]: "d"}
    again, _ = paired_or_random(
        snap, ("a", "b", "c", "d"), config, state, random.Random(2), bundle=B[2]
    )
    assert (again.broker, again.kind) == (choice.broker, ReasonKind.PAIRED)
    # a bundle never paired is placed at random and not remembered
    _, unchanged = paired_or_random(snap, ("a", "b"), config, state, random.Random(3), bundle=B[0])
    assert unchanged is state


def test_the_cycle_moves_each_bundle_to_the_broker_it_was_paired_with() -> None:
    """Through the load manager's cycle with AvgShedder as shedding and placement: every
    move lands on d (least_long_term_message_rate would choose by message rate)."""
    shedder = shedding_strategy("avg")
    result = run_shedding_cycle(
        four_brokers(),
        shedder,
        AvgState(hit_high={"a": 1, "d": 1}),
        CONFIG,
        shedding=SheddingConfig.from_settings(settings()),
        placement=dataclasses.replace(PlacementConfig.from_settings(settings()), strategy="avg"),
        placement_state=PlacementState(),
        rng=random.Random(1),
        now_ms=0,
    )
    assert [
        (str(m.bundle), m.destination) for m in result.decisions if isinstance(m, Transfer)
    ] == [
        (B[2], "d"),
        (B[4], "d"),
    ]
    assert result.placement_state.paired == {B[2]: "d", B[4]: "d"}
    assert all("the broker AvgShedder paired" in m.reason.text for m in result.decisions)


def test_infinite_usages_are_ranked_as_java_ranks_them() -> None:
    # Pulsar compares scores with (int) (a - b): Java's (int) of an infinity saturates, and of
    # NaN (two infinite scores apart) is 0. Brokers reporting infinite usage are ranked, not
    # an error: b and c tie, d and a rank below them as by their scores.
    snap = snapshot(
        {
            "a": report(cpu=90, rate=10000, tput=10000 * 1024, bundles=B[:5]),
            "b": report(cpu=math.inf),
            "c": report(cpu=math.inf),
            "d": report(cpu=10),
        },
        {b: data(1000 * 1024, 1000) for b in B[:5]},
    )
    _, state, stats = run(snap, AvgState())
    assert stats["pairs"] == [["d", "c"], ["a", "b"]]
    assert state.hit_high == {"d": 1, "c": 1, "a": 1, "b": 1}
