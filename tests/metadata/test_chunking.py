"""Chunking limits, exercised with small chunks so the tests stay fast."""

from __future__ import annotations

import os

import pytest

from ballast.clock import Clock
from ballast.metadata.chunking import ChunkingStore, UnreadableValueError, chunk_directory
from ballast.metadata.memory import MemoryMetadataStore, MemoryServer
from ballast.metadata.store import MultiOpError, NodeExistsError, SetValue, ValueTooLargeError
from ballast.metadata.values import (
    COMPRESS_ABOVE_BYTES,
    COMPRESSED,
    MANIFEST,
    Manifest,
    UnpackCache,
    pack,
)


async def test_small_chunks_and_the_size_limit(clock: Clock) -> None:
    server = MemoryServer(clock)
    store = ChunkingStore(MemoryMetadataStore(server), chunk_bytes=1000, max_value_bytes=50_000)
    value = os.urandom(10_500)
    await store.put("/v", value)
    directory = chunk_directory("/v")
    (digest,) = await store.inner.children(directory)
    assert len(await store.inner.children(f"{directory}/{digest}")) == 11
    assert (await store.get("/v")).value == value  # type: ignore[union-attr]
    with pytest.raises(ValueTooLargeError):
        await store.put("/w", os.urandom(60_000))
    assert await store.exists("/w") is None
    assert await store.inner.children(chunk_directory("/w")) == []  # nothing half-written


async def test_failed_multi_leaves_no_chunks(clock: Clock) -> None:
    server = MemoryServer(clock)
    store = ChunkingStore(MemoryMetadataStore(server), chunk_bytes=1000)
    await store.put("/taken", b"small")
    with pytest.raises(MultiOpError) as caught:
        await store.multi([SetValue("/taken", os.urandom(5000), version=9)])
    assert caught.value.index == 0
    assert await store.inner.children(chunk_directory("/taken")) == []
    with pytest.raises(NodeExistsError):
        await store.put("/taken", os.urandom(5000), -1)
    assert await store.inner.children(chunk_directory("/taken")) == []


def test_unpack_cache_returns_what_unpack_does_and_stays_bounded() -> None:
    small = b"x" * 100
    assert UnpackCache().unpack(small) is small  # stored as it is: nothing to remember
    values = [bytes([i]) * (COMPRESS_ABOVE_BYTES + 1) for i in range(4)]
    packed = [pack(v) for v in values]
    cache = UnpackCache(max_bytes=2 * (len(values[0]) + len(packed[0])))
    first = cache.unpack(packed[0])
    assert first == values[0]
    assert cache.unpack(bytes(packed[0])) is first  # an equal copy (another reader) hits
    for stored, value in zip(packed, values, strict=True):
        assert cache.unpack(stored) == value
    assert cache.held_bytes <= 2 * (len(values[0]) + len(packed[0]))
    assert cache.unpack(packed[0]) == values[0]  # evicted, unpacked again


async def test_clients_sharing_an_unpack_cache_read_every_version(clock: Clock) -> None:
    server = MemoryServer(clock)
    cache = UnpackCache()
    writer = ChunkingStore(MemoryMetadataStore(server), unpacked=cache)
    reader = ChunkingStore(MemoryMetadataStore(server), unpacked=cache)
    for version in range(3):
        value = bytes([version]) * (COMPRESS_ABOVE_BYTES + 10)
        await writer.put("/report", value)
        assert (await reader.get("/report")).value == value  # type: ignore[union-attr]
        assert (await writer.get("/report")).value == value  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("stored", "said"),
    [
        (MANIFEST + b"not json", "marked as a large value's manifest but not one"),
        (MANIFEST + b'{"directory": "/d"}', "marked as a large value's manifest but not one"),
        (MANIFEST + b"[1, 2]", "marked as a large value's manifest but not one"),
        (COMPRESSED + b"garbage", "a value that does not decompress"),
        (
            Manifest("/ballast-chunks/gone/x", 2, 10).encode(),
            "a large value whose chunks are missing",
        ),
    ],
)
async def test_a_value_that_only_looks_like_ballasts_layout_is_an_unreadable_value(
    clock: Clock, stored: bytes, said: str
) -> None:
    """Bytes another client wrote with Ballast's marks (or a manifest whose chunks are gone)
    raise one error that says so and names the record, whose stored bytes stay readable."""
    store = ChunkingStore(MemoryMetadataStore(MemoryServer(clock)))
    await store.inner.put("/foreign", stored)
    with pytest.raises(UnreadableValueError, match=f"{said}.*: /foreign$") as caught:
        await store.get("/foreign")
    assert caught.value.path == "/foreign" and said in caught.value.reason
    assert (await store.inner.get("/foreign")).value == stored  # type: ignore[union-attr]
