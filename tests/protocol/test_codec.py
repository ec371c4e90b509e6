"""The protobuf subset: bytes captured from the official client decode as expected, every
message type round-trips (a law, over values generated from its own field table), unknown
fields are skipped, and malformed input is an error, never a crash. The hand-rolled encoders of
the message path produce exactly the generic codec's bytes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ballast.protocol import commands as c
from ballast.protocol import fast
from ballast.protocol.messages import (
    FeatureFlags,
    KeySharedMeta,
    MessageIdData,
    MessageMetadata,
    SingleMessageMetadata,
)
from ballast.protocol.schema import Kind, ProtoMessage, decode, encode
from ballast.protocol.wire import DecodeError, encode_varint

# CONNECT as pulsar-client 3.13.0 (C++ 4.2.0) sends it, after the two size fields
# (shared/reference/platform-notes.md, section 4).
CAPTURED_CONNECT = bytes.fromhex(
    "080212210a1150756c7361722d4350502d76342e322e3020142a046e6f6e65520408011001"
)

_SCALARS: dict[Kind, st.SearchStrategy[Any]] = {
    Kind.UINT64: st.integers(0, 2**64 - 1),
    Kind.UINT32: st.integers(0, 2**32 - 1),
    Kind.INT64: st.integers(-(2**63), 2**63 - 1),
    Kind.INT32: st.integers(-(2**31), 2**31 - 1),
    Kind.BOOL: st.booleans(),
    Kind.ENUM: st.integers(0, 30),
    Kind.STRING: st.text(max_size=12),
    Kind.BYTES: st.binary(max_size=12),
    Kind.DOUBLE: st.floats(allow_nan=False),
}


def messages(cls: type[ProtoMessage], depth: int = 0) -> st.SearchStrategy[Any]:
    """Any value of ``cls`` its field table allows."""
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for field in cls.FIELDS:
        if field.kind is Kind.MESSAGE:
            assert field.message is not None
            value = messages(field.message, depth + 1)
        else:
            value = _SCALARS[field.kind]
        if field.repeated:
            fields[field.name] = st.lists(value, max_size=3 if depth == 0 else 1).map(tuple)
        elif field.required:
            fields[field.name] = value
        else:
            fields[field.name] = st.none() | value if _optional_none(cls, field.name) else value
    return st.builds(cls, **fields)


def _optional_none(cls: type[ProtoMessage], name: str) -> bool:
    import msgspec

    return next(f.default for f in msgspec.structs.fields(cls) if f.name == name) is None


ALL_CLASSES = sorted(
    {*c.COMMAND_CLASSES.values(), MessageMetadata, SingleMessageMetadata, KeySharedMeta},
    key=lambda cls: cls.__name__,
)


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda cls: cls.__name__)
def test_every_message_round_trips(cls: type[ProtoMessage]) -> None:
    @given(messages(cls))
    def law(message: ProtoMessage) -> None:
        assert decode(cls, encode(message)) == message
        if isinstance(message, c.Command):
            assert c.decode_command(c.encode_command(message)) == message

    law()


def test_captured_connect_decodes() -> None:
    command = c.decode_command(CAPTURED_CONNECT)
    assert command == c.Connect(
        client_version="Pulsar-CPP-v4.2.0",
        protocol_version=20,
        auth_method_name="none",
        feature_flags=FeatureFlags(supports_auth_refresh=True, supports_broker_entry_metadata=True),
    )
    assert c.encode_command(command) == CAPTURED_CONNECT


def test_required_fields_are_written_even_at_their_zero_value() -> None:
    receipt = c.SendReceipt(
        producer_id=0, sequence_id=0, message_id=MessageIdData(ledger_id=0, entry_id=0)
    )
    # producer_id, sequence_id and both ids of the message id are proto2 "required".
    assert encode(receipt) == b"\x08\x00\x10\x00\x1a\x04\x08\x00\x10\x00"
    assert encode(c.Connected(server_version="x")) == b"\x0a\x01x"  # protocol_version 0 omitted


def test_unknown_fields_are_skipped() -> None:
    flow = c.Flow(consumer_id=3, message_permits=1000)
    extra = encode(flow) + b"\xc8\x06" + encode_varint(7) + b"\xd2\x06\x02hi"  # fields 105, 106
    assert decode(c.Flow, extra) == flow


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"\x08\x01", "entry_id (required) missing"),
        (b"\x08\x01\x12\x01", "ledger field 2 with the wrong wire type"),
        (b"\x08\x01\x10\x01\x22\x05ab", "length past the end"),
        (b"\x08\x01\x10", "truncated"),
    ],
)
def test_malformed_messages_are_decode_errors(data: bytes, why: str) -> None:
    with pytest.raises(DecodeError):
        decode(MessageIdData, data)


def test_commands_of_unknown_types_are_refused() -> None:
    with pytest.raises(c.UnknownCommandError, match="type 99"):
        c.decode_command(b"\x08\x63")
    with pytest.raises(c.UnknownCommandError, match="NEW_TXN"):
        c.decode_command(b"\x08\x32")  # a type Pulsar has and Ballast does not speak
    with pytest.raises(DecodeError, match="no type"):
        c.decode_command(b"\x12\x00")


def test_strings_must_be_utf8() -> None:
    with pytest.raises(DecodeError, match="UTF-8"):
        decode(c.Error, b"\x08\x01\x10\x00\x1a\x01\xff")


@given(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))
def test_fast_receipt_is_the_generic_encoding(producer: int, sequence: int, highest: int) -> None:
    generic = c.SendReceipt(
        producer_id=producer,
        sequence_id=sequence,
        message_id=MessageIdData(ledger_id=0, entry_id=0),
        highest_sequence_id=highest,
    )
    body = c.encode_command(generic)
    expected = (len(body) + 4).to_bytes(4, "big") + len(body).to_bytes(4, "big") + body
    assert fast.receipt_frame(producer, sequence, highest) == expected


@given(st.integers(0, 2**64 - 1), st.integers(0, 10_000), st.integers(-1, 2**31 - 1))
def test_fast_message_header_is_the_generic_encoding(
    consumer: int, section: int, partition: int
) -> None:
    message_id = MessageIdData(ledger_id=0, entry_id=0, partition=partition)
    body = c.encode_command(c.Message(consumer_id=consumer, message_id=message_id))
    expected = (len(body) + 4 + section).to_bytes(4, "big") + len(body).to_bytes(4, "big") + body
    assert fast.message_header(consumer, section, partition) == expected


@given(messages(c.Send))
def test_fast_send_parser_agrees_with_the_generic_decoder(send: c.Send) -> None:
    body = c.encode_command(send)
    frame = len(body).to_bytes(4, "big") + body + b"payload"
    fields = fast.parse_send(frame, 4 + len(body))
    assert fields is not None  # every field of Send is one the fast path knows
    assert (
        fields.producer_id,
        fields.sequence_id,
        fields.num_messages,
        fields.highest_sequence_id,
    ) == (send.producer_id, send.sequence_id, send.num_messages, send.highest_sequence_id)


def test_fast_send_parser_takes_the_usual_send_and_leaves_others() -> None:
    body = c.encode_command(c.Send(producer_id=1, sequence_id=2, num_messages=10))
    frame = len(body).to_bytes(4, "big") + body
    fields = fast.parse_send(frame, len(frame))
    assert fields is not None and fields.num_messages == 10
    other = c.encode_command(c.Flow(consumer_id=1, message_permits=5))
    assert fast.parse_send(len(other).to_bytes(4, "big") + other, 4 + len(other)) is None
    assert fast.parse_send(frame[:-1], len(frame) - 1) is None  # truncated
