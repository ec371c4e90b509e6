"""The JSON form of a :class:`LoadSnapshot` (the input of ``ballast decide``, documented in
``docs/decide.md``), and the assembly of a dump of Pulsar's ``/loadbalance`` tree into it.

Pure: the caller reads files; errors are :class:`~ballast.model.codec.ModelError` naming the
JSON path of the problem (``$.brokers["b1"].cpu.usage``). Every part is optional except
``brokers``; unknown top-level keys are reported as warnings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

import msgspec

from ballast.balance.snapshot import BrokerLoad, LoadSnapshot, Policies, reported_bundles
from ballast.model.bundles import BundleRange, InvalidBundle, NamespaceBundles
from ballast.model.codec import ModelError, convert, from_json_safe, key_path, to_builtins
from ballast.model.loaddata import BrokerData, BundleData, LocalBrokerData, TimeAverageBrokerData
from ballast.model.loaddata.local import canonical_bundle_key, canonicalize_bundles
from ballast.model.naming import InvalidNameError, NamespaceName
from ballast.model.policies import BundlesData, FailureDomain, IsolationPolicies, broker_domains

T = TypeVar("T")

KNOWN_KEYS = (
    "brokers",
    "timeAverages",
    "bundles",
    "recentlyUnloadedBundles",
    "recentlyUnloadedBrokers",
    "namespaces",
    "policies",
    "brokerLoadData",
    "state",
)


@dataclass(frozen=True, slots=True)
class ParsedSnapshot:
    """A snapshot read from JSON, the raw ``state`` object (each strategy reads its own part,
    see :func:`strategy_state`) and warnings for the user."""

    snapshot: LoadSnapshot
    state: Mapping[str, Any]
    warnings: tuple[str, ...]


def _object(value: Any, path: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ModelError(path, f"expected an object, got {type(value).__name__}")
    return value


def parse_snapshot(data: bytes | str) -> ParsedSnapshot:
    """Parse a snapshot document, or a ``ballast metadata dump`` of ``/loadbalance`` (or of a
    path above it); raises :class:`ModelError` naming the path. A UTF-8 byte order mark at
    the start is ignored, as JSON parsers may (RFC 8259, 8.1)."""
    if isinstance(data, str):
        data = data.removeprefix("\ufeff")
    else:
        data = data.removeprefix(b"\xef\xbb\xbf")
    if not data.strip():
        raise ModelError("$", "the snapshot is empty (no JSON at all)")
    try:
        obj = msgspec.json.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise ModelError("$", f"not valid JSON ({exc})") from None
    if is_metadata_dump(obj):
        assembled, warnings = metadata_dump_to_object(obj)
        parsed = snapshot_from_object(assembled)
        return ParsedSnapshot(parsed.snapshot, parsed.state, (*warnings, *parsed.warnings))
    return snapshot_from_object(obj)


def snapshot_from_object(obj: Any) -> ParsedSnapshot:
    """Build the snapshot from already-decoded JSON (dicts keep their order: it is the
    iteration order of the decisions)."""
    if obj is None:  # _object reads a missing part as empty; a whole snapshot must be there
        raise ModelError("$", "expected an object, got null")
    root = _object(obj, "$")
    warnings: list[str] = [f"unknown key {key} ignored" for key in root if key not in KNOWN_KEYS]
    if root.get("brokers") is None:  # null too: optional parts read null as empty, not this
        raise ModelError("$.brokers", "is required (an object of broker id -> LocalBrokerData)")
    bundles = _bundles(_object(root.get("bundles"), "$.bundles"))
    locals_by_broker: dict[str, LocalBrokerData] = {}
    for broker, raw in _object(root["brokers"], "$.brokers").items():
        path = f"$.brokers{key_path(broker)}"
        if not isinstance(raw, dict):
            raise ModelError(path, "expected a LocalBrokerData object")
        local = convert(raw, LocalBrokerData, root=path)
        locals_by_broker[broker] = canonicalize_bundles(local, root=path)
    averages_raw = _object(root.get("timeAverages"), "$.timeAverages")
    brokers: dict[str, BrokerData] = {}
    for broker, local in locals_by_broker.items():
        raw_average = averages_raw.get(broker)
        if raw_average is None:
            # Pulsar's leader recomputes these from bundle data on every update.
            average = TimeAverageBrokerData.from_bundles(sorted(reported_bundles(local)), bundles)
        else:
            path = f"$.timeAverages{key_path(broker)}"
            average = convert(raw_average, TimeAverageBrokerData, root=path)
        brokers[broker] = BrokerData(local_data=local, time_average_data=average)
    warnings.extend(
        f"timeAverages of unknown broker {broker} ignored"
        for broker in averages_raw
        if broker not in brokers
    )
    unloaded_raw = convert(
        _object(root.get("recentlyUnloadedBundles"), "$.recentlyUnloadedBundles"),
        dict[str, int],
        root="$.recentlyUnloadedBundles",
    )
    recently_unloaded = {
        canonical_bundle_key(name, f"$.recentlyUnloadedBundles{key_path(name)}"): ts
        for name, ts in unloaded_raw.items()
    }
    unloaded_brokers = convert(
        _object(root.get("recentlyUnloadedBrokers"), "$.recentlyUnloadedBrokers"),
        dict[str, int],
        root="$.recentlyUnloadedBrokers",
    )
    broker_load, load_warnings = _broker_load(
        _object(root.get("brokerLoadData"), "$.brokerLoadData"), locals_by_broker
    )
    warnings.extend(load_warnings)
    snapshot = LoadSnapshot(
        brokers=MappingProxyType(brokers),
        bundles=MappingProxyType(bundles),
        recently_unloaded_bundles=MappingProxyType(recently_unloaded),
        recently_unloaded_brokers=MappingProxyType(unloaded_brokers),
        namespaces=MappingProxyType(_namespaces(_object(root.get("namespaces"), "$.namespaces"))),
        policies=_policies(_object(root.get("policies"), "$.policies")),
        broker_load=MappingProxyType(broker_load),
    )
    warnings.extend(snapshot.index.warnings)
    state = _object(root.get("state"), "$.state")
    return ParsedSnapshot(snapshot, MappingProxyType(state), tuple(warnings))


def _bundles(raw: dict[str, Any]) -> dict[str, BundleData]:
    bundles: dict[str, BundleData] = {}
    for name, value in raw.items():
        path = f"$.bundles{key_path(name)}"
        canonical = canonical_bundle_key(name, path)
        if canonical in bundles:
            raise ModelError(
                path, f"bundle {canonical} is given twice (names are case-insensitive)"
            )
        bundles[canonical] = convert(value, BundleData, root=path)
    return bundles


def _broker_load(
    raw: dict[str, Any], locals_by_broker: Mapping[str, LocalBrokerData]
) -> tuple[dict[str, BrokerLoad], list[str]]:
    loads: dict[str, BrokerLoad] = {}
    warnings: list[str] = []
    for broker, value in raw.items():
        path = f"$.brokerLoadData{key_path(broker)}"
        load = convert(value, BrokerLoad, root=path)
        local = locals_by_broker.get(broker)
        if local is None:
            warnings.append(f"brokerLoadData of unknown broker {broker} ignored")
            continue
        if isinstance(value, dict) and "updatedAt" not in value:
            load = msgspec.structs.replace(load, updated_at_ms=local.last_update)
        loads[broker] = load
    return loads, warnings


def _namespaces(raw: dict[str, Any]) -> dict[str, NamespaceBundles]:
    namespaces: dict[str, NamespaceBundles] = {}
    for name, value in raw.items():
        path = f"$.namespaces{key_path(name)}"
        try:
            namespace = NamespaceName.parse(name)
        except InvalidNameError as exc:
            raise ModelError(path, exc.args[0]) from None
        data = convert(value, BundlesData, root=path)
        namespaces[str(namespace)] = data.to_bundles(namespace, path=path)
    return namespaces


def _policies(raw: dict[str, Any]) -> Policies:
    isolation = IsolationPolicies.from_mapping(
        _object(raw.get("isolation"), "$.policies.isolation"), path="$.policies.isolation"
    )
    groups = convert(
        _object(raw.get("antiAffinityGroups"), "$.policies.antiAffinityGroups"),
        dict[str, str],
        root="$.policies.antiAffinityGroups",
    )
    domains = convert(
        _object(raw.get("failureDomains"), "$.policies.failureDomains"),
        dict[str, FailureDomain | list[str]],
        root="$.policies.failureDomains",
    )
    return Policies(
        isolation=isolation,
        anti_affinity_groups=MappingProxyType(groups),
        broker_domains=MappingProxyType(broker_domains(domains)),
    )


def strategy_state(state: Mapping[str, Any], key: str, type_: type[T]) -> T:
    """The part of a snapshot's ``state`` that belongs to ``key`` (a strategy name or
    ``placement``), as ``type_``; its initial state when absent. Raises :class:`ModelError`
    naming ``$.state.<key>...``."""
    raw = state.get(key)
    if raw is None:
        return convert({}, type_, root=f"$.state.{key}")
    try:
        return convert(raw, type_, root=f"$.state.{key}")
    except ModelError as exc:
        # A state printed with infinite figures holds them as "inf" strings (JSON has no
        # such numbers): read them back as floats. Only when the state needs it, so that a
        # string that happens to read "nan" (a broker's name) stays one otherwise.
        try:
            return convert(from_json_safe(raw), type_, root=f"$.state.{key}")
        except ModelError:
            raise exc from None


def state_with(state: Mapping[str, Any], updates: Mapping[str, Any]) -> dict[str, Any]:
    """The ``state`` to print: the input state with the parts of the strategies that ran
    replaced by their new memory (JSON-ready)."""
    merged = dict(state)
    for key, value in updates.items():
        merged[key] = to_builtins(value)
    return merged


_DUMP_PARTS = {
    "brokers": "brokers",
    "broker-time-average": "timeAverages",
    "bundle-data": "bundles",
}
DUMP_SECTIONS = tuple(_DUMP_PARTS)  # the directories of /loadbalance a snapshot reads
_BY_BROKER = frozenset({"brokers", "timeAverages"})  # one record per broker: host:port


# `ballast metadata dump` writes {"root": PATH, "records": {PATH: {"json": ...}, ...}}
METADATA_DUMP_KEYS = frozenset({"root", "records"})
LOADBALANCE_ROOT = "/loadbalance/"
# The keys a dump's record holds its value under, exactly one of them.
_VALUE_KINDS = frozenset({"json", "text", "base64"})


def is_metadata_dump(obj: object) -> bool:
    """Whether decoded JSON is what ``ballast metadata dump`` writes."""
    return isinstance(obj, dict) and obj.keys() == METADATA_DUMP_KEYS


def metadata_dump_to_object(dump: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """:func:`dump_to_object` for a ``ballast metadata dump`` of ``/loadbalance`` (or of a path
    above it): its ``brokers/``, ``broker-time-average/`` and ``bundle-data/`` records, whose
    values are decoded already. Other records (the leader, intermediate nodes) are skipped
    without a warning: they are part of the tree, just not of a snapshot."""
    records = _object(dump.get("records"), "$.records")
    values: dict[str, Any] = {}
    for path, entry in records.items():
        if not path.startswith(LOADBALANCE_ROOT):
            continue
        relative = path[len(LOADBALANCE_ROOT) :]
        section, _, name = relative.partition("/")
        if section not in _DUMP_PARTS or not name:
            continue
        where = f"$.records{key_path(path)}"
        if not isinstance(entry, dict):
            raise ModelError(where, f'{path}: a record is an object ({{"json": ...}})')
        kinds = sorted(entry.keys() & _VALUE_KINDS)
        if len(kinds) > 1:  # which one is the value is unknown, as `metadata load` says too
            raise ModelError(
                where, f"{path}: a record holds json, text or base64, not {' and '.join(kinds)}"
            )
        if "json" in entry:
            values[relative] = entry["json"]
            continue
        # A dump holds as text the JSON it could not write back byte for byte as JSON (a
        # Pulsar record's `1.0E-5`, spaces): a load record all the same.
        text = entry.get("text")
        if isinstance(text, str) and text.strip():
            try:
                values[relative] = msgspec.json.decode(text)
                continue
            except (msgspec.DecodeError, RecursionError):
                pass
        # Only bundle-data has nodes above its records, empty: bundle-data/TENANT,
        # bundle-data/TENANT/NAMESPACE and, for a v1 name (tenant/cluster/namespace),
        # bundle-data/TENANT/CLUSTER/NAMESPACE. Unlike a record, none ends in a bundle range.
        above = section == "bundle-data" and not _is_range(name.rpartition("/")[2])
        if above and entry.get("text") == "":
            continue
        held = next((kind for kind in ("text", "base64") if kind in entry), None)
        if held is None:
            raise ModelError(where, f"{path}: a record without json, text or base64")
        if held == "text" and entry["text"] == "":
            raise ModelError(where, f"{path}: an empty load record")
        raise ModelError(
            where, f"{path}: a load record that is not JSON (the dump holds it as {held})"
        )
    return _assemble_dump(values, lambda _relative, _where, value: value)


def dump_to_object(files: Mapping[str, bytes]) -> tuple[dict[str, Any], list[str]]:
    """Assemble a dump of Pulsar's ``/loadbalance`` tree into a snapshot object. ``files`` maps
    each file's path relative to the dump (``brokers/10.0.0.1:8080``,
    ``broker-time-average/10.0.0.1:8080``, ``bundle-data/tenant/ns/0x00000000_0x40000000``; a
    ``.json`` suffix is ignored) to its bytes. Files elsewhere are skipped with a warning."""
    return _assemble_dump(files, _decode_dump_file)


def _decode_dump_file(relative: str, where: str, data: bytes) -> Any:
    try:
        return msgspec.json.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise ModelError(where, f"{relative}: not valid JSON ({exc})") from None


def _assemble_dump(
    entries: Mapping[str, T], value_of: Callable[[str, str, T], Any]
) -> tuple[dict[str, Any], list[str]]:
    """The snapshot object of a dump's entries (path relative to ``/loadbalance`` → what
    ``value_of(relative, json_path, entry)`` makes the decoded value of), and warnings."""
    obj: dict[str, dict[str, Any]] = {part: {} for part in _DUMP_PARTS.values()}
    warnings: list[str] = []
    origin: dict[tuple[str, str], str] = {}  # (section, name) -> the entry it came from
    for relative in sorted(entries):
        parts = relative.split("/")
        section = _DUMP_PARTS.get(parts[0])
        if section is None or len(parts) < 2:
            warnings.append(f"{relative}: not part of a /loadbalance dump, skipped")
            continue
        name = "/".join(parts[1:])
        if name.endswith(".json"):
            name = name[: -len(".json")]
        if section in _BY_BROKER and len(parts) > 2:  # a bundle's name has slashes, not these
            warnings.append(f"{relative}: not a broker's record (host:port), skipped")
            continue
        where = f"$.{section}{key_path(name)}"
        first = origin.setdefault((section, name), relative)
        if first != relative:  # b1 and b1.json: which one is the report?
            raise ModelError(where, f"{first} and {relative} are both the record of {name}")
        obj[section][name] = value_of(relative, where, entries[relative])
    if not any(obj.values()):  # nothing of a load snapshot: not a dump (or of the wrong path)
        sections = ", ".join(f"{part}/" for part in _DUMP_PARTS)
        raise ModelError("$", f"no /loadbalance entries ({sections}) in the dump")
    if not obj["brokers"]:
        warnings.append("the dump has no brokers/ entries")
    lookup_only = [name for name, value in obj["brokers"].items() if _lookup_data_only(value)]
    if lookup_only:
        # The extensible load manager registers BrokerLookupData here and keeps each
        # broker's load in system topics: read as reports, these brokers would look idle.
        warnings.append(
            f"{len(lookup_only)} broker(s) ({', '.join(lookup_only[:3])}"
            f"{', ...' if len(lookup_only) > 3 else ''}) are registered by Pulsar's extensible "
            "load manager, which keeps their load out of /loadbalance: they read as idle"
        )
    return {key: value for key, value in obj.items()}, warnings


def _is_range(text: str) -> bool:
    """Whether a path's last step is a bundle range, as bundle names are read."""
    try:
        BundleRange.parse(text)
    except InvalidBundle:
        return False
    return True


def _lookup_data_only(record: object) -> bool:
    """Whether a ``brokers/`` record is the extensible load manager's lookup data (no load)."""
    return (
        isinstance(record, dict)
        and str(record.get("loadManagerClassName", "")).endswith(".ExtensibleLoadManagerImpl")
        and not record.keys() & {"cpu", "memory", "bandwidthIn", "bandwidthOut", "lastUpdate"}
    )
