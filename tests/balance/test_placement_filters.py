"""The placement filters, each a pure function of candidates (Pulsar's LoadManagerShared and
BrokerFilter behaviour)."""

from __future__ import annotations

import itertools

import pytest

from ballast.balance.placement.filters import (
    BrokerFilterError,
    apply_namespace_policies,
    filter_anti_affinity,
    filter_broker_version,
    filter_large_topic_count,
    filter_load_manager_class,
    remove_most_servicing_brokers,
    should_anti_affinity_unload,
)
from ballast.balance.placement.versions import parse_version
from ballast.balance.snapshot import LoadSnapshot, Policies
from ballast.model.loaddata import LocalBrokerData
from ballast.model.policies import IsolationPolicies
from tests.balance.build import data, report, snapshot

BUNDLE = "t/iso/0x00000000_0xffffffff"
PLAIN = "t/plain/0x00000000_0xffffffff"


def isolation(min_limit: int) -> Policies:
    return Policies(
        isolation=IsolationPolicies.from_mapping(
            {
                "p": {
                    "namespaces": ["t/iso"],
                    "primary": ["b1"],
                    "secondary": ["b2"],
                    "auto_failover_policy": {
                        "policy_type": "min_available",
                        "parameters": {"min_limit": str(min_limit), "usage_threshold": "80"},
                    },
                }
            }
        )
    )


@pytest.mark.parametrize(
    ("min_limit", "available", "expected"),
    [
        (1, ("b1:8080", "b2:8080", "b3:8080"), ("b1:8080",)),
        (1, ("b2:8080", "b3:8080"), ("b2:8080",)),
        (1, ("b3:8080",), ()),
        (2, ("b1:8080", "b2:8080", "b3:8080"), ("b1:8080", "b2:8080")),
        (2, ("b2:8080", "b3:8080"), ("b2:8080",)),
    ],
)
def test_isolation_primaries_secondaries_and_failover(
    min_limit: int, available: tuple[str, ...], expected: tuple[str, ...]
) -> None:
    # Pulsar's ModularLoadManagerImplTest: primary b1, secondary b2, shared b3.
    snap = snapshot({b: report() for b in available}, policies=isolation(min_limit))
    assert apply_namespace_policies(snap, BUNDLE, available) == expected


def test_without_a_policy_only_shared_brokers_able_to_host_the_topic_kind() -> None:
    snap = snapshot(
        {
            "b1:8080": report(),  # primary of the t/iso policy: not shared
            "b2:8080": report(),
            "b3:8080": report(persistent=False),
            "b4:8080": report(non_persistent=False),
        },
        policies=isolation(1),
    )
    available = tuple(snap.brokers)
    assert apply_namespace_policies(snap, PLAIN, available) == ("b2:8080", "b4:8080")
    assert apply_namespace_policies(snap, PLAIN, available, non_persistent=True) == (
        "b2:8080",
        "b3:8080",
    )


def test_large_topic_count_counts_preallocated_topics_and_never_empties() -> None:
    snap = snapshot(
        {"a": report(topics=40000), "b": report(topics=49999), "c": report(topics=60000)},
        preallocated={"b": {"t/x/0x00000000_0xffffffff": data()}},  # one more topic
    )
    assert filter_large_topic_count(snap, ("a", "b", "c"), 50000) == ("a", "b")
    assert filter_large_topic_count(snap, ("b", "c"), 49999) == ("b", "c")


def group_snapshot(owned: dict[str, int], domains: dict[str, str] | None = None) -> LoadSnapshot:
    """Each broker serves ``owned[broker]`` namespaces of anti-affinity group "grp"."""
    brokers = {}
    groups = {"t/new": "GRP"}
    for broker, count in owned.items():
        served = []
        for i in range(count):
            namespace = f"t/{broker}-{i}"
            groups[namespace] = "grp"
            served.append(f"{namespace}/0x00000000_0xffffffff")
        brokers[broker] = report(bundles=served)
    return snapshot(
        brokers, policies=Policies(anti_affinity_groups=groups, broker_domains=domains or {})
    )


NEW = "t/new/0x00000000_0xffffffff"


def test_anti_affinity_prefers_brokers_without_the_group_then_the_fewest() -> None:
    snap = group_snapshot({"b1": 2, "b2": 0, "b3": 1})
    assert filter_anti_affinity(snap, ("b1", "b2", "b3"), NEW, failure_domains_enabled=False) == (
        "b2",
    )
    snap = group_snapshot({"b1": 2, "b2": 1, "b3": 1})
    assert filter_anti_affinity(snap, ("b1", "b2", "b3"), NEW, failure_domains_enabled=False) == (
        "b2",
        "b3",
    )
    unrelated = group_snapshot({"b1": 2})
    assert filter_anti_affinity(unrelated, ("b1",), PLAIN, failure_domains_enabled=False) == ("b1",)


def test_anti_affinity_over_failure_domains() -> None:
    # LoadManagerShared's example: d1 = {b1: 2, b2: 1}, d2 = {b3: 2, b4: 1}, d3 = {b5: 2, b6: 2}
    # -> domains d1 and d2 (3 each), then their least loaded brokers b2 and b4.
    owned = {"b1": 2, "b2": 1, "b3": 2, "b4": 1, "b5": 2, "b6": 2}
    domains = {"b1": "d1", "b2": "d1", "b3": "d2", "b4": "d2", "b5": "d3", "b6": "d3"}
    snap = group_snapshot(owned, domains)
    everyone = tuple(owned)
    assert filter_anti_affinity(snap, everyone, NEW, failure_domains_enabled=True) == ("b2", "b4")
    assert filter_anti_affinity(snap, everyone, NEW, failure_domains_enabled=False) == ("b2", "b4")


def test_should_anti_affinity_unload() -> None:
    # Pulsar's test: unload is pointless once every candidate serves one namespace of the group.
    brokers = ("broker-0", "broker-1", "broker-2")
    assert should_anti_affinity_unload(group_snapshot({"broker-0": 1}), NEW, "broker-0", brokers)
    two = group_snapshot({"broker-0": 1, "broker-1": 1})
    assert should_anti_affinity_unload(two, NEW, "broker-0", brokers)
    three = group_snapshot({"broker-0": 1, "broker-1": 1, "broker-2": 1})
    assert not should_anti_affinity_unload(three, NEW, "broker-0", brokers)
    assert should_anti_affinity_unload(three, PLAIN, "broker-0", brokers)


def test_least_servicing_brokers_for_the_namespace() -> None:
    snap = snapshot(
        {
            "a": report(bundles=["t/n/0x00000000_0x40000000", "t/n/0x40000000_0x80000000"]),
            "b": report(bundles=["t/n/0x80000000_0xc0000000", "t/other/0x00000000_0xffffffff"]),
            "c": report(),
        },
        preallocated={"c": {"t/n/0xc0000000_0xffffffff": data()}},
    )
    assert remove_most_servicing_brokers(snap, ("a", "b", "c"), "t/n/0x00000000_0x40000000") == (
        "b",
        "c",
    )
    assert remove_most_servicing_brokers(snap, (), "t/n/0x00000000_0x40000000") == ()


def test_load_manager_class_filter_keeps_unknown_classes() -> None:
    other = LocalBrokerData(load_manager_class_name="Other")
    same = LocalBrokerData(load_manager_class_name="Modular")
    snap = snapshot({"a": other, "b": same, "c": LocalBrokerData()})
    assert filter_load_manager_class(snap, ("a", "b", "c"), "Modular") == ("b", "c")


def test_version_filter() -> None:
    snap = snapshot(
        {
            "old": report(version="2.10.4"),
            "new": report(version="2.11.0"),
            "new-build": report(version="2.11.0+b7"),
            "rc": report(version="2.11.0-rc.1"),
        }
    )
    everyone = tuple(snap.brokers)
    assert filter_broker_version(snap, everyone, prefer_later_versions=False) == everyone
    # The newest is 2.11.0+b7 (build metadata ranks higher); equality ignores build metadata.
    assert filter_broker_version(snap, everyone, prefer_later_versions=True) == ("new", "new-build")
    broken = snapshot({"a": report(version="2.11.0"), "b": report(version="two")})
    with pytest.raises(BrokerFilterError):
        filter_broker_version(broken, ("a", "b"), prefer_later_versions=True)
    with pytest.raises(BrokerFilterError):
        filter_broker_version(snapshot({"a": report()}), ("a",), prefer_later_versions=True)


def test_semantic_version_order() -> None:
    ordered = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0",
    ]
    versions = [parse_version(v) for v in ordered]
    for lower, higher in itertools.pairwise(versions):
        assert lower.compare(higher) == -1 and higher.compare(lower) == 1
    assert parse_version("1.0.0+x").build_aware_compare(parse_version("1.0.0")) == 1
