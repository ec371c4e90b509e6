"""Hand-rolled encoders and a decoder for the frames on the message path — SEND in, SEND_RECEIPT
and MESSAGE out — which a broker handles once per message. Each produces (or accepts) exactly
the bytes the generic codec does for the same command (tested as a law), only without building
structs: a broker spends most of its time here.

Non-persistent messages carry the message id (0, 0), as Pulsar's ``NonPersistentTopic`` gives
every message it relays, and so do their receipts; a message to a consumer of a partition also
names the partition.
"""

from __future__ import annotations

import struct

from ballast.protocol.wire import encode_varint

_HEADER = struct.Struct(">II")
_ZERO_MESSAGE_ID = b"\x08\x00\x10\x00"  # MessageIdData{ledgerId: 0, entryId: 0}


def receipt_frame(producer_id: int, sequence_id: int, highest_sequence_id: int = 0) -> bytes:
    """``SEND_RECEIPT{producer_id, sequence_id, message_id: (0, 0)[, highest_sequence_id]}``."""
    body = (
        b"\x08"
        + encode_varint(producer_id)
        + b"\x10"
        + encode_varint(sequence_id)
        + b"\x1a\x04"
        + _ZERO_MESSAGE_ID
    )
    if highest_sequence_id:
        body += b"\x20" + encode_varint(highest_sequence_id)
    command = b"\x08\x07\x3a" + encode_varint(len(body)) + body
    size = len(command)
    return _HEADER.pack(size + 4, size) + command


def message_header(consumer_id: int, section_size: int, partition: int = -1) -> bytes:
    """The frame of ``MESSAGE{consumer_id, message_id: (0, 0, partition)}`` up to its payload
    section (``section_size`` bytes, written after it). ``partition``: the index of the
    partition the consumer subscribed to, -1 (the field's default, left out) for a topic that
    is not one: Pulsar's broker sends the consumer's partition index in every message id, and
    the client hands it on with the message."""
    if partition < 0:
        message_id = b"\x12\x04" + _ZERO_MESSAGE_ID
    else:
        message_id = b"\x12" + encode_varint(5 + len(encoded := encode_varint(partition)))
        message_id += _ZERO_MESSAGE_ID + b"\x18" + encoded
    body = b"\x08" + encode_varint(consumer_id) + message_id
    command = b"\x08\x09\x4a" + encode_varint(len(body)) + body
    size = len(command)
    return _HEADER.pack(size + 4 + section_size, size) + command


class SendFields:
    """The fields of a SEND a broker uses. Plain class with slots: built once per message."""

    __slots__ = ("highest_sequence_id", "num_messages", "producer_id", "sequence_id")

    def __init__(
        self, producer_id: int, sequence_id: int, num_messages: int, highest_sequence_id: int
    ) -> None:
        self.producer_id = producer_id
        self.sequence_id = sequence_id
        self.num_messages = num_messages
        self.highest_sequence_id = highest_sequence_id


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def parse_send(frame: bytes, command_end: int) -> SendFields | None:
    """The SEND in ``frame[4:command_end]`` (a frame without its total size) when it has the
    usual shape — ``BaseCommand{type: SEND, send: {...}}`` with only the fields of
    :class:`SendFields`, transaction ids, ``is_chunk`` and ``marker`` — else None: the caller
    then decodes it with the generic codec, which also reports what is wrong with it."""
    try:
        if frame[4] != 0x08 or frame[5] != 0x06 or frame[6] != 0x32:
            return None
        length, pos = _varint(frame, 7)
        end = pos + length
        if end != command_end:
            return None
        producer_id = sequence_id = -1
        num_messages = 1
        highest = 0
        while pos < end:
            key = frame[pos]
            value, pos = _varint(frame, pos + 1)
            if key == 0x08:
                producer_id = value
            elif key == 0x10:
                sequence_id = value
            elif key == 0x18:
                num_messages = value - (1 << 64) if value >= 1 << 63 else value
            elif key == 0x30:
                highest = value
            elif key not in (0x20, 0x28, 0x38, 0x40):
                return None
        if pos != end or producer_id < 0 or sequence_id < 0:
            return None
        return SendFields(producer_id, sequence_id, num_messages, highest)
    except (IndexError, ValueError):
        return None
