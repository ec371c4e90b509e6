"""Dumps and loads of a store's tree: ZooKeeper's own node is neither dumped nor loaded, and a
load that fails part way says how much it wrote."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from ballast.clock import Clock
from ballast.metadata.chunking import ChunkingStore, UnreadableValueError
from ballast.metadata.dump import (
    DumpFormatError,
    LoadInterrupted,
    dump_records,
    dump_tree,
    load_tree,
)
from ballast.metadata.memory import MemoryMetadataStore, MemoryServer
from ballast.metadata.store import MetadataError
from ballast.metadata.values import MANIFEST, MAX_STORED_BYTES, Manifest


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
    # one depth at a time: what is below the failed record is not written
    records = [("/a", b"1"), ("/a/b", b"x" * (MAX_STORED_BYTES + 1)), ("/a/b/c", b"3")]
    with pytest.raises(MetadataError, match="1 of 3 records were written before it"):
        await load_tree(store, records)
    assert (await store.get("/a")) is not None and await store.get("/a/b/c") is None


async def test_a_load_cancelled_part_way_says_what_it_wrote(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C (asyncio.run cancels the load) stopped it halfway without a word."""
    store = MemoryMetadataStore(MemoryServer(clock))
    real_put = store.put
    third = asyncio.Event()

    async def put(path: str, value: bytes, *args: Any, **kwargs: Any) -> Any:
        if path == "/a/b/c":
            third.set()
            await asyncio.Event().wait()  # a request that is never answered
        return await real_put(path, value, *args, **kwargs)

    monkeypatch.setattr(store, "put", put)
    records = [("/a", b"1"), ("/a/b", b"2"), ("/a/b/c", b"3"), ("/a/b/c/d", b"4")]
    loading = asyncio.create_task(load_tree(store, records))
    await third.wait()
    loading.cancel()
    with pytest.raises(LoadInterrupted, match="interrupted: 2 of 4 records were written"):
        await loading
    written = [await store.exists(p) is not None for p, _ in records]
    assert written == [True, True, False, False]


async def test_a_wide_tree_is_dumped_in_order_and_loaded_whole(clock: Clock) -> None:
    """Siblings are read and written concurrently; the dump's order is still parents first,
    children sorted, and a load into an empty store writes every record."""
    store = MemoryMetadataStore(MemoryServer(clock))
    paths = [f"/t/n{i:02d}" for i in range(40)] + [
        f"/t/n{i:02d}/c{j}" for i in range(0, 40, 3) for j in range(7)
    ]
    for path in paths:
        await store.put(path, path.encode())
    dumped = await dump_tree(store, "/t")

    def preorder(path: str) -> list[str]:
        children = sorted(p for p in paths if p.rsplit("/", 1)[0] == path)
        return [path, *(q for child in children for q in preorder(child))]

    assert list(dumped["records"]) == preorder("/t")
    copy = MemoryMetadataStore(MemoryServer(clock))
    loaded = dump_records(dumped)
    assert (await load_tree(copy, loaded.records)).written == len(paths) + 1
    assert (await dump_tree(copy, "/t")) == dumped


async def test_a_value_nested_past_the_parsers_depth_is_dumped_as_text(clock: Clock) -> None:
    store = MemoryMetadataStore(MemoryServer(clock))
    deep = "[" * 100_000 + "]" * 100_000
    await store.put("/deep", deep.encode())
    records = (await dump_tree(store, "/"))["records"]
    assert records["/deep"] == {"text": deep}
    assert dump_records({"root": "/", "records": records}).records == [("/deep", deep.encode())]


ROUND_TRIPS = [
    b'{"a":1,"b":[true,null,"caf\xc3\xa9"],"f":0.00003211909075872973}',  # Ballast's form
    b'{\n  "a": 1\n}',  # spaced out
    b'{"a":1,"a":2}',  # a key twice
    b"1E2",
    b"-0",
    b"0.1000000000000000055511151231257827",
    b"NaN",
    b"Infinity",
    b'"\\ud800"',  # an escaped lone surrogate
    b' {"a":1} ',
    b"plain text",
    b"\xff\xfe binary",
]


async def test_a_dump_loads_back_byte_for_byte_and_is_strict_json(clock: Clock) -> None:
    """A value JSON would rewrite (spaces, a repeated key, 1E2, NaN) is dumped as text, so
    that a load writes back the bytes dumped: it refused a store's own unchanged dump, and
    NaN made the dump no JSON at all."""
    store = MemoryMetadataStore(MemoryServer(clock))
    for n, value in enumerate(ROUND_TRIPS):
        await store.put(f"/v/{n}", value)
    dumped = await dump_tree(store, "/v")
    assert dumped["records"]["/v/0"] == {
        "json": {"a": 1, "b": [True, None, "café"], "f": 0.00003211909075872973}
    }
    assert all("text" in dumped["records"][f"/v/{n}"] for n in range(1, 11))

    def no_constants(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    text = json.dumps(dumped, indent=1)
    read = json.loads(text, parse_constant=no_constants)
    records = dict(dump_records(read).records)
    assert [records[f"/v/{n}"] for n in range(len(ROUND_TRIPS))] == ROUND_TRIPS
    result = await load_tree(store, list(records.items()))  # its own dump: nothing to write
    assert result.written == 0


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ({"text": "a", "ephemeral": "yes"}, "ephemeral must be true or false"),
        ({"text": "a", "extra": 1}, "extra is no key of a record"),
        ({"json": float("nan")}, "a value JSON cannot carry"),
    ],
)
def test_a_record_entry_is_checked(entry: dict[str, object], said: str) -> None:
    with pytest.raises(DumpFormatError, match=said):
        dump_records({"root": "/", "records": {"/x": entry}})


@pytest.mark.parametrize(
    ("dump", "said"),
    [
        ({"root": "/q", "records": {"/q/\udcff": {"json": 1}}}, 'records["/q/\\udcff"]: "/q/'),
        ({"root": "/q", "records": {"/q/a": {"text": "\udcff"}}}, 'records["/q/a"]["text"]: "'),
        (
            {"root": "/q", "records": {"/q/a": {"json": {"k": [1, {"\ud800x": 2}]}}}},
            'records["/q/a"]["json"]["k"][1]: "\\ud800x"',
        ),
        ({"root": "/\udcff", "records": {}}, 'root: "/\\udcff"'),
    ],
)
def test_a_string_utf8_cannot_encode_is_refused_where_it_is(
    dump: dict[str, object], said: str
) -> None:
    """A lone surrogate (valid in JSON, ``"\\udcff"``) reached the store, which failed on it
    with a traceback; refused here, it is named before any record is written."""
    with pytest.raises(DumpFormatError) as caught:
        dump_records(dump)
    assert said in str(caught.value) and "is not valid UTF-8 text" in str(caught.value)
    str(caught.value).encode("utf-8")  # the message itself can be printed


async def test_a_dump_leaves_out_records_that_do_not_read_back_when_asked(clock: Clock) -> None:
    """A manifest whose chunks are missing failed the dump of its whole subtree."""
    store = ChunkingStore(MemoryMetadataStore(MemoryServer(clock)))
    await store.put("/q/good", b"1")
    await store.inner.put("/q/gone", Manifest("/ballast-chunks/none/x", 2, 10).encode())
    await store.inner.put("/q/gone/child", b"2")
    await store.inner.put("/q/foreign", MANIFEST + b"not json")
    with pytest.raises(UnreadableValueError, match="/q/foreign"):
        await dump_tree(store, "/q")
    left_out: list[UnreadableValueError] = []
    records = (await dump_tree(store, "/q", left_out=left_out))["records"]
    assert sorted(records) == ["/q", "/q/gone/child", "/q/good"]
    assert [exc.path for exc in left_out] == ["/q/foreign", "/q/gone"]


async def test_a_load_replaces_a_record_that_does_not_read_back_only_if_told(
    clock: Clock,
) -> None:
    store = ChunkingStore(MemoryMetadataStore(MemoryServer(clock)))
    await store.inner.put("/foreign", MANIFEST + b"not json")
    with pytest.raises(DumpFormatError, match="/foreign exists and holds a value marked"):
        await load_tree(store, [("/foreign", b"new")])
    assert (await load_tree(store, [("/foreign", b"new")], overwrite=True)).written == 1
    assert (await store.get("/foreign")).value == b"new"  # type: ignore[union-attr]
