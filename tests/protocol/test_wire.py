"""Protobuf's wire primitives: varints (laws and edge cases), signed views, skipping."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ballast.protocol import wire
from ballast.protocol.wire import DecodeError

U64 = st.integers(min_value=0, max_value=2**64 - 1)


@given(U64)
def test_varint_round_trip(value: int) -> None:
    encoded = wire.encode_varint(value)
    assert wire.decode_varint(encoded, 0) == (value, len(encoded))
    assert len(encoded) == max(1, -(-value.bit_length() // 7))


@given(st.integers(min_value=-(2**63), max_value=-1))
def test_negative_ints_are_ten_byte_twos_complement(value: int) -> None:
    encoded = wire.encode_varint(value)
    assert len(encoded) == 10
    raw, end = wire.decode_varint(encoded, 0)
    assert end == 10 and wire.to_signed64(raw) == value
    if value >= -(2**31):
        assert wire.to_signed32(raw) == value


def test_known_encodings() -> None:
    assert wire.encode_varint(0) == b"\x00"
    assert wire.encode_varint(300) == b"\xac\x02"
    assert wire.encode_varint(-1) == b"\xff" * 9 + b"\x01"
    assert wire.tag(2, wire.LENGTH_DELIMITED) == b"\x12"


@pytest.mark.parametrize(
    "data",
    [b"", b"\x80", b"\xff\xff", b"\xff" * 10 + b"\x01", b"\xff" * 9 + b"\x7f"],
    ids=["empty", "truncated", "truncated-2", "eleven-bytes", "over-64-bits"],
)
def test_bad_varints_are_decode_errors(data: bytes) -> None:
    with pytest.raises(DecodeError):
        wire.decode_varint(data, 0)


def test_skip_field_checks_bounds() -> None:
    assert wire.skip_field(b"\x05abcde", 0, wire.LENGTH_DELIMITED, 6) == 6
    assert wire.skip_field(b"\x01\x02\x03\x04", 0, wire.FIXED32, 4) == 4
    with pytest.raises(DecodeError):
        wire.skip_field(b"\x05abc", 0, wire.LENGTH_DELIMITED, 4)
    with pytest.raises(DecodeError):
        wire.skip_field(b"\x00" * 4, 0, wire.FIXED64, 4)
    with pytest.raises(DecodeError):
        wire.skip_field(b"\x00", 0, 3, 1)  # groups are not used by Pulsar
