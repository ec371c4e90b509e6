"""TransferShedder (extensible load manager): statistics, cool-down, hit count, pairing, the
swap, the last-bundle and zero-throughput rules, transferability (scenarios of Pulsar's
TransferShedderTest, rebuilt by hand)."""

from __future__ import annotations

import pytest

from ballast.balance.decisions import ReasonKind, Transfer, Unload
from ballast.balance.javamap import java_hash_map_order, java_string_hash
from ballast.balance.shedding.common import SheddingResult
from ballast.balance.shedding.transfer import find_bundles_to_unload
from ballast.balance.shedding.transfer_data import TransferState, top_bundles
from ballast.balance.snapshot import BrokerLoad, LoadSnapshot, Policies
from ballast.model.config import TransferShedderConfig
from ballast.model.policies import IsolationPolicies
from tests.balance.build import MB, report, settings, snapshot, stats

T = 1_700_000_000_000
NOW = T + 1000
EAGER = {"loadBalancerSheddingConditionHitCountThreshold": 0}
CONFIG = TransferShedderConfig.from_settings(settings(**EAGER))


def bundle(ns: str, i: int) -> str:
    return f"my-tenant/{ns}/0x{i:08x}_0x{i + 1:08x}"


def five_brokers(**overrides: object) -> dict[str, object]:
    """Pulsar's setupContext: broker1..5 at 2, 4, 6, 80, 90% CPU, two bundles each."""
    spec = {1: (2, 1, 2), 2: (4, 1, 3), 3: (6, 2, 4), 4: (80, 2, 6), 5: (90, 2, 7)}
    brokers = {}
    for n, (cpu, small, big) in spec.items():
        ns = f"ns{n}"
        top = {bundle(ns, 0): stats(small * MB), bundle(ns, 1): stats(big * MB)}
        brokers[f"broker{n}:8080"] = report(
            cpu=cpu, tput=(small + big) * MB, bundles=top, stats=top, last_update=T
        )
    brokers.update(overrides)
    return brokers


def run(
    snap: LoadSnapshot, config: TransferShedderConfig = CONFIG, state: TransferState | None = None
) -> SheddingResult[TransferState]:
    return find_bundles_to_unload(snap, state or TransferState(), config, NOW)


def moves(result: SheddingResult[TransferState]) -> list[tuple[str, str, str | None]]:
    out = []
    for d in result.decisions:
        if isinstance(d, Transfer):
            out.append((str(d.bundle), d.source, d.destination))
        else:
            assert isinstance(d, Unload)
            out.append((str(d.bundle), d.broker, None))
    return out


def test_heaviest_pairs_with_lightest_and_never_moves_the_last_top_bundle() -> None:
    result = run(snapshot(five_brokers()))
    assert moves(result) == [
        (bundle("ns5", 0), "broker5:8080", "broker1:8080"),
        (bundle("ns4", 0), "broker4:8080", "broker2:8080"),
    ]
    assert result.stats["loadAvg"] == pytest.approx(0.364)
    assert result.decisions[0].reason.kind is ReasonKind.OVERLOADED
    assert result.state.hit_count == 0


def test_cool_down_stops_the_run_and_old_entries_expire() -> None:
    recent = snapshot(five_brokers(), unloaded_brokers={"broker1:8080": T - 60_000})
    result = run(recent)
    assert result.decisions == () and result.stats["reason"] == "CoolDown"
    old = snapshot(five_brokers(), unloaded_brokers={"broker1:8080": T - 181_000})
    result = run(old)
    assert len(result.decisions) == 2
    assert result.expired_unloaded_brokers == ("broker1:8080",)


def test_outdated_data_is_ignored() -> None:
    stale = snapshot(five_brokers())
    result = find_bundles_to_unload(stale, TransferState(), CONFIG, T + 1_800_001)
    assert result.decisions == () and result.stats["reason"] == "OutDatedData"


def test_hit_count_must_exceed_its_threshold_and_resets_after_a_decision() -> None:
    config = TransferShedderConfig.from_settings(settings())  # threshold 3
    snap = snapshot(five_brokers())
    state = TransferState()
    for expected in (1, 2, 3):
        result = find_bundles_to_unload(snap, state, config, NOW)
        assert result.decisions == () and result.stats["reason"] == "HitCount"
        assert result.state.hit_count == expected
        state = result.state
    fourth = find_bundles_to_unload(snap, state, config, NOW)
    assert len(fourth.decisions) == 2 and fourth.state.hit_count == 0


def test_balanced_cluster_resets_the_hit_count() -> None:
    even = {
        f"b{i}": report(
            cpu=50,
            tput=4 * MB,
            stats={bundle(f"n{i}", 0): stats(2 * MB), bundle(f"n{i}", 1): stats(2 * MB)},
            last_update=T,
        )
        for i in range(3)
    }
    result = run(snapshot(even), state=TransferState(hit_count=5))
    assert result.decisions == () and result.state.hit_count == 0


def test_without_transfer_it_unloads() -> None:
    config = TransferShedderConfig.from_settings(
        settings(loadBalancerTransferEnabled=False, **EAGER)
    )
    assert moves(run(snapshot(five_brokers()), config)) == [
        (bundle("ns5", 0), "broker5:8080", None),
        (bundle("ns4", 0), "broker4:8080", None),
    ]


def test_recently_unloaded_zero_throughput_and_sole_bundles_are_not_moved() -> None:
    recent = snapshot(five_brokers(), unloaded={bundle("ns5", 0): T})
    assert [m[1] for m in moves(run(recent))] == ["broker4:8080"]
    zero_top = {
        bundle("ns5", 0): stats(0.0),
        bundle("ns5", 2): stats(MB),
        bundle("ns5", 1): stats(7 * MB),
    }
    zero = five_brokers(
        **{"broker5:8080": report(cpu=90, tput=8 * MB, stats=zero_top, last_update=T)}
    )
    assert moves(run(snapshot(zero)))[0] == (bundle("ns5", 2), "broker5:8080", "broker1:8080")
    sole_top = {bundle("ns5", 1): stats(9 * MB)}
    sole = five_brokers(
        **{"broker5:8080": report(cpu=90, tput=9 * MB, stats=sole_top, last_update=T)}
    )
    assert [m[1] for m in moves(run(snapshot(sole)))] == ["broker4:8080"]


def test_max_brokers_per_cycle() -> None:
    config = TransferShedderConfig.from_settings(
        settings(loadBalancerMaxNumberOfBrokerSheddingPerCycle=1, **EAGER)
    )
    assert [m[1] for m in moves(run(snapshot(five_brokers()), config))] == ["broker5:8080"]


def test_swap_sends_light_bundles_back_when_a_move_would_overshoot() -> None:
    # heavy: 0.9, two 5 MB bundles; light: 0.1, two 1 MB bundles. Target 4.44 MB < 5 MB, so
    # the 5 MB bundle moves only with a 1 MB bundle coming back (6 MB vs 6 MB afterwards).
    # Equal bundles come out of Pulsar's top-k partition sort in reverse order.
    heavy_top = {bundle("h", 0): stats(5 * MB), bundle("h", 1): stats(5 * MB)}
    light_top = {bundle("l", 0): stats(MB), bundle("l", 1): stats(MB)}
    snap = snapshot(
        {
            "heavy": report(cpu=90, tput=10 * MB, stats=heavy_top, last_update=T),
            "light": report(cpu=10, tput=2 * MB, stats=light_top, last_update=T),
        }
    )
    assert moves(run(snap)) == [
        (bundle("l", 1), "light", "heavy"),
        (bundle("h", 1), "heavy", "light"),
    ]
    no_transfer = TransferShedderConfig.from_settings(
        settings(loadBalancerTransferEnabled=False, **EAGER)
    )
    assert moves(run(snap, no_transfer)) == []


def test_bundles_with_policies_stay_unless_enabled() -> None:
    snap = snapshot(five_brokers(), policies=Policies(anti_affinity_groups={"my-tenant/ns5": "g"}))
    # ns5 is not reported among broker5's top bundles: broker5 has nothing to move, and the
    # next pair is broker4 -> broker1 (the lightest broker received nothing yet).
    assert moves(run(snap)) == [(bundle("ns4", 0), "broker4:8080", "broker1:8080")]
    enabled = TransferShedderConfig.from_settings(
        settings(loadBalancerSheddingBundlesWithPoliciesEnabled=True, **EAGER)
    )
    assert moves(run(snap, enabled)) == [
        (bundle("ns5", 0), "broker5:8080", "broker1:8080"),
        (bundle("ns4", 0), "broker4:8080", "broker2:8080"),
    ]


def test_a_destination_outside_the_isolation_policy_is_not_transferable() -> None:
    isolation = IsolationPolicies.from_mapping(
        {"p": {"namespaces": ["my-tenant/ns5"], "primary": ["broker5"]}}
    )
    enabled = TransferShedderConfig.from_settings(
        settings(loadBalancerSheddingBundlesWithPoliciesEnabled=True, **EAGER)
    )
    snap = snapshot(five_brokers(), policies=Policies(isolation=isolation))
    # ns5 may live on broker5 only; broker1 is shared and takes ns4's bundle instead.
    assert moves(run(snap, enabled)) == [(bundle("ns4", 0), "broker4:8080", "broker1:8080")]


def test_underloaded_reason_when_the_spread_is_small() -> None:
    # Loads 0.5, 0.55, 0.6 (std 0.04) but the lightest moves 10 B/s vs the heaviest's 10 MB/s.
    def top(name: str, mb: float) -> dict[str, object]:
        return {bundle(name, 0): stats(mb * MB), bundle(name, 1): stats(mb * MB)}

    snap = snapshot(
        {
            "idle": report(cpu=50, tput=10, stats=top("i", 0.000005), last_update=T),
            "mid": report(cpu=55, tput=4 * MB, stats=top("m", 2), last_update=T),
            "busy": report(cpu=60, tput=10 * MB, stats=top("b", 5), last_update=T),
        }
    )
    result = run(snap)
    assert result.decisions[0].reason.kind is ReasonKind.UNDERLOADED
    # 5 MB overshoots the 0.83 MB target; sending one of idle's tiny bundles back balances it.
    assert moves(result) == [
        (bundle("i", 1), "idle", "busy"),
        (bundle("b", 1), "busy", "idle"),
    ]


def test_load_averages_come_from_state_reports_or_given_data() -> None:
    snap = snapshot(five_brokers())
    first = run(snap)
    assert first.state.broker_load["broker5:8080"] == BrokerLoad(
        weighted_max_ema=0.9, msg_throughput_ema=9 * MB, updated_at_ms=T
    )
    again = run(snap, state=first.state)
    assert again.state.broker_load == first.state.broker_load
    newer = snapshot(
        five_brokers(**{"broker5:8080": report(cpu=10, tput=9 * MB, last_update=T + 1)})
    )
    ema = run(newer, state=first.state).state.broker_load["broker5:8080"]
    assert ema.weighted_max_ema == pytest.approx(0.9 * 0.9 + 0.1 * 0.1)
    # A minute later (12 report checks of 5 s): the broker folded its old usage in 11 times,
    # then the new one.
    later = snapshot(
        five_brokers(**{"broker5:8080": report(cpu=10, tput=9 * MB, last_update=T + 60_000)})
    )
    ema = run(later, state=first.state).state.broker_load["broker5:8080"]
    assert ema.weighted_max_ema == pytest.approx(0.9 * 0.9 + 0.1 * 0.1)  # old usage 0.9 kept
    moved = snapshot(
        five_brokers(**{"broker5:8080": report(cpu=10, tput=9 * MB, last_update=T + 1)})
    )
    once = run(moved, state=first.state).state
    settled = snapshot(
        five_brokers(**{"broker5:8080": report(cpu=10, tput=9 * MB, last_update=T + 60_001)})
    )
    ema = run(settled, state=once).state.broker_load["broker5:8080"]
    assert ema.weighted_max_ema == pytest.approx(0.1 + (0.82 - 0.1) * 0.9**12)
    given = snapshot(
        five_brokers(),
        broker_load={
            "broker5:8080": BrokerLoad(
                weighted_max_ema=0.03, msg_throughput_ema=1.0, updated_at_ms=T
            )
        },
    )
    assert next(m[1] for m in moves(run(given))) == "broker4:8080"


def test_top_bundles_are_the_k_heaviest_lightest_first_without_excluded_or_system() -> None:
    stats_map = {
        bundle("a", 0): stats(3 * MB),
        bundle("a", 1): stats(9 * MB),
        "pulsar/system/0x00000000_0x10000000": stats(50 * MB),
        bundle("x", 0): stats(40 * MB),
        bundle("a", 2): stats(5 * MB),
    }
    snap = snapshot({"b": report(stats=stats_map)})
    config = TransferShedderConfig.from_settings(
        settings(
            loadBalancerMaxNumberOfBundlesInBundleLoadReport=2,
            loadBalancerSheddingExcludedNamespaces=("my-tenant/x",),
        )
    )
    assert [name for name, _ in top_bundles(snap, "b", config)] == [bundle("a", 2), bundle("a", 1)]


def test_debug_mode_counts_swapped_traffic_as_pulsar_does() -> None:
    heavy_top = {bundle("h", 0): stats(5 * MB), bundle("h", 1): stats(5 * MB)}
    light_top = {bundle("l", 0): stats(MB), bundle("l", 1): stats(MB)}
    snap = snapshot(
        {
            "heavy": report(cpu=90, tput=10 * MB, stats=heavy_top, last_update=T),
            "light": report(cpu=10, tput=2 * MB, stats=light_top, last_update=T),
        }
    )
    debug = TransferShedderConfig.from_settings(
        settings(loadBalancerDebugModeEnabled=True, **EAGER)
    )
    plain_std = run(snap).stats["stdAfter"]
    debug_std = run(snap, debug).stats["stdAfter"]
    # Without debug the 1 MB coming back is not subtracted: 5 MB * 0.9 / 10 MB = 0.45 of load
    # is taken as moved (loads 0.45 / 0.55); with it, 4 MB: 0.36 (0.54 / 0.46). Two brokers:
    # std = |load - avg|.
    assert plain_std[0] == pytest.approx(abs((0.9 - 0.45) - 0.5))
    assert debug_std[0] == pytest.approx(abs((0.9 - 0.36) - 0.5))


def test_java_hash_map_order() -> None:
    assert java_string_hash("hello") == 99162322  # "hello".hashCode() in Java
    assert java_string_hash("polygenelubricants") == 2**31  # Integer.MIN_VALUE, unsigned here
    keys = [f"broker{i}:8080" for i in range(1, 6)]
    assert java_hash_map_order(keys) == [
        "broker4:8080",
        "broker1:8080",
        "broker2:8080",
        "broker5:8080",
        "broker3:8080",
    ]
