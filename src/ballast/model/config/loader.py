"""Read settings from a ``broker.conf``-style file, the environment (``BALLAST_<key>``) and
``--set key=value`` overrides, in that order of precedence (later wins), validating every
value against :mod:`ballast.model.config.settings`.

Unknown keys are warnings (naming the nearest known key); bad values are errors naming the key,
the value and the expected type. Pure: the caller passes the file text and the environment.
"""

from __future__ import annotations

import codecs
import difflib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import javaproperties

from ballast.model.config.pulsar_keys import PULSAR_KEYS_NEAR_OURS
from ballast.model.config.setting import Kind, Setting
from ballast.model.config.settings import SETTINGS, SETTINGS_BY_KEY

ENV_PREFIX = "BALLAST_"
# The command's own variables, which share the prefix but are not settings.
COMMAND_VARIABLES = frozenset({"BALLAST_DEBUG", "BALLAST_ADMIN_URL"})


class ConfigError(ValueError):
    """A configuration value that cannot be used."""

    def __str__(self) -> str:
        return f"ConfigError: {self.args[0]}"


@dataclass(frozen=True, slots=True)
class Settings:
    """Validated values of every known setting, and where each came from (``default``,
    ``file:<path>:<line>``, ``env``, ``--set``)."""

    values: Mapping[str, Any]
    sources: Mapping[str, str] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def get_bool(self, key: str) -> bool:
        return bool(self.values[key])

    def get_int(self, key: str) -> int:
        return int(self.values[key])

    def get_float(self, key: str) -> float:
        return float(self.values[key])

    def get_str(self, key: str) -> str:
        return str(self.values[key])

    def get_list(self, key: str) -> tuple[str, ...]:
        return tuple(self.values[key])

    def get_optional_float(self, key: str) -> float | None:
        value = self.values[key]
        return None if value is None else float(value)

    def source(self, key: str) -> str:
        return self.sources.get(key, "default")

    def with_overrides(self, pairs: Iterable[tuple[str, str]], source: str) -> Settings:
        """New settings with ``pairs`` applied (unknown keys raise; see :func:`load_settings`
        for the warning form)."""
        values = dict(self.values)
        sources = dict(self.sources)
        for key, raw in pairs:
            setting = SETTINGS_BY_KEY.get(key)
            if setting is None:
                raise ConfigError(f"unknown key {key}{_suggestion(key)}")
            parsed = parse_value(setting, raw)
            if parsed is not _UNSET:
                values[key] = parsed
                sources[key] = source
        return Settings(MappingProxyType(values), MappingProxyType(sources))


_UNSET = object()
_TRUE = {"true"}
_FALSE = {"false"}


def defaults() -> Settings:
    """Every setting at its default."""
    return Settings(MappingProxyType({s.key: s.default for s in SETTINGS}))


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")
_LINE_END = re.compile(r"\r\n|\r|\n")
_JAVA_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity"
    r"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?"
    r"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?)"
)


def parse_value(setting: Setting, raw: str) -> Any:
    """Parse ``raw`` for ``setting``; an empty value keeps the current one (Pulsar ignores
    blank values). Raises :class:`ConfigError` naming key, value and expected type."""
    text = raw.strip()
    if text == "":
        return None if setting.kind is Kind.OPTIONAL_FLOAT else _UNSET
    kind = setting.kind

    def bad(extra: str = "") -> ConfigError:
        return ConfigError(f'{setting.key}="{raw}" is not a valid {kind.value}{extra}')

    if kind is Kind.BOOL:
        lowered = text.lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise bad(" (expected true or false)")
    if kind is Kind.INT:
        # Java's parseInt / parseLong: an optional sign and decimal digits (Python's int()
        # would also take "1_000" and other digits than ASCII), within the field's range.
        if _JAVA_INTEGER.fullmatch(text) is None:
            raise bad()
        bits, java_type = (64, "long") if setting.java_long else (32, "int")
        # Longer than any long: refused before int(), which will not take 5,000 digits.
        value: Any = int(text, 10) if len(text) <= 30 else None
        if value is None or not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
            raise bad(f" (beyond a Java {java_type}, which Pulsar reads it as)")
        _check_range(setting, value, raw)
        return value
    if kind in (Kind.FLOAT, Kind.OPTIONAL_FLOAT):
        # Java's Double.parseDouble: ASCII decimal or hex digits, an exponent, a type suffix
        # (Python's float() would also take "1_000" and digits of other scripts).
        if _JAVA_DOUBLE.fullmatch(text) is None:
            raise bad()
        value = _java_double(text)
        if not math.isfinite(value):
            raise bad(" (must be finite)")
        _check_range(setting, value, raw)
        return value
    if kind is Kind.LIST:
        items = tuple(item.strip() for item in text.split(",") if item.strip())
        unknown = [item for item in items if setting.choices and item not in setting.choices]
        if unknown:
            raise ConfigError(
                f'{setting.key}="{raw}": "{unknown[0]}" is not one of: {", ".join(setting.choices)}'
            )
        return items
    value = setting.aliases.get(text, text)
    if setting.choices and value not in setting.choices:
        raise ConfigError(f'{setting.key}="{raw}" is not one of: {", ".join(setting.choices)}')
    if setting.pattern and re.fullmatch(setting.pattern, value) is None:
        raise ConfigError(f'{setting.key}="{raw}" is not valid: {setting.pattern_doc}')
    return value


def _java_double(text: str) -> float:
    """The value of a string :data:`_JAVA_DOUBLE` matched."""
    body = text.rstrip("fFdD")  # "Infinity" and hex digits before "p" are never stripped
    try:
        return float.fromhex(body) if "x" in body.lower() else float(body)
    except OverflowError:  # Java reads a hex float past a double's range as infinity
        return -math.inf if body.startswith("-") else math.inf


def _check_range(setting: Setting, value: float, raw: str) -> None:
    if setting.minimum is not None and value < setting.minimum:
        raise ConfigError(f'{setting.key}="{raw}" must be at least {setting.minimum:g}')
    if setting.maximum is not None and value > setting.maximum:
        raise ConfigError(f'{setting.key}="{raw}" must be at most {setting.maximum:g}')


def _suggestion(key: str) -> str:
    match = nearest_key(key)
    return f" (did you mean {match}?)" if match else ""


def nearest_key(key: str) -> str | None:
    """The known key closest to ``key`` (case-insensitive), if any is reasonably close."""
    lowered = {s.key.lower(): s.key for s in SETTINGS}
    found = difflib.get_close_matches(key.lower(), list(lowered), n=1, cutoff=0.75)
    return lowered[found[0]] if found else None


def parse_conf_text(text: str, name: str = "broker.conf") -> list[tuple[int, str, str]]:
    r"""The entries of a Java properties file (``broker.conf``), read as Java's
    ``Properties.load`` reads them — ``key=value``, ``key: value`` or ``key value``, ``\``
    continuing a line, ``\u`` escapes of four hex digits, ``#`` and ``!`` comments — as
    ``(line, key, value)``, the line being where the entry starts. A malformed ``\u`` escape
    (Java's "Malformed \uxxxx encoding") or one that leaves half a surrogate pair is a
    ConfigError naming ``name`` and the line."""
    entries: list[tuple[int, str, str]] = []
    line = 1
    elements = javaproperties.parse(text.removeprefix("\ufeff"))
    while True:
        try:
            element = next(elements)
        except StopIteration:
            return entries
        except javaproperties.InvalidUEscapeError as exc:
            raise ConfigError(f'{name}:{line}: malformed \\u escape "{exc.escape}"') from None
        if isinstance(element, javaproperties.KeyValue):
            if _LONE_SURROGATE.search(element.key + element.value):
                raise ConfigError(f"{name}:{line}: a \\u escape leaves half a surrogate pair")
            entries.append((line, element.key, element.value.strip()))
        # Java ends lines at \n, \r and \r\n only (splitlines also breaks at NEL, FF, ...).
        line += len(_LINE_END.findall(element.source))


def decode_conf(data: bytes) -> str:
    """A properties file's text: UTF-8 where it is, else ISO-8859-1, the charset Java's
    ``Properties.load`` reads a stream in (so a Pulsar ``broker.conf`` always decodes). A
    UTF-8 byte order mark is dropped either way: in a file with a stray ISO-8859-1 byte it
    would otherwise read as ``ï»¿``, part of the first key."""
    data = data.removeprefix(codecs.BOM_UTF8)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("iso-8859-1")


def parse_assignment(text: str) -> tuple[str, str]:
    """``key=value`` from the command line."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f'"{text}" is not key=value')
    return key.strip(), value


@dataclass(frozen=True, slots=True)
class Loaded:
    """The outcome of loading: the settings and the warnings to show the user."""

    settings: Settings
    warnings: tuple[str, ...]


def load_settings(
    *,
    conf_text: str | None = None,
    conf_name: str = "broker.conf",
    environ: Mapping[str, str] | None = None,
    overrides: Sequence[str] = (),
    strict: bool = False,
) -> Loaded:
    """Defaults, then the file, then ``BALLAST_<key>`` variables, then ``--set`` pairs.

    ``strict``: an unknown key is an error instead of a warning (for callers whose keys are
    all meant for Ballast, such as a simulation, where a misspelt key would silently measure
    the default)."""
    values: dict[str, Any] = {s.key: s.default for s in SETTINGS}
    sources: dict[str, str] = {}
    warnings: list[str] = []
    unused: list[str] = []

    def apply(key: str, raw: str, source: str, *, quiet_if_foreign: bool) -> None:
        setting = SETTINGS_BY_KEY.get(key)
        if setting is None:
            match = nearest_key(key)
            hint = f"; did you mean {match}?" if match else ""
            if strict:
                raise ConfigError(f"unknown key {key} in {source}{hint}")
            if quiet_if_foreign and (match is None or key in PULSAR_KEYS_NEAR_OURS):
                unused.append(key)
            else:
                warnings.append(f"unknown key {key} in {source} ignored{hint}")
            return
        try:
            parsed = parse_value(setting, raw)
        except ConfigError as exc:
            raise ConfigError(f"{exc.args[0]} (from {source})") from None
        # Pulsar's own broker.conf lists its deprecated keys at their defaults: no news.
        if setting.deprecated and parsed is not _UNSET and parsed != setting.default:
            warnings.append(f"{key} is deprecated: {setting.deprecated}")
        if parsed is not _UNSET:
            values[key] = parsed
            sources[key] = source

    if conf_text is not None:
        for line, key, raw in parse_conf_text(conf_text, conf_name):
            apply(key, raw, f"{conf_name}:{line}", quiet_if_foreign=True)
    for name, raw in sorted((environ or {}).items()):
        if name.startswith(ENV_PREFIX) and name not in COMMAND_VARIABLES:
            apply(name[len(ENV_PREFIX) :], raw, f"env {name}", quiet_if_foreign=False)
    for text in overrides:
        key, raw = parse_assignment(text)
        apply(key, raw, "--set", quiet_if_foreign=False)
    if unused:
        shown = ", ".join(unused[:5]) + (", ..." if len(unused) > 5 else "")
        warnings.append(f"{len(unused)} key(s) in {conf_name} not used by Ballast: {shown}")
    _honour_legacy_weights(values, sources)
    _honour_legacy_store_keys(values, sources)
    return Loaded(Settings(MappingProxyType(values), MappingProxyType(sources)), tuple(warnings))


def _honour_legacy_weights(values: dict[str, Any], sources: dict[str, str]) -> None:
    """Pulsar's getter of each ``loadBalancerBandwidth*ResourceWeight`` returns the correctly
    spelled key's value when it is not the default 1.0, else the misspelled
    ``loadBalancerBandwith*`` key's when that one is not (whether either was set or not)."""
    for old, new in (
        ("loadBalancerBandwithInResourceWeight", "loadBalancerBandwidthInResourceWeight"),
        ("loadBalancerBandwithOutResourceWeight", "loadBalancerBandwidthOutResourceWeight"),
    ):
        if (
            values[new] == SETTINGS_BY_KEY[new].default
            and values[old] != SETTINGS_BY_KEY[old].default
        ):
            values[new] = values[old]
            sources[new] = sources.get(old, "default") + f" (via {old})"


def _honour_legacy_store_keys(values: dict[str, Any], sources: dict[str, str]) -> None:
    """Pulsar's ``getMetadataStoreUrl()`` answers ``zk:`` + ``zookeeperServers`` when
    ``metadataStoreUrl`` is blank, and ``getMetadataStoreSessionTimeoutMillis()`` answers
    ``zooKeeperSessionTimeoutMillis`` when that is above 0: a broker.conf of Pulsar 2.x finds
    its ZooKeeper."""
    servers = values["zookeeperServers"].strip()
    if servers and "metadataStoreUrl" not in sources:
        values["metadataStoreUrl"] = f"zk:{servers}"
        sources["metadataStoreUrl"] = f"{sources['zookeeperServers']} (via zookeeperServers)"
    if values["zooKeeperSessionTimeoutMillis"] > 0:
        values["metadataStoreSessionTimeoutMillis"] = values["zooKeeperSessionTimeoutMillis"]
        sources["metadataStoreSessionTimeoutMillis"] = (
            f"{sources['zooKeeperSessionTimeoutMillis']} (via zooKeeperSessionTimeoutMillis)"
        )
