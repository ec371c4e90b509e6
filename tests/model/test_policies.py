"""Namespace policies: bundle data, isolation matching, failure domains."""

from __future__ import annotations

import pytest

from ballast.model.codec import ModelError
from ballast.model.naming import NamespaceName
from ballast.model.policies import (
    BundlesData,
    FailureDomain,
    IsolationPolicies,
    NamespaceIsolationPolicy,
    broker_domains,
    broker_host,
    unload_patterns,
)

NS = NamespaceName("t", "ns")


def test_bundles_data_with_and_without_boundaries() -> None:
    assert BundlesData(num_bundles=4).to_bundles(NS).count == 4
    explicit = BundlesData(boundaries=["0x00000000", "0x80000000", "0xFFFFFFFF"], num_bundles=2)
    assert explicit.to_bundles(NS).boundaries == (0, 0x80000000, 0xFFFFFFFF)
    assert BundlesData.of(explicit.to_bundles(NS)) == BundlesData(
        boundaries=["0x00000000", "0x80000000", "0xffffffff"], num_bundles=2
    )


@pytest.mark.parametrize(
    ("data", "path"),
    [
        (BundlesData(boundaries=["0x0", "zz", "0xffffffff"]), "$.boundaries[1]"),
        (BundlesData(boundaries=["0x0", "0x10"]), "$.boundaries"),
        (BundlesData(boundaries=["0x0", "0xffffffff"], num_bundles=3), "$.numBundles"),
    ],
)
def test_bad_bundles_data_names_the_path(data: BundlesData, path: str) -> None:
    with pytest.raises(ModelError) as caught:
        data.to_bundles(NS)
    assert caught.value.path == path


def test_isolation_policy_matching() -> None:
    policies = IsolationPolicies.from_mapping(
        {
            "p1": {
                "namespaces": ["t/iso.*"],
                "primary": ["b1"],
                "secondary": ["b2"],
                "auto_failover_policy": {
                    "policy_type": "min_available",
                    "parameters": {"min_limit": "2", "usage_threshold": "80"},
                },
            }
        }
    )
    policy = policies.policy_for("t/isolated")
    assert policy is not None
    assert policies.policy_for("t/other") is None
    assert policy.is_primary("b1") and not policy.is_primary("b10")  # whole-string match
    assert policy.is_secondary("b2")
    assert policy.auto_failover_policy.min_limit == 2
    assert policy.auto_failover_policy.should_failover(1)
    assert not policy.auto_failover_policy.should_failover(2)
    assert policies.is_shared_broker("b3") and not policies.is_shared_broker("b1")


@pytest.mark.timeout(60)
def test_a_pattern_that_backtracks_is_matched_in_linear_time() -> None:
    """Python's re took twice as long for each character more: 0.8 s for a lookup in a
    namespace of 24 ``a`` (the event loop held); 40 would take days."""
    policies = IsolationPolicies.from_mapping(
        {"p": {"namespaces": ["t/(a|a)*b"], "primary": ["b1"], "secondary": []}}
    )
    assert policies.policy_for("t/" + "a" * 40) is None
    assert policies.policy_for("t/aab") is not None


def test_patterns_only_a_backtracking_engine_takes_still_match() -> None:
    policies = IsolationPolicies.from_mapping(
        {
            "p": {
                "namespaces": [r"t/(x+)-\1", "t/(?!other).*"],
                "primary": [r"(b)\1"],
                "secondary": [],
            }
        }
    )
    assert policies.policy_for("t/xx-xx") is not None
    assert policies.policy_for("t/mine") is not None
    assert policies.policy_for("t/other") is None
    policy = policies.policy_for("t/mine")
    assert policy is not None and policy.is_primary("bb") and not policy.is_primary("b")


def test_invalid_isolation_policy_regex() -> None:
    with pytest.raises(ModelError, match="invalid"):
        IsolationPolicies.from_mapping({"p": {"namespaces": ["t/("]}})
    # named by its list and place (a count across the three lists said "pattern #2")
    with pytest.raises(ModelError, match='regex "\\(x" is invalid') as bad:
        IsolationPolicies.from_mapping({"p": {"namespaces": ["t/a"], "secondary": ["b", "(x"]}})
    assert bad.value.path == '$["p"].secondary[1]'
    with pytest.raises(ModelError) as caught:
        IsolationPolicies.from_mapping({"p": {"primary": "b1"}})
    assert caught.value.path == '$["p"].primary'


@pytest.mark.parametrize(
    ("failover", "message"),
    [
        ({"policy_type": "foo"}, 'policy_type "foo" is not min_available'),
        ({"parameters": {"min_limit": "abc"}}, 'parameters.min_limit "abc" is not a whole'),
        ({"parameters": {"usage_threshold": "8.5"}}, 'usage_threshold "8.5" is not a whole'),
        ({"parameters": {"min_limit": True}}, "got `bool`"),
    ],
)
def test_an_auto_failover_policy_placement_could_not_read_is_refused(
    failover: dict[str, object], message: str
) -> None:
    with pytest.raises(ModelError, match=message) as caught:
        IsolationPolicies.from_mapping({"p": {"auto_failover_policy": failover}})
    assert caught.value.path.startswith('$["p"].auto_failover_policy')


def test_auto_failover_parameters_as_numbers_or_strings() -> None:
    policies = IsolationPolicies.from_mapping(
        {"p": {"auto_failover_policy": {"parameters": {"min_limit": 3, "usage_threshold": "-7"}}}}
    )
    failover = policies.policies["p"].auto_failover_policy
    assert (failover.min_limit, failover.usage_threshold) == (3, -7.0)
    assert (
        IsolationPolicies.from_mapping({"p": {}}).policies["p"].auto_failover_policy.min_limit == 1
    )


def _policy(
    namespaces: list[str], primary: list[str], scope: str | None = None
) -> NamespaceIsolationPolicy:
    raw: dict[str, object] = {"namespaces": namespaces, "primary": primary}
    if scope is not None:
        raw["unload_scope"] = scope
    return IsolationPolicies.from_mapping({"p": raw}).policies["p"]


def test_a_changed_isolation_policy_unloads_as_pulsar_does() -> None:
    old = _policy(["t/a", "t/b"], ["h1", "h2"])
    # Unset scope is "changed": the regexes added or removed, nothing kept.
    assert unload_patterns(old, _policy(["t/b", "t/c"], ["h2", "h1"])) == ["t/a", "t/c"]
    assert unload_patterns(None, _policy(["t/b"], ["h1"])) == ["t/b"]  # a new policy
    assert unload_patterns(old, _policy(["t/a", "t/b"], ["h1", "h2"])) == []
    # Other primary brokers: every namespace of both, whatever the scope but "none".
    assert unload_patterns(old, _policy(["t/b", "t/c"], ["h3"])) == ["t/a", "t/b", "t/c"]
    assert unload_patterns(old, _policy(["t/b"], ["h1", "h2"], "all_matching")) == ["t/a", "t/b"]
    assert unload_patterns(old, _policy(["t/c"], ["h3"], "none")) == []
    stored = IsolationPolicies({"p": _policy(["t/a"], ["h1"], "none")}).to_json_dict()
    assert stored["p"]["unload_scope"] == "none"
    assert "unload_scope" not in IsolationPolicies({"p": old}).to_json_dict()["p"]
    with pytest.raises(ModelError, match="unload_scope"):
        _policy(["t/a"], ["h1"], "some")


def test_failure_domains_and_hosts() -> None:
    domains = broker_domains({"rack1": FailureDomain(brokers=["b1:8080"]), "rack2": ["b2:8080"]})
    assert domains == {"b1:8080": "rack1", "b2:8080": "rack2"}
    assert broker_host("10.0.0.1:8080") == "10.0.0.1"
    # As Java's URL.getHost: case kept (regexes are case-sensitive), IPv6 in brackets.
    assert broker_host("Broker-A.Example.com:8080") == "Broker-A.Example.com"
    assert broker_host("[::1]:8080") == "[::1]"
    assert broker_host("localhost") == "localhost"
    policy = IsolationPolicies.from_mapping(
        {"p": {"namespaces": ["t/a"], "primary": ["Broker-A.*"]}}
    )
    assert policy.policies["p"].is_primary(broker_host("Broker-A.Example.com:8080"))


def test_isolation_regexes_are_read_as_java_reads_them() -> None:
    """Pulsar matches them with java.util.regex: \\Q..\\E and \\p{Alnum} were refused as
    invalid, and Java's class intersection matched no broker, silently."""
    policies = IsolationPolicies.from_mapping(
        {"p": {"namespaces": ["t/\\Qa.b\\E"], "primary": ["\\p{Alnum}+-[0-9]"]}}
    )
    policy = policies.policy_for("t/a.b")
    assert policy is not None and policies.policy_for("t/axb") is None
    assert policy.is_primary("broker-1") and not policy.is_primary("broker_x-1")
    with pytest.raises(ModelError, match="Java's intersection") as caught:
        IsolationPolicies.from_mapping({"p": {"primary": ["10\\.0\\.0\\.[1-3&&[^2]]"]}})
    assert caught.value.path == '$["p"].primary[0]'
