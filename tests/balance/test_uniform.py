"""UniformLoadShedder: the max/min gap rules, the 1000 delta, Java int arithmetic, the caps."""

from __future__ import annotations

from ballast.balance.shedding.common import NoState, java_int, java_int_add
from ballast.balance.shedding.uniform import find_bundles_to_unload
from ballast.balance.snapshot import LoadSnapshot
from ballast.model.config import UniformShedderConfig
from tests.balance.build import MB, data, names, report, settings, snapshot

CONFIG = UniformShedderConfig.from_settings(settings())
B = [f"t/ns/0x{i:08x}_0x{i + 1:08x}" for i in range(12)]


def shed(snap: LoadSnapshot, config: UniformShedderConfig = CONFIG) -> list[str]:
    return names(find_bundles_to_unload(snap, NoState(), config, 0).decisions)


def test_throughput_gap_against_a_new_empty_broker() -> None:
    # Pulsar's testBrokerWithMultipleBundles in miniature: min throughput 0 counts as 1.0;
    # required = (int)((60 MB - 1) * 0.2) = 12582911; 10 MB fits, 8..4 MB exceed the remaining
    # 2097151 + 1000, 2 MB (2097152) fits.
    bundles = {b: data(mb * MB) for b, mb in zip(B, [10, 8, 6, 4, 2], strict=False)}
    snap = snapshot({"busy": report(tput=60 * MB, bundles=B[:5]), "new": report()}, bundles)
    result = find_bundles_to_unload(snap, NoState(), CONFIG, 0)
    assert names(result.decisions) == [B[0], B[4]]
    assert result.stats["required"] == 12582911
    assert result.stats["minMsgThroughput"] == 1.0


def test_message_rate_rule_has_priority() -> None:
    # Rates 10000 vs 2000 (gap 400% > 50%) and throughputs 50 MB vs 5 MB (ratio 10 > 4):
    # required = (int)(8000 * 0.2) = 1600 msg/s by short-term msg rate.
    bundles = {B[0]: data(40 * MB, 2700), B[1]: data(1 * MB, 1500), B[2]: data(9 * MB, 600)}
    snap = snapshot(
        {
            "busy": report(tput=50 * MB, rate=10000, bundles=B[:3]),
            "calm": report(tput=5 * MB, rate=2000),
        },
        bundles,
    )
    result = find_bundles_to_unload(snap, NoState(), CONFIG, 0)
    assert result.stats["metric"] == "rate"
    # 2700 > 1600 + 1000; 1500 <= 2600 -> remaining 100; 600 <= 1100 -> taken.
    assert names(result.decisions) == [B[1], B[2]]


def test_within_thresholds_or_disabled_rules_decide_nothing() -> None:
    bundles = {B[0]: data(3 * MB), B[1]: data(3 * MB)}
    close = snapshot(
        {"a": report(tput=6 * MB, rate=1400, bundles=B[:2]), "b": report(tput=2 * MB, rate=1000)},
        bundles,
    )
    assert shed(close) == []  # rate gap 40% <= 50%, ratio 3 <= 4
    far = snapshot({"a": report(tput=60 * MB, bundles=B[:2]), "b": report(tput=MB)}, bundles)
    disabled = UniformShedderConfig.from_settings(
        settings(loadBalancerMsgThroughputMultiplierDifferenceShedderThreshold=0.0)
    )
    assert shed(far) != [] and shed(far, disabled) == []


def test_minimum_amount_gate_and_sole_bundle() -> None:
    bundles = {B[0]: data(0.3 * MB), B[1]: data(0.3 * MB)}
    small = snapshot({"a": report(tput=5 * MB, bundles=B[:2]), "b": report(tput=MB)}, bundles)
    result = find_bundles_to_unload(small, NoState(), CONFIG, 0)
    assert result.decisions == () and result.stats["required"] == int(4 * MB * 0.2)
    sole = snapshot({"a": report(tput=60 * MB, bundles=B[:1]), "b": report(tput=MB)}, bundles)
    assert find_bundles_to_unload(sole, NoState(), CONFIG, 0).stats["reason"] == "NoBundles"


def test_zero_metric_and_recent_bundles_are_skipped_and_cap_applies() -> None:
    bundles = {B[0]: data(0.0), B[1]: data(2 * MB), B[2]: data(2 * MB), B[3]: data(2 * MB)}
    snap = snapshot(
        {"a": report(tput=60 * MB, bundles=B[:4]), "b": report(tput=MB)},
        bundles,
        unloaded={B[1]: 1},
    )
    assert shed(snap) == [B[2], B[3]]
    capped = UniformShedderConfig.from_settings(settings(maxUnloadBundleNumPerShedding=1))
    assert shed(snap, capped) == [B[2]]


def test_first_broker_wins_ties_for_the_maximum() -> None:
    bundles = {b: data(MB) for b in B[:4]}
    snap = snapshot(
        {
            "first": report(tput=60 * MB, bundles=B[:2]),
            "second": report(tput=60 * MB, bundles=B[2:4]),
            "idle": report(),
        },
        bundles,
    )
    result = find_bundles_to_unload(snap, NoState(), CONFIG, 0)
    assert {d.broker for d in result.decisions} == {"first"}


def test_java_int_arithmetic() -> None:
    assert java_int(2.9) == 2 and java_int(-2.9) == -2
    assert java_int(1e12) == 2**31 - 1 and java_int(float("nan")) == 0
    assert java_int_add(2**31 - 1, 1000) == -(2**31) + 999
