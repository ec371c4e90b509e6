"""How values are laid out in a store. Small values are stored as they are; values over
:data:`COMPRESS_ABOVE_BYTES` are compressed with zlib behind a marker; values that stay over
:data:`MAX_STORED_BYTES` (ZooKeeper refuses packets over about 1 MB, ``jute.maxbuffer``) are
split into chunks by :mod:`ballast.metadata.chunking` and the record holds a manifest. A load
report of a broker with 10,000 bundles is several MB of JSON, so this is not hypothetical."""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass

COMPRESSED = b"\x00ballast-zlib\x00"
MANIFEST = b"\x00ballast-chunks\x00"
COMPRESS_ABOVE_BYTES = 256 * 1024
# ZooKeeper's default jute.maxbuffer is 0xfffff bytes per packet; leave room for the path and
# the request envelope.
MAX_STORED_BYTES = 1_000_000


def pack(value: bytes) -> bytes:
    """Compress a large value (or one that looks like our own markers, so it round-trips)."""
    if len(value) <= COMPRESS_ABOVE_BYTES and not value.startswith(b"\x00ballast-"):
        return value
    return COMPRESSED + zlib.compress(value, 6)


def unpack(stored: bytes) -> bytes:
    """Inverse of :func:`pack`."""
    if stored.startswith(COMPRESSED):
        return zlib.decompress(stored[len(COMPRESSED) :])
    return stored


@dataclass(frozen=True, slots=True)
class Manifest:
    """Where the chunks of a value are: ``count`` records under ``directory``, ``size`` bytes
    in all (the packed value)."""

    directory: str
    count: int
    size: int

    def encode(self) -> bytes:
        body = {"directory": self.directory, "count": self.count, "size": self.size}
        return MANIFEST + json.dumps(body, sort_keys=True).encode()

    @classmethod
    def decode(cls, stored: bytes) -> Manifest | None:
        if not stored.startswith(MANIFEST):
            return None
        body = json.loads(stored[len(MANIFEST) :])
        return cls(str(body["directory"]), int(body["count"]), int(body["size"]))
