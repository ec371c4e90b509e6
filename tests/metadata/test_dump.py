"""Dumps and loads of a store's tree: ZooKeeper's own node is neither dumped nor loaded, and a
load that fails part way says how much it wrote."""

from __future__ import annotations

import pytest

from ballast.clock import Clock
from ballast.metadata.dump import dump_records, dump_tree, load_tree
from ballast.metadata.memory import MemoryMetadataStore, MemoryServer
from ballast.metadata.store import MetadataError
from ballast.metadata.values import MAX_STORED_BYTES


async def test_zookeepers_own_node_is_left_out_at_an_ensembles_root_only(clock: Clock) -> None:
    store = MemoryMetadataStore(MemoryServer(clock))
    for path in ("/zookeeper", "/zookeeper/config", "/zookeeperish", "/a/zookeeper"):
        await store.put(path, b"x")
    at_root = (await dump_tree(store, "/", ensemble_root=True))["records"]
    assert sorted(at_root) == ["/a", "/a/zookeeper", "/zookeeperish"]  # only the reserved one
    elsewhere = (await dump_tree(store, "/"))["records"]  # data like any other elsewhere
    assert "/zookeeper/config" in elsewhere
    old_dump = {
        "root": "/",
        "records": {
            "/zookeeper": {"text": ""},
            "/zookeeper/quota": {"text": ""},
            "/x": {"text": "1"},
        },
    }
    loaded = dump_records(old_dump, ensemble_root=True)
    assert [path for path, _ in loaded.records] == ["/x"]
    assert loaded.zookeeper_skipped == 2
    assert len(dump_records(old_dump).records) == 3


async def test_a_load_that_fails_part_way_says_what_it_wrote(clock: Clock) -> None:
    store = MemoryMetadataStore(MemoryServer(clock))  # no chunking: a large value is refused
    records = [("/a", b"1"), ("/b", b"x" * (MAX_STORED_BYTES + 1)), ("/c", b"3")]
    with pytest.raises(MetadataError, match="1 of 3 records were written before it"):
        await load_tree(store, records)
    assert (await store.get("/a")) is not None and await store.get("/c") is None


async def test_a_value_nested_past_the_parsers_depth_is_dumped_as_text(clock: Clock) -> None:
    store = MemoryMetadataStore(MemoryServer(clock))
    deep = "[" * 100_000 + "]" * 100_000
    await store.put("/deep", deep.encode())
    records = (await dump_tree(store, "/"))["records"]
    assert records["/deep"] == {"text": deep}
    assert dump_records({"root": "/", "records": records}).records == [("/deep", deep.encode())]
