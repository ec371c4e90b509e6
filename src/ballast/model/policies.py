"""Namespace policies the placement pipeline reads, in Pulsar's stored JSON: bundle boundaries
(``BundlesData`` inside ``/admin/policies`` and ``/admin/local-policies``), namespace isolation
policies (``/admin/clusters/<c>/namespaceIsolationPolicies``), anti-affinity groups and failure
domains (``/admin/clusters/<c>/failureDomain/<d>``)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import msgspec

from ballast.model.bundles import (
    InvalidBundle,
    NamespaceBundles,
    equal_boundaries,
    java_long_decode,
    validate_boundaries,
    validate_created_bundles,
)
from ballast.model.codec import ModelError
from ballast.model.java_regex import JavaRegexError, compile_java, java_fullmatch
from ballast.model.naming import NamespaceName

MIN_AVAILABLE = "min_available"


class BundlesData(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """``{"boundaries": ["0x00000000", ...], "numBundles": N}``; either part may be missing
    (boundaries default to N equal bundles)."""

    boundaries: list[str] | None = None
    num_bundles: Annotated[int, msgspec.Meta(ge=1)] | None = None

    def to_bundles(self, namespace: NamespaceName, *, path: str = "$") -> NamespaceBundles:
        """The namespace's bundles; ModelError (naming ``path``) if the data disagree."""
        if self.boundaries is None:
            try:
                # a count alone makes a namespace as creating one does, within its limit
                validate_created_bundles(self.num_bundles or 1)
                return NamespaceBundles(namespace, equal_boundaries(self.num_bundles or 1))
            except InvalidBundle as exc:
                raise ModelError(f"{path}.numBundles", exc.args[0]) from None
        values: list[int] = []
        for index, text in enumerate(self.boundaries):
            try:
                values.append(java_long_decode(text))
            except ValueError:
                raise ModelError(
                    f"{path}.boundaries[{index}]", f'"{text}" is not a number'
                ) from None
        try:
            bounds = validate_boundaries(values)
        except InvalidBundle as exc:
            raise ModelError(f"{path}.boundaries", exc.args[0]) from None
        if self.num_bundles is not None and self.num_bundles != len(bounds) - 1:
            raise ModelError(
                f"{path}.numBundles",
                f"says {self.num_bundles} but the boundaries make {len(bounds) - 1} bundles",
            )
        return NamespaceBundles(namespace, bounds)

    @classmethod
    def of(cls, bundles: NamespaceBundles) -> BundlesData:
        return cls(boundaries=[f"0x{b:08x}" for b in bundles.boundaries], num_bundles=bundles.count)


class LocalPolicies(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """``/admin/local-policies/<ns>``: the authoritative bundle boundaries (rewritten by
    splits) and the namespace's anti-affinity group."""

    bundles: BundlesData | None = None
    bookie_affinity_group: dict[str, Any] | None = None
    namespace_anti_affinity_group: str | None = None


class NamespacePolicies(msgspec.Struct, frozen=True, kw_only=True):
    """The part of Pulsar's namespace ``Policies`` (``/admin/policies/<ns>``, snake_case keys)
    that Ballast uses; other keys are ignored when read."""

    bundles: BundlesData | None = None
    replication_clusters: list[str] = []
    deleted: bool = False


class AutoFailoverPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """When a namespace may fail over from its primary to its secondary brokers.
    Pulsar stores the parameters as strings: ``{"min_limit": "1", "usage_threshold": "80"}``."""

    policy_type: str = MIN_AVAILABLE
    parameters: dict[str, str | int | float] = {}

    def __post_init__(self) -> None:
        # Checked when the policy is set, as Pulsar's AutoFailoverPolicyFactory does, so that
        # a policy that was accepted cannot fail every placement it applies to later.
        if self.policy_type != MIN_AVAILABLE:
            raise ValueError(f'policy_type "{self.policy_type}" is not {MIN_AVAILABLE}')
        for key in ("min_limit", "usage_threshold"):
            value = self.parameters.get(key)
            if value is not None and _whole_number(value) is None:
                raise ValueError(f'parameters.{key} "{value}" is not a whole number')

    @property
    def min_limit(self) -> int:
        return _whole_number(self.parameters.get("min_limit", 1)) or 0

    @property
    def usage_threshold(self) -> float:
        return float(_whole_number(self.parameters.get("usage_threshold", 100)) or 0)

    def should_failover(self, available_primaries: int) -> bool:
        """``min_available``: use secondaries when fewer primaries than ``min_limit`` are
        available."""
        return available_primaries < self.min_limit


def _whole_number(value: str | int | float) -> int | None:
    """``value`` as Java's ``Integer.parseInt`` reads the stored string (an int stays one);
    None if it is not a whole number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if re.fullmatch(r"[+-]?[0-9]+", value) is None:
        return None
    return int(value)


class NamespaceIsolationPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """Namespaces (by regex) pinned to primary brokers, with secondary brokers to fail over
    to. Broker regexes match the broker's host name, whole-string, as Pulsar's
    ``Pattern.matches``."""

    namespaces: list[str] = []
    primary: list[str] = []
    secondary: list[str] = []
    auto_failover_policy: AutoFailoverPolicy = AutoFailoverPolicy()
    # Which namespaces setting the policy unloads (Pulsar's NamespaceIsolationPolicyUnloadScope):
    # "all_matching", "changed", "none"; unset is "changed".
    unload_scope: Literal["all_matching", "changed", "none"] | None = None

    def applies_to(self, namespace: NamespaceName | str) -> bool:
        text = str(namespace)
        return any(_matcher(pattern)(text) for pattern in self.namespaces)

    def is_primary(self, host: str) -> bool:
        return any(_matcher(pattern)(host) for pattern in self.primary)

    def is_secondary(self, host: str) -> bool:
        return any(_matcher(pattern)(host) for pattern in self.secondary)


def pattern_matches(pattern: str, text: str) -> bool:
    """Whether a policy's ``pattern`` (Java syntax) matches all of ``text``, as Pulsar's
    ``Pattern.matches``."""
    return bool(_matcher(pattern)(text))


@functools.lru_cache(maxsize=4096)
def _matcher(pattern: str) -> Callable[[str], object]:
    """Whole-string matching of a policy's pattern, in Java's syntax, compiled once
    (:func:`~ballast.model.java_regex.java_fullmatch`: RE2 where it can, in time linear in
    the name; a backtracking engine alone took time doubling with each character for
    ``(a|a)*b``, and a lookup in a namespace of 24 ``a`` held the event loop 0.8 s)."""
    return java_fullmatch(pattern)


class IsolationPolicies(msgspec.Struct, frozen=True):
    """All isolation policies of a cluster, by policy name, in stored order."""

    policies: dict[str, NamespaceIsolationPolicy] = {}

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any], *, path: str = "$") -> IsolationPolicies:
        from ballast.model.codec import convert

        policies = convert(dict(raw), dict[str, NamespaceIsolationPolicy], root=path)
        for name, policy in policies.items():
            for part in ("namespaces", "primary", "secondary"):
                for index, pattern in enumerate(getattr(policy, part)):
                    try:
                        compile_java(pattern)
                    except JavaRegexError as exc:
                        raise ModelError(
                            f'{path}["{name}"].{part}[{index}]',
                            f'regex "{pattern}" is invalid: {exc}',
                        ) from None
        return cls(policies)

    def to_json_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = msgspec.to_builtins(self.policies)
        for policy in out.values():  # Pulsar writes no null
            if policy.get("unload_scope") is None:
                policy.pop("unload_scope", None)
        return out

    def policy_for(self, namespace: NamespaceName | str) -> NamespaceIsolationPolicy | None:
        """The first policy whose namespace regexes match (Pulsar's
        ``getPolicyByNamespace``)."""
        for policy in self.policies.values():
            if policy.applies_to(namespace):
                return policy
        return None

    def is_shared_broker(self, host: str) -> bool:
        """A broker that is not the primary of any policy serves namespaces without one."""
        return not any(policy.is_primary(host) for policy in self.policies.values())

    def __bool__(self) -> bool:
        return bool(self.policies)


def isolation_policy_problem(raw: Mapping[str, Any]) -> str | None:
    """Why a policy being set is refused, as Pulsar's ``NamespaceIsolationDataImpl.validate``
    and ``MinAvailablePolicy`` refuse it; None when it may be set. (Stored policies are read
    leniently, with defaults.)"""
    failover = raw.get("auto_failover_policy")
    missing = [
        key
        for key, present in (
            ("namespaces", isinstance(raw.get("namespaces"), list) and raw["namespaces"]),
            ("primary", isinstance(raw.get("primary"), list) and raw["primary"]),
            ("secondary", isinstance(raw.get("secondary"), list)),
            ("auto_failover_policy", isinstance(failover, dict)),
            (
                "auto_failover_policy.policy_type",
                not isinstance(failover, dict) or failover.get("policy_type") is not None,
            ),
        )
        if not present
    ]
    if missing:
        return (
            f"an isolation policy needs {', '.join(missing)} (namespaces and primary: "
            "non-empty lists of regexes; secondary: a list; auto_failover_policy: an object)"
        )
    parameters = failover.get("parameters") if isinstance(failover, dict) else None
    if not isinstance(parameters, dict) or not {"min_limit", "usage_threshold"} <= set(parameters):
        return (
            "auto_failover_policy needs parameters min_limit and usage_threshold "
            '(e.g. {"min_limit": "1", "usage_threshold": "80"})'
        )
    return None


def unload_patterns(
    old: NamespaceIsolationPolicy | None, new: NamespaceIsolationPolicy
) -> list[str]:
    """The namespace regexes whose namespaces are unloaded when ``old`` becomes ``new``, so
    that they are placed again under it (Pulsar's ``filterAndUnloadMatchedNamespaceAsync``):
    none for the scope ``none``; every regex of both for ``all_matching`` or when the primary
    brokers changed; else only the regexes added or removed."""
    if new.unload_scope == "none":
        return []
    before = set(old.namespaces) if old is not None else set()
    after = set(new.namespaces)
    primary_changed = old is not None and sorted(old.primary) != sorted(new.primary)
    if new.unload_scope == "all_matching" or primary_changed:
        return sorted(before | after)
    return sorted(before ^ after)


class FailureDomain(msgspec.Struct, frozen=True, kw_only=True):
    """``{"brokers": ["host:port", ...]}``."""

    brokers: list[str] = []


DEFAULT_FAILURE_DOMAIN = "default"


def broker_domains(domains: Mapping[str, FailureDomain | Iterable[str]]) -> dict[str, str]:
    """Broker id → failure-domain name (brokers in no domain belong to ``default``)."""
    result: dict[str, str] = {}
    for name, domain in domains.items():
        brokers = domain.brokers if isinstance(domain, FailureDomain) else list(domain)
        for broker in brokers:
            result[broker] = name
    return result


@functools.lru_cache(maxsize=4096)
def broker_host(broker_id: str) -> str:
    """The host of a broker id ``host:port`` as Java's ``new URL("http://" + id).getHost()``
    gives it to Pulsar's isolation matching: letter case kept, an IPv6 address in brackets."""
    authority = urlsplit(f"http://{broker_id}").netloc.rpartition("@")[2]
    if authority.startswith("["):
        end = authority.find("]")
        return authority[: end + 1] if end != -1 else authority
    return authority.partition(":")[0] or broker_id
