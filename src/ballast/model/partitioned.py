"""A partitioned topic's metadata record, Pulsar's ``PartitionedTopicMetadata`` at
``/admin/partitioned-topics/<tenant>/<ns>/<domain>/<topic>``: ``{"partitions": N}``."""

from __future__ import annotations

import msgspec


class PartitionedTopicMetadata(msgspec.Struct, kw_only=True, omit_defaults=True):
    """``properties`` is written only when given, as Pulsar writes no null."""

    partitions: int = 0
    properties: dict[str, str] | None = None

    def encode(self) -> bytes:
        return msgspec.json.encode(self)


def read_partitioned(value: bytes) -> PartitionedTopicMetadata:
    """The stored record as Jackson reads it (a number in a string is a number). A record
    that cannot be read, or a count below 1, is no partitioned topic: 0 partitions, so the
    topic is used as a plain one rather than failing every lookup."""
    try:
        metadata = msgspec.json.decode(value, type=PartitionedTopicMetadata, strict=False)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return PartitionedTopicMetadata()
    if metadata.partitions < 0:
        return msgspec.structs.replace(metadata, partitions=0)
    return metadata
