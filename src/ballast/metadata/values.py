"""How values are laid out in a store. Small values are stored as they are; values over
:data:`COMPRESS_ABOVE_BYTES` are compressed with zlib behind a marker; values that stay over
:data:`MAX_STORED_BYTES` (ZooKeeper refuses packets over about 1 MB, ``jute.maxbuffer``) are
split into chunks by :mod:`ballast.metadata.chunking` and the record holds a manifest. A load
report of a broker with 10,000 bundles is several MB of JSON, so this is not hypothetical."""

from __future__ import annotations

import json
import zlib
from collections import OrderedDict
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


class UnpackError(ValueError):
    """Stored bytes marked as Ballast's own layout that are not in it: marked compressed but
    not decompressing (a part of a large value's chunks read as a value of its own), or marked
    a manifest with no manifest after the mark (written by another client than Ballast)."""


def unpack(stored: bytes) -> bytes:
    """Inverse of :func:`pack`."""
    if stored.startswith(COMPRESSED):
        try:
            return zlib.decompress(stored[len(COMPRESSED) :])
        except zlib.error as exc:
            raise UnpackError(str(exc)) from None
    return stored


class UnpackCache:
    """Recently unpacked values by their stored bytes, for the clients of one process. Every
    broker reads every load report another one writes; decompressing a large report once per
    reader costs far more than the rest of the read (a bytes object keeps its hash, so a
    repeated lookup of the same stored value is cheap). Bounded by the bytes it holds."""

    def __init__(self, max_bytes: int = 128 * 1024 * 1024) -> None:
        self._max_bytes = max_bytes
        self._entries: OrderedDict[bytes, bytes] = OrderedDict()
        self._held = 0

    def unpack(self, stored: bytes) -> bytes:
        """:func:`unpack`, remembered."""
        if not stored.startswith(COMPRESSED):
            return stored
        found = self._entries.get(stored)
        if found is not None:
            self._entries.move_to_end(stored)
            return found
        value = unpack(stored)
        self._entries[stored] = value
        self._held += len(stored) + len(value)
        while self._held > self._max_bytes and self._entries:
            key, old = self._entries.popitem(last=False)
            self._held -= len(key) + len(old)
        return value

    @property
    def held_bytes(self) -> int:
        return self._held


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
        """The manifest ``stored`` holds; None if it holds none (no mark); UnpackError if it
        is marked as one but is not (Ballast's writes never store such bytes: see
        :func:`pack`)."""
        if not stored.startswith(MANIFEST):
            return None
        try:
            body = json.loads(stored[len(MANIFEST) :])
            if not isinstance(body, dict):
                raise ValueError("not a JSON object")
            manifest = cls(str(body["directory"]), int(body["count"]), int(body["size"]))
            if not manifest.directory.startswith("/") or min(manifest.count, manifest.size) < 0:
                raise ValueError(f"no chunks at {manifest.directory}")
        except (ValueError, TypeError, KeyError, RecursionError) as exc:
            # JSONDecodeError and UnicodeDecodeError are ValueErrors; KeyError says only "key"
            reason = f"no {exc}" if isinstance(exc, KeyError) else str(exc)
            raise UnpackError(
                f"marked as a large value's manifest but not one ({reason})"
            ) from None
        return manifest
