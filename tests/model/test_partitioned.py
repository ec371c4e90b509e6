"""The partitioned-topic record, read as Pulsar's Jackson reads it."""

from __future__ import annotations

import pytest

from ballast.model.partitioned import PartitionedTopicMetadata, read_partitioned


@pytest.mark.parametrize(
    ("stored", "partitions"),
    [
        (b'{"partitions": 4}', 4),
        (b'{"partitions": "3", "deleted": false}', 3),  # a number in a string; unknown keys
        (b'{"partitions": null}', 0),  # a 500 from every lookup of the topic before
        (b'{"partitions": 2.5}', 0),
        (b'{"partitions": -2}', 0),
        (b"", 0),
        (b"not json", 0),
        (b"[4]", 0),
    ],
)
def test_a_record_reads_as_a_count_or_as_no_partitioned_topic(
    stored: bytes, partitions: int
) -> None:
    assert read_partitioned(stored).partitions == partitions


def test_written_without_null() -> None:
    assert PartitionedTopicMetadata(partitions=3).encode() == b'{"partitions":3}'
    with_properties = PartitionedTopicMetadata(partitions=2, properties={"a": "b"})
    assert read_partitioned(with_properties.encode()) == with_properties
