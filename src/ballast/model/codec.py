"""JSON in and out of the model's types, with errors that name the JSON path of the problem.

The types are ``msgspec`` structs whose field names map to Pulsar's camelCase keys; decoding
ignores unknown keys (Pulsar adds fields across versions) and enforces types and bounds.
msgspec reports a bad map entry as ``$.lastStats[...]``; on that (error-only) path we find
the entry by trial so the message names the key.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Mapping
from typing import Any, TypeVar

import msgspec

T = TypeVar("T")

_PATH = re.compile(r" - at `(\$[^`]*)`$")
_TOKEN = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\.\.\.|\d+)\]")


class ModelError(ValueError):
    """Data that does not fit the model: ``path`` is the JSON path (``$.cpu.usage``), the
    message says what is wrong there."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


def decode(data: bytes | str, type_: type[T], *, root: str = "$") -> T:
    """Decode JSON into ``type_``; raises :class:`ModelError` naming the path."""
    try:
        return msgspec.json.decode(data, type=type_)
    except msgspec.ValidationError as exc:
        try:
            builtins = msgspec.json.decode(data)
        except (msgspec.DecodeError, RecursionError):
            builtins = None
        raise _validation_error(exc, builtins, type_, root) from None
    except (msgspec.DecodeError, RecursionError) as exc:  # msgspec stops at Python's depth
        raise ModelError(root, f"not valid JSON ({exc})") from None


def convert(obj: Any, type_: type[T], *, root: str = "$") -> T:
    """Convert already-parsed JSON (dicts, lists, numbers) into ``type_``; raises
    :class:`ModelError` naming the path under ``root``."""
    try:
        return msgspec.convert(obj, type=type_)
    except msgspec.ValidationError as exc:
        raise _validation_error(exc, obj, type_, root) from None


def encode(value: Any) -> bytes:
    """Encode deterministically: sets and dict keys in sorted order, so equal values give
    equal bytes."""
    return msgspec.json.encode(value, order="deterministic")


def encode_sorted(value: Any) -> bytes:
    """Encode with every key in sorted order, struct fields included: the bytes of
    ``encode(to_builtins(value))`` without building the intermediate dicts."""
    return msgspec.json.encode(value, order="sorted")


def to_builtins(value: Any) -> Any:
    """The JSON-ready form of a model value (dicts with camelCase keys, lists, numbers)."""
    return msgspec.to_builtins(value, order="deterministic")


def json_safe(value: Any) -> Any:
    """``value`` with its infinite and NaN floats as strings, at any depth: JSON has no such
    numbers, and strategy stats use infinity (as ``ballast decide`` prints them)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


_NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def from_json_safe(value: Any) -> Any:
    """The inverse of :func:`json_safe`: the strings ``"inf"``, ``"-inf"`` and ``"nan"`` as
    floats again, at any depth (map keys stay as they are)."""
    if isinstance(value, str):
        return _NON_FINITE.get(value, value)
    if isinstance(value, Mapping):
        return {k: from_json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_json_safe(v) for v in value]
    return value


def key_path(key: Any) -> str:
    """A map key as a JSON-path step: ``["t/ns/0x0_0x1"]``."""
    return f"[{msgspec.json.encode(key).decode()}]"


def _validation_error(
    exc: msgspec.ValidationError, obj: Any, type_: type[Any], root: str
) -> ModelError:
    text = str(exc)
    match = _PATH.search(text)
    if match is None:
        return ModelError(root, text)
    message = text[: match.start()]
    path = match.group(1)
    if "[...]" in path and obj is not None:
        path = _resolve_map_keys(obj, type_, path)
    return ModelError(root + path[1:], message)


def _resolve_map_keys(obj: Any, type_: type[Any], path: str) -> str:
    """Replace each ``[...]`` in ``path`` by the key of the first map entry that reproduces
    the error when the map is cut down to that entry alone."""
    trial = copy.deepcopy(obj)
    node: Any = trial
    resolved = "$"
    for match in _TOKEN.finditer(path):
        name, index = match.group(1), match.group(2)
        if name is not None:
            if not isinstance(node, dict) or name not in node:
                return resolved + path[match.start() :]
            node = node[name]
            resolved += f".{name}"
        elif index == "...":
            if not isinstance(node, dict):
                return resolved + path[match.start() :]
            culprit = _failing_key(trial, type_, node)
            if culprit is None:
                return resolved + path[match.start() :]
            node = node[culprit]
            resolved += key_path(culprit)
        else:
            position = int(index)
            if not isinstance(node, list) or position >= len(node):
                return resolved + path[match.start() :]
            node = node[position]
            resolved += f"[{position}]"
    return resolved


def _failing_key(trial: Any, type_: type[Any], mapping: dict[Any, Any]) -> Any:
    """The first key of ``mapping`` whose entry alone makes ``trial`` fail; ``mapping`` is
    left holding just that entry (so deeper ``[...]`` resolve within it), or restored."""
    entries = list(mapping.items())
    for key, value in entries:
        mapping.clear()
        mapping[key] = value
        try:
            msgspec.convert(trial, type=type_)
        except msgspec.ValidationError:
            return key
    mapping.clear()
    mapping.update(entries)
    return None
