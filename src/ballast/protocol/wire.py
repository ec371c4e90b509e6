"""Protobuf's wire format, the part Pulsar's messages use: varints (unsigned, and signed
integers as 64-bit two's complement — proto2 ``int32``/``int64``, never zig-zag), 64-bit
fixed (``double``), 32-bit fixed, and length-delimited fields (strings, bytes, messages, packed
repeated scalars).

Contract: encoders take Python ints in the field's range and return ``bytes``; decoders take a
buffer and a position and return the value and the next position, raising
:class:`DecodeError` for truncated or malformed input (never ``IndexError``).
"""

from __future__ import annotations

import struct

VARINT = 0
FIXED64 = 1
LENGTH_DELIMITED = 2
FIXED32 = 5

_U64 = (1 << 64) - 1
_MAX_VARINT_BYTES = 10
_DOUBLE = struct.Struct("<d")

Buffer = bytes | bytearray | memoryview


class DecodeError(ValueError):
    """Bytes that are not a valid encoding of what was expected."""


def encode_varint(value: int) -> bytes:
    """An unsigned varint; a negative value is written as its 64-bit two's complement (ten
    bytes), as protobuf writes negative ``int32``/``int64``."""
    if 0 <= value < 0x80:
        return _SMALL[value]
    value &= _U64
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL = [bytes((i,)) for i in range(0x80)]


def decode_varint(data: Buffer, pos: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` and the position after it."""
    try:
        byte = data[pos]
        if byte < 0x80:
            return byte, pos + 1
        result = byte & 0x7F
        shift = 7
        pos += 1
        while True:
            byte = data[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                if result > _U64:
                    raise DecodeError("varint exceeds 64 bits")
                return result, pos
            shift += 7
            if shift >= 7 * _MAX_VARINT_BYTES:
                raise DecodeError("varint longer than 10 bytes")
    except IndexError:
        raise DecodeError("truncated varint") from None


def to_signed64(value: int) -> int:
    """A varint read as proto2 ``int64`` (and ``int32``, which is sign-extended to 64 bits)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def to_signed32(value: int) -> int:
    """A varint read as proto2 ``int32``: the low 32 bits, signed."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def tag(number: int, wire_type: int) -> bytes:
    return encode_varint((number << 3) | wire_type)


def encode_length_delimited(number: int, body: bytes) -> bytes:
    return tag(number, LENGTH_DELIMITED) + encode_varint(len(body)) + body


def encode_double(value: float) -> bytes:
    return _DOUBLE.pack(value)


def decode_double(data: Buffer, pos: int) -> tuple[float, int]:
    end = pos + 8
    if end > len(data):
        raise DecodeError("truncated double")
    return float(_DOUBLE.unpack_from(data, pos)[0]), end


def read_length_delimited(data: Buffer, pos: int, end: int) -> tuple[int, int]:
    """The (start, end) of the length-delimited body at ``pos`` (within ``end``)."""
    length, pos = decode_varint(data, pos)
    stop = pos + length
    if stop > end:
        raise DecodeError(f"length {length} runs past the end of the message")
    return pos, stop


def skip_field(data: Buffer, pos: int, wire_type: int, end: int) -> int:
    """The position after a field of ``wire_type`` whose value starts at ``pos`` (unknown
    fields are skipped, as protobuf readers do)."""
    if wire_type == VARINT:
        return decode_varint(data, pos)[1]
    if wire_type == FIXED64:
        stop = pos + 8
    elif wire_type == LENGTH_DELIMITED:
        stop = read_length_delimited(data, pos, end)[1]
    elif wire_type == FIXED32:
        stop = pos + 4
    else:  # groups (3, 4) are not used by Pulsar; 6 and 7 do not exist
        raise DecodeError(f"unsupported wire type {wire_type}")
    if stop > end:
        raise DecodeError("truncated field")
    return stop
