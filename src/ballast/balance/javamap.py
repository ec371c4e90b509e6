"""The iteration order of a ``java.util.HashMap`` with string keys, for the few places where
Pulsar's floating-point results depend on it.

Floating-point addition is not associative: the TransferShedder sums broker loads in its load
store's hash order, and the last bit of the average and standard deviation it reports depends on
that order. Reproducing the order lets Ballast report the same figures to the last bit.

A map filled by ``n`` insertions (no removals) has a table of 16 buckets doubled until ``n`` is
at most three quarters of it; entries iterate by bucket (``(h ^ (h >>> 16)) & (size - 1)``
with ``h`` the key's ``String.hashCode``), and within a bucket in insertion order. (Buckets
that Java turns into trees, at 8 or more colliding keys, are not modelled.)
"""

from __future__ import annotations

from collections.abc import Iterable

_DEFAULT_CAPACITY = 16
_LOAD_FACTOR = 0.75


def java_string_hash(text: str) -> int:
    """``String.hashCode`` over UTF-16 code units, as an unsigned 32-bit value."""
    encoded = text.encode("utf-16-be", "surrogatepass")
    value = 0
    for index in range(0, len(encoded), 2):
        unit = (encoded[index] << 8) | encoded[index + 1]
        value = (31 * value + unit) & 0xFFFFFFFF
    return value


def java_hash_map_order(keys: Iterable[str]) -> list[str]:
    """``keys`` (distinct, in insertion order) in the order a ``HashMap`` holding them
    iterates."""
    inserted = list(keys)
    capacity = _DEFAULT_CAPACITY
    while len(inserted) > capacity * _LOAD_FACTOR:
        capacity *= 2

    def bucket(key: str) -> int:
        h = java_string_hash(key)
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(inserted, key=bucket)
