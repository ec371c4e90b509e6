"""Namespace bundles: the 32-bit hash ring of a namespace cut into ranges, and the topic hash
that places a topic in one of them — Pulsar's ``NamespaceBundle``, ``NamespaceBundles`` and
``NamespaceBundleFactory`` arithmetic.

Every value here is immutable; splitting returns new boundaries, never edits old ones.
"""

from __future__ import annotations

import bisect
import itertools
import re
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from ballast.model.naming import InvalidNameError, NamespaceName, TopicName

FULL_LOWER = 0x00000000
FULL_UPPER = 0xFFFFFFFF
RING_SIZE = 2**32
# Pulsar takes the bundle count as a Java int; (0, 2^31 - 1] is what its API can carry.
MAX_BUNDLES = 2**31 - 1
# Names a split may take instead of a range (Pulsar's ``BundleType``): the bundle with the most
# topics, or the one with the highest long-term throughput.
SPLIT_NAMED_BUNDLES = ("LARGEST", "HOT")
_JAVA_LONG_MIN = -(2**63)
_JAVA_LONG_MAX = 2**63 - 1


class InvalidBundle(ValueError):
    """A bundle range, bundle name, boundary list or split that Pulsar would reject."""

    def __str__(self) -> str:
        return f"InvalidBundle: {self.args[0]}"


_PLAIN_HEX = re.compile(r"0[xX][0-9a-fA-F]{1,15}")


_POSITION = re.compile(r"0[xX][0-9a-fA-F]+|[0-9]+")


def parse_position(text: str) -> int:
    """A split position: ``0x...`` hex, else decimal as pulsar-admin reads its split
    boundaries (a leading zero is not octal); no sign, as a hash is never negative.
    ValueError for anything else."""
    if _POSITION.fullmatch(text) is None:
        raise ValueError(f"not a position: {text!r}")
    return int(text[2:], 16) if text[:2] in ("0x", "0X") else int(text, 10)


def java_long_decode(text: str) -> int:
    """``java.lang.Long.decode``: optional sign, then ``0x``/``0X``/``#`` for hex, a leading
    ``0`` for octal, else decimal. Raises ValueError where Java throws NumberFormatException."""
    if _PLAIN_HEX.fullmatch(text) is not None:
        return int(text[2:], 16)  # the common case (boundaries as Pulsar writes them)
    if text == "":
        raise ValueError("empty number")
    index = 0
    negative = False
    if text[0] in "+-":
        negative = text[0] == "-"
        index = 1
    rest = text[index:]
    if rest.startswith(("0x", "0X")):
        radix, digits = 16, rest[2:]
    elif rest.startswith("#"):
        radix, digits = 16, rest[1:]
    elif rest.startswith("0") and len(rest) > 1:
        radix, digits = 8, rest[1:]
    else:
        radix, digits = 10, rest
    if digits == "" or digits[0] in "+-":
        raise ValueError(f"malformed number {text!r}")
    if any(_digit_value(ch) >= radix for ch in digits):
        raise ValueError(f"malformed number {text!r}")
    value = int(digits, radix)
    value = -value if negative else value
    if not _JAVA_LONG_MIN <= value <= _JAVA_LONG_MAX:
        raise ValueError(f"number {text!r} is out of the 64-bit range")
    return value


def _digit_value(ch: str) -> int:
    """The value of an ASCII digit or letter in radix 16, or 99 for anything else."""
    if "0" <= ch <= "9":
        return ord(ch) - ord("0")
    if "a" <= ch.lower() <= "f":
        return ord(ch.lower()) - ord("a") + 10
    return 99


def format_boundary(value: int) -> str:
    """A boundary as Pulsar stores it: ``0x%08x``."""
    return f"0x{value:08x}"


@dataclass(frozen=True, slots=True, order=True)
class BundleRange:
    """A hash range ``[lower, upper)``; the range ending at ``0xffffffff`` is closed
    ``[lower, 0xffffffff]``, as Pulsar's last bundle is."""

    lower: int
    upper: int

    def __post_init__(self) -> None:
        if not FULL_LOWER <= self.lower <= FULL_UPPER or not FULL_LOWER <= self.upper <= FULL_UPPER:
            raise InvalidBundle(
                f"range {self.lower:#x}..{self.upper:#x} leaves the hash ring "
                f"[0x00000000, 0xffffffff]"
            )
        if self.lower >= self.upper:
            raise InvalidBundle(
                f"range {format_boundary(self.lower)}_{format_boundary(self.upper)} is empty "
                f"(lower must be below upper)"
            )

    @classmethod
    def parse(cls, text: str) -> BundleRange:
        """Parse ``0x00000000_0x40000000`` (any hex case; each side as ``Long.decode``)."""
        if "_" not in text:
            raise InvalidBundle(f'range "{text}" has no "_" between its lower and upper bounds')
        lower_text, upper_text = text.split("_", 1)
        try:
            lower = java_long_decode(lower_text)
            upper = java_long_decode(upper_text)
        except ValueError as exc:
            raise InvalidBundle(f'range "{text}": {exc}') from None
        return cls(lower, upper)

    @classmethod
    def full(cls) -> BundleRange:
        return cls(FULL_LOWER, FULL_UPPER)

    @property
    def upper_closed(self) -> bool:
        return self.upper == FULL_UPPER

    @property
    def size(self) -> int:
        """Number of hashes in the range."""
        return self.upper - self.lower + (1 if self.upper_closed else 0)

    def contains(self, key: int) -> bool:
        if self.upper_closed:
            return self.lower <= key <= self.upper
        return self.lower <= key < self.upper

    @property
    def can_split(self) -> bool:
        """Pulsar's ``canSplitBundle``: ``upper - lower > 1``."""
        return self.upper - self.lower > 1

    def __str__(self) -> str:
        return f"{format_boundary(self.lower)}_{format_boundary(self.upper)}"


@dataclass(frozen=True, slots=True, order=True)
class BundleName:
    """A bundle of a namespace: ``tenant/ns/0x..._0x...``. Its hash and text are computed
    once per value (bundle names key the dictionaries every load report and lookup goes
    through)."""

    namespace: NamespaceName
    range: BundleRange
    _hash: int = field(init=False, repr=False, compare=False)
    _text: str | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.namespace, self.range)))

    def __hash__(self) -> int:
        return self._hash

    @classmethod
    def parse(cls, text: str) -> BundleName:
        """Split at the last ``/`` into a namespace and a range (any hex case)."""
        namespace_text, sep, range_text = text.rpartition("/")
        if not sep:
            raise InvalidBundle(f'bundle "{text}" is not <namespace>/<lower>_<upper>')
        try:
            namespace = NamespaceName.parse(namespace_text)
        except InvalidNameError as exc:
            raise InvalidBundle(f'bundle "{text}": {exc.args[0]}') from None
        return cls(namespace, BundleRange.parse(range_text))

    def includes(self, topic: TopicName) -> bool:
        """Pulsar's ``NamespaceBundle.includes``: same namespace and the topic hash in range."""
        return topic.namespace == self.namespace and self.range.contains(topic_hash(topic))

    def __str__(self) -> str:
        text = self._text
        if text is None:
            text = f"{self.namespace}/{self.range}"
            object.__setattr__(self, "_text", text)
        return text


def canonical_bundle(text: str) -> str:
    """The canonical (lowercase-hex) string of a bundle name; raises InvalidBundle."""
    return str(BundleName.parse(text))


def hash_key(text: str) -> int:
    """CRC-32 (IEEE, as Guava's ``Hashing.crc32`` and ``java.util.zip.CRC32``) of the UTF-8
    bytes, unsigned."""
    return zlib.crc32(text.encode("utf-8")) & 0xFFFFFFFF


def topic_hash(topic: TopicName) -> int:
    """The position of a topic on its namespace's ring: the hash of its canonical name."""
    return hash_key(str(topic))


def validate_num_bundles(count: int) -> None:
    """Pulsar accepts 1..Integer.MAX_VALUE bundles (HTTP 400 otherwise)."""
    if not 1 <= count <= MAX_BUNDLES:
        raise InvalidBundle(f"number of bundles {count} is not in the range [1, {MAX_BUNDLES}]")


# A namespace's policies list every bundle's boundary (Pulsar's BundlesData), and the leader and
# the brokers hold them in memory: 2^31 - 1 of them are tens of gigabytes, which killed a
# standalone cluster. Creating a namespace (or a simulated one) with more bundles than this is
# refused; Pulsar itself would build the same list (PoliciesUtil.getBundles).
MAX_CREATED_BUNDLES = 1 << 20


def validate_created_bundles(count: int) -> None:
    """A bundle count a new namespace can be made with: Pulsar's range, then
    :data:`MAX_CREATED_BUNDLES`."""
    validate_num_bundles(count)
    if count > MAX_CREATED_BUNDLES:
        raise InvalidBundle(
            f"number of bundles {count} is more than a namespace can be created with "
            f"({MAX_CREATED_BUNDLES}): every bundle's boundary is stored in its policies and "
            "held in memory"
        )


def equal_boundaries(count: int) -> tuple[int, ...]:
    """Boundaries of ``count`` equal bundles (``PoliciesUtil.getBundles``): multiples of
    ``2^32 // count``, the last boundary always ``0xffffffff`` (the last bundle takes the
    remainder)."""
    validate_num_bundles(count)
    segment = RING_SIZE // count
    return (*(i * segment for i in range(count)), FULL_UPPER)


def iter_equal_boundaries(count: int) -> Iterator[int]:
    """:func:`equal_boundaries` one at a time, for counts too large to hold (2^31 - 1
    boundaries are tens of gigabytes as Python ints)."""
    validate_num_bundles(count)
    segment = RING_SIZE // count
    return itertools.chain((i * segment for i in range(count)), (FULL_UPPER,))


def equal_range_for_hash(count: int, key: int) -> BundleRange:
    """The range holding ``key`` among ``count`` equal bundles, worked out without the
    boundaries: the same range as ``NamespaceBundles.equal(ns, count).range_for_hash(key)``,
    in constant memory for any count up to 2^31 - 1."""
    validate_num_bundles(count)
    if not FULL_LOWER <= key <= FULL_UPPER:
        raise InvalidBundle(f"hash {key} is outside the 32-bit ring")
    segment = RING_SIZE // count
    index = min(key // segment, count - 1)
    upper = FULL_UPPER if index == count - 1 else (index + 1) * segment
    return BundleRange(index * segment, upper)


def parse_boundaries(texts: Iterable[str]) -> tuple[int, ...]:
    """Parse user-given boundaries (``0x...``, any case); sorted, duplicates dropped as
    Pulsar's sorted set does; must start at 0x00000000 and end at 0xffffffff."""
    values: set[int] = set()
    for text in texts:
        stripped = text.strip()
        try:
            value = java_long_decode(stripped)
        except ValueError:
            raise InvalidBundle(f'boundary "{text}" is not a number') from None
        if value < FULL_LOWER:
            raise InvalidBundle(f'boundary "{text}" is negative: hashes run from 0x00000000')
        values.add(value)
    return validate_boundaries(sorted(values))


def validate_boundaries(boundaries: Sequence[int]) -> tuple[int, ...]:
    """Check a full boundary list: at least two entries, strictly increasing, from 0x00000000
    to 0xffffffff."""
    if len(boundaries) < 2:
        raise InvalidBundle("a boundary list needs at least 0x00000000 and 0xffffffff")
    if boundaries[0] != FULL_LOWER or boundaries[-1] != FULL_UPPER:
        raise InvalidBundle(
            f"boundaries must start at 0x00000000 and end at 0xffffffff, got "
            f"{format_boundary(boundaries[0])} .. {format_boundary(boundaries[-1])}"
        )
    for before, after in itertools.pairwise(boundaries):
        if after <= before:
            raise InvalidBundle(
                f"boundaries must increase: {format_boundary(after)} follows "
                f"{format_boundary(before)}"
            )
    return tuple(boundaries)


@dataclass(frozen=True, slots=True)
class NamespaceBundles:
    """The bundles of one namespace: its sorted partition boundaries (Pulsar's
    ``NamespaceBundles``)."""

    namespace: NamespaceName
    boundaries: tuple[int, ...]

    def __post_init__(self) -> None:
        validate_boundaries(self.boundaries)

    @classmethod
    def equal(cls, namespace: NamespaceName, count: int) -> NamespaceBundles:
        return cls(namespace, equal_boundaries(count))

    @property
    def count(self) -> int:
        return len(self.boundaries) - 1

    @property
    def ranges(self) -> tuple[BundleRange, ...]:
        return tuple(BundleRange(lo, hi) for lo, hi in itertools.pairwise(self.boundaries))

    @property
    def bundles(self) -> tuple[BundleName, ...]:
        return tuple(BundleName(self.namespace, r) for r in self.ranges)

    def range_for_hash(self, key: int) -> BundleRange:
        """The bundle whose range holds ``key`` (binary search; the greatest lower boundary
        ``<= key``). A key of exactly 0xffffffff goes to the last bundle, which is closed;
        Pulsar's Java code would throw there (probability 2^-32)."""
        if not FULL_LOWER <= key <= FULL_UPPER:
            raise InvalidBundle(f"hash {key} is outside the 32-bit ring")
        index = min(bisect.bisect_right(self.boundaries, key) - 1, self.count - 1)
        return BundleRange(self.boundaries[index], self.boundaries[index + 1])

    def find(self, topic: TopicName) -> BundleName:
        """The bundle that serves ``topic`` (Pulsar's ``findBundle``)."""
        if topic.namespace != self.namespace:
            raise InvalidBundle(f'topic "{topic}" is not in namespace "{self.namespace}"')
        return BundleName(self.namespace, self.range_for_hash(topic_hash(topic)))

    def contains(self, bundle_range: BundleRange) -> bool:
        """Pulsar's ``validateBundle``: the range is exactly one of these bundles."""
        index = bisect.bisect_left(self.boundaries, bundle_range.lower)
        return (
            index < self.count
            and self.boundaries[index] == bundle_range.lower
            and self.boundaries[index + 1] == bundle_range.upper
        )

    def with_split(self, parent: BundleRange, cut_points: Sequence[int]) -> NamespaceBundles:
        """The boundaries after ``parent`` (one of these bundles) is cut at ``cut_points``."""
        if not self.contains(parent):
            raise InvalidBundle(f'bundle {parent} is not a bundle of "{self.namespace}"')
        children = split_boundaries(parent, cut_points)
        index = self.boundaries.index(parent.lower)
        return NamespaceBundles(
            self.namespace,
            (*self.boundaries[:index], *children[:-1], *self.boundaries[index + 1 :]),
        )

    def to_json_dict(self) -> dict[str, object]:
        """Pulsar's stored ``BundlesData``: ``{"boundaries": ["0x..."], "numBundles": N}``."""
        return {
            "boundaries": [format_boundary(b) for b in self.boundaries],
            "numBundles": self.count,
        }


def split_boundaries(parent: BundleRange, cut_points: Sequence[int]) -> tuple[int, ...]:
    """Cut ``parent`` at explicit points: each must lie strictly inside the range; they are
    sorted; returns ``lower, p1, ..., upper``."""
    if not parent.can_split:
        raise InvalidBundle(f"bundle {parent} can't be split further")
    if not cut_points:
        raise InvalidBundle(f"no split boundary given for bundle {parent}")
    ordered = sorted(cut_points)
    for point in ordered:
        if not parent.lower < point < parent.upper:
            raise InvalidBundle(
                f"split boundary {format_boundary(point)} is not strictly inside {parent}"
            )
    for before, after in itertools.pairwise(ordered):
        if before == after:
            raise InvalidBundle(f"split boundary {format_boundary(after)} is given twice")
    return (parent.lower, *ordered, parent.upper)


def equal_split_points(parent: BundleRange, parts: int) -> tuple[int, ...]:
    """The cut points that divide ``parent`` into ``parts`` equal pieces, as Pulsar's
    ``splitBundles`` without boundaries: ``segment = (upper - lower) // parts``, the last piece
    takes the remainder."""
    if parts < 2:
        raise InvalidBundle(f"a split needs at least 2 parts, got {parts}")
    if parts > MAX_CREATED_BUNDLES:  # each cut point is held in memory, and then a bundle
        raise InvalidBundle(
            f"a split makes at most {MAX_CREATED_BUNDLES} parts, as many bundles as a "
            f"namespace can be created with; got {parts}"
        )
    if not parent.can_split:
        raise InvalidBundle(f"bundle {parent} can't be split further")
    segment = (parent.upper - parent.lower) // parts
    if segment == 0:
        raise InvalidBundle(
            f"bundle {parent} holds too few hashes to cut into {parts} non-empty parts"
        )
    return tuple(parent.lower + i * segment for i in range(1, parts))


def hex_boundaries(values: Iterable[int]) -> list[str]:
    return [format_boundary(v) for v in values]
