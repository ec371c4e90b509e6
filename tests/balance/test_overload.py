"""OverloadShedder, rule by rule (Pulsar's OverloadShedderTest and its edge cases)."""

from __future__ import annotations

from ballast.balance.decisions import ReasonKind
from ballast.balance.shedding.common import NoState
from ballast.balance.shedding.overload import find_bundles_to_unload
from ballast.balance.snapshot import LoadSnapshot
from ballast.model.config import OverloadShedderConfig
from ballast.model.loaddata import BundleData
from tests.balance.build import MB, averages, data, names, report, settings, snapshot

CONFIG = OverloadShedderConfig.from_settings(settings())
B = [f"t/ns/0x{i:08x}_0x{i + 1:08x}" for i in range(6)]


def shed(snap: LoadSnapshot, config: OverloadShedderConfig = CONFIG) -> list[str]:
    return names(find_bundles_to_unload(snap, NoState(), config, 0).decisions)


def test_sheds_heaviest_bundles_until_the_excess_plus_margin_is_marked() -> None:
    # usage 0.95 -> offload (0.95 - 0.85 + 0.05) * 100 MB = 15 MB: 10 MB, then 8 MB (18 >= 15).
    snap = snapshot(
        {"a": report(bandwidth=95, tput=100 * MB, bundles=B[:4])},
        {B[0]: data(2 * MB), B[1]: data(10 * MB), B[2]: data(8 * MB), B[3]: data(5 * MB)},
    )
    result = find_bundles_to_unload(snap, NoState(), CONFIG, 0)
    assert names(result.decisions) == [B[1], B[2]]
    assert {d.broker for d in result.decisions} == {"a"}
    assert result.decisions[0].reason.kind is ReasonKind.OVERLOADED
    assert "95.0% >= overload threshold 85.0%" in result.decisions[0].reason.text


def test_exactly_at_the_threshold_qualifies_just_below_does_not() -> None:
    bundles = {B[0]: data(MB), B[1]: data(2 * MB)}
    at = snapshot({"a": report(cpu=85, tput=3 * MB, bundles=B[:2])}, bundles)
    below = snapshot({"a": report(cpu=84.9, tput=3 * MB, bundles=B[:2])}, bundles)
    assert shed(at) == [B[1]]  # at least one bundle, even when 5% of 3 MB is less than it
    assert shed(below) == []


def test_a_broker_with_one_bundle_or_none_is_left_alone() -> None:
    one = snapshot({"a": report(cpu=99, tput=MB, bundles=B[:1])}, {B[0]: data(MB)})
    none = snapshot({"a": report(cpu=99, tput=MB)}, {B[0]: data(MB)})
    assert shed(one) == [] and shed(none) == []
    stats = find_bundles_to_unload(one, NoState(), CONFIG, 0).stats
    assert stats["overloadedBrokers"] == {
        "a": {
            "usage": 0.99,
            "minimumThroughputToOffload": MB * (0.99 - 0.85 + 0.05),
            "skipped": "sole bundle is overloading the broker",
        }
    }
    # Not "Balanced": a broker was overloaded and could not be relieved.
    assert (stats["reason"], stats["detail"]) == (
        "NoBundles",
        "every flagged broker was skipped (a: sole bundle is overloading the broker)",
    )
    calm = find_bundles_to_unload(snapshot({"a": report(cpu=50)}, {}), NoState(), CONFIG, 0)
    assert calm.stats["reason"] == "Balanced"


def test_only_its_own_bundles_with_data_not_recently_unloaded_and_not_system() -> None:
    system = "pulsar/system/0x00000000_0x10000000"
    heartbeat = "pulsar/10.0.0.1:8080/0x00000000_0xffffffff"
    snap = snapshot(
        {
            "a": report(cpu=99, tput=100 * MB, bundles=[B[0], B[1], B[2], B[3], system, heartbeat]),
            "b": report(bundles=[B[4]]),
        },
        {
            B[0]: data(50 * MB),  # recently unloaded
            B[1]: data(1 * MB),
            B[4]: data(90 * MB),  # another broker's
            system: data(90 * MB),
            heartbeat: data(90 * MB),
            # B[2] and B[3] have no bundle data
        },
        unloaded={B[0]: 1},
    )
    assert shed(snap) == [B[1]]
    # With B[1] recently unloaded too, nothing may move: the outcome says so ("a: None").
    both = snapshot(
        {"a": report(cpu=99, tput=100 * MB, bundles=[B[0], B[1]]), "b": report()},
        {B[0]: data(50 * MB), B[1]: data(1 * MB)},
        unloaded={B[0]: 1, B[1]: 1},
    )
    stats = find_bundles_to_unload(both, NoState(), CONFIG, 0).stats
    assert stats["detail"] == "every flagged broker was skipped (a: no bundle that may move)"


def test_equal_throughputs_keep_bundle_data_order() -> None:
    bundles = {B[3]: data(MB), B[1]: data(MB), B[2]: data(MB)}
    snap = snapshot({"a": report(cpu=100, tput=100 * MB, bundles=B[1:4])}, bundles)
    assert shed(snap) == [B[3], B[1], B[2]]


def test_usage_is_weighted() -> None:
    snap = snapshot(
        {"a": report(bandwidth=99, tput=MB, bundles=B[:2])}, {B[0]: data(MB), B[1]: data(MB)}
    )
    no_bandwidth = OverloadShedderConfig.from_settings(
        settings(
            loadBalancerBandwidthInResourceWeight=0.0, loadBalancerBandwidthOutResourceWeight=0.0
        )
    )
    assert shed(snap) == [B[0]]
    assert shed(snap, no_bandwidth) == []


def test_every_overloaded_broker_sheds_in_snapshot_order() -> None:
    snap = snapshot(
        {
            "a": report(cpu=99, tput=2 * MB, bundles=B[:2]),
            "idle": report(bundles=[B[4]]),
            "b": report(cpu=90, tput=2 * MB, bundles=B[2:4]),
        },
        {b: data(MB) for b in B},
    )
    result = find_bundles_to_unload(snap, NoState(), CONFIG, 0)
    assert [(d.broker, str(d.bundle)) for d in result.decisions] == [("a", B[0]), ("b", B[2])]


def test_bundles_are_ordered_by_short_term_throughput() -> None:
    def both(short_mb: float, long_mb: float) -> BundleData:
        return BundleData(
            short_term_data=averages(short_mb * MB),
            long_term_data=averages(long_mb * MB, samples=1000),
        )

    snap = snapshot(
        {"a": report(cpu=99, tput=10 * MB, bundles=B[:2])},
        {B[0]: both(short_mb=1, long_mb=90), B[1]: both(short_mb=5, long_mb=1)},
    )
    assert shed(snap) == [B[1]]
