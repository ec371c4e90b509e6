"""A protobuf message as a frozen ``msgspec`` struct with a table of its fields (number, name,
kind), and one generic encoder and decoder for all of them.

proto2 rules followed: a required field is always written and its absence fails decoding; an
optional field is written only when it differs from its default (``None`` means "not set");
repeated fields are tuples, written unpacked, read packed or unpacked; unknown fields are
skipped; a field that appears twice keeps its last value (nested messages are not merged —
Pulsar never repeats them).

Example::

    class CommandFlow(ProtoMessage, frozen=True, kw_only=True):
        consumer_id: int
        message_permits: int
        FIELDS = (F(1, "consumer_id", UINT64, required=True),
                  F(2, "message_permits", UINT32, required=True))

    decode(CommandFlow, encode(CommandFlow(consumer_id=1, message_permits=1000)))
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import msgspec

from ballast.protocol import wire
from ballast.protocol.wire import Buffer, DecodeError


class Kind(enum.Enum):
    UINT64 = "uint64"
    UINT32 = "uint32"
    INT64 = "int64"
    INT32 = "int32"
    BOOL = "bool"
    ENUM = "enum"
    STRING = "string"
    BYTES = "bytes"
    DOUBLE = "double"
    MESSAGE = "message"


UINT64 = Kind.UINT64
UINT32 = Kind.UINT32
INT64 = Kind.INT64
INT32 = Kind.INT32
BOOL = Kind.BOOL
ENUM = Kind.ENUM
STRING = Kind.STRING
BYTES = Kind.BYTES
DOUBLE = Kind.DOUBLE
MESSAGE = Kind.MESSAGE

_VARINT_KINDS = frozenset({UINT64, UINT32, INT64, INT32, BOOL, ENUM})


@dataclass(frozen=True, slots=True)
class F:
    """One field: its number in ``PulsarApi.proto``, the struct attribute, its kind; the
    message class for ``MESSAGE`` fields."""

    number: int
    name: str
    kind: Kind
    message: type[ProtoMessage] | None = None
    repeated: bool = False
    required: bool = False


class ProtoMessage(msgspec.Struct, frozen=True, kw_only=True):
    """Base of every message; subclasses list their fields in ``FIELDS``."""

    FIELDS: ClassVar[tuple[F, ...]] = ()


M = TypeVar("M", bound=ProtoMessage)


@dataclass(frozen=True, slots=True)
class _Compiled:
    fields: tuple[tuple[F, Any], ...]  # (field, default) in number order
    by_number: dict[int, F]
    repeated: tuple[str, ...]


_COMPILED_ATTR = "_ballast_compiled"


def _compiled(cls: type[ProtoMessage]) -> _Compiled:
    found = cls.__dict__.get(_COMPILED_ATTR)
    if found is not None:
        return found  # type: ignore[no-any-return]
    defaults = {info.name: info.default for info in msgspec.structs.fields(cls)}
    by_number: dict[int, F] = {}
    for field in cls.FIELDS:
        if field.name not in defaults:
            raise TypeError(f"{cls.__name__}.FIELDS names unknown attribute {field.name}")
        if field.number in by_number:
            raise TypeError(f"{cls.__name__}: field number {field.number} used twice")
        if (field.kind is MESSAGE) != (field.message is not None):
            raise TypeError(f"{cls.__name__}.{field.name}: message class iff kind is MESSAGE")
        by_number[field.number] = field
    ordered = tuple(sorted(cls.FIELDS, key=lambda f: f.number))
    compiled = _Compiled(
        fields=tuple((f, defaults[f.name]) for f in ordered),
        by_number=by_number,
        repeated=tuple(f.name for f in ordered if f.repeated),
    )
    setattr(cls, _COMPILED_ATTR, compiled)
    return compiled


# -- encoding ---------------------------------------------------------------------------------


def _encode_value(field: F, value: Any) -> bytes:
    kind = field.kind
    number = field.number
    if kind in _VARINT_KINDS:
        return wire.tag(number, wire.VARINT) + wire.encode_varint(int(value))
    if kind is STRING:
        return wire.encode_length_delimited(number, value.encode())
    if kind is BYTES:
        return wire.encode_length_delimited(number, bytes(value))
    if kind is MESSAGE:
        return wire.encode_length_delimited(number, encode(value))
    return wire.tag(number, wire.FIXED64) + wire.encode_double(float(value))


def encode(message: ProtoMessage) -> bytes:
    """The message's protobuf encoding, fields in number order."""
    parts: list[bytes] = []
    for field, default in _compiled(type(message)).fields:
        value = getattr(message, field.name)
        if field.repeated:
            parts.extend(_encode_value(field, item) for item in value)
        elif value is None:
            if field.required:
                raise ValueError(f"{type(message).__name__}.{field.name} is required")
        elif field.required or value != default:
            parts.append(_encode_value(field, value))
    return b"".join(parts)


# -- decoding ---------------------------------------------------------------------------------


def _convert_varint(kind: Kind, raw: int) -> int | bool:
    if kind is BOOL:
        return raw != 0
    if kind is INT32:
        return wire.to_signed32(raw)
    if kind is INT64:
        return wire.to_signed64(raw)
    if kind is UINT32:
        return raw & 0xFFFFFFFF
    return raw


def decode(cls: type[M], data: Buffer, start: int = 0, end: int | None = None) -> M:
    """The message of type ``cls`` encoded in ``data[start:end]``; DecodeError when the bytes
    are malformed, a field has the wrong wire type, or a required field is missing."""
    compiled = _compiled(cls)
    stop = len(data) if end is None else end
    values: dict[str, Any] = {}
    lists: dict[str, list[Any]] = {}
    pos = start
    while pos < stop:
        key, pos = wire.decode_varint(data, pos)
        number = key >> 3
        wire_type = key & 7
        field = compiled.by_number.get(number)
        if field is None:
            pos = wire.skip_field(data, pos, wire_type, stop)
            continue
        kind = field.kind
        items: list[Any] = []
        if kind in _VARINT_KINDS:
            if wire_type == wire.VARINT:
                raw, pos = wire.decode_varint(data, pos)
                items.append(_convert_varint(kind, raw))
            elif wire_type == wire.LENGTH_DELIMITED and field.repeated:  # packed
                body, pos = wire.read_length_delimited(data, pos, stop)
                while body < pos:
                    raw, body = wire.decode_varint(data, body)
                    items.append(_convert_varint(kind, raw))
                if body != pos:
                    raise DecodeError(f"{cls.__name__}.{field.name}: bad packed field")
            else:
                raise DecodeError(f"{cls.__name__}.{field.name}: wire type {wire_type}")
        elif kind is DOUBLE:
            if wire_type != wire.FIXED64:
                raise DecodeError(f"{cls.__name__}.{field.name}: wire type {wire_type}")
            value, pos = wire.decode_double(data, pos)
            items.append(value)
        else:
            if wire_type != wire.LENGTH_DELIMITED:
                raise DecodeError(f"{cls.__name__}.{field.name}: wire type {wire_type}")
            body, pos = wire.read_length_delimited(data, pos, stop)
            if kind is STRING:
                try:
                    items.append(bytes(data[body:pos]).decode())
                except UnicodeDecodeError:
                    raise DecodeError(f"{cls.__name__}.{field.name}: invalid UTF-8") from None
            elif kind is BYTES:
                items.append(bytes(data[body:pos]))
            else:
                assert field.message is not None
                items.append(decode(field.message, data, body, pos))
        if field.repeated:
            lists.setdefault(field.name, []).extend(items)
        else:
            values[field.name] = items[-1]
    if pos != stop:
        raise DecodeError(f"{cls.__name__}: field runs past the end")
    for name, found in lists.items():
        values[name] = tuple(found)
    try:
        return cls(**values)
    except TypeError as exc:  # a required field is missing
        raise DecodeError(f"{cls.__name__}: {exc}") from None
