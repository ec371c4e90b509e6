"""Framing: CRC32C against published check values and its bit-by-bit definition, payload
sections and batches round-trip, corruption is caught, a stream cut anywhere yields the same
frames, oversized frames are refused from their size field alone, version negotiation."""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ballast.protocol import commands as c
from ballast.protocol.checksum import crc32c, crc32c_reference
from ballast.protocol.frames import (
    ChecksumMismatchError,
    FrameReader,
    FrameTooLargeError,
    MalformedFrameError,
    batch_payload,
    check_payload,
    decode_frame,
    encode_frame,
    encode_payload_frame,
    parse_payload,
    payload_section,
    split_batch,
    without_checksum,
)
from ballast.protocol.messages import KeyValue, MessageMetadata, SingleMessageMetadata
from ballast.protocol.versions import BROKER_PROTOCOL_VERSION, max_frame_size, negotiate

METADATA = MessageMetadata(producer_name="p-1", sequence_id=7, publish_time=1_700_000_000_000)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", 0),
        (b"123456789", 0xE3069283),  # the standard check value
        (bytes(32), 0x8A9136AA),  # RFC 3720 (iSCSI) B.4 test vectors
        (b"\xff" * 32, 0x62A8AB43),
        (bytes(range(32)), 0x46DD794E),
        (bytes(range(31, -1, -1)), 0x113FDB5C),
    ],
)
def test_crc32c_known_values(data: bytes, expected: int) -> None:
    assert crc32c(data) == expected
    assert crc32c_reference(data) == expected


@given(st.binary(max_size=300))
def test_crc32c_matches_its_definition(data: bytes) -> None:
    assert crc32c(data) == crc32c_reference(data)


@given(st.binary(max_size=200), st.booleans())
def test_payload_section_round_trip(payload: bytes, checksum: bool) -> None:
    section = payload_section(METADATA, payload, checksum=checksum)
    parsed = parse_payload(section)
    assert parsed.payload == payload
    assert parsed.decode_metadata() == METADATA
    assert (parsed.checksum is not None) == checksum
    check_payload(section)
    assert parse_payload(without_checksum(section)).payload == payload


def test_checksum_covers_metadata_size_metadata_and_payload() -> None:
    section = payload_section(METADATA, b"hello")
    assert section[:2] == b"\x0e\x01"
    assert int.from_bytes(section[2:6], "big") == crc32c(section[6:])


@given(st.binary(min_size=1, max_size=50), st.data())
def test_any_flipped_byte_after_the_checksum_is_caught(payload: bytes, data: st.DataObject) -> None:
    section = bytearray(payload_section(METADATA, payload))
    index = data.draw(st.integers(6, len(section) - 1))
    section[index] ^= data.draw(st.integers(1, 255))
    with pytest.raises((ChecksumMismatchError, MalformedFrameError)):
        parse_payload(bytes(section))
    with pytest.raises((ChecksumMismatchError, MalformedFrameError)):
        check_payload(bytes(section))


def test_truncated_sections_are_malformed() -> None:
    section = payload_section(METADATA, b"x", checksum=False)
    with pytest.raises(MalformedFrameError):
        check_payload(section[:3])
    with pytest.raises(MalformedFrameError):
        check_payload((1000).to_bytes(4, "big") + b"abc")  # metadata longer than the frame
    with pytest.raises(MalformedFrameError):
        parse_payload(b"\x0e\x01\x00\x00")


single = st.builds(
    SingleMessageMetadata,
    payload_size=st.just(0),
    partition_key=st.none() | st.text(max_size=5),
    properties=st.lists(
        st.builds(KeyValue, key=st.text(max_size=3), value=st.text(max_size=3)), max_size=2
    ).map(tuple),
)


@given(st.lists(st.tuples(single, st.binary(max_size=20)), min_size=1, max_size=5))
def test_batch_round_trip(entries: list[tuple[SingleMessageMetadata, bytes]]) -> None:
    import msgspec

    messages = [(msgspec.structs.replace(m, payload_size=len(d)), d) for m, d in entries]
    assert split_batch(batch_payload(messages), len(messages)) == messages


def test_batch_running_past_its_payload_is_malformed() -> None:
    payload = batch_payload([(SingleMessageMetadata(payload_size=10), b"short")])
    with pytest.raises(MalformedFrameError):
        split_batch(payload, 1)
    with pytest.raises(MalformedFrameError):
        split_batch(payload, 2)


def _frames() -> list[bytes]:
    return [
        encode_frame(c.Ping()),
        encode_frame(c.Flow(consumer_id=1, message_permits=1000)),
        encode_payload_frame(
            c.Send(producer_id=1, sequence_id=2), payload_section(METADATA, b"m" * 300)
        ),
        encode_frame(c.Error(request_id=3, error=c.ServerError.METADATA_ERROR, message="x")),
    ]


@given(st.lists(st.integers(0, 400), max_size=8))
def test_a_stream_cut_anywhere_gives_the_same_frames(cuts: list[int]) -> None:
    frames = _frames()
    stream = b"".join(frames)
    points = sorted({min(cut, len(stream)) for cut in cuts})
    reader = FrameReader()
    got: list[bytes] = []
    start = 0
    for point in [*points, len(stream)]:
        got.extend(reader.feed(stream[start:point]))
        start = point
    assert got == [frame[4:] for frame in frames]
    assert reader.buffered == 0


def test_a_frame_sent_in_tiny_pieces_is_held_in_about_its_size() -> None:
    """Each piece was kept as its own bytes object until the frame was whole: one connection
    sending 5.2 MB a few bytes per packet grew the broker by 125 MB."""
    message = "m" * 300_000
    frame = encode_frame(c.Error(request_id=1, error=c.ServerError.METADATA_ERROR, message=message))
    reader = FrameReader()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for index in range(0, 200_000, 2):
            assert reader.feed(frame[index : index + 2]) == []
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert reader.buffered == 200_000
    assert held < 1_000_000, held  # the 200,000 bytes, and room to grow
    assert reader.feed(frame[200_000:]) == [frame[4:]]
    assert reader.buffered == 0


def test_decoded_frames_give_command_and_payload() -> None:
    send, flow = _frames()[2], _frames()[1]
    decoded = decode_frame(send[4:])
    assert decoded.command == c.Send(producer_id=1, sequence_id=2)
    assert decoded.payload is not None and parse_payload(decoded.payload).payload == b"m" * 300
    assert decode_frame(flow[4:]) == decode_frame(flow[4:])
    assert decode_frame(flow[4:]).payload is None


def test_oversized_frames_are_refused_from_their_size_field() -> None:
    reader = FrameReader(max_size=max_frame_size(1024))
    header = (1024 + 10 * 1024 - 3).to_bytes(4, "big")  # size + 4 > limit
    with pytest.raises(FrameTooLargeError):
        reader.feed(header)
    ok = FrameReader(max_size=max_frame_size(1024))
    assert ok.feed((1024 + 10 * 1024 - 4).to_bytes(4, "big")) == []  # exactly the limit


def test_malformed_frames() -> None:
    with pytest.raises(MalformedFrameError):
        decode_frame(b"\x00\x00")
    with pytest.raises(MalformedFrameError):
        decode_frame((100).to_bytes(4, "big") + b"\x08\x12")


@pytest.mark.parametrize(
    ("client", "agreed"), [(20, 20), (6, 6), (0, 0), (25, BROKER_PROTOCOL_VERSION), (-3, 0)]
)
def test_negotiation_takes_the_older_version(client: int, agreed: int) -> None:
    assert negotiate(client) == agreed
