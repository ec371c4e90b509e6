"""Chunking limits, exercised with small chunks so the tests stay fast."""

from __future__ import annotations

import os

import pytest

from ballast.clock import Clock
from ballast.metadata.chunking import ChunkingStore, chunk_directory
from ballast.metadata.memory import MemoryMetadataStore, MemoryServer
from ballast.metadata.store import MultiOpError, NodeExistsError, SetValue, ValueTooLargeError


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
