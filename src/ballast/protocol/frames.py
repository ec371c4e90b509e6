"""Pulsar's frames on a TCP stream.

A simple command::

    [total size: u32][command size: u32][BaseCommand]

A command with a message (SEND from producers, MESSAGE to consumers) adds the payload
section::

    [total][command size][BaseCommand][0x0e01: u16][CRC32C: u32][metadata size: u32]
    [MessageMetadata][payload]

All integers are big-endian; ``total`` counts the bytes after itself; the checksum covers
everything after it (metadata size, metadata, payload). A section without the magic number
carries no checksum (clients before protocol v6). A batch is one payload whose metadata has
``num_messages_in_batch``; its payload is each message's ``[size: u32][SingleMessageMetadata]
[bytes]`` in turn.

:class:`FrameReader` cuts a byte stream into frames, refusing one larger than the limit before
buffering it (Pulsar's ``LengthFieldBasedFrameDecoder`` with ``maxMessageSize`` + 10 KiB).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ballast.protocol.checksum import crc32c
from ballast.protocol.commands import Command, decode_command, encode_command
from ballast.protocol.messages import MessageMetadata, SingleMessageMetadata
from ballast.protocol.schema import decode, encode
from ballast.protocol.versions import max_frame_size
from ballast.protocol.wire import DecodeError

MAGIC_CRC32C = 0x0E01
MAGIC_BROKER_ENTRY_METADATA = 0x0E02

_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")
_MAGIC_BYTES = _U16.pack(MAGIC_CRC32C)


class FrameError(Exception):
    """A frame the connection cannot continue after; the broker closes it."""


class FrameTooLargeError(FrameError):
    pass


class MalformedFrameError(FrameError):
    pass


class ChecksumMismatchError(FrameError):
    pass


def encode_frame(command: Command) -> bytes:
    """A simple command's frame."""
    body = encode_command(command)
    size = len(body)
    return _U32.pack(size + 4) + _U32.pack(size) + body


def payload_section(
    metadata: MessageMetadata | bytes, payload: bytes, checksum: bool = True
) -> bytes:
    """The payload section of a message: (magic, CRC32C,) metadata size, metadata, payload."""
    meta = metadata if isinstance(metadata, bytes) else encode(metadata)
    tail = _U32.pack(len(meta)) + meta + payload
    if not checksum:
        return tail
    return _MAGIC_BYTES + _U32.pack(crc32c(tail)) + tail


def encode_payload_frame(command: Command, section: bytes) -> bytes:
    """A frame carrying ``command`` and a payload section (from :func:`payload_section`)."""
    body = encode_command(command)
    size = len(body)
    return _U32.pack(size + 4 + len(section)) + _U32.pack(size) + body + section


def batch_payload(messages: list[tuple[SingleMessageMetadata, bytes]]) -> bytes:
    """The payload of a batch: each message's size-prefixed metadata, then its bytes."""
    parts: list[bytes] = []
    for single, data in messages:
        meta = encode(single)
        parts.append(_U32.pack(len(meta)) + meta + data)
    return b"".join(parts)


def split_batch(payload: bytes, count: int) -> list[tuple[SingleMessageMetadata, bytes]]:
    """The ``count`` messages of a batch's (uncompressed) payload."""
    found: list[tuple[SingleMessageMetadata, bytes]] = []
    pos = 0
    for _ in range(count):
        if pos + 4 > len(payload):
            raise MalformedFrameError("batch ends early")
        size = _U32.unpack_from(payload, pos)[0]
        pos += 4
        try:
            single = decode(SingleMessageMetadata, payload, pos, pos + size)
        except DecodeError as exc:
            raise MalformedFrameError(f"batch message metadata: {exc}") from None
        pos += size
        end = pos + single.payload_size
        if single.payload_size < 0 or end > len(payload):
            raise MalformedFrameError("batch message runs past the payload")
        found.append((single, payload[pos:end]))
        pos = end
    return found


@dataclass(frozen=True, slots=True)
class Frame:
    """A decoded frame: its command and, for messages, the payload section verbatim."""

    command: Command
    payload: bytes | None = None


def decode_frame(frame: bytes) -> Frame:
    """The frame whose bytes follow the total-size field; MalformedFrameError (or
    ``UnknownCommandError``, a DecodeError) when it cannot be read."""
    if len(frame) < 4:
        raise MalformedFrameError(f"frame of {len(frame)} bytes has no command size")
    command_size = _U32.unpack_from(frame, 0)[0]
    end = 4 + command_size
    if end > len(frame):
        raise MalformedFrameError(
            f"command size {command_size} exceeds the frame's {len(frame) - 4} bytes"
        )
    command = decode_command(frame, 4, end)
    return Frame(command, frame[end:] if end < len(frame) else None)


@dataclass(frozen=True, slots=True)
class PayloadSection:
    """A payload section taken apart: the checksum it carries (None without the magic
    number), the raw metadata, the payload."""

    checksum: int | None
    metadata: bytes
    payload: bytes

    def decode_metadata(self) -> MessageMetadata:
        try:
            return decode(MessageMetadata, self.metadata)
        except DecodeError as exc:
            raise MalformedFrameError(f"message metadata: {exc}") from None


def _skip_broker_entry_metadata(section: bytes) -> int:
    if len(section) >= 6 and _U16.unpack_from(section, 0)[0] == MAGIC_BROKER_ENTRY_METADATA:
        return 6 + int(_U32.unpack_from(section, 2)[0])
    return 0


def parse_payload(section: bytes, *, verify: bool = True) -> PayloadSection:
    """Take a payload section apart, checking its structure and (when present and ``verify``)
    its checksum: MalformedFrameError or ChecksumMismatchError."""
    start = _skip_broker_entry_metadata(section)
    checksum: int | None = None
    if len(section) - start >= 2 and _U16.unpack_from(section, start)[0] == MAGIC_CRC32C:
        if len(section) - start < 10:
            raise MalformedFrameError("payload section ends inside its checksum")
        checksum = _U32.unpack_from(section, start + 2)[0]
        start += 6
        if verify and crc32c(section[start:]) != checksum:
            raise ChecksumMismatchError("payload checksum does not match its contents")
    if len(section) - start < 4:
        raise MalformedFrameError("payload section has no metadata size")
    metadata_size = _U32.unpack_from(section, start)[0]
    metadata_end = start + 4 + metadata_size
    if metadata_end > len(section):
        raise MalformedFrameError("message metadata runs past the frame")
    return PayloadSection(checksum, section[start + 4 : metadata_end], section[metadata_end:])


def check_payload(section: bytes) -> None:
    """Structure and checksum of a SEND's payload section, without copying it apart (the
    broker's hot path): MalformedFrameError or ChecksumMismatchError."""
    size = len(section)
    start = 0
    if size >= 2 and section[0] == 0x0E and section[1] == 0x01:
        if size < 10:
            raise MalformedFrameError("payload section ends inside its checksum")
        if crc32c(section[6:]) != _U32.unpack_from(section, 2)[0]:
            raise ChecksumMismatchError("payload checksum does not match its contents")
        start = 6
    elif size >= 2 and section[0] == 0x0E and section[1] == 0x02:
        parse_payload(section)  # rare (proxies, replication): the full walk
        return
    if size - start < 4 or start + 4 + _U32.unpack_from(section, start)[0] > size:
        raise MalformedFrameError("message metadata runs past the frame")


def without_checksum(section: bytes) -> bytes:
    """The section as a client before protocol v6 reads it: magic number and checksum removed
    (Pulsar strips them for such consumers)."""
    if len(section) >= 6 and section[0] == 0x0E and section[1] == 0x01:
        return section[6:]
    return section


class FrameReader:
    """Cuts a byte stream into frames (each returned without its total-size field). Refuses a
    frame whose size exceeds ``max_frame_size`` as soon as its size field arrives."""

    def __init__(self, max_size: int = max_frame_size()) -> None:
        self.max_size = max_size
        # The start of a frame not whole yet, in one buffer: kept as the chunks it came in,
        # a frame sent a byte at a time cost some 24 bytes of memory per byte of it.
        self._pending = bytearray()
        self._needed = 4

    @property
    def buffered(self) -> int:
        """Bytes received that do not yet make a whole frame."""
        return len(self._pending)

    def feed(self, data: bytes) -> list[bytes]:
        """The frames completed by ``data``; FrameTooLargeError for an oversized one."""
        if self._pending:
            self._pending += data
            if len(self._pending) < self._needed:
                return []
            data = bytes(self._pending)
            self._pending = bytearray()
        frames: list[bytes] = []
        pos = 0
        length = len(data)
        unpack = _U32.unpack_from
        limit = self.max_size
        needed = 4
        while length - pos >= 4:
            size = unpack(data, pos)[0]
            if size + 4 > limit:
                raise FrameTooLargeError(f"frame of {size + 4} bytes exceeds the limit {limit}")
            end = pos + 4 + size
            if end > length:
                needed = 4 + size
                break
            frames.append(data[pos + 4 : end])
            pos = end
        if pos < length:
            self._pending = bytearray(memoryview(data)[pos:])
            self._needed = needed
        return frames
