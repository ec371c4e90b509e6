"""Key_Shared dispatch: which consumer of a subscription gets a message with a given key.

Pulsar hashes a message's sticky key (ordering key, else partition key, else ``NONE_KEY``)
with Murmur3 x86 32-bit (seed 0, top bit cleared: ``Murmur3_32Hash.makeHash``), then:

- ``AUTO_SPLIT`` (the default): a consistent-hash ring with 100 points per consumer, each the
  hash of ``consumerName + i`` (``ConsistentHashingStickyKeyConsumerSelector``); the key goes
  to the first point at or after its hash, wrapping around.
- ``STICKY``: each consumer declares ranges of the 65,536 hash slots it takes; a key's slot is
  its hash modulo 65,536 (``HashRangeExclusiveStickyKeyConsumerSelector``); overlapping ranges
  are refused; a slot nobody declared has no consumer.

Concurrency contract: one event loop; selectors change as consumers come and go.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable
from typing import Generic, TypeVar

NONE_KEY = b"NONE_KEY"
HASH_RANGE_SIZE = 65536
POINTS_PER_CONSUMER = 100

_M32 = 0xFFFFFFFF
_C1 = 0xCC9E2D51
_C2 = 0x1B873593


def murmur3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3 x86 32-bit of ``data`` (unsigned)."""
    length = len(data)
    h = seed & _M32
    blocks = length - length % 4
    for i in range(0, blocks, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _C1) & _M32
        k = ((k << 15) | (k >> 17)) & _M32
        k = (k * _C2) & _M32
        h ^= k
        h = ((h << 13) | (h >> 19)) & _M32
        h = (h * 5 + 0xE6546B64) & _M32
    tail = data[blocks:]
    k = 0
    if len(tail) == 3:
        k ^= tail[2] << 16
    if len(tail) >= 2:
        k ^= tail[1] << 8
    if tail:
        k ^= tail[0]
        k = (k * _C1) & _M32
        k = ((k << 15) | (k >> 17)) & _M32
        k = (k * _C2) & _M32
        h ^= k
    h ^= length
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    h ^= h >> 16
    return h


def key_hash(key: bytes | None) -> int:
    """Pulsar's sticky-key hash: Murmur3 with the sign bit cleared."""
    return murmur3_32(NONE_KEY if key is None else key) & 0x7FFFFFFF


C = TypeVar("C")


class ConsistentHashSelector(Generic[C]):
    """``AUTO_SPLIT``: a ring of :data:`POINTS_PER_CONSUMER` points per consumer, changed in
    place as consumers come and go (rebuilt whole it cost every subscribe and close the
    hashes of every consumer: minutes for a thousand). A point several consumers hash to —
    every point of consumers that share a name — keeps them in the order they came, and a
    key's hash picks one of them, ``hash % count``, as Pulsar 3's selector does: instances of
    one application under one consumer name share its keys."""

    def __init__(self, consumers: Iterable[tuple[str, C]] = ()) -> None:
        self._hashes: list[int] = []
        self._owners: dict[int, list[C]] = {}
        for name, consumer in consumers:
            self.add(name, consumer)

    @staticmethod
    def _points(name: str) -> set[int]:
        return {key_hash(f"{name}{i}".encode()) for i in range(POINTS_PER_CONSUMER)}

    def add(self, name: str, consumer: C) -> None:
        for point in self._points(name):
            owners = self._owners.get(point)
            if owners is None:
                self._owners[point] = [consumer]
                bisect.insort(self._hashes, point)
            else:
                owners.append(consumer)

    def remove(self, name: str, consumer: C) -> None:
        """Take ``consumer``'s points off the ring (the consumer itself, not its namesakes)."""
        for point in self._points(name):
            owners = self._owners.get(point)
            if owners is None:
                continue
            kept = [c for c in owners if c is not consumer]
            if kept:
                self._owners[point] = kept
            else:
                del self._owners[point]
                del self._hashes[bisect.bisect_left(self._hashes, point)]

    def select(self, hash_value: int) -> C | None:
        if not self._hashes:
            return None
        index = bisect.bisect_left(self._hashes, hash_value)
        owners = self._owners[self._hashes[index if index < len(self._hashes) else 0]]
        return owners[hash_value % len(owners)]


class RangeConflictError(ValueError):
    """A consumer's declared ranges overlap another's, or leave the slot space."""


class StickyRangeSelector(Generic[C]):
    """``STICKY``: consumers own the inclusive slot ranges they declared."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ranges: list[tuple[int, int, C, str]] = []

    def check(self, name: str, ranges: Iterable[tuple[int, int]]) -> None:
        """RangeConflictError if ``ranges`` cannot be added."""
        wanted = sorted(ranges)
        if not wanted:
            raise RangeConflictError(f"consumer {name} declares no hash ranges")
        for start, end in wanted:
            if not 0 <= start <= end < HASH_RANGE_SIZE:
                raise RangeConflictError(f"range [{start}, {end}] is outside [0, 65535]")
        for (_, end), (start, _) in itertools.pairwise(wanted):
            if start <= end:
                raise RangeConflictError(f"consumer {name} declares overlapping ranges")
        # The taken ranges are disjoint and sorted: the first that could overlap a wanted
        # range is the last one starting at or before it, or else the next (a binary search
        # each, where comparing every pair froze the loop for seconds on 32,768 ranges).
        for start, end in wanted:
            index = max(bisect.bisect_right(self._starts, start) - 1, 0)
            for taken_start, taken_end, _, owner in self._ranges[index : index + 2]:
                if start <= taken_end and taken_start <= end:
                    raise RangeConflictError(
                        f"range [{start}, {end}] conflicts with [{taken_start}, {taken_end}] "
                        f"of consumer {owner}"
                    )

    def add(self, name: str, ranges: Iterable[tuple[int, int]], consumer: C) -> None:
        """Add ranges that passed :meth:`check` (disjoint from the taken ones)."""
        added = [(start, end, consumer, name) for start, end in ranges]
        self._ranges = sorted(self._ranges + added, key=lambda r: r[0])
        self._starts = [r[0] for r in self._ranges]

    def remove(self, consumer: C) -> None:
        kept = [r for r in self._ranges if r[2] is not consumer]
        self._ranges = kept
        self._starts = [r[0] for r in kept]

    def select(self, hash_value: int) -> C | None:
        slot = hash_value % HASH_RANGE_SIZE
        index = bisect.bisect_right(self._starts, slot) - 1
        if index < 0:
            return None
        start, end, consumer, _ = self._ranges[index]
        return consumer if start <= slot <= end else None
